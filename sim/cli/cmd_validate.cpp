// `stepsim validate SCENARIO --backend cuda|cpu`: under mpirun, one rank per device, runs the
// simulator's program for real, measures it and compares with the prediction.

#include <malloc.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <ostream>
#include <thread>

#include "commands.hpp"
#include "common.hpp"
#include "stepsim/calibration/backend.hpp"
#include "stepsim/calibration/calibrate.hpp"
#include "stepsim/calibration/executor.hpp"
#include "stepsim/calibration/mpi_session.hpp"
#include "stepsim/calibration/regress.hpp"
#include "stepsim/calibration/validate.hpp"
#include "stepsim/core/decompose.hpp"
#include "stepsim/core/load.hpp"
#include "stepsim/core/make_cost_model.hpp"
#include "stepsim/sim/report.hpp"
#include "stepsim/sim/simulate.hpp"

namespace stepsim::cli {
namespace {

struct ValidateArgs {
  std::string scenario;
  std::string backend;
  std::int32_t steps = 3;
  std::int32_t warmup = 1;
  std::string out;
  std::string trace;
  std::string record;
  std::int64_t num_layers = 0;
  std::int64_t world_size = 0;
  std::string profile;
  std::string calibrate;  ///< --calibrate: write the in-process profile here and predict with it
  int rounds = 0;         ///< --rounds; 0: --steps with --calibrate, else 1
  double timeout_s = 60;
  int threads = 1;
  std::int32_t fail_rank = -1;
  std::int64_t fail_at_task = -1;
  std::string fail_mode = "hang";
};

std::string utc_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown-host";
  return buf;
}

/// The testing flags --fail-rank, --fail-at-task and --fail-mode, as a hook before every task
/// of the executor: world rank `rank` hangs, or exits with status 3, when it reaches its task
/// number `at_task` (counted from 0 over every step of every round, warm-up included).
struct InjectedFault {
  std::int32_t rank = -1;
  std::int64_t at_task = -1;
  bool exit = false;
  std::int64_t seen = 0;             ///< tasks this rank reached so far
  std::atomic<bool> hanging{false};  ///< this rank hangs on purpose
};

void install_fault(const std::shared_ptr<InjectedFault>& fault, std::int32_t me,
                   calib::ExecutorOptions& eo) {
  if (fault->rank != me || fault->at_task < 0) return;
  eo.before_task = [fault](const calib::ExecTask&) {
    if (fault->seen++ != fault->at_task) return;
    if (fault->exit) std::_Exit(3);
    // A hung rank: it stops making progress and leaves the report to the ranks waiting on it.
    fault->hanging.store(true);
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  };
}

bool write_file(const std::string& path, const std::string& text, std::ostream& err) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) err << path << ": cannot be written\n";
  return static_cast<bool>(out);
}

/// Rank 0's outputs: report, traces, record. Returns the exit status.
int write_outputs(const ValidateArgs& a, Env& env, const Workload& w,
                  const sim::SimulationResult& predicted, const calib::Measurement& measured,
                  const calib::ValidationReport& report) {
  bool ok = true;
  *env.out << calib::format_report_text(report);
  if (!a.out.empty()) ok = write_file(a.out, calib::report_to_json(report), *env.err) && ok;
  if (!a.trace.empty() && !measured.step_times_s.empty()) {
    std::ofstream m(a.trace, std::ios::binary | std::ios::trunc);
    std::vector<sim::StageSummary> stages;
    for (const auto& st : report.stages) {
      sim::StageSummary summary;
      summary.stage = st.stage;
      summary.busy_s = st.measured.busy_s;
      summary.bubble_s = st.measured.idle_s;
      summary.exposed_comm_s = st.measured.comm_s;
      stages.push_back(summary);
    }
    sim::write_chrome_trace(calib::measured_timeline(measured, calib::median_step(measured)),
                            stages, m);
    std::filesystem::path pp(a.trace);
    const std::string ppath =
        (pp.parent_path() / (pp.stem().string() + ".predicted" + pp.extension().string())).string();
    std::ofstream p(ppath, std::ios::binary | std::ios::trunc);
    sim::write_chrome_trace(predicted.timeline, predicted.prediction.stages, p);
    ok = ok && m.good() && p.good();
    if (!m.good() || !p.good()) *env.err << a.trace << ": cannot write the traces\n";
  }
  if (!a.record.empty() && report.complete) {
    calib::RecordInputs in;
    in.scenario_path = a.scenario;
    in.scenarios_dir = env.scenarios_dir;
    in.profile_path =
        w.cost_model.kind == CostModelSpec::Kind::kProfile ? w.cost_model.profile_path : "";
    in.overrides = report.overrides;
    in.machine = host_name() + " / " + report.device;
    in.date = utc_now();
    in.report = &report;
    auto path = calib::write_record(a.record, in);
    if (!path) {
      *env.err << format_errors(path.errors());
      ok = false;
    } else {
      *env.out << "record: " << *path << "\n";
    }
  }
  return ok ? 0 : 1;
}

