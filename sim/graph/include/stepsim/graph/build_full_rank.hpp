#pragma once
// Full-rank mode (`predict --full-rank`): the task graph of every GPU of the job.
// Details: docs/models.md, "Full-rank mode".

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
