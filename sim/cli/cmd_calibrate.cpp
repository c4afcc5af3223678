// stepsim calibrate: measures GEMMs, attention, memory-bound kernels, collectives and
// point-to-point messages on this machine and writes a calibration profile.
// Run as `mpirun -np N stepsim calibrate ...`: one rank per device.

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <ostream>
#include <string>

#include "commands.hpp"
#include "common.hpp"
#include "stepsim/calibration/backend.hpp"
#include "stepsim/calibration/calibrate.hpp"
#include "stepsim/calibration/microbench.hpp"
#include "stepsim/calibration/mpi_session.hpp"
#include "stepsim/core/decompose.hpp"
#include "stepsim/core/profile.hpp"

namespace stepsim::cli {
namespace {

struct CalibrateArgs {
  std::string backend;
  std::string out;
  std::vector<std::string> scenarios;
  bool quick = false;
  bool fp8 = false;
  bool flush_cache = false;
  int threads = 1;
  int repeats = 5;
  int warmup = 2;
  long long stop_after = -1;
};

/// Checks what can be checked before MPI starts; one line per problem.
Errors check_args(const CalibrateArgs& a) {
  Errors errors;
  const std::filesystem::path out(a.out);
  const std::filesystem::path dir = out.has_parent_path() ? out.parent_path() : ".";
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    errors.push_back(
        Error{"", "--out", "=" + a.out + ": folder " + dir.string() + " does not exist"});
  }
  if (a.fp8 && a.backend != "cuda") {
    errors.push_back(Error{"", "--fp8",
                           ": FP8 GEMMs are measured by the cuda backend only (Hopper or Ada "
                           "GPUs); the cpu backend computes in fp32"});
  }
  return errors;
}

int run_calibrate(const CalibrateArgs& a, Env& env) {
  std::ostream& out = *env.out;
  std::ostream& err = *env.err;
  if (const Errors bad = check_args(a); !bad.empty()) {
    err << format_errors(bad);
    return 2;
  }
  // A bad scenario is bad input: exit 2 before MPI starts and before anything is measured.
  std::vector<WorkloadPlan> scenario_plans;
  std::vector<std::string> scenario_names;
  for (const std::string& path : a.scenarios) {
    std::optional<Workload> w = load_or_report(path, env);
    if (!w) return 2;
    scenario_names.push_back(w->name);
    scenario_plans.push_back(decompose(*w));
  }
  prepare_mpi_launch();
  auto session = calib::MpiSession::start(nullptr, nullptr);
  if (!session.ok()) {
    err << "stepsim calibrate: " << format_errors(session.errors());
    return 1;
  }
  const std::int32_t rank = session.value()->world_rank();
  const bool root = rank == 0;
  auto report = [&](const Errors& errors) {
    if (session.value()->world_size() > 1) err << "rank " << rank << ": ";
    err << format_errors(errors);
    return 1;
  };

  calib::BackendOptions options;
  options.cpu_threads = a.threads;
  options.repeats = a.repeats;
  options.warmup = a.warmup;
  options.flush_cache = a.flush_cache;
  auto backend = calib::make_backend(a.backend, options);
  if (!backend.ok()) return report(backend.errors());
  calib::Backend& b = *backend.value();

  auto node_ids = calib::world_node_ids();
  if (!node_ids.ok()) return report(node_ids.errors());
  calib::BenchPlanOptions plan_options;
  plan_options.gpu = a.backend == "cuda";
  plan_options.quick = a.quick;
  plan_options.node_ids = node_ids.value();
  plan_options.fp8 = a.fp8;
  std::vector<calib::BenchPoint> points = calib::make_bench_plan(plan_options);
  std::vector<std::vector<std::string>> skipped(scenario_plans.size());
  std::vector<std::size_t> scenario_counts;
  for (std::size_t i = 0; i < scenario_plans.size(); ++i) {
    const auto extra = calib::scenario_points(scenario_plans[i], plan_options, skipped[i]);
    scenario_counts.push_back(extra.size());
    points = calib::merge_points(std::move(points), extra);
  }

  calib::CalibrationOptions run_options;
  run_options.journal_path = a.out + ".journal";
  run_options.stop_after = a.stop_after;
  if (a.backend == "cpu") {
    run_options.notes.push_back(
        "cpu backend: GEMMs and attention run in fp32 (Eigen), memory-bound kernels stream "
        "dst = 2 * src, collectives and messages are MPI on float buffers");
  }
  if (b.world_size() == 1) {
    run_options.notes.push_back(
        "one rank: GEMMs and kernels only; collectives and point-to-point need ranks "
        "(run under mpirun -np N)");
  }
  if (const std::string v = b.versions(); !v.empty()) {
    run_options.notes.push_back(b.name() + " backend: " + v);
  }
  if (a.fp8) {
    run_options.notes.push_back(
        "fp8: every GEMM of the grid and of the scenarios also measured with E4M3 operands and a "
        "bf16 result in cuBLASLt's TN layout (the layout Transformer Engine calls), per-tensor "
        "scales off");
  }
  for (std::size_t i = 0; i < scenario_plans.size(); ++i) {
    const std::string& name = scenario_names[i];
    run_options.notes.push_back("scenario " + name + ": its " +
                                std::to_string(scenario_counts[i]) +
                                " distinct GEMM shapes, kernels, collective and message sizes "
                                "measurable on this world were measured exactly");
    for (const std::string& line : skipped[i]) {
      run_options.notes.push_back("scenario " + name + ": not measured: " + line);
      if (root) err << "stepsim calibrate: scenario " << name << ": not measured: " << line << "\n";
    }
  }
  if (root && b.world_size() == 1) {
    err << "stepsim calibrate: one rank, so GEMMs and kernels only; collectives and "
           "point-to-point need ranks (mpirun -np N stepsim calibrate ...)\n";
  }

  std::unique_ptr<calib::StreamProgress> progress;
  if (root) progress = std::make_unique<calib::StreamProgress>(err, isatty(STDERR_FILENO) != 0);
  auto run = calib::run_calibration(b, points, run_options, progress.get());
  if (!run.ok()) return report(run.errors());
  if (!root) return 0;
  const calib::CalibrationRun& r = run.value();
  if (!r.complete) {
    out << "stopped after " << r.measured << " new measurements (--stop-after); the journal "
        << run_options.journal_path << " holds " << (r.resumed + r.measured) << " of " << r.total
        << " points: run the same command again to resume\n";
    return 0;
  }
  {
    std::ofstream file(a.out, std::ios::binary | std::ios::trunc);
    file << profile_to_json(r.profile);
    if (!file) {
      err << a.out << ": cannot be written\n";
      return 1;
    }
  }
  std::error_code ec;
  std::filesystem::remove(run_options.journal_path, ec);
  calib::write_summary(out, r.profile);
  out << "measured " << r.measured << " points";
  if (r.resumed > 0) out << " (" << r.resumed << " more resumed from the journal)";
  out << " in " << std::to_string(r.wall_s).substr(0, std::to_string(r.wall_s).find('.') + 2)
      << " s; wrote " << a.out << "\n";
  return 0;
}

}  // namespace

