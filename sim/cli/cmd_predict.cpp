// stepsim predict [SCENARIO] [--format text|json] [--trace FILE]

#include <CLI/CLI.hpp>

#include <fstream>
#include <iostream>

#include "commands.hpp"
#include "common.hpp"
#include "stepsim/core/decompose.hpp"
#include "stepsim/core/make_cost_model.hpp"
#include "stepsim/sim/report.hpp"
#include "stepsim/sim/simulate.hpp"

namespace stepsim::cli {

namespace {

struct PredictArgs {
  std::string scenario;
  std::string format = "text";
  std::string trace;
  bool gpipe = false;
};

int run_predict(const PredictArgs& args, Env& env) {
  std::optional<Workload> w = load_or_report(args.scenario, env);
  if (!w) return 2;
  Result<std::unique_ptr<CostModel>> cost = make_cost_model(*w);
  if (!cost.ok()) {
    *env.err << format_errors(cost.errors());
    return 2;
  }
  const WorkloadPlan plan = decompose(*w);
  sim::SimulateOptions options;
  options.keep_timeline = !args.trace.empty();
  options.gpipe = args.gpipe;
  Result<sim::SimulationResult> result = sim::simulate(*w, plan, **cost, options);
  if (!result.ok()) {
    *env.err << "stepsim predict: " << format_errors(result.errors());
    return 1;
  }
  const std::string cost_name = (*cost)->describe();
  if (args.format == "json") {
    sim::write_prediction_json(*w, *result, cost_name, *env.out);
  } else {
    sim::write_prediction_text(*w, *result, cost_name, *env.out);
  }
  if (!args.trace.empty()) {
    std::ofstream trace(args.trace, std::ios::binary);
    if (!trace) {
      *env.err << "stepsim predict: cannot write trace file '" << args.trace << "'\n";
      return 1;
    }
    sim::write_chrome_trace(result->timeline, result->prediction.stages, trace);
    if (!trace.flush()) {
      *env.err << "stepsim predict: writing trace file '" << args.trace << "' failed\n";
      return 1;
    }
    if (args.format != "json") {
      *env.out << "  trace written to " << args.trace << " ("
               << result->timeline.slices.size() << " slices; open in ui.perfetto.dev or "
               << "stepsim-viewer)\n";
    }
  }
  return 0;
}

}  // namespace

void add_predict_command(CLI::App& app, Env& env) {
  auto args = std::make_shared<PredictArgs>();
  CLI::App* cmd = app.add_subcommand(
      "predict",
      "Simulate one training step: step time, pipeline bubbles, exposed communication, MFU/HFU,\n"
      "per-stage memory and a critical-path breakdown. Without SCENARIO, predicts the default\n"
      "scenario (GPT-3 175B on 64 A100s, t8 p8 v3, sequence parallel, selective recompute).");
  cmd->add_option("scenario", args->scenario, "scenario JSON file (see scenarios/)");
  cmd->add_option("--format", args->format, "output format")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  cmd->add_option("--trace", args->trace,
                  "write the simulated timeline as a Chrome trace (Perfetto, stepsim-viewer)");
  cmd->add_flag("--gpipe", args->gpipe,
                "simulate the GPipe schedule (all forwards, then all backwards) for comparison");
  cmd->callback([args, &env] { env.exit_code = run_predict(*args, env); });
}

}  // namespace stepsim::cli
