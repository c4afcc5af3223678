// How fast, and in how much memory, `stepsim predict --full-rank` simulates every GPU of
// Llama 3 405B on 8,192 H100s (t8 p16 dp64, seq 8192, global batch 2048, 7,8,...,8,7 layers
// per stage as Llama 3 split them: scenarios/llama3-405b-h100-8192.json). Target (issue 12):
// at most 10 s and 4 GiB resident. Each iteration runs what predict runs: load, cost model,
// decomposition, schedule, every GPU's task graph, engine, report metrics. Variants: symmetric,
// and perturbed (a straggler, a slow NIC, jitter: 64 distinct replica paces, so 64 builds).
// The peak resident set of the process is reported as `max_rss_mib` (getrusage; it covers
// every benchmark run before it in the same process: run one with --benchmark_filter for its
// own); `/usr/bin/time -v build/bin/stepsim predict scenarios/llama3-405b-h100-8192.json
// --full-rank` measures the CLI alone.
//
//   build/bin/stepsim_full_rank_bench [--benchmark_filter=...]

#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <memory>
#include <string>

#include "stepsim/plan/decompose.hpp"
#include "stepsim/check/load.hpp"
#include "stepsim/cost/make_cost_model.hpp"
#include "stepsim/simulate/simulate.hpp"

namespace {

using namespace stepsim;

void predict_full_rank(benchmark::State& state, const sim::SimulateOptions& options) {
  const LoadOptions load_options{STEPSIM_SCENARIOS_DIR};
  const std::string path = std::string(STEPSIM_SCENARIOS_DIR) + "/llama3-405b-h100-8192.json";
  std::int64_t tasks = 0;
  for (auto _ : state) {
    Result<Workload> w = load_scenario_file(path, load_options);
    if (!w.ok()) {
      state.SkipWithError(format_errors(w.errors()).c_str());
      return;
    }
    Result<std::unique_ptr<CostModel>> cost = make_cost_model(*w);
    if (!cost.ok()) {
      state.SkipWithError(format_errors(cost.errors()).c_str());
      return;
    }
    const WorkloadPlan plan = decompose(*w);
    Result<sim::SimulationResult> r = sim::simulate(*w, plan, **cost, options);
    if (!r.ok()) {
      state.SkipWithError(format_errors(r.errors()).c_str());
      return;
    }
    tasks = r->prediction.engine_tasks;
    benchmark::DoNotOptimize(r->prediction.step_time_s);
  }
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  state.counters["engine_tasks"] = static_cast<double>(tasks);
  state.counters["max_rss_mib"] = static_cast<double>(usage.ru_maxrss) / 1024.0;  // KiB on Linux
}

void BM_FullRankLlama3_405B_H100x8192(benchmark::State& state) {
  sim::SimulateOptions o;
  o.full_rank = true;
  predict_full_rank(state, o);
}

void BM_FullRankLlama3_405B_H100x8192_Perturbed(benchmark::State& state) {
  sim::SimulateOptions o;
  o.full_rank = true;
  o.stragglers = {sim::Straggler{.rank = 4000, .factor = 1.3}};
  o.slow_nics = {sim::SlowNic{.node = 100, .factor = 2.0}};
  o.jitter_sigma = 0.05;
  o.seed = 1;
  predict_full_rank(state, o);
}

BENCHMARK(BM_FullRankLlama3_405B_H100x8192)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FullRankLlama3_405B_H100x8192_Perturbed)->Unit(benchmark::kMillisecond);

}  // namespace
