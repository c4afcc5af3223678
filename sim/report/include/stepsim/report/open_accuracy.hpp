#pragma once
// What `stepsim accuracy` measured, per cost data (a profile file, or the roofline of a
// system), for `predict` to state beside its prediction (issue 37, item 6): a fact of the
// open report, never a correction applied to a prediction. Predicting the open runs takes
// too long for every `predict`, so `stepsim accuracy --by-profile FILE` writes the table
// (scenarios/published/accuracy-by-profile.json, regenerated with the goldens by
// tests/golden/regenerate.sh) and ctest accuracy_by_profile_current compares it with what the
// current code and data give.

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "stepsim/base/result.hpp"
#include "stepsim/config/scenario.hpp"
#include "stepsim/cost/provenance.hpp"

namespace stepsim::sim {

struct AccuracyReport;  // accuracy.hpp

/// The cost data a job is priced with: a profile by its file name and the FNV-1a 64 hash of
/// its bytes (a profile matches whatever its path, and only with the same contents), or the
/// roofline by its system's name (`fnv1a64` empty).
struct CostData {
  std::string name;     ///< "a100-sxm4-80gb-public.json", "roofline dgx-a100-80gb"
  std::string fnv1a64;  ///< 16 hex digits; empty for the roofline
  bool operator==(const CostData&) const = default;
};

/// `w`'s cost data; errors: its profile file cannot be read.
Result<CostData> cost_data_of(const Workload& w);

struct CostDataAccuracy {
  CostData cost_data;
  OpenAccuracy accuracy;
  bool operator==(const CostDataAccuracy&) const = default;
};

/// The report's runs grouped by their cost data (AccuracyRow::cost_data), sorted by name.
std::vector<CostDataAccuracy> accuracy_by_cost_data(const AccuracyReport& report);

/// The table file: {"format_version": 1, "note": ..., "cost_data": [{"name", "fnv1a64",
/// "runs", "mean_error", "mean_absolute_error", "min_error", "max_error"}]}, errors rounded
/// to 1e-4.
void write_accuracy_by_cost_data_json(const std::vector<CostDataAccuracy>& table,
                                      std::ostream& out);

/// Where predict reads the table: `scenarios_dir`/published/accuracy-by-profile.json.
std::string open_accuracy_table_path(const std::string& scenarios_dir);

/// What the table at `path` says of `w`'s cost data: nullopt when there is no table file,
/// runs 0 when no open run uses the same data. Errors: the table or the profile cannot be
/// read, or the table is not of the form above.
Result<std::optional<OpenAccuracy>> open_accuracy_of(const Workload& w, const std::string& path);

}  // namespace stepsim::sim