int run_validate(const ValidateArgs& a, Env& env) {
  std::ostream& err = *env.err;
  prepare_mpi_launch();
  auto session = calib::MpiSession::start(nullptr, nullptr);
  if (!session) {
    err << "stepsim validate: " << format_errors(session.errors());
    return 1;
  }
  const bool root = (*session)->world_rank() == 0;
  auto bad_input = [&](const Errors& e) {
    if (root) err << format_errors(e);
    return 2;
  };
  if (a.backend != "cpu" && a.backend != "cuda") {
    return bad_input({Error{"", "--backend", "='" + a.backend + "' must be cpu or cuda"}});
  }
  if (a.fail_mode != "hang" && a.fail_mode != "exit") {
    return bad_input({Error{"", "--fail-mode", "must be hang or exit"}});
  }
  auto loaded = load_scenario_file(a.scenario, LoadOptions{env.scenarios_dir});
  if (!loaded) return bad_input(loaded.errors());
  auto scaled =
      apply_overrides(std::move(loaded).value(), calib::ScaleOverrides{a.num_layers, a.world_size});
  if (!scaled) return bad_input(scaled.errors());
  Workload w = std::move(scaled).value();
  if (!a.profile.empty() && !a.calibrate.empty()) {
    return bad_input({Error{"", "--calibrate", ": give either --profile or --calibrate"}});
  }
  if (!a.calibrate.empty()) {
    // Checked by every rank alike, so none is left waiting for a rank 0 that gave up.
    const std::filesystem::path dir = std::filesystem::path(a.calibrate).parent_path();
    if (!dir.empty() && !std::filesystem::is_directory(dir)) {
      return bad_input({Error{"", "--calibrate",
                              "=" + a.calibrate + ": folder " + dir.string() + " does not exist"}});
    }
  }
  if (a.rounds < 0) return bad_input({Error{"", "--rounds", "must be at least 1"}});
  // By default one calibration round per measured step: the finest interleaving.
  const int rounds = a.rounds > 0 ? a.rounds : (a.calibrate.empty() ? 1 : std::max(1, a.steps));
  if (a.rounds > 1 && a.calibrate.empty()) {
    return bad_input({Error{"", "--rounds",
                            "=" + std::to_string(a.rounds) +
                                ": rounds interleave calibration and steps, so "
                                "they need --calibrate"}});
  }
  if (a.steps < rounds) {
    return bad_input({Error{"", "--steps",
                            "=" + std::to_string(a.steps) + " must be at least --rounds=" +
                                std::to_string(rounds) + " (every round measures steps)"}});
  }
  if (!a.profile.empty()) w.cost_model = CostModelSpec{CostModelSpec::Kind::kProfile, a.profile};
  if (!a.calibrate.empty()) {
    w.cost_model = CostModelSpec{CostModelSpec::Kind::kProfile,
                                 std::filesystem::absolute(a.calibrate).string()};
  }
  const WorkloadPlan plan = decompose(w);
  // The order of every rank's work does not depend on costs: the executor walks it while
  // calibration rounds are still to come, and every prediction uses it.
  auto built = sim::make_schedule(sim::schedule_params_of(w));
  if (!built) {
    if (root) err << "stepsim validate: " << format_errors(built.errors());
    return 1;
  }
  const auto schedule = std::make_shared<const sim::Schedule>(std::move(built).value());

  // Every rank predicts (deterministic, cheap at validation sizes) with the same profile.
  std::unique_ptr<CostModel> cost;
  std::optional<sim::SimulationResult> predicted;
  auto predict = [&](std::unique_ptr<CostModel> model) -> Status {
    sim::SimulateOptions options = calib::validation_simulate_options();
    options.schedule = schedule;
    auto simulated = sim::simulate(w, plan, *model, options);
    if (!simulated) return simulated.errors();
    cost = std::move(model);
    predicted = std::move(simulated).value();
    return ok_status();
  };
  if (a.calibrate.empty()) {
    auto model = make_cost_model(w, nullptr);
    if (!model) return bad_input(model.errors());
    if (auto p = predict(std::move(model).value()); !p) {
      if (root) err << "stepsim validate: " << format_errors(p.errors());
      return 1;
    }
  }

  // Keep freed buffers in the heap instead of returning them to the kernel, as a training
  // framework's caching allocator keeps its memory: otherwise every large Backend call maps
  // fresh pages and its timed work pays the page faults (calibration, which repeats each op
  // in one call, never does).
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, -1);
  calib::BackendOptions bo;
  bo.cpu_threads = a.threads;
  bo.warmup = 0;  // the executor runs each op once, as training does
  bo.repeats = 1;
  bo.verify = false;  // time the step's work, not the calibration harness around each op
  auto backend = calib::make_backend(a.backend, bo);
  if (!backend) {
    if (root) err << format_errors(backend.errors());
    return 1;
  }
  calib::Backend& b = **backend;
  if (auto fits = calib::check_world_size(w, b); !fits) return bad_input(fits.errors());

  calib::ValidationReport base;
  base.scenario = w.name;
  base.backend = b.name();
  base.device = b.device_name();
  base.overrides = calib::ScaleOverrides{a.num_layers, a.world_size};
  // Every round after the first warms up again (at most 1 step): the report counts them all.
  base.warmup_steps = a.warmup + (rounds - 1) * std::min<std::int32_t>(a.warmup, 1);
  auto make_report = [&](const calib::Measurement& m) {
    calib::ValidationReport r = calib::compare(predicted->prediction, predicted->timeline, m);
    r.scenario = base.scenario;
    r.backend = base.backend;
    r.device = base.device;
    r.cost_model = cost->describe();
    r.overrides = base.overrides;
    r.warmup_steps = base.warmup_steps;
    if (!a.calibrate.empty()) {
      r.notes.push_back("profile calibrated in this run in " + std::to_string(rounds) +
                        " round(s), each followed by its share of the steps (warm-up: " +
                        std::to_string(a.warmup) + " before the first, " +
                        std::to_string(std::min<std::int32_t>(a.warmup, 1)) +
                        " before each later one); each sample is its median over the rounds");
    }
    for (const auto& warning : predicted->prediction.warnings) r.notes.push_back(warning);
    return r;
  };

  calib::Measurement measured;  // every round's steps
  calib::ExecutorOptions eo;
  eo.timeout_s = a.timeout_s;
  auto fault = std::make_shared<InjectedFault>();
  fault->rank = a.fail_rank;
  fault->at_task = a.fail_at_task;
  fault->exit = a.fail_mode == "exit";
  install_fault(fault, b.world_rank(), eo);
  eo.on_timeout = [&](const std::string& message, const calib::Measurement& partial) {
    if (fault->hanging.load()) return;
    err << "stepsim validate: " << message << "; stopping every rank\n";
    if (b.world_rank() == 0 && !a.out.empty()) {
      // Keep what was measured so far: rank 0 holds every completed step.
      calib::Measurement so_far = measured;
      calib::append_steps(so_far, partial);
      write_file(a.out, calib::report_to_json(make_report(so_far)), err);
      err << "stepsim validate: partial results in " << a.out << "\n";
    }
    (*session)->abort_all(1);  // this rank's own thread is stuck in the backend
  };
  // Progress on rank 0: step i of N over every round (warm-up included), with an ETA.
  std::unique_ptr<calib::StreamProgress> progress;
  const std::int64_t total_steps =
      a.warmup + static_cast<std::int64_t>(rounds - 1) * std::min<std::int32_t>(a.warmup, 1) +
      a.steps;
  std::int64_t steps_done = 0;
  if (root) {
    progress = std::make_unique<calib::StreamProgress>(err, isatty(STDERR_FILENO) != 0, 10.0,
                                                       "validate");
    eo.on_step_done = [&](std::int32_t) {
      ++steps_done;
      progress->update(steps_done, total_steps, "step " + std::to_string(steps_done));
      if (steps_done == total_steps) progress->finish();
    };
  }
  bool steps_failed = false;
  std::int32_t steps_run = 0;  // warm-up included, over every round
  // Round r: --warmup untimed steps first (later rounds: at most 1, to refill the caches the
  // calibration round flushed), then its share of --steps.
  auto run_steps = [&](int round) -> Status {
    calib::ExecutorOptions o = eo;
    o.warmup_steps = round == 0 ? a.warmup : std::min<std::int32_t>(a.warmup, 1);
    o.steps = a.steps / rounds + (round < a.steps % rounds ? 1 : 0);
    o.first_step = steps_run;
    auto m = calib::execute_schedule(w, plan, *schedule, b, o);
    b.release_buffers();  // the next calibration round needs the memory
    if (!m) {
      steps_failed = true;
      return m.errors();
    }
    steps_run += o.warmup_steps + o.steps;
    calib::append_steps(measured, std::move(m).value());
    return ok_status();
  };
  auto step_failure = [&](const Errors& errors) -> int {
    err << "stepsim validate: rank " << b.world_rank() << ": " << format_errors(errors);
    if (exit_status(errors) == 2) return 2;  // bad input: every rank found it alike
    (*session)->abort_all(1);                // the other ranks may be waiting on this one
    return 1;        // not reached: abort_all ends the process
  };

  if (a.calibrate.empty()) {
    if (auto r = run_steps(0); !r) return step_failure(r.errors());
  } else {
    calib::PlanCalibrationOptions co;
    co.cpu_threads = a.threads;
    co.rounds = rounds;
    co.after_round = [&](int round, const Profile& so_far) -> Status {
      auto model = make_cost_model(w, std::make_shared<const Profile>(so_far));
      if (!model) return model.errors();
      if (auto p = predict(std::move(model).value()); !p) return p.errors();
      return run_steps(round);
    };
    auto profile = calib::calibrate_for_plan(a.backend, plan, co);
    if (!profile) {
      if (steps_failed) return step_failure(profile.errors());
      if (root) err << "stepsim validate: --calibrate: " << format_errors(profile.errors());
      return 1;
    }
    if (root && !write_file(a.calibrate, profile_to_json(*profile), err)) return 1;
  }
  if (!root) return 0;
  return write_outputs(a, env, w, *predicted, measured, make_report(measured));
}

}  // namespace

