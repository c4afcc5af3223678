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
/// `total_s`: each stage's BubbleParts (simulate.hpp: schedule, stage imbalance, waits for
/// communication) averaged over the stages.
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
/// With NVFP4 training (training.fp4): the same against the system's dense FP4 peak; nullopt
/// without FP4.
std::optional<Utilisation> fp4_peak_utilisation(const Workload& w, const Prediction& p);

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

/// How a trace was shaped, for its summary: `level` "op" or "microbatch" ("trace_level"),
/// and why when the default chose it ("trace_note"); both left out when empty.
struct TraceMeta {
  std::string level;
  std::string note;
};

/// Chrome trace event JSON of `timeline` (one pid per rank, one tid per stream, a "bubble"
/// and an "exposed communication" track per rank from its idle stretches, memory counters,
/// and a "stepsim" summary object with the stages).
void write_chrome_trace(const Timeline& timeline, const std::vector<StageSummary>& stages,
                        std::ostream& out, const TraceMeta& meta = {});

/// About how many bytes write_chrome_trace writes for `timeline` (uncompressed), from its
/// events' counts and their strings' lengths, without writing it.
std::int64_t estimate_trace_bytes(const Timeline& timeline);

}  // namespace stepsim::sim
