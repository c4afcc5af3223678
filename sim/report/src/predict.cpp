// `stepsim predict` as a library call (predict.hpp).

#include "stepsim/report/predict.hpp"

#include <fstream>

#include "stepsim/plan/decompose.hpp"
#include "stepsim/cost/make_cost_model.hpp"
#include "stepsim/base/output_file.hpp"
#include "stepsim/report/open_accuracy.hpp"
#include "stepsim/report/report.hpp"

namespace stepsim::sim {

PredictOutcome predict(const Workload& w, const PredictOptions& options) {
  Result<std::unique_ptr<CostModel>> cost = make_cost_model(w);
  if (!cost.ok()) return {std::nullopt, cost.errors()};
  const WorkloadPlan plan = decompose(w);
  SimulateOptions simulate_options;
  simulate_options.keep_timeline = options.keep_timeline;
  simulate_options.gpipe = options.gpipe;
  simulate_options.stragglers = options.stragglers;
  simulate_options.contention = options.contention;
  simulate_options.full_rank = options.full_rank;
  simulate_options.slow_nics = options.slow_nics;
  simulate_options.jitter_sigma = options.jitter_sigma;
  simulate_options.seed = options.seed;
  Result<SimulationResult> result = simulate(w, plan, **cost, simulate_options);
  if (!result.ok()) return {std::nullopt, result.errors()};
  PredictRun run{std::move(result).value(), (*cost)->describe()};
  if (!options.scenarios_dir.empty()) {
    // What `stepsim accuracy` measured with the same cost data: stated, never applied.
    Result<std::optional<OpenAccuracy>> accuracy =
        open_accuracy_of(w, open_accuracy_table_path(options.scenarios_dir));
    if (!accuracy.ok()) return {std::nullopt, accuracy.errors()};
    run.result.prediction.provenance.accuracy = *accuracy;
  }
  return {std::move(run), {}};
}

Errors check_trace_shape(const TraceShape& shape, const Workload& w) {
  Errors errors;
  if (!shape.ranks) return errors;
  const std::int64_t pp = w.training.pipeline_model_parallel_size;
  for (const std::int32_t r : *shape.ranks) {
    if (r >= 0 && r < pp) continue;
    errors.push_back(Error{"", "--trace-ranks",
                           ": rank " + std::to_string(r) +
                               " does not exist: pipeline_model_parallel_size is " +
                               std::to_string(pp)});
    break;
  }
  return errors;
}

namespace {

std::string megabytes(std::int64_t bytes) {
  return std::to_string((bytes + 500'000) / 1'000'000) + " MB";
}

}  // namespace

Result<TraceWritten> write_trace_file(const PredictRun& run, const std::string& trace_path,
                                      const TraceShape& shape) {
  Timeline timeline = run.result.timeline;
  if (shape.ranks) keep_ranks(timeline, *shape.ranks);
  TraceWritten written;
  written.microbatch_level = shape.level == TraceLevel::kMicrobatch;
  if (shape.level == TraceLevel::kAuto) {
    const std::int64_t op_bytes = estimate_trace_bytes(timeline);
    const std::size_t op_slices = timeline.slices.size();
    written.microbatch_level = op_bytes > kTraceBudgetBytes;
    if (written.microbatch_level) {
      timeline = microbatch_level(timeline);
      written.note = "an op-level trace would be about " + megabytes(op_bytes) + " (" +
                     std::to_string(op_slices) +
                     " slices), over the default's " + megabytes(kTraceBudgetBytes) +
                     ": written at micro-batch level (about " +
                     megabytes(estimate_trace_bytes(timeline)) +
                     "); --trace-level op writes every op";
    }
  } else if (written.microbatch_level) {
    timeline = microbatch_level(timeline);
  }
  const TraceMeta meta{written.microbatch_level ? "microbatch" : "op", written.note};
  const Status status = write_output_file(trace_path, [&](std::ostream& out) {
    write_chrome_trace(timeline, run.result.prediction.stages, out, meta);
  });
  if (!status) return status.errors();
  written.slices = timeline.slices.size();
  return written;
}

}  // namespace stepsim::sim
