// `stepsim calibrate` as a library call (calibrate_command.hpp).

#include "stepsim/calibration/calibrate_command.hpp"

#include <filesystem>
#include <memory>

#include "stepsim/calibration/backend.hpp"
#include "stepsim/calibration/microbench.hpp"
#include "stepsim/calibration/mpi_session.hpp"
#include "stepsim/cost/profile.hpp"
#include "stepsim/calibration/text_file.hpp"

namespace stepsim::calib {
namespace {

/// The grid for this world, plus the scenario's own points; `skipped` gets what the
/// scenario asks for that this world cannot measure.
std::vector<BenchPoint> plan_points(const CalibrateRequest& a, const Backend& backend,
                                    std::vector<std::int32_t> node_ids,
                                    std::vector<std::size_t>& scenario_counts,
                                    std::vector<std::vector<std::string>>& skipped) {
  BenchPlanOptions plan_options;
  plan_options.gpu = a.backend == "cuda";
  plan_options.quick = a.quick;
  plan_options.node_ids = std::move(node_ids);
  plan_options.fp8 = a.fp8;
  plan_options.fp8_block_scaling = backend.runs_block_scaled_fp8();
  plan_options.fp8_mx_scaling = backend.runs_mxfp8();
  std::vector<BenchPoint> points = make_bench_plan(plan_options);
  skipped.assign(a.scenario_plans.size(), {});
  for (std::size_t i = 0; i < a.scenario_plans.size(); ++i) {
    const auto extra = scenario_points(a.scenario_plans[i], plan_options, skipped[i]);
    scenario_counts.push_back(extra.size());
    points = merge_points(std::move(points), extra);
  }
  return points;
}

/// The profile's notes: what the backend measures, what one rank cannot, the scenario.
std::vector<std::string> run_notes(const CalibrateRequest& a, const Backend& backend,
                                   const std::vector<std::size_t>& scenario_counts,
                                   const std::vector<std::vector<std::string>>& skipped) {
  std::vector<std::string> notes;
  if (a.backend == "cpu") {
    notes.push_back(
        "cpu backend: GEMMs and attention run in fp32 (Eigen), memory-bound kernels stream "
        "dst = 2 * src, collectives and messages are MPI on float buffers");
  }
  if (backend.world_size() == 1) {
    notes.push_back(
        "one rank: GEMMs and kernels only; collectives and point-to-point need ranks "
        "(run under mpirun -np N)");
  }
  if (const std::string v = backend.versions(); !v.empty()) {
    notes.push_back(backend.name() + " backend: " + v);
  }
  if (a.fp8 && a.backend == "cpu") {
    notes.push_back(
        "fp8: emulated, every GEMM of the grid and of the scenarios also recorded as an FP8 "
        "GEMM measured as the fp32 Eigen product the cpu backend runs for one");
  } else if (a.fp8) {
    notes.push_back(
        "fp8: every GEMM of the grid and of the scenarios also measured with E4M3 operands and a "
        "bf16 result in cuBLASLt's TN layout (the layout Transformer Engine calls), per-tensor "
        "scales off; the grid's and the forward GEMMs' also with fast accumulation "
        "(\"fast_accum\": Transformer Engine's fprop under delayed and current scaling)" +
        std::string(backend.runs_block_scaled_fp8()
                        ? "; every FP8 GEMM also block-scaled as Transformer Engine's blockwise "
                          "recipe runs it, through cuBLASLt's VEC128_32F and BLK128x128_32F "
                          "scales (\"scaling\": block_128x128, 128x128 blocks on the weight and "
                          "1x128 tiles on the other operand, its fprop and dgrad; block_1x128, "
                          "1x128 tiles on both, its wgrad)"
                        : "") +
        std::string(backend.runs_mxfp8()
                        ? "; every FP8 GEMM of the grid also in MXFP8 as Transformer Engine's "
                          "mxfp8 recipe runs it, through cuBLASLt's VEC32_UE8M0 scales on both "
                          "operands (\"scaling\": mx_1x32), in each layout (TN, NN, NT), and "
                          "each 16-bit GEMM of the scenarios also in MXFP8 in its layout"
                        : ""));
  }
  for (std::size_t i = 0; i < a.scenario_plans.size(); ++i) {
    const std::string& name = a.scenario_names[i];
    notes.push_back("scenario " + name + ": its " + std::to_string(scenario_counts[i]) +
                    " distinct GEMM shapes, kernels, collective and message sizes measurable "
                    "on this world were measured exactly");
    for (const std::string& line : skipped[i]) {
      notes.push_back("scenario " + name + ": not measured: " + line);
    }
  }
  return notes;
}

Errors write_profile(const std::string& path, const Profile& profile) {
  if (auto written = write_text_file(path, profile_to_json(profile)); !written) {
    return written.errors();
  }
  return {};
}

/// What rank 0 says before measuring: the scenarios' ops left out, a world of one rank.
void print_plan_notes(std::ostream& err, const CalibrateRequest& a,
                      const std::vector<std::vector<std::string>>& skipped,
                      std::int32_t world_size) {
  for (std::size_t i = 0; i < skipped.size(); ++i) {
    for (const std::string& line : skipped[i]) {
      err << "stepsim calibrate: scenario " << a.scenario_names[i] << ": not measured: " << line
          << "\n";
    }
  }
  if (world_size == 1) {
    err << "stepsim calibrate: one rank, so GEMMs and kernels only; collectives and "
           "point-to-point need ranks (mpirun -np N stepsim calibrate ...)\n";
  }
}

}  // namespace

Errors check_calibrate_request(const CalibrateRequest& a) {
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

CalibrateOutcome calibrate_profile(const CalibrateRequest& a, std::ostream* err, bool terminal) {
  CalibrateOutcome outcome;
  outcome.journal_path = a.out + ".journal";
  auto session = MpiSession::start(nullptr, nullptr);
  if (!session.ok()) {
    outcome.errors = session.errors();
    return outcome;
  }
  outcome.rank = session.value()->world_rank();
  outcome.world_size = session.value()->world_size();
  outcome.root = outcome.rank == 0;
  if (!outcome.root) err = nullptr;

  BackendOptions options;
  options.cpu_threads = a.threads;
  options.repeats = a.repeats;
  options.warmup = a.warmup;
  options.flush_cache = a.flush_cache;
  auto backend = make_backend(a.backend, options);
  if (!backend.ok()) {
    outcome.errors = backend.errors();
    return outcome;
  }
  auto node_ids = world_node_ids();
  if (!node_ids.ok()) {
    outcome.errors = node_ids.errors();
    return outcome;
  }
  std::vector<std::size_t> scenario_counts;
  std::vector<std::vector<std::string>> skipped;
  const std::vector<BenchPoint> points =
      plan_points(a, *backend.value(), node_ids.value(), scenario_counts, skipped);
  CalibrationOptions run_options;
  run_options.journal_path = outcome.journal_path;
  run_options.stop_after = a.stop_after;
  run_options.notes = run_notes(a, *backend.value(), scenario_counts, skipped);
  if (err != nullptr) print_plan_notes(*err, a, skipped, backend.value()->world_size());
  std::unique_ptr<StreamProgress> progress;
  if (err != nullptr) progress = std::make_unique<StreamProgress>(*err, terminal);
  auto run = run_calibration(*backend.value(), points, run_options, progress.get());
  if (!run.ok()) {
    outcome.errors = run.errors();
    return outcome;
  }
  outcome.run = std::move(run).value();
  if (!outcome.root || !outcome.run->complete) return outcome;
  outcome.errors = write_profile(a.out, outcome.run->profile);
  if (!outcome.errors.empty()) return outcome;
  std::error_code ec;
  std::filesystem::remove(outcome.journal_path, ec);
  outcome.profile_written = true;
  return outcome;
}

void write_calibrate_report(std::ostream& out, const CalibrateRequest& a,
                            const CalibrateOutcome& outcome) {
  const CalibrationRun& r = *outcome.run;
  if (!r.complete) {
    out << "stopped after " << r.measured << " new measurements (--stop-after); the journal "
        << outcome.journal_path << " holds " << (r.resumed + r.measured) << " of " << r.total
        << " points: run the same command again to resume\n";
    return;
  }
  write_summary(out, r.profile);
  out << "measured " << r.measured << " points";
  if (r.resumed > 0) out << " (" << r.resumed << " more resumed from the journal)";
  out << " in " << std::to_string(r.wall_s).substr(0, std::to_string(r.wall_s).find('.') + 2)
      << " s; wrote " << a.out << "\n";
}

}  // namespace stepsim::calib