void add_calibrate_command(CLI::App& app, Env& env) {
  auto args = std::make_shared<CalibrateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "calibrate",
      "Measure GEMMs, attention, memory-bound kernels, collectives and point-to-point on this "
      "machine and write a calibration profile. Run under mpirun, one rank per device: "
      "mpirun -np N stepsim calibrate --backend cuda --out PROFILE.json (started without "
      "mpirun it is one rank: GEMMs and kernels only)");
  cmd->add_option("--backend", args->backend, "cuda (cuBLASLt + NCCL) or cpu (Eigen + MPI)")
      ->required()
      ->check(CLI::IsMember({"cuda", "cpu"}));
  cmd->add_option("--out", args->out,
                  "profile to write (a journal <out>.journal is kept "
                  "while measuring; a rerun resumes from it)")
      ->required();
  cmd->add_option("--scenario", args->scenarios,
                  "also measure the exact GEMM shapes and collective sizes of this scenario "
                  "(may be given several times)");
  cmd->add_flag("--quick", args->quick, "coarser grids (a CPU run of 2 ranks in about a minute)");
  cmd->add_flag("--fp8", args->fp8,
                "cuda: also measure every GEMM in FP8 (E4M3 operands, bf16 result; Hopper or "
                "Ada GPUs)");
  cmd->add_option("--threads", args->threads, "Eigen threads per rank (cpu)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--repeats", args->repeats, "timed repeats per point; the median is kept")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--warmup", args->warmup, "untimed repeats before measuring")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--flush-cache,--flush-l2", args->flush_cache,
                "flush the last-level cache (GPU: L2, CPU: L3) before each timed repeat of a GEMM "
                "(cuda), or of a GEMM or attention kernel (cpu), as `validate --calibrate` does");
  cmd->add_option("--stop-after", args->stop_after,
                  "testing: stop after this many new measurements, keeping the journal")
      ->check(CLI::NonNegativeNumber)
      ->group("Testing");
  cmd->callback([args, &env] { env.exit_code = run_calibrate(*args, env); });
}

}  // namespace stepsim::cli
