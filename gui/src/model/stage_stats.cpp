#include "stepsim/gui/stage_stats.hpp"

#include <algorithm>

namespace stepsim::gui {

double union_length_us(const Intervals& intervals) {
  double total = 0;
  double covered_until = -1e300;
  for (std::size_t i = 0; i < intervals.size(); ++i) {
    const double s = std::max(intervals.start_us[i], covered_until);
    if (intervals.end_us[i] > s) total += intervals.end_us[i] - s;
    covered_until = std::max(covered_until, intervals.end_us[i]);
  }
  return total;
}

MemoryPeak memory_peak(const MemorySeries& series) {
  MemoryPeak peak;
  for (std::size_t i = 0; i < series.bytes.size(); ++i) {
    if (i == 0 || series.bytes[i] > peak.bytes) {
      peak.bytes = series.bytes[i];
      peak.time_us = series.time_us[i];
    }
  }
  return peak;
}

std::vector<StageStats> derive_stage_stats(const TraceModel& model) {
  std::vector<StageStats> out;
  const auto& ranks = model.ranks();
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    StageStats s;
    s.stage = ranks[r];
    const std::int64_t compute = model.find_lane(ranks[r], kStreamCompute);
    const double busy =
        compute >= 0 ? union_length_us(model.lanes[static_cast<std::size_t>(compute)].time) : 0;
    double idle = 0;
    const Intervals& gaps = model.idle[r];
    for (std::size_t i = 0; i < gaps.size(); ++i) idle += gaps.end_us[i] - gaps.start_us[i];
    const double active = std::max(0.0, model.end_us - idle);
    s.busy_s = busy * 1e-6;
    s.exposed_comm_s = std::max(0.0, active - busy) * 1e-6;
    s.bubble_s = idle * 1e-6;
    for (const MemorySeries& series : model.memory) {
      if (series.rank == ranks[r]) s.peak_memory_bytes = memory_peak(series).bytes;
    }
    out.push_back(s);
  }
  return out;
}

std::vector<StageStats> stage_stats(const TraceModel& model) {
  if (!model.summary.present || model.summary.stages.empty()) return derive_stage_stats(model);
  std::vector<StageStats> out;
  for (const StageSummary& s : model.summary.stages) {
    out.push_back(StageStats{s.stage, s.busy_s, s.bubble_s, s.exposed_comm_s, s.peak_memory_bytes});
  }
  return out;
}

}  // namespace stepsim::gui
