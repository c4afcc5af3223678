#pragma once
// Per-stage busy / bubble / exposed-communication time and peak memory: from the trace's
// `stepsim` summary when it has one, otherwise derived from the slices and counters.

#include <cstdint>
#include <vector>

#include "stepsim/gui/trace_model.hpp"

namespace stepsim::gui {

struct StageStats {
  std::int32_t stage = 0;     ///< the rank (pipeline stage in representative mode)
  double busy_s = 0;          ///< compute stream busy (union of its slices)
  double bubble_s = 0;        ///< nothing running on the rank
  double exposed_comm_s = 0;  ///< communication running while compute is idle
  std::int64_t peak_memory_bytes = 0;
  bool operator==(const StageStats&) const = default;
};

/// Derived from the slices over the step [0, end of the last slice]: busy = union of the
/// compute lane; exposed comm = union of all lanes minus busy; bubble = the rest (the rank's
/// idle intervals). Peak memory from the rank's memory counters (0 without counters).
std::vector<StageStats> derive_stage_stats(const TraceModel& model);

/// The summary's stages when the trace has them, else derive_stage_stats().
std::vector<StageStats> stage_stats(const TraceModel& model);

/// Length of the union of sorted-by-start intervals (microseconds).
double union_length_us(const Intervals& intervals);

/// Highest value of a memory series and when it is first reached (relative µs).
struct MemoryPeak {
  std::int64_t bytes = 0;
  double time_us = 0;
};
MemoryPeak memory_peak(const MemorySeries& series);

}  // namespace stepsim::gui
