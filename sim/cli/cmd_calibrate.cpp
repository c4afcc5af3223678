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
  std::string scenario;
  bool quick = false;
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
  std::optional<WorkloadPlan> scenario_plan;
  std::string scenario_name;
  if (!a.scenario.empty()) {
    std::optional<Workload> w = load_or_report(a.scenario, env);
    if (!w) return 2;
    scenario_name = w->name;
    scenario_plan = decompose(*w);
  }
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
  std::vector<calib::BenchPoint> points = calib::make_bench_plan(plan_options);
  std::vector<std::string> skipped;
  std::size_t scenario_count = 0;
  if (scenario_plan) {
    const auto extra = calib::scenario_points(*scenario_plan, plan_options, skipped);
    scenario_count = extra.size();
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
  if (scenario_plan) {
    run_options.notes.push_back("scenario " + scenario_name + ": its " +
                                std::to_string(scenario_count) +
                                " distinct GEMM shapes, kernels, collective and message sizes "
                                "measurable on this world were measured exactly");
    for (const std::string& line : skipped) {
      run_options.notes.push_back("scenario " + scenario_name + ": not measured: " + line);
      if (root)
        err << "stepsim calibrate: scenario " << scenario_name << ": not measured: " << line
            << "\n";
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
      "mpirun -np N stepsim calibrate --backend cuda --out PROFILE.json");
  cmd->add_option("--backend", args->backend, "cuda (cuBLASLt + NCCL) or cpu (Eigen + MPI)")
      ->required()
      ->check(CLI::IsMember({"cuda", "cpu"}));
  cmd->add_option("--out", args->out,
                  "profile to write (a journal <out>.journal is kept "
                  "while measuring; a rerun resumes from it)")
      ->required();
  cmd->add_option("--scenario", args->scenario,
                  "also measure the exact GEMM shapes and collective sizes of this scenario");
  cmd->add_flag("--quick", args->quick, "coarser grids (a CPU run of 2 ranks in about a minute)");
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
