#pragma once
// Builds the TaskGraph of one training step from the plan (op templates per chunk), the
// schedule (per-rank programs with Megatron's P2P calls) and the cost model.

#include <cstdint>
#include <deque>
#include <vector>

#include "stepsim/graph/chunk_template.hpp"
#include "stepsim/ops/plan.hpp"
#include "stepsim/base/result.hpp"
#include "stepsim/config/scenario.hpp"
#include "stepsim/schedule/schedule.hpp"
#include "stepsim/engine/task_graph.hpp"

namespace stepsim::sim {

struct BuildOptions {
  bool serialize_streams = false;  ///< one stream per rank (single-threaded executors)
  /// With serialize_streams: non-blocking P2P calls and the CP ring's steps still complete at
  /// their wait (SimulateOptions::async_p2p).
  bool async_p2p = false;
  /// With serialize_streams: overlap_grad_reduce's bucket reductions still run on the DP
  /// stream beside the backward (SimulateOptions::async_grad_reduce).
  bool async_grad_reduce = false;
  /// Per pipeline stage: compute kernels take this many times as long (stragglers); empty
  /// or 1: as the cost model says.
  std::vector<double> compute_scale;
  /// Compute-communication interference inside actions (time_ops); factors 1: none.
  Interference interference;
  /// With a measured kernel spread (CostModel::spread): the first gradient reduction waits
  /// for the expected slowest of the data-parallel replicas (an order statistic,
  /// stepsim/cost/spread.hpp). false: the replicas are simulated one by one (full-rank,
  /// which draws each one's deviation instead).
  bool replica_waits = true;
};

/// What a task's payload index refers to, per TaskKind.
struct ActionRef {
  std::int32_t rank = 0;
  Action action;
  std::int32_t template_index = 0;  ///< into BuiltStep::templates
  /// A backward of the last stage whose output-layer wgrad is deferred
  /// (defer_embedding_wgrad_compute): its ops are ChunkPlan::backward_wgrad_deferred.
  bool wgrad_deferred = false;
};

/// A P2P transfer, simulated as one task shared by its two ranks.
struct TransferRef {
  std::int32_t sender = 0;
  std::int32_t receiver = 0;
  Transfer transfer;  ///< as the sender posts it (send = true, peer = receiver)
  std::int64_t bytes = 0;
  bool inter_node = false;
  std::int64_t sender_post = 0;    ///< order in which the sender posted it among its transfers
  std::int64_t receiver_post = 0;  ///< likewise for the receiver
};

struct StepOpRef {
  std::int32_t rank = 0;
  std::int32_t chunk = -1;   ///< gradient sync of a chunk; -1 for step ops
  std::int32_t bucket = -1;  ///< DDP bucket of a chunk reduced in several; -1 otherwise
  const Op* op = nullptr;    ///< points into the WorkloadPlan or BuiltStep::bucket_ops
  /// A deferred output-layer wgrad GEMM of the drain: the bytes its micro-batch held
  /// (ChunkPlan::deferred_wgrad_bytes), freed when it ends.
  std::int64_t frees_bytes = 0;
};

struct BuiltStep {
  TaskGraph graph;
  std::vector<ActionRef> actions;
  std::vector<TransferRef> transfers;
  std::vector<StepOpRef> step_ops;
  /// The gradient collectives of single DDP buckets (a chunk's grad_sync op cut to a
  /// bucket's bytes); a deque, so that StepOpRef::op stays valid as it grows.
  std::deque<Op> bucket_ops;
  /// Index: ((stage * v) + chunk) * 2 + (0 forward, 1 backward); then, with
  /// defer_embedding_wgrad_compute, the last stage's backward with the wgrad deferred.
  std::vector<ChunkTemplate> templates;
  std::int32_t chunks_per_rank = 1;
  /// Per rank: the variance (s^2) of its step's compute time between data-parallel
  /// replicas (ChunkTemplate::spread_variance_s2 over its actions; 0 without a measured
  /// spread) and its compute actions' busy time (the compute stream's, recompute included).
  std::vector<double> replica_variance_s2;
  std::vector<double> compute_busy_s;
};

std::int32_t template_index(std::int32_t stage, std::int32_t chunk, ActionType type,
                            std::int32_t chunks_per_rank);

Result<BuiltStep> build_step(const Workload& w, const WorkloadPlan& plan, const Schedule& schedule,
                             const CostModel& cost, const BuildOptions& options);

}  // namespace stepsim::sim