void add_validate_command(CLI::App& app, Env& env) {
  auto args = std::make_shared<ValidateArgs>();
  auto* cmd = app.add_subcommand(
      "validate",
      "Run the simulator's schedule for real (under mpirun, one rank per device) and compare\n"
      "the measured step with the prediction. Streams are serialised on each rank (one host\n"
      "thread issues every op and waits for it), and the prediction models exactly that.");
  cmd->add_option("scenario", args->scenario, "Scenario file")->required();
  cmd->add_option("--backend", args->backend, "cuda or cpu")->required();
  cmd->add_option("--steps", args->steps, "Measured steps")->capture_default_str();
  cmd->add_option("--warmup", args->warmup, "Untimed steps first")->capture_default_str();
  cmd->add_option("--out", args->out, "Write the comparison as JSON (REPORT.json)");
  cmd->add_option("--trace", args->trace,
                  "Write the measured step as a Chrome trace (and the prediction beside it, "
                  "FILE stem + .predicted)");
  cmd->add_option("--record", args->record, "Store the measurement in DIR for 'stepsim regress'");
  cmd->add_option("--num-layers", args->num_layers, "Scale down: fewer layers, same shapes");
  cmd->add_option("--world-size", args->world_size, "Scale down: fewer data-parallel replicas");
  cmd->add_option("--profile", args->profile, "Profile for the prediction (overrides cost_model)");
  cmd->add_option("--calibrate", args->calibrate,
                  "Calibrate the scenario's own op shapes in this process, between the measured "
                  "steps (--rounds), write that profile to FILE and predict with it (on a shared "
                  "machine, whose speed drifts over seconds, profile and steps then agree)");
  cmd->add_option("--rounds", args->rounds,
                  "With --calibrate: calibration rounds, each followed by its share of the "
                  "warm-up and measured steps; the profile takes each point's median over the "
                  "rounds, so that profile and steps sample the same stretch of the machine's "
                  "time [default: --steps, one round per measured step]");
  cmd->add_option("--timeout", args->timeout_s,
                  "Seconds without progress after which every rank is stopped")
      ->capture_default_str();
  cmd->add_option("--threads", args->threads, "CPU backend: Eigen threads per rank")
      ->capture_default_str();
  cmd->add_option("--fail-rank", args->fail_rank, "Testing: this world rank fails");
  cmd->add_option("--fail-at-task", args->fail_at_task,
                  "Testing: ... when it reaches this task (counted from 0 over all steps)");
  cmd->add_option("--fail-mode", args->fail_mode, "Testing: hang or exit")->capture_default_str();
  cmd->callback([args, &env] { env.exit_code = run_validate(*args, env); });
}

}  // namespace stepsim::cli
