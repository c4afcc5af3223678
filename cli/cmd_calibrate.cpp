// stepsim calibrate: measures GEMMs, attention, memory-bound kernels, collectives and
// point-to-point messages on this machine and writes a calibration profile.
// Run as `mpirun -np N stepsim calibrate ...`: one rank per device.

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "common.hpp"
#include "stepsim/calibration/calibrate_command.hpp"
#include "stepsim/plan/decompose.hpp"

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

int run_calibrate(const CalibrateArgs& a, Env& env) {
  calib::CalibrateRequest request;
  request.backend = a.backend;
  request.out = a.out;
  request.quick = a.quick;
  request.fp8 = a.fp8;
  request.flush_cache = a.flush_cache;
  request.threads = a.threads;
  request.repeats = a.repeats;
  request.warmup = a.warmup;
  request.stop_after = a.stop_after;
  if (const Errors bad = calib::check_calibrate_request(request); !bad.empty()) {
    *env.err << format_errors(bad);
    return 2;
  }
  // A bad scenario is bad input: exit 2 before MPI starts and before anything is measured.
  for (const std::string& path : a.scenarios) {
    std::optional<Workload> w = load_or_report(path, env);
    if (!w) return 2;
    request.scenario_names.push_back(w->name);
    request.scenario_plans.push_back(decompose(*w));
  }
  prepare_mpi_launch();
  const calib::CalibrateOutcome outcome =
      calib::calibrate_profile(request, env.err, isatty(STDERR_FILENO) != 0);
  if (!outcome.errors.empty()) {
    *env.err << "stepsim calibrate: ";
    if (outcome.world_size > 1) *env.err << "rank " << outcome.rank << ": ";
    *env.err << format_errors(outcome.errors);
    return exit_status(outcome.errors);  // a journal of another run is bad input
  }
  if (outcome.root) calib::write_calibrate_report(*env.out, request, outcome);
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
  cmd->add_flag(
      "--fp8", args->fp8,
      "also measure every GEMM in FP8: cuda, E4M3 operands and a bf16 result (Hopper "
      "or Ada GPUs), split and fast accumulation, and on Hopper block-scaled as Transformer "
      "Engine's blockwise recipe runs it; cpu, emulated as the fp32 product "
      "the cpu backend runs for one");
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
