// How fast `stepsim sweep` plans: the full Megatron space of Turing-530B on 2520 A100s
// (scenarios/sweeps/turing-530b-2520.json: t, p, v, SP, micro-batch, recompute and the
// distributed optimizer on "auto"), end to end (enumerate, validate, prune, simulate the
// survivors) on 1 and 2 threads, also with context parallelism, TP-communication overlap,
// FP8 and the uneven pipeline split searched (issue 11's target: at least 3,800
// configurations/s on 2 threads); and the planner's own overhead per configuration, on the
// same space with every configuration cut by memory before simulation.
//
//   build/bin/stepsim_sweep_bench [--benchmark_filter=...]

#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include "stepsim/cost/make_cost_model.hpp"
#include "stepsim/sweep/sweep_spec.hpp"
#include "stepsim/sweep/sweep.hpp"

namespace {

using namespace stepsim;

class CountSink final : public sim::SweepSink {
 public:
  void add(const sim::SweepRow& row, const Workload& /*w*/) override {
    ++rows;
    simulated += row.simulated ? 1 : 0;
    feasible += row.status == sim::SweepStatus::kFeasible ? 1 : 0;
  }
  std::int64_t rows = 0, simulated = 0, feasible = 0;
};

void run(benchmark::State& state, SweepSpec spec) {
  std::shared_ptr<const Profile> profile;
  if (spec.base.cost_model.kind == CostModelSpec::Kind::kProfile) {
    auto p = load_shared_profile(spec.base.cost_model.profile_path);
    if (!p.ok()) {
      state.SkipWithError(format_errors(p.errors()).c_str());
      return;
    }
    profile = *p;
  }
  std::vector<std::unique_ptr<CostModel>> models;
  std::vector<const CostModel*> ptrs;
  for (const SystemConfig& s : sim::system_variants(spec)) {
    Workload w = spec.base;
    w.system = s;
    auto m = make_cost_model(w, profile);
    if (!m.ok()) {
      state.SkipWithError(format_errors(m.errors()).c_str());
      return;
    }
    ptrs.push_back(m->get());
    models.push_back(std::move(m).value());
  }
  const sim::SweepEvaluator evaluator(spec, ptrs);
  CountSink sink;
  for (auto _ : state) {
    sink = CountSink{};
    sim::SweepRunOptions options;
    options.jobs = static_cast<int>(state.range(0));
    auto stats = sim::run_sweep(spec, evaluator, options, {&sink});
    if (!stats.ok()) {
      state.SkipWithError("run_sweep failed");
      return;
    }
  }
  state.counters["configurations"] = static_cast<double>(sink.rows);
  state.counters["simulated"] = static_cast<double>(sink.simulated);
  state.counters["feasible"] = static_cast<double>(sink.feasible);
  state.counters["configurations_per_s"] =
      benchmark::Counter(static_cast<double>(sink.rows) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
}

Result<SweepSpec> turing(std::string_view extra_search = {}) {
  const LoadOptions options{STEPSIM_SCENARIOS_DIR};
  auto spec = load_sweep_file(std::string(STEPSIM_SCENARIOS_DIR) + "/sweeps/turing-530b-2520.json",
                              options);
  if (!spec.ok() || extra_search.empty()) return spec;
  // Same space with 1 MB GPUs: every configuration is cut by the analytic memory model.
  SweepAxis axis;
  axis.knob = find_knob(extra_search);
  axis.values.push_back(KnobValue{1 << 20, 0.0, -1});
  spec.value().axes.insert(spec.value().axes.begin(), axis);
  return spec;
}

void BM_SweepTuring530B_A100x2520(benchmark::State& state) {
  auto spec = turing();
  if (!spec.ok()) {
    state.SkipWithError(format_errors(spec.errors()).c_str());
    return;
  }
  run(state, std::move(spec).value());
}

void BM_SweepTuring530B_PlannerOverheadOnly(benchmark::State& state) {
  auto spec = turing("system.memory_bytes");
  if (!spec.ok()) {
    state.SkipWithError(format_errors(spec.errors()).c_str());
    return;
  }
  run(state, std::move(spec).value());
}

// The same Turing-530B space with the newer knobs searched too: context parallelism and
// Transformer Engine's TP-communication overlap on "auto", FP8 and the uneven pipeline split
// (embedding and loss counted as layers) as given. The attention backend is TE's fused one,
// which CP needs.
/// The newer knobs' Turing-530B space with `split_and_fp8` (the FP8 and uneven-split
/// search entries) after the parallel ones.
void run_newer_knobs(benchmark::State& state, const std::string& split_and_fp8) {
  const LoadOptions options{STEPSIM_SCENARIOS_DIR};
  auto spec = load_sweep_text(R"({
    "base": "turing-530b-a100-2520.json",
    "search": {
      "model.attention_backend": ["fused"],
      "training.tensor_model_parallel_size": "auto",
      "training.context_parallel_size": "auto",
      "training.pipeline_model_parallel_size": "auto",
      "training.virtual_pipeline_model_parallel_size": "auto",
      "training.sequence_parallel": "auto",
      "training.tp_comm_overlap": "auto",
      "training.micro_batch_size": "auto",
      "training.recompute_granularity": "auto",
      "training.use_distributed_optimizer": "auto",
      )" + split_and_fp8 + R"(
    },
    "constraints": {"memory_headroom": 0.05},
    "objective": "max_tokens_per_s",
    "top": 10
  })",
                              "turing-530b-2520-newer-knobs.json", STEPSIM_SCENARIOS_DIR, options);
  if (!spec.ok()) {
    state.SkipWithError(format_errors(spec.errors()).c_str());
    return;
  }
  run(state, std::move(spec).value());
}

