#pragma once
// simulate(): decomposition + schedule + cost model -> event engine -> report (+ timeline).
// The one entry point `predict`, `sweep` and `validate` use.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "stepsim/cost/cost_model.hpp"
#include "stepsim/ops/plan.hpp"
#include "stepsim/config/scenario.hpp"
#include "stepsim/schedule/schedule.hpp"
#include "stepsim/engine/timeline.hpp"

namespace stepsim::sim {

struct StageSummary {
  std::int32_t stage = 0;
  double busy_s = 0;          ///< compute stream busy (recompute and optimizer included)
  double bubble_s = 0;        ///< idle: neither computing nor communicating
  double exposed_comm_s = 0;  ///< compute idle while this rank's communication ran
  std::int64_t peak_memory_bytes = 0;
  double optimizer_s = 0;     ///< of busy_s, the per-step ops (optimizer), not per micro-batch
  bool operator==(const StageSummary&) const = default;
};

/// The step time split by what the critical rank (the one whose work ends last) is doing:
/// computing, waiting for its TP collectives, P2P transfers, DP communication, running the
/// optimizer, or idle in the pipeline bubble. The parts add up to the step time.
struct CriticalPath {
  std::int32_t rank = 0;
  double compute_s = 0;
  double tp_comm_s = 0;
  double p2p_s = 0;
  double dp_comm_s = 0;
  double optimizer_s = 0;
  double bubble_s = 0;
  bool operator==(const CriticalPath&) const = default;
};

/// A stretch of the critical chain: consecutive chain tasks of one kind on one rank.
struct ChainSegment {
  std::int32_t rank = 0;
  std::string kind;  ///< "compute", "p2p", "dp_comm", "optimizer" or "wait"
  std::string what;  ///< its first (and last) task, e.g. "F mb3 c1 .. B mb0 c1"
  std::int64_t tasks = 0;
  double start_s = 0;
  double end_s = 0;
  bool operator==(const ChainSegment&) const = default;
};

/// The engine's critical path: the chain of tasks that determined the step time, walked
/// back from the task that ended last through, at every task, the predecessor (or
/// rendezvous partner's predecessor) whose end released it. Its tasks follow each other
/// without gaps from 0 to the step time, so the parts add up to the step time.
struct CriticalChain {
  std::int64_t tasks = 0;  ///< engine tasks on the chain (zero-time joins included)
  double compute_s = 0;    ///< compute-stream kernels inside the chain's actions
  double tp_comm_s = 0;    ///< inside those actions, compute waiting for TP collectives
  double p2p_s = 0;        ///< pipeline transfers
  double dp_comm_s = 0;    ///< data-parallel and embedding collectives
  double optimizer_s = 0;  ///< per-step compute (optimizer)
  /// Delays: a point inside another task (a DDP bucket's gradients becoming final inside a
  /// backward, the parameter gathers a forward waits for partway through).
  double wait_s = 0;
  /// The host issuing kernels and waking from synchronisations (with a profile's measured
  /// host: sim/graph/src/build_step.cpp, issue_on_host), where the GPU waited for it.
  double host_s = 0;
  std::vector<ChainSegment> longest;  ///< the longest segments, longest first (at most 5)
  bool operator==(const CriticalChain&) const = default;
};

/// Full-rank mode (`predict --full-rank`): which GPUs were simulated and which pipeline the
/// per-stage summaries, critical path, memory and timeline describe.
struct FullRankSummary {
  std::int64_t gpus = 0;            ///< GPUs simulated (world_size)
  std::int32_t critical_rank = 0;   ///< global rank of the GPU whose work ended last
  std::int64_t tp = 0, cp = 0, dp = 0;  ///< its lane: the pipeline `stages` describe
  std::int32_t paces = 1;  ///< distinct per-stage paces, each one representative build
  bool operator==(const FullRankSummary&) const = default;
};

struct Prediction {
  double step_time_s = 0;
  /// Pipeline bubble over compute, summed over stages: sum(bubble_s) / sum(busy_s). With
  /// uniform stages and free communication: (p-1)/m for 1F1B, (p-1)/(v*m) interleaved.
  double bubble_fraction = 0;
  double mfu = 0;
  double hfu = 0;
  double tflops_per_gpu = 0;  ///< hardware FLOP/s per GPU (recompute included), as Megatron reports
  double tokens_per_s = 0;
  std::int64_t peak_memory_bytes = 0;
  bool fits_in_memory = true;
  std::vector<StageSummary> stages;
  CriticalPath critical_path;
  CriticalChain critical_chain;
  /// Ops on the timeline: every op of every stamped chunk template, transfers, step ops.
  /// (The contract's historical name; it counts stamped ops, not what the engine schedules.)
  std::int64_t simulated_tasks = 0;
  std::int64_t engine_tasks = 0;  ///< tasks the engine scheduled (one per action, transfer, ...)
  std::optional<FullRankSummary> full_rank;  ///< set in full-rank mode only
  std::vector<std::string> warnings;
  /// Which parts of the step came from measured samples, another machine's, published
  /// microbenchmarks, data sheets or the roofline (CostModel::provenance); predict adds what
  /// `stepsim accuracy` measured for the same cost data.
  Provenance provenance;
  bool operator==(const Prediction&) const = default;
};

/// A GPU whose kernels run `factor` times as long as the cost model says (a straggler:
/// thermal throttling, a slower part). `rank` is the global rank in Megatron's layout (TP
/// fastest, then DP, then PP).
struct Straggler {
  std::int32_t rank = 0;
  double factor = 1;
  bool operator==(const Straggler&) const = default;
};

/// A node whose NIC rails (every GPU's) move bytes `factor` times as slowly as the system
/// file says (a degraded link, a slower NIC): a transfer or collective alone on one takes
/// `factor` times as long. Full-rank mode only.
struct SlowNic {
  std::int32_t node = 0;  ///< global rank / gpus_per_node
  double factor = 1;
  bool operator==(const SlowNic&) const = default;
};

struct SimulateOptions {
  bool keep_timeline = false;  ///< fill SimulationResult::timeline (op-level slices, memory)
  bool gpipe = false;          ///< GPipe instead of Megatron's 1F1B (needs v = 1)
  /// Run every rank's work on one stream (no compute/communication overlap), as a
  /// single-threaded executor such as the CPU validation backend does.
  bool serialize_streams = false;
  /// With serialize_streams: Megatron's non-blocking point-to-point calls (overlap_p2p_comm)
  /// still run beside the compute that follows them, until the program's wait for them, as
  /// the validator's CPU backend runs them on a progress thread of its own
  /// (calib::Backend::async_p2p); so do Transformer Engine's context-parallel ring steps
  /// (always non-blocking), until the attention step that uses the received block. Without
  /// serialize_streams they always do.
  bool async_p2p = false;
  /// With serialize_streams: overlap_grad_reduce's bucket reductions still run on the data-
  /// parallel stream beside the backward, issued where Megatron issues them
  /// (grad_sync_launches), as the validator's CPU backend runs them on a thread of its own
  /// (calib::Backend::async_collectives). Without serialize_streams they always do.
  bool async_grad_reduce = false;
  /// A schedule already built for schedule_params_of(w) (with `gpipe` applied), to reuse
  /// across configurations that share it (sweeps); nullptr: build it.
  std::shared_ptr<const Schedule> schedule;
  /// Slower GPUs. In the representative-rank mode the simulated replica is the one holding
  /// them, so they must all lie in one data-parallel replica; a straggler slows every compute
  /// kernel of its pipeline stage (its tensor-parallel peers wait for it at every TP
  /// collective) and the replicas without one wait for it at the gradient reduction.
  /// Communication is not slowed.
  std::vector<Straggler> stragglers;
  /// Resource contention (sim/engine/include/stepsim/engine/resource_model.hpp): concurrent transfers and collectives
  /// share NIC rails and NVLink ports max-min fairly, and compute beside an NCCL kernel
  /// interferes with it (system.interference), in the engine and inside each action (TP and
  /// CP communication beside the compute stream). false (`predict --no-contention`): every
  /// overlap is free, each task takes its cost-model time.
  bool contention = true;
  /// Simulate every GPU (`predict --full-rank`, sim/graph/include/stepsim/graph/build_full_rank.hpp) instead of one
  /// representative rank per stage: each TP, CP peer and DP replica explicit, collectives over
  /// their real members on their real links. Stragglers may then lie anywhere; `slow_nics`
  /// and `jitter_sigma` need it.
  bool full_rank = false;
  std::vector<SlowNic> slow_nics;  ///< slower NICs (full-rank, with contention)
  /// Per-GPU compute jitter (full-rank): each GPU's kernels take exp(jitter_sigma * z) times
  /// as long, z a standard normal drawn per global rank from `seed` (jitter_scales in
  /// sim/graph/include/stepsim/graph/build_full_rank.hpp); 0: none.
  double jitter_sigma = 0;
  std::uint64_t seed = 0;
};

struct SimulationResult {
  Prediction prediction;
  Timeline timeline;  ///< empty unless keep_timeline
  std::shared_ptr<const Schedule> schedule;  ///< the schedule simulated (never null)
};

/// One internal error (ErrorKind::kInternal) per figure of `p` that is not finite, naming it
/// (`prediction.step_time_s`); empty when all are. simulate() returns them instead of a
/// prediction, so an infinite or NaN time is never printed as a result.
Errors non_finite_fields(const Prediction& p, const std::string& file);

/// A stage's bubble (StageSummary::bubble_s) split by why it is idle; its idle time is given
/// to the parts in this order:
///  - schedule: what the schedule leaves idle even with equal stages and free communication,
///    (p-1)/(v*m) of the heaviest stage's per-micro-batch work (1F1B and GPipe: v = 1);
///  - imbalance: the heaviest stage's busy time less this stage's (uneven layers, the
///    embedding on the first stage, the output layer and loss on the last);
///  - waits: the rest, waiting for transfers, collectives and other stages' communication.
struct BubbleParts {
  double schedule_s = 0;
  double imbalance_s = 0;
  double waits_s = 0;
};

/// Each stage's BubbleParts (one per element of `stages`, in order).
std::vector<BubbleParts> stage_bubble_parts(const std::vector<StageSummary>& stages,
                                            const ScheduleParams& schedule);

/// Schedule parameters Megatron would use for `w`.
ScheduleParams schedule_params_of(const Workload& w);

/// Simulates one training step of `w`. `plan` must be decompose(w). Fails only on internal
/// inconsistencies (a schedule or plan that does not match up), never on valid input.
Result<SimulationResult> simulate(const Workload& w, const WorkloadPlan& plan,
                                  const CostModel& cost, const SimulateOptions& options = {});

}  // namespace stepsim::sim
