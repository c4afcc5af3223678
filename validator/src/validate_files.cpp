// The files `stepsim validate` writes: the JSON report, the measured and predicted traces,
// the record for `stepsim regress`.

#include <unistd.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>

#include "stepsim/validator/regress.hpp"
#include "stepsim/validator/validate_command.hpp"
#include "stepsim/base/output_file.hpp"
#include "stepsim/report/report.hpp"

namespace stepsim::calib {
namespace {

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown-host";
  return buf;
}

/// The measured median step at `path`, the prediction beside it (stem + ".predicted").
Status write_traces(const std::string& path, const ValidateOutcome& o) {
  const ValidationReport& report = o.report;
  std::vector<sim::StageSummary> stages;
  for (const auto& st : report.stages) {
    sim::StageSummary summary;
    summary.stage = st.stage;
    summary.busy_s = st.measured.busy_s;
    summary.bubble_s = st.measured.idle_s;
    summary.exposed_comm_s = st.measured.comm_s;
    stages.push_back(summary);
  }
  const Status measured = write_output_file(path, [&](std::ostream& out) {
    sim::write_chrome_trace(measured_timeline(o.measured, median_step(o.measured)), stages, out);
  });
  if (!measured) return measured;
  // trace.json -> trace.predicted.json, trace.json.gz -> trace.predicted.json.gz
  const bool gz = is_gzip_path(path);
  const std::filesystem::path pp(gz ? path.substr(0, path.size() - 3) : path);
  const std::string ppath =
      (pp.parent_path() / (pp.stem().string() + ".predicted" + pp.extension().string())).string() +
      (gz ? ".gz" : "");
  return write_output_file(ppath, [&](std::ostream& out) {
    sim::write_chrome_trace(o.predicted->timeline, o.predicted->prediction.stages, out);
  });
}

}  // namespace

WrittenFiles write_validation_files(const ValidateRequest& request, const ValidateOutcome& outcome,
                                    const ValidationFiles& files) {
  WrittenFiles written;
  auto keep = [&written](const Status& s) {
    if (!s) written.errors.insert(written.errors.end(), s.errors().begin(), s.errors().end());
  };
  const ValidationReport& report = outcome.report;
  if (!files.report_json.empty()) keep(write_report_json(files.report_json, report));
  if (!files.trace.empty() && !outcome.measured.step_times_s.empty()) {
    keep(write_traces(files.trace, outcome));
  }
  if (files.record_dir.empty() || !report.complete) return written;
  const Workload& w = *outcome.workload;
  RecordInputs in;
  in.scenario_path = request.scenario;
  in.scenarios_dir = request.scenarios_dir;
  in.profile_path =
      w.cost_model.kind == CostModelSpec::Kind::kProfile ? w.cost_model.profile_path : "";
  in.overrides = report.overrides;
  in.machine = host_name() + " / " + report.device;
  in.date = utc_now();
  in.report = &report;
  auto path = write_record(files.record_dir, in);
  if (!path) {
    written.errors.insert(written.errors.end(), path.errors().begin(), path.errors().end());
  } else {
    written.record = *path;
  }
  return written;
}

}  // namespace stepsim::calib
