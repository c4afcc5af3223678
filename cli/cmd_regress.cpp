// `stepsim regress RECORDS_DIR [--tolerance X]`: the CI gate. Re-predicts every stored
// measurement with the current code; exit 1 when one is off by more than its tolerance.

#include <CLI/CLI.hpp>
#include <memory>
#include <ostream>

#include "commands.hpp"
#include "common.hpp"
#include "stepsim/validator/regress.hpp"
#include "stepsim/cost/make_cost_model.hpp"

namespace stepsim::cli {

namespace {

struct RegressArgs {
  std::string dir;
  double tolerance = 0.1;
};

int run_regress(const RegressArgs& a, Env& env) {
  auto factory = [](const Workload& w) { return make_cost_model(w); };
  auto run = calib::regress(a.dir, a.tolerance, env.scenarios_dir, factory);
  if (!run) return report_errors(run.errors(), env);
  *env.out << calib::format_regress_table(*run);
  if (auto h = calib::append_history(a.dir, *run); !h) return report_errors(h.errors(), env);
  return run->pass ? 0 : 1;
}

}  // namespace

void add_regress_command(CLI::App& app, Env& env) {
  auto args = std::make_shared<RegressArgs>();
  auto* cmd = app.add_subcommand(
      "regress",
      "CI gate: re-predict every measurement stored by 'validate --record' with the current\n"
      "code, print a table, append the run to RECORDS_DIR/history.jsonl, and fail (exit 1)\n"
      "when a relative error exceeds its tolerance.");
  cmd->add_option("records_dir", args->dir, "Folder of *.record.json files")->required();
  cmd->add_option("--tolerance", args->tolerance,
                  "Largest accepted |predicted - measured| / measured (records may set their "
                  "own)")
      ->capture_default_str();
  cmd->callback([args, &env] { env.exit_code = run_regress(*args, env); });
}

}  // namespace stepsim::cli