// FP8 and the split flags as lists: the A100 has no FP8 tensor cores, so those
// configurations are enumerated and cut as invalid, as `stepsim sweep` cuts them.
void BM_SweepTuring530B_A100x2520_NewerKnobs(benchmark::State& state) {
  run_newer_knobs(state, R"("training.fp8": [null, "hybrid"],
      "training.account_for_embedding_in_pipeline_split": [false, true],
      "training.account_for_loss_in_pipeline_split": [false, true])");
}

// The same space with FP8, its recipe and the embedding and loss flags on "auto" too: only
// the valid combinations are enumerated (the A100 has no FP8 tensor cores: FP8 off; the flags
// where the counted layers divide), so the same configurations are simulated as by the lists
// above, from fewer enumerated ones: a lower rate for less work.
void BM_SweepTuring530B_A100x2520_NewerKnobsAuto(benchmark::State& state) {
  run_newer_knobs(state, R"("training.fp8": "auto", "training.fp8_recipe": "auto",
      "training.account_for_embedding_in_pipeline_split": "auto",
      "training.account_for_loss_in_pipeline_split": "auto")");
}

// Qwen3-235B-A22B on 256 H100s (scenarios/sweeps/qwen3-235b-256.json): TP, PP, micro-batch and
// recompute listed, expert parallelism, expert TP and the token dispatcher on "auto".
void BM_SweepQwen3_235B_H100x256(benchmark::State& state) {
  const LoadOptions options{STEPSIM_SCENARIOS_DIR};
  auto spec =
      load_sweep_file(std::string(STEPSIM_SCENARIOS_DIR) + "/sweeps/qwen3-235b-256.json", options);
  if (!spec.ok()) {
    state.SkipWithError(format_errors(spec.errors()).c_str());
    return;
  }
  run(state, std::move(spec).value());
}

BENCHMARK(BM_SweepTuring530B_A100x2520)->Arg(1)->Arg(2)->Unit(benchmark::kSecond)->UseRealTime();
BENCHMARK(BM_SweepTuring530B_A100x2520_NewerKnobs)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kSecond)
    ->UseRealTime();
BENCHMARK(BM_SweepTuring530B_A100x2520_NewerKnobsAuto)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kSecond)
    ->UseRealTime();
BENCHMARK(BM_SweepQwen3_235B_H100x256)->Arg(1)->Arg(2)->Unit(benchmark::kSecond)->UseRealTime();
BENCHMARK(BM_SweepTuring530B_PlannerOverheadOnly)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
