#pragma once
// Synthetic traces for tests and benchmarks of the viewer: a 1F1B pipeline schedule with
// per-layer compute slices, blocking TP all-reduces, blocking P2P transfers, a DP gradient
// reduction, the optimizer and memory counters, written in the trace format of sim/README.md.
// Timing is a fixed recurrence (not the simulator): enough structure to look like a real
// step, with exactly known slices. Deterministic: same spec, same bytes.

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>

namespace stepsim::gui::synth {

struct SyntheticTraceSpec {
  std::int32_t ranks = 4;  ///< pipeline stages
  std::int32_t microbatches = 8;
  std::int32_t layers = 2;       ///< transformer layers per stage
  std::int32_t forward_ops = 3;  ///< compute slices per layer in a forward
  std::int32_t weight_ops = 2;   ///< weight-gradient slices per layer in a backward
  bool tp_comm = true;           ///< two blocking TP all-reduces per layer and pass
  bool recompute = false;        ///< recompute the forward before each backward
  double op_us = 50;             ///< duration of a forward compute slice
  double tp_us = 10;
  double p2p_us = 20;
  double dp_us = 400;
  double optimizer_us = 150;
  double jitter = 0;  ///< each duration times (1 + jitter * u), u in [0, 1)
  std::uint64_t seed = 1;
  double origin_us = 1000;  ///< `ts` of the first slice
  std::string label = "predicted";
  bool summary = true;  ///< write the `stepsim` summary object
  std::int64_t capacity_bytes = 80LL << 30;
};

/// What was written.
struct SyntheticTraceInfo {
  std::size_t slices = 0;
  std::size_t counters = 0;
  double step_us = 0;  ///< end of the last slice minus origin
};

/// Writes the trace JSON to `out`.
SyntheticTraceInfo write_synthetic_trace(const SyntheticTraceSpec& spec, std::ostream& out);

/// Number of slices write_synthetic_trace() will write for `spec`.
std::size_t synthetic_slice_count(const SyntheticTraceSpec& spec);

/// A spec of `ranks` stages and 64 micro-batches whose trace has at least `slices` slices
/// (layers chosen to reach it).
SyntheticTraceSpec spec_with_slices(std::size_t slices, std::int32_t ranks = 8);

}  // namespace stepsim::gui::synth
