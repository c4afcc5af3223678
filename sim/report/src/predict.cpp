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

Result<std::size_t> write_trace_file(const PredictRun& run, const std::string& trace_path,
                                     const TraceShape& shape) {
  Timeline timeline =
      shape.microbatch_level ? microbatch_level(run.result.timeline) : run.result.timeline;
  if (shape.ranks) keep_ranks(timeline, *shape.ranks);
  const Status written = write_output_file(trace_path, [&](std::ostream& out) {
    write_chrome_trace(timeline, run.result.prediction.stages, out);
  });
  if (!written) return written.errors();
  return timeline.slices.size();
}

}  // namespace stepsim::sim
