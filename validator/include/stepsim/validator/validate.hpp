#pragma once
// Predicted vs measured: the comparison `stepsim validate` reports, and the scale-down
// overrides (--num-layers, --world-size) it and `stepsim regress` apply to a scenario.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "stepsim/validator/executor.hpp"
#include "stepsim/base/result.hpp"
#include "stepsim/config/scenario.hpp"
#include "stepsim/simulate/simulate.hpp"
#include "stepsim/engine/timeline.hpp"

namespace stepsim::calib {

/// Scaled-down validation: same per-layer shapes, fewer layers or fewer data-parallel
/// replicas. 0 keeps the scenario's value.
struct ScaleOverrides {
  std::int64_t num_layers = 0;  ///< model.num_layers
  std::int64_t world_size = 0;  ///< training.world_size (t and p kept, dp shrinks)
  bool operator==(const ScaleOverrides&) const = default;
};

/// Applies `o` to `w`, keeping micro-batches per pipeline (global_batch_size follows dp) and
/// model chunks per rank (num_layers_per_virtual_pipeline_stage follows num_layers), then
/// re-validates with Megatron's rules. Errors name --num-layers / --world-size.
Result<Workload> apply_overrides(Workload w, const ScaleOverrides& o);

/// The prediction options that describe what the executor runs: streams serialised, and
/// Megatron's non-blocking P2P calls beside the compute when the backend runs them so
/// (`async_p2p`: Backend::async_p2p, Measurement::async_p2p), and overlap_grad_reduce's bucket
/// reductions beside the backward when it runs them so (`async_grad_reduce`:
/// Measurement::async_grad_reduce).
sim::SimulateOptions validation_simulate_options(bool async_p2p, bool async_grad_reduce = false);

/// Compute/communication/idle time of one stage's representative rank in one timeline.
struct StageFigures {
  double busy_s = 0;  ///< union of computing slices (forward, backward, optimizer)
  double comm_s = 0;  ///< union of communication slices (TP, P2P, DP, CP), outside computing
  /// Measured only: calls waiting for their last peer ("wait" slices), outside both (a
  /// prediction counts such time as idle: the engine starts a call when its peers are ready).
  double wait_s = 0;
  double idle_s = 0;  ///< step time minus the three
  /// Communication that ran while the rank computed: the union of communication slices
  /// intersected with the union of computing slices (hidden behind compute; not in comm_s).
  double overlap_s = 0;
  bool operator==(const StageFigures&) const = default;
};

struct StageComparison {
  std::int32_t stage = 0;
  StageFigures predicted;
  StageFigures measured;
  /// Wall time of the stage's compute tasks beyond the work the backend timed (operand setup
  /// and result checks inside each Backend call), in the median step: part of the measured
  /// step that no cost model predicts.
  double measured_backend_overhead_s = 0;
  bool operator==(const StageComparison&) const = default;
};

/// Per op kind: how matched predicted and measured durations agree.
struct OpKindComparison {
  OpCategory category = OpCategory::kGemm;
  std::int64_t count = 0;  ///< matched slices
  double predicted_total_s = 0;
  double measured_total_s = 0;         ///< backend clock: the work itself
  double measured_wall_total_s = 0;    ///< wall clock around each call (setup, checks, waiting)
  double mean_relative_error = 0;      ///< mean of (predicted - measured) / measured
  double mean_abs_relative_error = 0;  ///< mean of |predicted - measured| / measured
  bool operator==(const OpKindComparison&) const = default;
};

/// One matched slice with a large deviation.
struct Deviation {
  std::int32_t stage = 0;
  std::string name;
  std::string detail;
  OpCategory category = OpCategory::kGemm;
  double predicted_s = 0;
  double measured_s = 0;  ///< backend clock, median over the measured steps
  double relative_error = 0;
  bool operator==(const Deviation&) const = default;
};

struct ValidationReport {
  std::string scenario;
  std::string backend;
  std::string device;
  std::string cost_model;
  ScaleOverrides overrides;
  std::int32_t world_size = 0;
  std::int32_t warmup_steps = 0;
  std::int32_t steps = 0;
  /// Non-blocking P2P calls ran beside the compute, in the measurement and the prediction
  /// (Measurement::async_p2p); false: every call completed where it was issued.
  bool async_p2p = false;
  /// overlap_grad_reduce's bucket reductions ran beside the backward, in the measurement and
  /// the prediction (Measurement::async_grad_reduce).
  bool async_grad_reduce = false;
  /// Ops were enqueued ahead of the device and timed on it (Measurement::device_timed).
  bool device_timed = false;
  double predicted_step_time_s = 0;
  double measured_step_time_s = 0;  ///< median over the measured steps
  double relative_error = 0;        ///< (predicted - measured) / measured
  std::vector<double> measured_step_times_s;
  /// The median step again, on the backend's clock: per rank the sum of the durations the
  /// backend reported for its blocking calls (the work without operand setup and result
  /// checks; P2P waits included) and of the host's waits for its posted calls
  /// (backend_step_s), the largest over ranks. Shows how much of the wall-clock step is the
  /// backend's own overhead.
  double measured_backend_step_time_s = 0;
  double backend_relative_error = 0;  ///< (predicted - backend step) / backend step
  std::vector<StageComparison> stages;
  std::vector<OpKindComparison> ops;          ///< kinds that occur, in OpCategory order
  std::vector<Deviation> largest_deviations;  ///< by |predicted - measured|, largest first
  std::int64_t matched_slices = 0;
  std::int64_t unmatched_predicted = 0;  ///< predicted slices with no measured counterpart
  std::int64_t unmatched_measured = 0;
  bool complete = true;  ///< false: partial results after a fault
  std::string failure;
  std::vector<std::string> notes;
  bool operator==(const ValidationReport&) const = default;
};

/// (predicted - measured) / measured; 0 when both are 0.
double relative_error(double predicted, double measured);

StageFigures stage_figures(const sim::Timeline& t, std::int32_t stage);

/// One rank's step on the backend's clock, from its `timings` of `tasks` (one step): the
/// blocking calls' own durations (TaskTiming::op_s) plus, before each task that waits for
/// posted calls, the host's wait: from where the host left off (the previous blocking call's
/// end, or a posted call's post) to the last of those calls' completions, within the gap
/// before the task. A posted call itself runs beside the rest and adds nothing.
double backend_step_s(const std::vector<ExecTask>& tasks, const std::vector<TaskTiming>& timings);

/// Compares a prediction (its timeline kept) with a measurement. Slices are matched per
/// stage by name and occurrence order; measured op durations are the backend's own timings
/// (what a cost model predicts), medians over the measured steps; the step time is wall
/// clock. `max_deviations` bounds largest_deviations.
/// Measured steps whose times spread by more than this fraction of their median, (max -
/// min) / median, were taken on a busy machine (other work took the cores for part of them).
inline constexpr double kBusySpread = 0.25;

/// A warning (for ValidationReport::notes) when `step_times_s` spread by more than
/// kBusySpread; empty otherwise.
std::string busy_machine_note(const std::vector<double>& step_times_s);

ValidationReport compare(const sim::Prediction& prediction, const sim::Timeline& predicted,
                         const Measurement& measured, std::size_t max_deviations = 10);

/// The report as JSON (the `validate --out` contract).
std::string report_to_json(const ValidationReport& r);

/// Writes report_to_json(r) to `path`. Error (runtime) when it cannot be written.
Status write_report_json(const std::string& path, const ValidationReport& r);

/// The report as a short plain-text summary.
std::string format_report_text(const ValidationReport& r);

}  // namespace stepsim::calib
