// The regression gate: re-predict every record with the current code.

#include "stepsim/validator/regress.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "stepsim/plan/decompose.hpp"
#include "stepsim/check/load.hpp"
#include "stepsim/simulate/simulate.hpp"

namespace stepsim::calib {
namespace fs = std::filesystem;

namespace {

Result<double> repredict(const Record& rec, const std::string& dir,
                         const std::string& scenarios_dir, const CostModelFactory& factory) {
  const std::string label = (fs::path(dir) / (rec.id + ".record.json")).string();
  auto loaded = load_scenario_text(rec.scenario_json, label, dir, LoadOptions{scenarios_dir});
  if (!loaded) return loaded.errors();
  auto w = apply_overrides(std::move(loaded).value(), rec.overrides);
  if (!w) return w.errors();
  auto cost = factory(*w);
  if (!cost) return cost.errors();
  const WorkloadPlan plan = decompose(*w);
  auto sim = sim::simulate(*w, plan, **cost,
                           validation_simulate_options(rec.async_p2p, rec.async_grad_reduce));
  if (!sim) return sim.errors();
  return sim->prediction.step_time_s;
}

}  // namespace

std::string utc_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

Result<RegressRun> regress(const std::string& dir, double tolerance,
                           const std::string& scenarios_dir, const CostModelFactory& factory) {
  if (!(tolerance > 0)) return Error{"", "--tolerance", "must be a positive fraction, e.g. 0.1"};
  auto records = load_records(dir);
  if (!records) return records.errors();
  RegressRun run;
  run.date = utc_now();
  run.tolerance = tolerance;
  std::vector<double> errors;
  for (const auto& rec : *records) {
    RegressRow row;
    row.id = rec.id;
    row.measured_step_time_s = rec.measured_step_time_s;
    row.tolerance = rec.tolerance > 0 ? rec.tolerance : tolerance;
    auto predicted = repredict(rec, dir, scenarios_dir, factory);
    if (!predicted) {
      row.error = format_errors(predicted.errors());
      row.pass = false;
    } else {
      row.predicted_step_time_s = *predicted;
      row.relative_error = relative_error(row.predicted_step_time_s, row.measured_step_time_s);
      row.pass = std::abs(row.relative_error) <= row.tolerance;
      errors.push_back(std::abs(row.relative_error));
    }
    run.pass = run.pass && row.pass;
    run.rows.push_back(std::move(row));
  }
  if (!errors.empty()) {
    std::sort(errors.begin(), errors.end());
    const std::size_t n = errors.size();
    run.median_abs_relative_error =
        n % 2 == 1 ? errors[n / 2] : 0.5 * (errors[n / 2 - 1] + errors[n / 2]);
  }
  return run;
}

Status append_history(const std::string& dir, const RegressRun& run) {
  nlohmann::ordered_json j;
  j["date"] = run.date;
  j["tolerance"] = run.tolerance;
  j["pass"] = run.pass;
  j["median_abs_relative_error"] = run.median_abs_relative_error;
  auto rows = nlohmann::ordered_json::array();
  for (const auto& r : run.rows) {
    nlohmann::ordered_json row{{"id", r.id},
                               {"predicted_step_time_s", r.predicted_step_time_s},
                               {"measured_step_time_s", r.measured_step_time_s},
                               {"relative_error", r.relative_error},
                               {"tolerance", r.tolerance},
                               {"pass", r.pass}};
    if (!r.error.empty()) row["error"] = r.error;
    rows.push_back(row);
  }
  j["records"] = rows;
  const std::string path = (fs::path(dir) / "history.jsonl").string();
  std::ofstream out(path, std::ios::app);
  out << j.dump() << "\n";
  out.close();
  if (!out) return Error{path, "", "cannot be appended to", ErrorKind::kRuntime};
  return ok_status();
}

std::string format_regress_table(const RegressRun& run) {
  std::ostringstream s;
  char line[256];
  std::snprintf(line, sizeof line, "%-28s %14s %14s %10s %9s  %s\n", "record", "predicted_ms",
                "measured_ms", "rel_error", "tolerance", "result");
  s << line;
  for (const auto& r : run.rows) {
    if (!r.error.empty()) {
      s << r.id << "  FAIL: " << r.error << "\n";
      continue;
    }
    std::snprintf(line, sizeof line, "%-28s %14.3f %14.3f %+9.1f%% %8.1f%%  %s\n", r.id.c_str(),
                  r.predicted_step_time_s * 1e3, r.measured_step_time_s * 1e3,
                  r.relative_error * 100.0, r.tolerance * 100.0, r.pass ? "ok" : "FAIL");
    s << line;
  }
  std::snprintf(line, sizeof line, "median |relative error| %.1f%%, %s\n",
                run.median_abs_relative_error * 100.0,
                run.pass ? "all within tolerance" : "REGRESSION");
  s << line;
  return s.str();
}

}  // namespace stepsim::calib
