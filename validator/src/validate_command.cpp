// `stepsim validate` as a library call: rounds of calibration interleaved with the measured
// steps, the prediction, the comparison.

#include "stepsim/validator/validate_command.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <ostream>
#include <string>
#include <utility>

#include "stepsim/calibration/backend.hpp"
#include "stepsim/calibration/calibrate.hpp"
#include "stepsim/calibration/mpi_session.hpp"
#include "stepsim/plan/decompose.hpp"
#include "stepsim/base/heap.hpp"
#include "stepsim/check/load.hpp"
#include "stepsim/cost/make_cost_model.hpp"
#include "stepsim/layout/window_attention.hpp"
#include "stepsim/calibration/text_file.hpp"

namespace stepsim::calib {
namespace {

Error input_error(const std::string& key, const std::string& message) {
  return Error{"", key, message};
}

/// The checks of --profile, --calibrate, --rounds and --steps. Returns the number of rounds.
Result<int> check_rounds(const ValidateRequest& q) {
  if (!q.profile.empty() && !q.calibrate.empty()) {
    return input_error("--calibrate", ": give either --profile or --calibrate");
  }
  if (!q.calibrate.empty()) {
    // Checked by every rank alike, so none is left waiting for a rank 0 that gave up.
    const std::filesystem::path dir = std::filesystem::path(q.calibrate).parent_path();
    if (!dir.empty() && !std::filesystem::is_directory(dir)) {
      return input_error("--calibrate",
                         "=" + q.calibrate + ": folder " + dir.string() + " does not exist");
    }
  }
  if (q.rounds < 0) return input_error("--rounds", " must be at least 1");
  // By default one calibration round per measured step: the finest interleaving.
  const int rounds = q.rounds > 0 ? q.rounds : (q.calibrate.empty() ? 1 : std::max(1, q.steps));
  if (q.rounds > 1 && q.calibrate.empty()) {
    return input_error("--rounds", "=" + std::to_string(q.rounds) +
                                       ": rounds interleave calibration and steps, so "
                                       "they need --calibrate");
  }
  if (q.steps < rounds) {
    return input_error("--steps", "=" + std::to_string(q.steps) + " must be at least --rounds=" +
                                      std::to_string(rounds) + " (every round measures steps)");
  }
  return rounds;
}

/// The scenario, scaled down, with the cost model the request asks for.
Result<Workload> load_workload(const ValidateRequest& q) {
  auto loaded = load_scenario_file(q.scenario, LoadOptions{q.scenarios_dir});
  if (!loaded) return loaded.errors();
  auto scaled = apply_overrides(std::move(loaded).value(), q.overrides);
  if (!scaled) return scaled.errors();
  Workload w = std::move(scaled).value();
  // FP8 on the cpu backend is emulated: its linear GEMMs run as the fp32 Eigen products the
  // backend runs for every GEMM, Transformer Engine's casts, transposes and amax updates as
  // memory kernels of their FP8 byte counts, the FP8 all-gathers and amax all-reduces with
  // their real sizes. The profile it is compared with measures the "fp8" GEMMs the same way
  // (microbench.cpp), so prediction and measurement price the same work.
  if (w.training.tp_comm_overlap && q.backend != "cpu") {
    // The cuda executor runs every op on one stream with NCCL: no userbuffers exchange beside
    // a GEMM chunk, no SM margin. The cpu backend posts the exchanges and collectives on its
    // MPI threads beside the GEMM chunks (a core has no SMs to leave: its system gives
    // sm_count 1, so no margin applies).
    return Error{q.scenario, "training.tp_comm_overlap",
                 "=true is not validated on the " + q.backend +
                     " backend yet: its executor does not run Transformer Engine's userbuffers "
                     "beside the GEMMs (predict prices them; the cpu backend validates them)"};
  }
  for (const auto& [key, margin] :
       {std::pair{"training.fwd_layernorm_sm_margin", w.training.fwd_layernorm_sm_margin},
        std::pair{"training.bwd_layernorm_sm_margin", w.training.bwd_layernorm_sm_margin}}) {
    if (margin > 0) {
      // The backends run each norm as one memory kernel on the whole device.
      return Error{q.scenario, key,
                   "=" + std::to_string(margin) +
                       " is not validated yet: the executor's norm kernels take every SM "
                       "(predict prices the margin)"};
    }
  }
  if (w.model.multi_latent_attention) {
    // The backends' attention kernels take one head dim for keys and values alike.
    return Error{q.scenario, "model.multi_latent_attention",
                 "=true is not validated yet: the executor's attention kernels have no value "
                 "head dim apart from the key's (predict prices MLA)"};
  }
  if (w.model.moe() && w.training.moe_token_dispatcher_type == MoeDispatcher::kFlex) {
    // DeepEP's fused kernels forward a token over RDMA once per node and then over NVLink;
    // the backends run NCCL and MPI collectives of equal shares per peer only.
    return Error{q.scenario, "training.moe_token_dispatcher_type",
                 "=\"flex\" is not validated yet: the executor does not run DeepEP's dispatch "
                 "and combine kernels (predict prices them)"};
  }
  if (window_keys(w.model) > 0) {
    // The backends' attention kernels compute the whole causal triangle.
    return Error{q.scenario, "model.window_size",
                 " is not validated yet: the executor's attention kernels have no sliding "
                 "window (predict prices it)"};
  }
  if (!q.profile.empty()) w.cost_model = CostModelSpec{CostModelSpec::Kind::kProfile, q.profile};
  if (!q.calibrate.empty()) {
    w.cost_model = CostModelSpec{CostModelSpec::Kind::kProfile,
                                 std::filesystem::absolute(q.calibrate).string()};
  }
  return w;
}

/// Rounds: round r runs `warmup` untimed steps first (later rounds: at most 1, to refill the
/// caches the calibration round flushed), then its share of the measured steps.
class Validation {
 public:
  Validation(const ValidateRequest& q, ValidateOutcome& out, int rounds)
      : q_(q), out_(out), rounds_(rounds), later_warmup_(std::min<std::int32_t>(q.warmup, 1)) {}

