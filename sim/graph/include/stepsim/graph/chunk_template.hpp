#pragma once
// A chunk template: one model chunk's forward or backward op list timed once, as offsets
// from the action's start. The engine schedules whole actions; stamping a template at an
// action's start gives every op's exact times, because inside an action the ops of one
// representative rank interact only with its own streams (TP peers are symmetric). When the
// engine slows a whole action (a DP collective beside it), its ops stretch in proportion.

#include <cstdint>
#include <utility>
#include <vector>

#include "stepsim/cost/cost_model.hpp"
#include "stepsim/cost/profile.hpp"
#include "stepsim/ops/ops.hpp"
#include "stepsim/config/scenario.hpp"

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
  /// With a measured kernel spread (CostModel::spread): the variance (s^2) of this action's
  /// time between data-parallel replicas, as add_sync_waits returns it; 0 without.
  double spread_variance_s2 = 0;
  /// Ops holding transient memory: (op index, bytes).
  std::vector<std::pair<std::int32_t, std::int64_t>> workspace_ops;
};

/// Times `ops` with stream order and explicit deps (see Op in ops.hpp). With `serial`, every
/// op waits for the one before it, whatever its stream (a single-threaded executor).
/// Otherwise compute-stream kernels and NCCL kernels (CollectiveOp/P2POp with `nccl`: the TP
/// and CP communication) that run at the same time slow each other by `interference`'s
/// factors (resource_model.hpp): both progress at 1/factor of their speed alone while they
/// overlap. Default (factors 1): fixed durations, free overlap. `async_ring` with `serial`:
/// the ops posted_when_serial (the context-parallel ring's steps, Transformer Engine's
/// userbuffers exchanges and collectives) are posted without blocking, as an executor with
/// progress threads runs them: each starts where the serial host posts it, after the op
/// posted before it (one queue), and only the ops that depend on it (the attention step using
/// the received block, the GEMM chunk using the received rows, Op::deps) wait for its end; the
/// host waits for a ring step to start before going on (TE sends the received block on). They
/// interfere with the compute beside them (the backend's threads take its cores).
ChunkTemplate time_ops(const std::vector<Op>& ops, const CostModel& cost, bool serial,
                       const Interference& interference = {}, bool async_ring = false);

/// Adds to each synchronising op of `ops` (a collective over its group_size ranks, a
/// point-to-point step between two) the expected wait for the slowest of its group after the
/// compute since the previous one (stepsim/cost/spread.hpp), in `duration` (cost-model
/// seconds, index = op). Returns the variance (s^2) still differing between data-parallel
/// replicas after the list: each stretch's variance times Var[max of its group], plus the
/// stretch after the last synchronisation.
double add_sync_waits(const std::vector<Op>& ops, const KernelSpread& spread,
                      std::vector<double>& duration);

/// Whether time_ops gives `a` and `b` the same template (with the same cost model and
/// options): every field it reads (phase, stream, shape, deps, workspace bytes, SM share) is
/// equal op for op. Names and layer indices, which it does not read, may differ: the chunks
/// of a pipeline's middle stages are the same layers under other indices.
bool same_timing(const std::vector<Op>& a, const std::vector<Op>& b);

}  // namespace stepsim::sim
