#pragma once
// Full-rank mode (`predict --full-rank`): the TaskGraph of every GPU of the job, built from
// representative steps (build_step.hpp) copied once per pipeline lane.
//
// A lane is one (tp, cp, dp) position: the pipeline of GPUs that differ only in their
// pipeline rank (Megatron's rank layout, RankGenerator, order tp-cp-ep-dp-pp). Each lane's
// tasks are a copy of a representative step with every rank renamed to the lane's global
// rank at that stage, so every GPU has its own chain, its own P2P transfers (on its own NVLink
// port or NIC rail, inter-node or not as its real peer is) and its own collectives. Copies
// that Megatron runs as one operation are joined (rendezvous: they start when every member
// is ready, and every member continues after it):
// - a forward or backward action, over its action set: the GPUs it exchanges with inside an
//   action (TP and CP peers; with MoE the expert groups, with FP8 delayed scaling the amax
//   group), closed transitively; the collectives inside pace it to the set's slowest member
//   (every member's action lasts as long as the slowest member's);
// - a per-step collective (gradient reduction, parameter gather: the dp * cp group or the
//   expert data-parallel group), over its Megatron group; its flow holds every member's
//   link, so a slower NIC on one member slows the whole collective, and collectives of
//   different groups share NICs with each other and with P2P transfers;
// - the tied-embedding all-reduce, per lane (first and last stage of one pipeline).
// The representative step of a lane is built with its pace (per stage: the slowest GPU's
// compute scale in the stage's action set), so durations,
// DDP bucket points and parameter-gather delays are the representative builder's own; lanes
// of equal pace share one build.

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "stepsim/graph/build_step.hpp"
#include "stepsim/base/result.hpp"

namespace stepsim::sim {

struct FullRankStep {
  /// Representative steps (Task::rank = pipeline stage), one per distinct pace; a deque so
  /// that the StepOpRef pointers into their bucket_ops stay valid.
  std::deque<BuiltStep> builds;
  /// Every GPU: Task::rank is the global rank, resources are global ranks; payloads index
  /// `step.actions`, `step.transfers`, `step.step_ops`, the builds' refs concatenated (the
  /// ranks inside those refs are stages), and ActionRef::template_index `step.templates`.
  BuiltStep step;
  std::int64_t lanes = 1;
  std::uint32_t lane_tasks = 0;  ///< tasks per lane; lane l's are [l * lane_tasks, ...)
  std::vector<std::int32_t> build_of_lane;  ///< index into `builds`
  std::vector<std::int32_t> stage_of_rank;  ///< per global rank: its pipeline stage
  std::vector<std::int32_t> lane_of_rank;   ///< per global rank: its lane
};

/// Builds every GPU's step. `gpu_compute_scale` (per global rank; empty: all 1): that GPU's
/// compute kernels take this many times as long. `options.compute_scale` is ignored.
/// Errors: features the full-rank mode does not model yet (kind kInput, key "--full-rank").
Result<std::unique_ptr<FullRankStep>> build_full_rank(const Workload& w, const WorkloadPlan& plan,
                                                      const Schedule& schedule,
                                                      const CostModel& cost,
                                                      const BuildOptions& options,
                                                      const std::vector<double>& gpu_compute_scale);

}  // namespace stepsim::sim
