// calibrate_for_plan(): an in-process calibration of one scenario's op shapes.

#include <string>
#include <vector>

#include "stepsim/calibration/calibrate.hpp"
#include "stepsim/calibration/microbench.hpp"
#include "stepsim/calibration/mpi_session.hpp"

namespace stepsim::calib {

Result<Profile> calibrate_for_plan(const std::string& backend_name, const WorkloadPlan& plan,
                                   int cpu_threads) {
  BackendOptions options;
  options.cpu_threads = cpu_threads;
  options.flush_cache = true;  // in a step, other kernels run between two uses of an operand
  auto backend = make_backend(backend_name, options);
  if (!backend.ok()) return backend.errors();
  auto node_ids = world_node_ids();
  if (!node_ids.ok()) return node_ids.errors();
  BenchPlanOptions plan_options;
  plan_options.gpu = backend_name == "cuda";
  plan_options.quick = true;
  plan_options.node_ids = node_ids.value();
  std::vector<std::string> skipped;
  const std::vector<BenchPoint> points = merge_points(
      make_bench_plan(plan_options), scenario_points(plan, plan_options, skipped));

  CalibrationOptions run_options;
  run_options.notes.push_back(
      "calibrated in-process by stepsim validate --calibrate, right before the measured steps");
  for (const std::string& line : skipped) run_options.notes.push_back("not measured: " + line);
  auto run = run_calibration(**backend, points, run_options, nullptr);
  if (!run.ok()) return run.errors();

  // Rank 0 holds the profile; every rank predicts with it, so send it round.
  std::vector<std::uint8_t> bytes;
  if ((*backend)->world_rank() == 0) {
    const std::string json = profile_to_json(run->profile);
    bytes.assign(json.begin(), json.end());
  }
  auto shared = broadcast_bytes_from_root(bytes);
  if (!shared.ok()) return shared.errors();
  const std::string text(shared->begin(), shared->end());
  return parse_profile(text, "the in-process calibration");
}

}  // namespace stepsim::calib
