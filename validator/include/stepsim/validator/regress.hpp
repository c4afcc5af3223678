#pragma once
// The regression gate: `validate --record DIR` stores a measurement with everything needed to
// predict it again (the scenario with its system inlined, a copy of the profile, the scale
// overrides); `stepsim regress DIR` re-predicts every record with the current code and fails
// when a relative error exceeds its tolerance.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "stepsim/validator/validate.hpp"
#include "stepsim/cost/cost_model.hpp"
#include "stepsim/base/result.hpp"
#include "stepsim/config/scenario.hpp"

namespace stepsim::calib {

/// One stored measurement: `DIR/<id>.record.json`, its profile in `DIR/<id>.profile.json`.
struct Record {
  int format_version = 1;
  std::string id;             ///< file stem, e.g. "pp2-1f1b" or "pp2-1f1b-L4-W2"
  std::string scenario_name;  ///< the scenario's `name`
  std::string scenario_file;  ///< where it came from (information only)
  /// The scenario as JSON text, self-contained: system inlined, cost_model pointing at the
  /// profile copy (relative to the records folder).
  std::string scenario_json;
  ScaleOverrides overrides;
  std::string profile_file;  ///< file name inside the records folder
  std::string backend;
  std::string machine;
  std::string date;  ///< ISO 8601, UTC
  std::int32_t world_size = 0;
  std::int32_t warmup_steps = 0;
  std::int32_t steps = 0;
  /// The executor ran non-blocking P2P calls beside the compute (ValidationReport::async_p2p);
  /// the re-prediction models the same. false in records written before it existed.
  bool async_p2p = false;
  /// overlap_grad_reduce's reductions ran beside the backward
  /// (ValidationReport::async_grad_reduce); false in records written before it existed.
  bool async_grad_reduce = false;
  double measured_step_time_s = 0;
  std::vector<double> measured_step_times_s;
  std::vector<StageFigures> measured_stages;
  double predicted_step_time_s = 0;  ///< the prediction when it was recorded
  double tolerance = 0;              ///< 0: the gate's --tolerance applies
  bool operator==(const Record&) const = default;
};

/// What `validate --record` knows when it writes a record.
struct RecordInputs {
  std::string scenario_path;  ///< the scenario file as given on the command line
  std::string scenarios_dir;  ///< resolves the scenario's relative system path
  std::string profile_path;   ///< the profile the prediction used
  ScaleOverrides overrides;
  std::string machine;
  std::string date;
  const ValidationReport* report = nullptr;
};

/// Writes `dir/<id>.record.json` and the profile copy; creates `dir`. Returns the record path.
/// Now, in UTC, as ISO 8601 ("2026-11-23T08:10:58Z"): the date of records and regress runs.
std::string utc_now();

Result<std::string> write_record(const std::string& dir, const RecordInputs& in);

/// Reads one record file. Errors name the file and the key.
Result<Record> load_record(const std::string& path);

/// Every `*.record.json` of `dir`, sorted by id.
Result<std::vector<Record>> load_records(const std::string& dir);

using CostModelFactory = std::function<Result<std::unique_ptr<CostModel>>(const Workload&)>;

struct RegressRow {
  std::string id;
  double predicted_step_time_s = 0;
  double measured_step_time_s = 0;
  double relative_error = 0;  ///< (predicted - measured) / measured
  double tolerance = 0;
  bool pass = false;
  std::string error;  ///< the record could not be predicted (counts as a failure)
  bool operator==(const RegressRow&) const = default;
};

struct RegressRun {
  std::string date;
  double tolerance = 0;  ///< default tolerance of the run
  std::vector<RegressRow> rows;
  bool pass = true;
  double median_abs_relative_error = 0;
  bool operator==(const RegressRun&) const = default;
};

/// Re-predicts every record of `dir` (loaded with `scenarios_dir` for relative paths) with
/// the current code and the cost model `factory` makes; |relative error| > tolerance fails.
Result<RegressRun> regress(const std::string& dir, double tolerance,
                           const std::string& scenarios_dir, const CostModelFactory& factory);

/// Appends `run` as one JSON line to `dir/history.jsonl`.
Status append_history(const std::string& dir, const RegressRun& run);

/// The run as a plain-text table.
std::string format_regress_table(const RegressRun& run);

}  // namespace stepsim::calib
