#pragma once
// `stepsim validate` as a library call: load and scale the scenario, predict, run the
// simulator's program on a backend (in rounds interleaved with an in-process calibration
// when asked), compare, and write the report, the traces and the record. The CLI parses the
// arguments, starts MPI, calls this and prints; the Python module can call it too.

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>

#include "stepsim/validator/executor.hpp"
#include "stepsim/validator/validate.hpp"
#include "stepsim/cost/profile.hpp"
#include "stepsim/base/result.hpp"
#include "stepsim/config/scenario.hpp"
#include "stepsim/simulate/simulate.hpp"

namespace stepsim::calib {

class MpiSession;

struct ValidateRequest {
  std::string scenario;       ///< scenario file
  std::string scenarios_dir;  ///< where `system` names are looked up (LoadOptions)
  std::string backend;        ///< "cuda" or "cpu"
  std::int32_t steps = 3;     ///< measured steps, over every round
  std::int32_t warmup = 1;    ///< untimed steps before the first round's (later: at most 1)
  ScaleOverrides overrides;   ///< --num-layers, --world-size
  std::string profile;        ///< predict with this profile (overrides cost_model)
  /// Calibrate the scenario's own op shapes in this process, write the profile here and
  /// predict with it. Exclusive with `profile`.
  std::string calibrate;
  int rounds = 0;         ///< calibration rounds; 0: one per measured step with `calibrate`, else 1
  double timeout_s = 60;  ///< seconds without progress before `on_timeout`
  int threads = 1;        ///< cpu backend: Eigen threads per rank
  /// Called on every rank before each task it issues (ExecutorOptions::before_task). May be
  /// empty.
  std::function<void(const ExecTask& task)> before_task;
  /// Called on the watchdog's thread of a rank that made no progress for `timeout_s`, with
  /// the message naming it and, at rank 0, the report of what was measured so far (every
  /// round's complete steps; null on other ranks). The rank's own thread is blocked in the
  /// backend: the caller stops the job (MpiSession::abort_all). Empty: no watchdog.
  std::function<void(const std::string& message, const ValidationReport* partial)> on_timeout;
};

/// Where validate_scenario stopped; the CLI maps it to its message and exit status.
enum class ValidateStage : std::uint8_t {
  kDone,         ///< validated: `report` (rank 0) is complete
  kInput,        ///< the request or the scenario is bad; every rank finds it alike
  kPredict,      ///< the schedule or the prediction failed
  kBackend,      ///< the backend could not start
  kSteps,        ///< a step failed on this rank: its peers may wait on it forever
  kCalibration,  ///< the in-process calibration failed
  kProfile,      ///< the calibrated profile could not be written (rank 0)
};

struct ValidateOutcome {
  ValidateStage stage = ValidateStage::kDone;
  Errors errors;  ///< stage != kDone
  bool root = true;
  std::int32_t rank = 0;
  std::optional<Workload> workload;                ///< scaled, with the cost model used
  std::optional<sim::SimulationResult> predicted;  ///< the last prediction (timeline kept)
  Measurement measured;                            ///< every round's steps
  ValidationReport report;                         ///< rank 0, stage kDone
};

/// Runs the validation on this rank of `session`'s world (every rank calls it alike, one
/// rank per device). `err` (rank 0's stderr, or null) receives progress; `terminal` draws it
/// in place. Failures come back in the outcome, never as a stopped process: after a failed
/// step (stage kSteps, a runtime error) the caller stops the job, since peers may wait on
/// this rank forever.
ValidateOutcome validate_scenario(const MpiSession& session, const ValidateRequest& request,
                                  std::ostream* err, bool terminal);

/// The files `validate` writes beside its text report; empty paths are skipped.
struct ValidationFiles {
  std::string report_json;  ///< --out: report_to_json
  /// --trace: the measured median step as a Chrome trace, and the prediction beside it
  /// (stem + ".predicted" + extension).
  std::string trace;
  std::string record_dir;  ///< --record: a record for `stepsim regress` (complete runs)
};

struct WrittenFiles {
  std::string record;  ///< the record written; empty when none
  Errors errors;       ///< files that could not be written (runtime errors)
};

/// Writes rank 0's outputs of a finished validation.
WrittenFiles write_validation_files(const ValidateRequest& request, const ValidateOutcome& outcome,
                                    const ValidationFiles& files);

}  // namespace stepsim::calib
