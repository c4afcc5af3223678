#pragma once
// `stepsim calibrate` as a library call: the measurement plan (the grid, plus a scenario's
// exact shapes), the backend, the rounds with their journal, and the profile file. The CLI
// parses the arguments and prints; this owns the run.

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "stepsim/calibration/calibrate.hpp"
#include "stepsim/ops/plan.hpp"
#include "stepsim/base/result.hpp"

namespace stepsim::calib {

struct CalibrateRequest {
  std::string backend;  ///< "cuda" or "cpu"
  std::string out;      ///< the profile to write; the journal is <out>.journal
  /// Scenarios whose exact GEMM shapes, kernels and collective sizes are measured too.
  std::vector<WorkloadPlan> scenario_plans;
  std::vector<std::string> scenario_names;  ///< one per plan
  bool quick = false;
  bool fp8 = false;  ///< cuda: also every GEMM in FP8
  bool flush_cache = false;
  int threads = 1;
  int repeats = 5;
  int warmup = 2;
  long long stop_after = -1;  ///< testing: stop after this many new measurements
};

/// Checks what can be checked before MPI starts (the output folder exists; FP8 only on the
/// cuda backend).
Errors check_calibrate_request(const CalibrateRequest& request);

struct CalibrateOutcome {
  bool root = true;          ///< world rank 0: the one that writes and reports
  std::int32_t rank = 0;
  std::int32_t world_size = 1;
  std::optional<CalibrationRun> run;  ///< absent on failure
  std::string journal_path;
  bool profile_written = false;  ///< complete and written to `out` (journal removed)
  Errors errors;  ///< failures: runtime (a device, MPI, a file) or a foreign journal (input)
};

/// Starts MPI, measures and (rank 0, when complete) writes the profile. `err` (rank 0's
/// stderr, or null) receives progress and what the scenario could not measure.
CalibrateOutcome calibrate_profile(const CalibrateRequest& request, std::ostream* err,
                                   bool terminal);

/// What rank 0 prints when done: the profile summary and the points measured, or where
/// the journal stopped.
void write_calibrate_report(std::ostream& out, const CalibrateRequest& request,
                            const CalibrateOutcome& outcome);

}  // namespace stepsim::calib
