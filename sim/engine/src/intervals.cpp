#include "stepsim/engine/intervals.hpp"

#include <algorithm>

namespace stepsim::sim {

void merge_intervals(std::vector<Interval>& spans) {
  const auto earlier = [](const Interval& a, const Interval& b) {
    return a.start_s != b.start_s ? a.start_s < b.start_s : a.end_s < b.end_s;
  };
  // Spans of one stream arrive in issue order, which is time order; a rank's transfers arrive
  // as two such runs (those with the stage before it, then the stage after). Merge runs in
  // linear time; sort only what is less ordered than that.
  const auto first_descent = std::is_sorted_until(spans.begin(), spans.end(), earlier);
  if (first_descent != spans.end()) {
    if (std::is_sorted(first_descent, spans.end(), earlier)) {
      std::inplace_merge(spans.begin(), first_descent, spans.end(), earlier);
    } else {
      std::sort(spans.begin(), spans.end(), earlier);
    }
  }
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

std::vector<Interval> union_of(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  std::vector<Interval> out;
  out.reserve(a.size() + b.size());
  std::size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    const bool take_a = j == b.size() || (i < a.size() && a[i].start_s <= b[j].start_s);
    const Interval& next = take_a ? a[i++] : b[j++];
    if (!out.empty() && next.start_s <= out.back().end_s) {
      out.back().end_s = std::max(out.back().end_s, next.end_s);
    } else {
      out.push_back(next);
    }
  }
  return out;
}

std::vector<Interval> difference_of(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  std::vector<Interval> out;
  std::size_t j = 0;
  for (const Interval& s : a) {
    double cursor = s.start_s;
    while (j < b.size() && b[j].end_s <= cursor) ++j;
    for (std::size_t k = j; k < b.size() && b[k].start_s < s.end_s; ++k) {
      if (b[k].start_s > cursor) out.push_back({cursor, b[k].start_s});
      cursor = std::max(cursor, b[k].end_s);
    }
    if (cursor < s.end_s) out.push_back({cursor, s.end_s});
  }
  return out;
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
