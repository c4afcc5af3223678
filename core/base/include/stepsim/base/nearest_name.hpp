#pragma once
// "Did you mean": the nearest of a list of names to a name a user typed.

#include <cstddef>
#include <optional>
#include <span>
#include <string_view>

namespace stepsim {

/// Levenshtein distance between two strings (insertions, deletions, substitutions).
std::size_t edit_distance(std::string_view a, std::string_view b);

/// The index in `names` of the name nearest to `typed`, or none when the nearest is further
/// than max(2, typed.size() / 4) edits away (a guess that far off would mislead). Ties go to
/// the earlier name, so a list in the table's order gives a stable suggestion.
std::optional<std::size_t> nearest_name_index(std::string_view typed,
                                              std::span<const std::string_view> names);

/// The name nearest to `typed` (a view into `names`), under the same threshold.
std::optional<std::string_view> nearest_name(std::string_view typed,
                                             std::span<const std::string_view> names);

}  // namespace stepsim
