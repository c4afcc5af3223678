// stepsim accuracy [RUNS.json]: predicted against measured for every published run.

#include <CLI/CLI.hpp>
#include <memory>
#include <ostream>
#include <set>

#include "commands.hpp"
#include "common.hpp"
#include "stepsim/config/published_runs.hpp"
#include "stepsim/base/output_file.hpp"
#include "stepsim/report/accuracy.hpp"

namespace stepsim::cli {

namespace {

int run_explain(const std::vector<PublishedRun>& runs, Env& env) {
  Result<sim::ExplainReport> report = sim::accuracy_explain(runs, env.scenarios_dir);
  if (!report.ok()) return report_errors(report.errors(), env);
  sim::write_explain_table(*report, *env.out);
  return 0;
}

int run_accuracy(const std::string& runs_file, const std::string& by_profile, bool explain,
                 Env& env) {
  const std::string path =
      runs_file.empty() ? env.scenarios_dir + "/published/runs.json" : runs_file;
  Result<std::vector<PublishedRun>> runs = load_published_runs(path);
  if (!runs.ok()) return report_errors(runs.errors(), env);
  if (explain && !by_profile.empty()) {
    return report_errors(Errors{Error{"", "--explain", ": not with --by-profile"}}, env);
  }
  if (explain) return run_explain(*runs, env);
  Result<sim::AccuracyReport> report = sim::accuracy_report(*runs, env.scenarios_dir);
  if (!report.ok()) return report_errors(report.errors(), env);
  sim::write_accuracy_table(*report, *env.out);
  std::set<std::string> sources;
  for (const sim::AccuracyRow& r : report->rows) sources.insert(r.source);
  *env.out << "\nmeasured figures:\n";
  for (const std::string& s : sources) *env.out << "  " << s << "\n";
  if (by_profile.empty()) return 0;
  const Status written = write_output_file(by_profile, [&](std::ostream& out) {
    sim::write_accuracy_by_cost_data_json(sim::accuracy_by_cost_data(*report), out);
  });
  if (!written) return report_errors(written.errors(), env);
  return 0;
}

}  // namespace

void add_accuracy_command(CLI::App& app, Env& env) {
  auto runs = std::make_shared<std::string>();
  auto by_profile = std::make_shared<std::string>();
  auto explain = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand(
      "accuracy",
      "Predict every published run (scenarios/published/runs.json) and compare with the step\n"
      "time its authors measured: a report of what stepsim misses, not a target to tune to.");
  cmd->add_option("runs", *runs, "runs file (default: scenarios/published/runs.json)");
  cmd->add_option("--by-profile", *by_profile,
                  "also write the mean error per profile (roofline) as JSON to FILE: the table "
                  "predict quotes (scenarios/published/accuracy-by-profile.json)");
  cmd->add_flag("--explain", *explain,
                "per run, what each mechanism (host, GEMM mechanics, spread, communication, "
                "contention) adds to the predicted step: predicted again with it switched off");
  cmd->callback([runs, by_profile, explain, &env] {
    env.exit_code = run_accuracy(*runs, *by_profile, *explain, env);
  });
}

}  // namespace stepsim::cli
