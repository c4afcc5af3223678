#pragma once
// simulate(): decomposition + schedule + cost model -> event engine -> report (+ timeline).
// The one entry point `predict`, `sweep` and `validate` use.

#include <cstdint>
#include <string>
#include <vector>

#include "stepsim/core/cost_model.hpp"
#include "stepsim/core/plan.hpp"
#include "stepsim/core/scenario.hpp"
#include "stepsim/sim/schedule.hpp"
#include "stepsim/sim/timeline.hpp"

namespace stepsim::sim {

struct StageSummary {
  std::int32_t stage = 0;
  double busy_s = 0;          ///< compute stream busy
  double bubble_s = 0;        ///< compute stream idle within the step
  double exposed_comm_s = 0;  ///< compute idle while this rank's communication ran
  std::int64_t peak_memory_bytes = 0;
  bool operator==(const StageSummary&) const = default;
};

/// Of the step time, how much each kind of work contributes on the critical path.
struct CriticalPath {
  double compute_s = 0;
  double tp_comm_s = 0;
  double p2p_s = 0;
  double dp_comm_s = 0;
  double optimizer_s = 0;
  double bubble_s = 0;
  bool operator==(const CriticalPath&) const = default;
};

struct Prediction {
  double step_time_s = 0;
  double bubble_fraction = 0;  ///< mean over stages of bubble / busy... see report docs
  double mfu = 0;
  double hfu = 0;
  double tflops_per_gpu = 0;
  double tokens_per_s = 0;
  std::int64_t peak_memory_bytes = 0;
  bool fits_in_memory = true;
  std::vector<StageSummary> stages;
  CriticalPath critical_path;
  std::int64_t simulated_tasks = 0;  ///< ops simulated (stamped) in the step
  std::vector<std::string> warnings;
  bool operator==(const Prediction&) const = default;
};

struct SimulateOptions {
  bool keep_timeline = false;  ///< fill SimulationResult::timeline (op-level slices)
  ScheduleKind schedule = ScheduleKind::kOneFOneB;  ///< kInterleaved chosen automatically when v > 1
  bool force_gpipe = false;
};

struct SimulationResult {
  Prediction prediction;
  Timeline timeline;  ///< empty unless keep_timeline
  Schedule schedule;
};

/// Schedule parameters Megatron would use for `w`.
ScheduleParams schedule_params_of(const Workload& w);

/// Simulates one training step of `w`. `plan` must be decompose(w).
SimulationResult simulate(const Workload& w, const WorkloadPlan& plan, const CostModel& cost,
                          const SimulateOptions& options = {});

}  // namespace stepsim::sim
