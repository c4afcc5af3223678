#pragma once
// A chunk template: one model chunk's forward or backward op list timed once, as offsets
// from the action's start. The engine schedules whole actions; stamping a template at an
// action's start gives every op's exact times, because inside an action the ops of one
// representative rank interact only with its own streams (TP peers are symmetric).

#include <cstdint>
#include <utility>
#include <vector>

#include "stepsim/core/cost_model.hpp"
#include "stepsim/core/ops.hpp"

namespace stepsim::sim {

struct OpTiming {
  double start_s = 0;  ///< offset from the action's start
  double end_s = 0;
};

struct ChunkTemplate {
  std::vector<OpTiming> ops;  ///< index = op index in the list
  double duration_s = 0;      ///< the last op's end
  double compute_busy_s = 0;  ///< compute-stream kernels (recompute included)
  double recompute_s = 0;     ///< of which recompute
  /// Time inside the action when the compute stream waits for its own communication
  /// (forward TP collectives, backward ones not hidden by the weight-gradient GEMM).
  double exposed_comm_s = 0;
  double model_flops = 0;     ///< arithmetic excluding recompute
  double hardware_flops = 0;  ///< arithmetic including recompute
  /// Ops holding transient memory: (op index, bytes).
  std::vector<std::pair<std::int32_t, std::int64_t>> workspace_ops;
};

/// Times `ops` with stream order and explicit deps (see Op in ops.hpp). With `serial`, every
/// op waits for the one before it, whatever its stream (a single-threaded executor).
ChunkTemplate time_ops(const std::vector<Op>& ops, const CostModel& cost, bool serial);

}  // namespace stepsim::sim
