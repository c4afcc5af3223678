#pragma once
// The critical path of a step. A stepsim prediction carries the engine's own chain (the
// `stepsim` object's `critical_chain`: tasks through dependencies): the path is then every
// slice inside the chain's links. Other traces (measured ones, the PyTorch profiler's) have
// no dependency edges, and the path is recovered from the slices alone. Method: start at the slice that ends last; repeatedly step to its predecessor,
// the slice that ends latest, no later than the current slice starts, among
//   (a) the slices of the same rank, on any stream (stream order and cross-stream waits
//       both show up as "ended just before I started"), and
//   (b) when the current slice is a P2P transfer (kind pp_comm): the slices of the ranks
//       of its matching transfers: pp_comm slices on other ranks with the same micro-batch
//       and chunk that overlap it in time (the other side of the send/recv). The path then
//       passes through that matching transfer.
// It stops when no slice ends before the current one starts. Ties go to the later-starting
// slice, then to the lower stream. The result is the chain of slices the step waited on.

#include <cstddef>
#include <vector>

#include "stepsim/gui/trace_model.hpp"

namespace stepsim::gui {

struct CriticalPath {
  std::vector<SliceRef> slices;  ///< in time order, first to last
  double busy_us = 0;            ///< sum of the path's slice durations
};

/// Slices closer than this in time (microseconds) count as touching.
inline constexpr double kTouchToleranceUs = 1e-3;

/// The critical path of `model` (empty when it has no slices).
CriticalPath critical_path(const TraceModel& model);

}  // namespace stepsim::gui
