// stepsim check SCENARIO: load and validate only (the scenario, its system file and its
// calibration profile). Prints one summary line, or one line per problem (exit status 2), or,
// for a valid job that does not fit in memory, the changes that do (exit status 3).

#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <ostream>
#include <string>

#include "commands.hpp"
#include "common.hpp"
#include "stepsim/config/layout_words.hpp"
#include "stepsim/config/shipped.hpp"
#include "stepsim/cost/make_cost_model.hpp"
#include "stepsim/report/fit_advice.hpp"
#include "stepsim/sweep/make_it_fit.hpp"
#include "stepsim/cost/nccl_model.hpp"
#include "stepsim/plan/decompose.hpp"

namespace stepsim::cli {

void add_check_command(CLI::App& app, Env& env) {
  auto path = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "check",
      "Validate a scenario file against Megatron-LM's argument rules; print a summary "
      "or every problem found (exit status 2). A valid job that does not fit in GPU memory "
      "(the analytic model) prints the smallest changes that fit (exit status 3).");
  cmd->add_option("SCENARIO", *path, "scenario JSON file")->required();
  cmd->callback([path, &env] {
    std::string text;
    const auto w = load_or_report(*path, env, &text);
    if (!w) return;
    // Building the cost model reads and checks the calibration profile, if the scenario
    // names one, so that check reports everything predict would reject.
    const auto cost = make_cost_model(*w);
    if (!cost.ok()) {
      *env.err << format_errors(cost.errors());
      env.exit_code = 2;
      return;
    }
    // NCCL_ALGO / NCCL_PROTO that leave a collective of the job no algorithm (NCCL stops).
    const bool restricted = !w->training.nccl_algo.empty() || !w->training.nccl_proto.empty();
    if (const Errors none = restricted ? nccl_unavailable_errors(*w, decompose(*w)) : Errors{};
        !none.empty()) {
      *env.err << format_errors(none);
      env.exit_code = 2;
      return;
    }
    const std::optional<sim::FitAdvice> advice =
        sim::analytic_fit_advice(*w, defaulted_keys_of_scenario(text), **cost);
    if (advice) sim::write_fit_advice_text(*advice, *env.out, *path + ": " + w->name);
    const TrainingConfig& t = w->training;
    *env.out << (advice ? "valid (Megatron's rules), but does not fit: " : "ok: ") << *path
             << ": " << w->name << ": " << layout_words(*w, "=") << " (world_size=" << t.world_size
             << ", global_batch_size=" << t.global_batch_size << ") system=" << w->system.name
             << " cost_model=" << (*cost)->describe();
    if (const std::string note = default_cost_model_note(w->cost_model, w->system.gpu_name);
        !note.empty()) {
      *env.out << " (" << note << ")";
    }
    *env.out << "\n";
    env.exit_code = advice ? kExitDoesNotFit : 0;
  });
}

}  // namespace stepsim::cli
