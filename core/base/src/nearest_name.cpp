// "Did you mean" (see nearest_name.hpp): one edit distance for every name a user types.

#include "stepsim/base/nearest_name.hpp"

#include <algorithm>
#include <vector>

namespace stepsim {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

std::optional<std::size_t> nearest_name_index(std::string_view typed,
                                              std::span<const std::string_view> names) {
  const std::size_t limit = std::max<std::size_t>(2, typed.size() / 4);
  std::optional<std::size_t> best;
  std::size_t best_distance = 0;
  for (std::size_t i = 0; i < names.size(); ++i) {
    // The lengths alone put this name beyond the limit: skip the quadratic distance (a
    // hostile megabyte-long word stays cheap).
    const std::size_t gap = typed.size() > names[i].size() ? typed.size() - names[i].size()
                                                           : names[i].size() - typed.size();
    if (gap > limit) continue;
    const std::size_t d = edit_distance(typed, names[i]);
    if (d <= limit && (!best || d < best_distance)) {
      best = i;
      best_distance = d;
    }
  }
  return best;
}

std::optional<std::string_view> nearest_name(std::string_view typed,
                                             std::span<const std::string_view> names) {
  const auto i = nearest_name_index(typed, names);
  if (!i) return std::nullopt;
  return names[*i];
}

}  // namespace stepsim
