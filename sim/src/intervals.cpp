#include "intervals.hpp"

#include <algorithm>

namespace stepsim::sim {

void merge_intervals(std::vector<Interval>& spans) {
  std::sort(spans.begin(), spans.end(), [](const Interval& a, const Interval& b) {
    return a.start_s != b.start_s ? a.start_s < b.start_s : a.end_s < b.end_s;
  });
  std::size_t out = 0;
  for (const Interval& s : spans) {
    if (s.end_s <= s.start_s) continue;
    if (out > 0 && s.start_s <= spans[out - 1].end_s) {
      spans[out - 1].end_s = std::max(spans[out - 1].end_s, s.end_s);
    } else {
      spans[out++] = s;
    }
  }
  spans.resize(out);
}

double measure(const std::vector<Interval>& merged) {
  double total = 0;
  for (const Interval& s : merged) total += s.end_s - s.start_s;
  return total;
}

double measure_minus(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  double total = 0;
  std::size_t j = 0;
  for (const Interval& s : a) {
    double cursor = s.start_s;
    while (j < b.size() && b[j].end_s <= cursor) ++j;
    for (std::size_t k = j; k < b.size() && b[k].start_s < s.end_s; ++k) {
      if (b[k].start_s > cursor) total += b[k].start_s - cursor;
      cursor = std::max(cursor, b[k].end_s);
      if (cursor >= s.end_s) break;
    }
    if (cursor < s.end_s) total += s.end_s - cursor;
  }
  return total;
}

}  // namespace stepsim::sim
