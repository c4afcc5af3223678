// `stepsim validate SCENARIO --backend cuda|cpu`: under mpirun, one rank per device, runs the
// simulator's program for real, measures it and compares with the prediction. The run is the
// library's (calib::validate_scenario); this parses, starts MPI, prints, and stops the job
// when a rank fails while its peers may wait on it.

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <ostream>
#include <thread>

#include "commands.hpp"
#include "common.hpp"
#include "stepsim/calibration/mpi_session.hpp"
#include "stepsim/validator/validate_command.hpp"

namespace stepsim::cli {
namespace {

/// The testing flags --fail-rank, --fail-at-task and --fail-mode, as a hook before every task
/// of the executor: world rank `rank` hangs, or exits with status 3, when it reaches its task
/// number `at_task` (counted from 0 over every step of every round, warm-up included).
struct InjectedFault {
  std::int32_t rank = -1;
  std::int64_t at_task = -1;
  std::string mode = "hang";
  std::int64_t seen = 0;             ///< tasks this rank reached so far
  std::atomic<bool> hanging{false};  ///< this rank hangs on purpose
};

struct ValidateArgs {
  calib::ValidateRequest request;
  calib::ValidationFiles files;
  InjectedFault fault;
};

void install_fault(ValidateArgs& a, std::int32_t me) {
  InjectedFault& fault = a.fault;
  if (fault.rank != me || fault.at_task < 0) return;
  a.request.before_task = [&fault](const calib::ExecTask&) {
    if (fault.seen++ != fault.at_task) return;
    if (fault.mode == "exit") std::_Exit(3);
    // A hung rank: it stops making progress and leaves the report to the ranks waiting on it.
    fault.hanging.store(true);
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  };
}

/// A rank that made no progress: say so, keep the partial report (rank 0), stop every rank.
void install_timeout(ValidateArgs& a, const calib::MpiSession& session, std::ostream& err) {
  a.request.on_timeout = [&a, &session, &err](const std::string& message,
                                              const calib::ValidationReport* partial) {
    if (a.fault.hanging.load()) return;
    err << "stepsim validate: " << message << "; stopping every rank\n";
    if (partial != nullptr && !a.files.report_json.empty()) {
      const Status written = calib::write_report_json(a.files.report_json, *partial);
      if (!written) err << format_errors(written.errors());
      err << "stepsim validate: partial results in " << a.files.report_json << "\n";
    }
    session.abort_all(1);  // this rank's own thread is stuck in the backend
  };
}

/// Prints a failed run's errors as each stage reports them; returns the exit status.
int report_failure(const calib::ValidateOutcome& o, const calib::MpiSession& session,
                   std::ostream& err) {
  using Stage = calib::ValidateStage;
  if (o.stage == Stage::kSteps) {
    err << "stepsim validate: rank " << o.rank << ": " << format_errors(o.errors);
    const int status = exit_status(o.errors);
    if (status == 2) return 2;  // bad input: every rank found it alike
    session.abort_all(status);  // the other ranks may be waiting on this one
  }
  if (!o.root) return o.stage == Stage::kInput ? 2 : 1;
  if (o.stage == Stage::kPredict) err << "stepsim validate: ";
  if (o.stage == Stage::kCalibration) err << "stepsim validate: --calibrate: ";
  err << format_errors(o.errors);
  return o.stage == Stage::kInput ? 2 : 1;
}

/// Rank 0's outputs: the text report, then the files. Returns the exit status.
int write_outputs(const ValidateArgs& a, const calib::ValidateOutcome& o, Env& env) {
  *env.out << calib::format_report_text(o.report);
  const calib::WrittenFiles written = calib::write_validation_files(a.request, o, a.files);
  *env.err << format_errors(written.errors);
  if (!written.record.empty()) *env.out << "record: " << written.record << "\n";
  return written.errors.empty() ? 0 : 1;
}

int run_validate(ValidateArgs& a, Env& env) {
  prepare_mpi_launch();
  auto session = calib::MpiSession::start(nullptr, nullptr);
  if (!session) {
    *env.err << "stepsim validate: " << format_errors(session.errors());
    return 1;
  }
  const calib::MpiSession& s = **session;
  if (a.fault.mode != "hang" && a.fault.mode != "exit") {
    if (s.world_rank() == 0)
      *env.err << format_errors({Error{"", "--fail-mode", " must be hang or exit"}});
    return 2;
  }
  a.request.scenarios_dir = env.scenarios_dir;
  install_fault(a, s.world_rank());
  install_timeout(a, s, *env.err);
  const calib::ValidateOutcome outcome = calib::validate_scenario(
      s, a.request, s.world_rank() == 0 ? env.err : nullptr, isatty(STDERR_FILENO) != 0);
  if (outcome.stage != calib::ValidateStage::kDone) return report_failure(outcome, s, *env.err);
  if (!outcome.root) return 0;
  return write_outputs(a, outcome, env);
}

}  // namespace

void add_validate_command(CLI::App& app, Env& env) {
  auto args = std::make_shared<ValidateArgs>();
  auto* cmd = app.add_subcommand(
      "validate",
      "Run the simulator's schedule for real (under mpirun, one rank per device) and compare\n"
      "the measured step with the prediction. One host thread per rank issues every op. The\n"
      "cuda backend enqueues each on the GPU's stream ahead of it and times the kernels there;\n"
      "the cpu backend runs each where it is issued. Megatron's non-blocking P2P calls\n"
      "(overlap_p2p_comm, the context-parallel ring) and overlapped gradient reductions\n"
      "(overlap_grad_reduce) run beside the compute: on streams of their own (cuda), on threads\n"
      "of their own (cpu). The prediction models exactly that, and the report gives the overlap\n"
      "predicted and measured per stage.");
  cmd->add_option("scenario", args->request.scenario, "Scenario file")->required();
  cmd->add_option("--backend", args->request.backend, "cuda or cpu")->required();
  cmd->add_option("--steps", args->request.steps, "Measured steps")->capture_default_str();
  cmd->add_option("--warmup", args->request.warmup, "Untimed steps first")->capture_default_str();
  cmd->add_option("--out", args->files.report_json, "Write the comparison as JSON (REPORT.json)");
  cmd->add_option("--trace", args->files.trace,
                  "Write the measured step as a Chrome trace (and the prediction beside it, "
                  "FILE stem + .predicted); FILE.json.gz writes both gzip-compressed");
  cmd->add_option("--record", args->files.record_dir,
                  "Store the measurement in DIR for 'stepsim regress'");
  cmd->add_option("--num-layers", args->request.overrides.num_layers,
                  "Scale down: fewer layers, same shapes");
  cmd->add_option("--world-size", args->request.overrides.world_size,
                  "Scale down: fewer data-parallel replicas");
  cmd->add_option("--profile", args->request.profile,
                  "Profile for the prediction (overrides cost_model)");
  cmd->add_option("--calibrate", args->request.calibrate,
                  "Calibrate the scenario's own op shapes in this process, between the measured "
                  "steps (--rounds), write that profile to FILE and predict with it (on a shared "
                  "machine, whose speed drifts over seconds, profile and steps then agree)");
  cmd->add_option("--rounds", args->request.rounds,
                  "With --calibrate: calibration rounds, each followed by its share of the "
                  "warm-up and measured steps; the profile takes each point's median over the "
                  "rounds, so that profile and steps sample the same stretch of the machine's "
                  "time [default: --steps, one round per measured step]");
  cmd->add_option("--timeout", args->request.timeout_s,
                  "Seconds without progress after which every rank is stopped")
      ->capture_default_str();
  cmd->add_option("--threads", args->request.threads, "CPU backend: Eigen threads per rank")
      ->capture_default_str();
  cmd->add_option("--fail-rank", args->fault.rank, "Testing: this world rank fails");
  cmd->add_option("--fail-at-task", args->fault.at_task,
                  "Testing: ... when it reaches this task (counted from 0 over all steps)");
  cmd->add_option("--fail-mode", args->fault.mode, "Testing: hang or exit")->capture_default_str();
  cmd->callback([args, &env] { env.exit_code = run_validate(*args, env); });
}

}  // namespace stepsim::cli