  /// Decomposes and schedules the workload; false: out_ holds the failure.
  bool prepare(Workload w);
  /// Predicts with the cost model of the workload (no --calibrate).
  bool predict_uncalibrated();
  /// Runs every round (and the calibration between them); false: out_ holds the failure.
  bool run(std::ostream* err, bool terminal);
  ValidationReport make_report(const Measurement& m) const;

 private:
  Status predict(std::unique_ptr<CostModel> model);
  Status run_steps(int round);
  bool fail(ValidateStage stage, Errors errors);
  ExecutorOptions executor_options(std::ostream* err, bool terminal);
  void report_timeout(const std::string& message, const Measurement& partial) const;

  const ValidateRequest& q_;
  ValidateOutcome& out_;
  int rounds_;
  std::int32_t later_warmup_;
  WorkloadPlan plan_;
  std::shared_ptr<const sim::Schedule> schedule_;
  std::unique_ptr<CostModel> cost_;
  std::unique_ptr<Backend> backend_;
  ExecutorOptions executor_;
  std::unique_ptr<StreamProgress> progress_;
  std::int64_t steps_done_ = 0;
  std::int32_t steps_run_ = 0;  // warm-up included, over every round
  bool steps_failed_ = false;
  mutable std::mutex measured_mutex_;  // guards out_.measured against the watchdog's thread
};

bool Validation::fail(ValidateStage stage, Errors errors) {
  out_.stage = stage;
  out_.errors = std::move(errors);
  return false;
}

bool Validation::prepare(Workload w) {
  plan_ = decompose(w);
  out_.workload = std::move(w);
  // The order of every rank's work does not depend on costs: the executor walks it while
  // calibration rounds are still to come, and every prediction uses it.
  auto built = sim::make_schedule(sim::schedule_params_of(*out_.workload));
  if (!built) return fail(ValidateStage::kPredict, built.errors());
  schedule_ = std::make_shared<const sim::Schedule>(std::move(built).value());
  return true;
}

Status Validation::predict(std::unique_ptr<CostModel> model) {
  // Every rank predicts (deterministic, cheap at validation sizes) with the same profile.
  // The prediction models what this backend runs beside the compute.
  sim::SimulateOptions options = validation_simulate_options(
      backend_->async_p2p(),
      backend_->async_collectives() && out_.workload->training.overlap_grad_reduce);
  options.schedule = schedule_;
  auto simulated = sim::simulate(*out_.workload, plan_, *model, options);
  if (!simulated) return simulated.errors();
  cost_ = std::move(model);
  out_.predicted = std::move(simulated).value();
  return ok_status();
}

bool Validation::predict_uncalibrated() {
  auto model = make_cost_model(*out_.workload, nullptr);
  if (!model) return fail(ValidateStage::kInput, model.errors());
  if (auto p = predict(std::move(model).value()); !p) {
    return fail(ValidateStage::kPredict, p.errors());
  }
  return true;
}

ValidationReport Validation::make_report(const Measurement& m) const {
  ValidationReport r = compare(out_.predicted->prediction, out_.predicted->timeline, m);
  r.scenario = out_.workload->name;
  r.backend = backend_->name();
  r.device = backend_->device_name();
  r.cost_model = cost_->describe();
  r.overrides = q_.overrides;
  // Every round after the first warms up again (at most 1 step): the report counts them all.
  r.warmup_steps = q_.warmup + (rounds_ - 1) * later_warmup_;
  if (!q_.calibrate.empty()) {
    r.notes.push_back("profile calibrated in this run in " + std::to_string(rounds_) +
                      " round(s), each followed by its share of the steps (warm-up: " +
                      std::to_string(q_.warmup) + " before the first, " +
                      std::to_string(later_warmup_) +
                      " before each later one); each sample is its median over the rounds");
  }
  if (out_.workload->cost_model.kind == CostModelSpec::Kind::kRoofline) {
    r.notes.push_back("the prediction uses the roofline with the nominal figures of system '" +
                      out_.workload->system.name +
                      "', not costs measured on this machine, so its error says little about "
                      "the model: validate with --calibrate P.json (or --profile P.json from "
                      "stepsim calibrate)");
  }
  for (const auto& warning : out_.predicted->prediction.warnings) r.notes.push_back(warning);
  return r;
}

void Validation::report_timeout(const std::string& message, const Measurement& partial) const {
  if (!out_.root) {
    q_.on_timeout(message, nullptr);
    return;
  }
  // Keep what was measured so far: rank 0 holds every completed step. This runs on the
  // watchdog's thread; the earlier rounds' steps are copied under the lock that run_steps
  // appends under, `partial` is the executor's own snapshot. The prediction and the cost
  // model it reads change only between rounds, when no executor (and no watchdog) runs.
  Measurement so_far;
  {
    std::lock_guard<std::mutex> lock(measured_mutex_);
    so_far = out_.measured;
  }
  append_steps(so_far, partial);
  const ValidationReport report = make_report(so_far);
  q_.on_timeout(message, &report);
}

ExecutorOptions Validation::executor_options(std::ostream* err, bool terminal) {
  ExecutorOptions eo;
  eo.timeout_s = q_.timeout_s;
  eo.before_task = q_.before_task;
  if (q_.on_timeout) {
    eo.on_timeout = [this](const std::string& message, const Measurement& partial) {
      report_timeout(message, partial);
    };
  }
  if (err == nullptr) return eo;
  // Progress on rank 0: step i of N over every round (warm-up included), with an ETA.
  progress_ = std::make_unique<StreamProgress>(*err, terminal, 10.0, "validate");
  const std::int64_t total =
      q_.warmup + static_cast<std::int64_t>(rounds_ - 1) * later_warmup_ + q_.steps;
  eo.on_step_done = [this, total](std::int32_t) {
    ++steps_done_;
    progress_->update(steps_done_, total, "step " + std::to_string(steps_done_));
    if (steps_done_ == total) progress_->finish();
  };
  return eo;
}

Status Validation::run_steps(int round) {
  ExecutorOptions o = executor_;
  o.warmup_steps = round == 0 ? q_.warmup : later_warmup_;
  o.steps = q_.steps / rounds_ + (round < q_.steps % rounds_ ? 1 : 0);
  o.first_step = steps_run_;
  auto m = execute_schedule(*out_.workload, plan_, *schedule_, *backend_, o);
  backend_->release_buffers();  // the next calibration round needs the memory
  if (!m) {
    steps_failed_ = true;
    return m.errors();
  }
  steps_run_ += o.warmup_steps + o.steps;
  std::lock_guard<std::mutex> lock(measured_mutex_);
  append_steps(out_.measured, std::move(m).value());
  return ok_status();
}

bool Validation::run(std::ostream* err, bool terminal) {
  // Keep freed buffers in the heap instead of returning them to the kernel, as a training
  // framework's caching allocator keeps its memory: otherwise every large Backend call maps
  // fresh pages and its timed work pays the page faults (calibration, which repeats each op
  // in one call, never does).
  keep_freed_memory();
  BackendOptions bo;
  bo.cpu_threads = q_.threads;
  bo.warmup = 0;  // the executor runs each op once, as training does
  bo.repeats = 1;
  bo.verify = false;  // time the step's work, not the calibration harness around each op
  if (const std::int64_t nvls = out_.workload->training.nccl_nvls_enable; nvls != 2) {
    // The job's NCCL_NVLS_ENABLE, for the NCCL communicators the cuda backend creates (NCCL
    // reads it when a communicator is made); the cpu backend's MPI ignores it.
    setenv("NCCL_NVLS_ENABLE", std::to_string(nvls).c_str(), 1);
  }
  // Likewise the job's channel limits, algorithm and protocol restrictions and cross-node
  // chunk (its communicators' per-group options go to Backend::split).
  const TrainingConfig& job = out_.workload->training;
  if (job.nccl_min_nchannels > 0) {
    setenv("NCCL_MIN_NCHANNELS", std::to_string(job.nccl_min_nchannels).c_str(), 1);
  }
  if (job.nccl_max_nchannels > 0) {
    setenv("NCCL_MAX_NCHANNELS", std::to_string(job.nccl_max_nchannels).c_str(), 1);
  }
  if (!job.nccl_algo.empty()) setenv("NCCL_ALGO", job.nccl_algo.c_str(), 1);
  if (!job.nccl_proto.empty()) setenv("NCCL_PROTO", job.nccl_proto.c_str(), 1);
  if (job.nccl_p2p_net_chunksize != 131072) {
    setenv("NCCL_P2P_NET_CHUNKSIZE", std::to_string(job.nccl_p2p_net_chunksize).c_str(), 1);
  }
  auto backend = make_backend(q_.backend, bo);
  if (!backend) return fail(ValidateStage::kBackend, backend.errors());
  backend_ = std::move(backend).value();
  if (auto fits = check_world_size(*out_.workload, *backend_); !fits) {
    return fail(ValidateStage::kInput, fits.errors());
  }
  executor_ = executor_options(err, terminal);
  if (q_.calibrate.empty()) {
    // The prediction models what this backend runs (Backend::async_p2p), so it follows it.
    if (!predict_uncalibrated()) return false;
    if (auto r = run_steps(0); !r) return fail(ValidateStage::kSteps, r.errors());
    return true;
  }
  PlanCalibrationOptions co;
  co.cpu_threads = q_.threads;
  co.rounds = rounds_;
  co.after_round = [this](int round, const Profile& so_far) -> Status {
    auto model = make_cost_model(*out_.workload, std::make_shared<const Profile>(so_far));
    if (!model) return model.errors();
    if (auto p = predict(std::move(model).value()); !p) return p.errors();
    return run_steps(round);
  };
  auto profile = calibrate_for_plan(q_.backend, plan_, co);
  if (!profile) {
    return fail(steps_failed_ ? ValidateStage::kSteps : ValidateStage::kCalibration,
                profile.errors());
  }
  if (!out_.root) return true;
  if (auto written = write_text_file(q_.calibrate, profile_to_json(*profile)); !written) {
    return fail(ValidateStage::kProfile, written.errors());
  }
  return true;
}

}  // namespace

ValidateOutcome validate_scenario(const MpiSession& session, const ValidateRequest& request,
                                  std::ostream* err, bool terminal) {
  ValidateOutcome out;
  out.rank = session.world_rank();
  out.root = out.rank == 0;
  if (!out.root) err = nullptr;
  auto fail = [&out](ValidateStage stage, Errors errors) {
    out.stage = stage;
    out.errors = std::move(errors);
    return std::move(out);
  };
  if (request.backend != "cpu" && request.backend != "cuda") {
    return fail(ValidateStage::kInput,
                {input_error("--backend", "='" + request.backend + "' must be cpu or cuda")});
  }
  auto w = load_workload(request);
  if (!w) return fail(ValidateStage::kInput, w.errors());
  auto rounds = check_rounds(request);
  if (!rounds) return fail(ValidateStage::kInput, rounds.errors());
  Validation v(request, out, *rounds);
  if (!v.prepare(std::move(w).value())) return out;
  if (!v.run(err, terminal)) return out;
  if (out.root) out.report = v.make_report(out.measured);
  return out;
}

}  // namespace stepsim::calib
