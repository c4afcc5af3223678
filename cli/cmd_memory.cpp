// `stepsim memory`: the analytic memory of every pipeline stage (weights, gradients,
// optimizer states, activations at the peak of the schedule), without simulating.

#include <CLI/CLI.hpp>

#include <memory>
#include <optional>
#include <ostream>
#include <string>

#include "commands.hpp"
#include "common.hpp"
#include "stepsim/cost/make_cost_model.hpp"
#include "stepsim/report/memory_report.hpp"
#include "stepsim/sweep/make_it_fit.hpp"

namespace stepsim::cli {
namespace {

struct MemoryOptions {
  std::string scenario;
  std::string format = "text";
};

int run_memory(const MemoryOptions& o, Env& env) {
  std::string text;
  const std::optional<Workload> w = load_or_report(o.scenario, env, &text);
  if (!w) return env.exit_code != 0 ? env.exit_code : 2;
  // The scenario is accepted only as `check` accepts it: with the profile it names (a
  // memory figure for a scenario that check and predict reject would be a different rule).
  const auto cost = make_cost_model(*w);
  if (!cost.ok()) return report_errors(cost.errors(), env);
  const std::optional<sim::FitAdvice> advice =
      sim::analytic_fit_advice(*w, defaulted_keys_of_scenario(text), **cost);
  const sim::FitAdvice* fit = advice ? &*advice : nullptr;
  std::ostream& out = *env.out;
  if (o.format == "json") {
    sim::write_memory_json(*w, out, fit);
  } else {
    sim::write_memory_text(*w, out, fit);
  }
  out.flush();
  return out ? 0 : 1;
}

}  // namespace

void add_memory_command(CLI::App& app, Env& env) {
  auto opts = std::make_shared<MemoryOptions>();
  CLI::App* cmd = app.add_subcommand(
      "memory",
      "Analytic memory per pipeline stage, without simulating: weights, gradients and\n"
      "optimizer states (18 bytes per parameter, 6 + 12/dp with the distributed optimizer)\n"
      "and activations at the peak of Megatron's schedule (Korthikanti et al. 2022). A job that\n"
      "does not fit gets the smallest changes that do, fastest first (each simulated).");
  cmd->add_option("scenario", opts->scenario, "scenario file (JSON)")->required();
  cmd->add_option("--format", opts->format, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  cmd->callback([opts, &env] { env.exit_code = run_memory(*opts, env); });
}

}  // namespace stepsim::cli
