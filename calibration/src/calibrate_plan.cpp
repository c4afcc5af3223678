// calibrate_for_plan(): an in-process calibration of one scenario's op shapes, in rounds.

#include <string>
#include <vector>

#include "bench_math.hpp"
#include "stepsim/calibration/calibrate.hpp"
#include "stepsim/calibration/microbench.hpp"
#include "stepsim/calibration/mpi_session.hpp"
#include "stepsim/base/assert.hpp"

namespace stepsim::calib {

Profile median_profile(const std::vector<Profile>& rounds) {
  STEPSIM_ASSERT(!rounds.empty());
  Profile out = rounds.front();
  auto take_median = [&rounds](auto member, auto& samples) {
    for (std::size_t i = 0; i < samples.size(); ++i) {
      std::vector<double> seconds;
      for (const Profile& r : rounds) {
        const auto& theirs = r.*member;
        STEPSIM_ASSERT(theirs.size() == samples.size());
        seconds.push_back(theirs[i].seconds);
      }
      samples[i].seconds = median(std::move(seconds));
    }
  };
  take_median(&Profile::gemm, out.gemm);
  take_median(&Profile::attention, out.attention);
  take_median(&Profile::memory, out.memory);
  take_median(&Profile::collectives, out.collectives);
  take_median(&Profile::p2p, out.p2p);
  if (out.interference.measured()) {
    std::vector<double> compute, collective, p2p_latency, collective_latency;
    for (const Profile& r : rounds) {
      if (!r.interference.measured()) continue;
      compute.push_back(r.interference.compute_slowdown);
      collective.push_back(r.interference.collective_slowdown);
      p2p_latency.push_back(r.interference.p2p_post_latency_s);
      collective_latency.push_back(r.interference.collective_post_latency_s);
    }
    out.interference.compute_slowdown = median(std::move(compute));
    out.interference.collective_slowdown = median(std::move(collective));
    out.interference.p2p_post_latency_s = median(std::move(p2p_latency));
    out.interference.collective_post_latency_s = median(std::move(collective_latency));
  }
  fit_profile(out);
  return out;
}

Result<Profile> calibrate_for_plan(const std::string& backend_name, const WorkloadPlan& plan,
                                   const PlanCalibrationOptions& options) {
  if (options.rounds < 1) return Error{"", "--rounds", "must be at least 1"};
  BackendOptions backend_options;
  backend_options.cpu_threads = options.cpu_threads;
  backend_options.flush_cache = true;  // in a step, other kernels run between two uses
  auto backend = make_backend(backend_name, backend_options);
  if (!backend.ok()) return backend.errors();
  auto node_ids = world_node_ids();
  if (!node_ids.ok()) return node_ids.errors();
  BenchPlanOptions plan_options;
  plan_options.gpu = backend_name == "cuda";
  plan_options.quick = true;
  // The scenario's GEMMs and attention kernels are measured at their exact shapes; the
  // generic grid's (up to 1024^3 GEMMs on a CPU) would be three quarters of every round.
  plan_options.compute_grids = false;
  plan_options.node_ids = node_ids.value();
  plan_options.fp8_block_scaling = backend.value()->runs_block_scaled_fp8();
  plan_options.fp8_mx_scaling = backend.value()->runs_mxfp8();
  std::vector<std::string> skipped;
  const std::vector<BenchPoint> points =
      merge_points(make_bench_plan(plan_options), scenario_points(plan, plan_options, skipped));

  CalibrationOptions run_options;
  run_options.notes.push_back(
      options.rounds == 1
          ? "calibrated in-process by stepsim validate --calibrate, right before the measured "
            "steps"
          : "calibrated in-process by stepsim validate --calibrate, in " +
                std::to_string(options.rounds) +
                " rounds between the measured steps: each sample is its median over them");
  for (const std::string& line : skipped) run_options.notes.push_back("not measured: " + line);
  std::vector<Profile> rounds;
  Profile so_far;
  for (int round = 0; round < options.rounds; ++round) {
    // The interference microbenchmark (a few seconds) once, in the first round.
    run_options.interference = round == 0;
    auto run = run_calibration(**backend, points, run_options, nullptr);
    if (!run.ok()) return run.errors();
    (*backend)->release_buffers();  // the measured steps after this round need the memory
    rounds.push_back(std::move(run->profile));  // complete at rank 0 only
    // Rank 0 holds the profile; every rank predicts with it, so send it round.
    std::vector<std::uint8_t> bytes;
    if ((*backend)->world_rank() == 0) {
      const std::string json = profile_to_json(median_profile(rounds));
      bytes.assign(json.begin(), json.end());
    }
    auto shared = broadcast_bytes_from_root(bytes);
    if (!shared.ok()) return shared.errors();
    auto parsed =
        parse_profile(std::string(shared->begin(), shared->end()), "the in-process calibration");
    if (!parsed.ok()) return parsed.errors();
    so_far = std::move(parsed).value();
    if (options.after_round) {
      auto after = options.after_round(round, so_far);
      if (!after.ok()) return after.errors();
    }
  }
  return so_far;
}

}  // namespace stepsim::calib
