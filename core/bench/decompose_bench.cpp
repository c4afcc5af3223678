// decompose(), analytic_memory() and count_flops() run once per configuration of a sweep:
// they must stay far below the simulation's own cost. The 1T model of Narayanan et al. 2021
// (128 layers, h 25600, 160 heads; t 8, p 64) is the largest shipped shape.

#include <benchmark/benchmark.h>

#include "stepsim/plan/decompose.hpp"
#include "stepsim/ops/flops.hpp"
#include "stepsim/plan/plan_flops.hpp"
#include "stepsim/memory/memory_model.hpp"

namespace {

stepsim::Workload one_trillion(std::int64_t v) {
  stepsim::Workload w;
  stepsim::ModelConfig& m = w.model;
  m.num_layers = 128;
  m.hidden_size = 25600;
  m.num_attention_heads = 160;
  m.num_query_groups = 160;
  m.kv_channels = 160;
  m.ffn_hidden_size = 4 * 25600;
  m.seq_length = 2048;
  m.max_position_embeddings = 2048;
  m.padded_vocab_size = 51200;
  stepsim::TrainingConfig& t = w.training;
  t.tensor_model_parallel_size = 8;
  t.pipeline_model_parallel_size = 64;
  t.virtual_pipeline_model_parallel_size = v;
  t.data_parallel_size = 6;
  t.world_size = 8 * 64 * 6;
  t.micro_batch_size = 1;
  t.num_microbatches = 512;
  t.global_batch_size = 3072;
  t.microbatch_group_size_per_vp_stage = 64;
  t.sequence_parallel = true;
  t.recompute_granularity = stepsim::RecomputeGranularity::kSelective;
  t.params_dtype = stepsim::DType::kBf16;
  w.system.gpus_per_node = 8;
  return w;
}

void BM_Decompose1T(benchmark::State& state) {
  const stepsim::Workload w = one_trillion(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(stepsim::decompose(w));
}
BENCHMARK(BM_Decompose1T)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);

void BM_AnalyticMemory1T(benchmark::State& state) {
  const stepsim::Workload w = one_trillion(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(stepsim::analytic_memory(w));
}
BENCHMARK(BM_AnalyticMemory1T)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);

void BM_CountFlops1T(benchmark::State& state) {
  const stepsim::Workload w = one_trillion(1);
  for (auto _ : state) benchmark::DoNotOptimize(stepsim::count_flops(w));
}
BENCHMARK(BM_CountFlops1T)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
