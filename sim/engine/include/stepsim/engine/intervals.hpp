#pragma once
// Interval arithmetic on [start, end) spans, for exposed-time accounting.

#include <vector>

namespace stepsim::sim {

struct Interval {
  double start_s = 0;
  double end_s = 0;
};

/// Sorts and merges overlapping or touching intervals in place; drops empty ones.
void merge_intervals(std::vector<Interval>& spans);

/// Total length of merged `a` not covered by merged `b`.
double measure_minus(const std::vector<Interval>& a, const std::vector<Interval>& b);

/// The union of two merged lists, merged, in linear time.
std::vector<Interval> union_of(const std::vector<Interval>& a, const std::vector<Interval>& b);

/// The parts of merged `a` not covered by merged `b`, merged, in linear time.
std::vector<Interval> difference_of(const std::vector<Interval>& a, const std::vector<Interval>& b);

/// Total length of merged intervals.
double measure(const std::vector<Interval>& merged);

}  // namespace stepsim::sim
