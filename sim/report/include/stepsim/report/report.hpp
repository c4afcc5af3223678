#pragma once
// Writers for predictions: a text report readable at a glance, the `predict` JSON contract
// (docs/outputs.md), and Chrome trace JSON (docs/trace.md). Writers take the stream.

#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "stepsim/layout/pipeline_split.hpp"
#include "stepsim/config/scenario.hpp"
#include "stepsim/report/fit_advice.hpp"
#include "stepsim/simulate/simulate.hpp"

namespace stepsim::sim {

class JsonWriter;

/// What a report adds on request.
struct ReportOptions {
  /// Tokens to train (`--train-tokens`): the report adds the steps, the time and the
  /// GPU-hours that takes at the predicted step time. 0: not asked.
  std::int64_t train_tokens = 0;
  /// `--verbose`: every warning with all its details; otherwise one short line per warning.
  bool verbose = false;
  /// The job does not fit: the text report opens with it and the changes that fit, the JSON
  /// report has it as "make_it_fit". nullptr when the job fits (nothing is added).
  const FitAdvice* fit_advice = nullptr;
};

/// The pipeline bubble as one figure: a stage's idle time (neither computing nor exposing
/// communication) averaged over the stages, split into why it is idle. The parts add up to
/// `total_s`; each stage's idle is given to them in this order:
///  - schedule: what the schedule leaves idle even with equal stages and free communication,
///    (p-1)/(v*m) of the heaviest stage's per-micro-batch work (1F1B and GPipe: v = 1);
///  - stage imbalance: the heaviest stage's busy time less this stage's (uneven layers, the
///    embedding on the first stage, the output layer and loss on the last);
///  - waits: the rest, waiting for transfers, collectives and other stages' communication.
struct BubbleBreakdown {
  double total_s = 0;
  double schedule_s = 0;
  double imbalance_s = 0;
  double waits_s = 0;
  double fraction_of_step = 0;  ///< total_s / step time
};
BubbleBreakdown bubble_breakdown(const Prediction& p, const ScheduleParams& schedule);

/// One line per warning, at most `columns` characters: the warning's category (the text
/// before its first ": ") and how many cases it lists, the details left to `--verbose`.
std::vector<std::string> short_warnings(const std::vector<std::string>& warnings,
                                        std::size_t columns);

/// Megatron-LM's "elapsed time per iteration (ms)" of a step time in seconds.
inline double iteration_ms(double step_time_s) { return step_time_s * 1e3; }

/// The time to train a token budget at a step time: whole steps of global_batch x seq tokens.
struct TimeToTrain {
  std::int64_t tokens = 0;
  std::int64_t steps = 0;
  double time_s = 0;
  double gpu_hours = 0;
};
TimeToTrain time_to_train(const Workload& w, double step_time_s, std::int64_t tokens);

/// Model TFLOP/s per GPU as Megatron-LM logs it ("throughput per GPU (TFLOP/s/GPU)"): its
/// analytic FLOPs of a step (megatron_logged_flops_per_step) over step time and world size.
double megatron_tflops_per_gpu(const Workload& w, double step_time_s);

/// Utilisation against a peak other than the params dtype's.
struct Utilisation {
  double mfu = 0;
  double hfu = 0;
};
/// With FP8 training: MFU and HFU of the same FLOPs against the system's FP8 peak (the
/// prediction's own mfu/hfu are against the params dtype's peak, as Megatron-LM reports).
/// nullopt without FP8.
std::optional<Utilisation> fp8_peak_utilisation(const Workload& w, const Prediction& p);

void write_prediction_text(const Workload& w, const SimulationResult& result,
                           const std::string& cost_model, std::ostream& out,
                           const ReportOptions& options = {});

void write_prediction_json(const Workload& w, const SimulationResult& result,
                           const std::string& cost_model, std::ostream& out,
                           const ReportOptions& options = {});

/// The resolved configuration every JSON output echoes under "configuration": all parallel
/// sizes (derived ones included), batch, recompute, overlaps, dtype, system; so that rows
/// of many runs join without their scenario files. Uneven stages add the keys that asked for
/// them and "layers_per_stage" / "layers_per_chunk" (transformer layers per pipeline rank,
/// and per rank and virtual stage); an even split prints none of these.
void write_configuration_json(JsonWriter& j, const Workload& w);

/// The "stages" array both the predict JSON and the trace's summary carry. With `split`
/// (given for uneven stages only, so that even runs print as before) each stage also says
/// how many transformer layers it holds ("transformer_layers").
void write_stages_json(JsonWriter& j, const std::vector<StageSummary>& stages,
                       const PipelineSplit* split = nullptr);

/// Chrome trace event JSON of `timeline` (one pid per rank, one tid per stream, memory
/// counters, and a "stepsim" summary object with the stages).
void write_chrome_trace(const Timeline& timeline, const std::vector<StageSummary>& stages,
                        std::ostream& out);

}  // namespace stepsim::sim
