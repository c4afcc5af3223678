#include "stepsim/memory/memory_model.hpp"

#include <gtest/gtest.h>

#include "model_workloads.hpp"
#include "stepsim/ops/flops.hpp"

namespace stepsim {
namespace {

using testing::gpt3_175b;
using testing::make_workload;

// GPT-3 175B shapes: s = 2048, h = 12288, a = 96, V = 51200; b = 2, t = 8.
constexpr double s = 2048, b = 2, h = 12288, a = 96, t = 8, V = 51200;
constexpr double sbh = s * b * h;

Workload table_workload(std::int64_t tp, bool sp, RecomputeGranularity gran) {
  Workload w = make_workload(gpt3_175b(), tp, 1, 1, 2, 4);
  w.training.sequence_parallel = sp;
  w.training.recompute_granularity = gran;
  if (gran == RecomputeGranularity::kFull) {
    w.training.recompute_method = RecomputeMethod::kUniform;
    w.training.recompute_num_layers = 1;
  }
  return w;
}

// Reference §7, every row of the table.
TEST(LayerActivations, NoParallelism) {
  EXPECT_DOUBLE_EQ(layer_activation_bytes(table_workload(1, false, RecomputeGranularity::kNone)),
                   sbh * (34 + 5 * a * s / h));
}

TEST(LayerActivations, TensorParallel) {
  EXPECT_DOUBLE_EQ(layer_activation_bytes(table_workload(8, false, RecomputeGranularity::kNone)),
                   sbh * (10 + 24 / t + 5 * a * s / (h * t)));
}

TEST(LayerActivations, TensorParallelWithSequenceParallel) {
  EXPECT_DOUBLE_EQ(layer_activation_bytes(table_workload(8, true, RecomputeGranularity::kNone)),
                   sbh / t * (34 + 5 * a * s / h));
}

TEST(LayerActivations, TensorParallelSelectiveRecompute) {
  EXPECT_DOUBLE_EQ(
      layer_activation_bytes(table_workload(8, false, RecomputeGranularity::kSelective)),
      sbh * (10 + 24 / t));
}

TEST(LayerActivations, TensorParallelSequenceParallelSelective) {
  EXPECT_DOUBLE_EQ(
      layer_activation_bytes(table_workload(8, true, RecomputeGranularity::kSelective)),
      34 * sbh / t);
}

TEST(LayerActivations, FullRecomputeStoresTheInput) {
  EXPECT_DOUBLE_EQ(layer_activation_bytes(table_workload(8, false, RecomputeGranularity::kFull)),
                   2 * sbh);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(table_workload(8, true, RecomputeGranularity::kFull)),
                   2 * sbh / t);
  Workload w = table_workload(8, false, RecomputeGranularity::kFull);
  w.training.distribute_saved_activations = true;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(w), 2 * sbh / t);
}

TEST(LayerActivations, FlashAttentionRemovesTheScoresTerm) {
  Workload w = table_workload(8, false, RecomputeGranularity::kNone);
  w.model.use_flash_attn = true;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(w), sbh * (10 + 24 / t));
  w.training.sequence_parallel = true;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(w), 34 * sbh / t);
}

TEST(AnalyticMemory, SingleStageMatchesReferenceTotals) {
  // p = 1, TP + SP: L layers, embedding dropout s*b*h*p/t, output layer 4*s*b*h/t*(1 + V/h);
  // the peak adds the fp32 logits 4*s*b*V/t.
  const Workload w = table_workload(8, true, RecomputeGranularity::kSelective);
  const std::vector<StageMemory> mem = analytic_memory(w);
  ASSERT_EQ(mem.size(), 1U);
  const double layers = 96 * 34 * sbh / t;
  EXPECT_EQ(mem[0].layer_activations_bytes, static_cast<std::int64_t>(layers));
  // Selective recompute re-materialises one layer's attention scores and context in backward.
  const double recompute = 5 * a * s * s * b / t + 2 * sbh / t;
  const double extras = sbh / t + 4 * sbh / t * (1 + V / h);
  EXPECT_EQ(mem[0].activations_bytes, static_cast<std::int64_t>(layers + extras + recompute));
  const std::int64_t static_bytes = mem[0].weights_bytes + mem[0].gradients_bytes +
                                    mem[0].optimizer_bytes;
  EXPECT_EQ(mem[0].peak_bytes,
            static_bytes + mem[0].activations_bytes + static_cast<std::int64_t>(4 * s * b * V / t));
}

TEST(AnalyticMemory, FullRecomputeStoresInputsAndRematerialisesOneLayer) {
  const Workload w = table_workload(8, true, RecomputeGranularity::kFull);
  const StageMemory m = analytic_memory(w)[0];
  EXPECT_EQ(m.layer_activations_bytes, static_cast<std::int64_t>(96 * 2 * sbh / t));
  const double one_layer = sbh / t * (34 + 5 * a * s / h);
  const double extras = sbh / t + 4 * sbh / t * (1 + V / h);
  EXPECT_EQ(m.activations_bytes,
            static_cast<std::int64_t>(96 * 2 * sbh / t + extras + one_layer - 2 * sbh / t));
}

TEST(AnalyticMemory, OneFOneBStageHoldsPMinusRMicrobatches) {
  Workload w = make_workload(gpt3_175b(), 8, 8, 1, 2, 16);
  w.training.sequence_parallel = true;
  w.training.recompute_granularity = RecomputeGranularity::kSelective;
  const std::vector<StageMemory> mem = analytic_memory(w);
  ASSERT_EQ(mem.size(), 8U);
  const double per_layer = 34 * sbh / t;
  for (std::int32_t r = 0; r < 8; ++r) {
    EXPECT_EQ(max_in_flight(w.training, r), 8 - r);
    // Stage r holds p - r micro-batches of its 12 layers; stage 0 holds L layers' worth.
    EXPECT_EQ(mem[static_cast<std::size_t>(r)].layer_activations_bytes,
              static_cast<std::int64_t>((8 - r) * 12 * per_layer))
        << r;
  }
  EXPECT_EQ(mem[0].layer_activations_bytes, static_cast<std::int64_t>(96 * per_layer));
  // Fewer micro-batches than stages: at most m in flight.
  w.training.num_microbatches = 3;
  EXPECT_EQ(max_in_flight(w.training, 0), 3);
  EXPECT_EQ(analytic_memory(w)[0].layer_activations_bytes,
            static_cast<std::int64_t>(3 * 12 * per_layer));
}

TEST(AnalyticMemory, InterleavingFactorOnFirstStage) {
  // Reference §7: interleaving multiplies the first stage's L layers' worth by
  // 1 + (p - 1)/(p v).
  struct Pv {
    std::int64_t p, v;
  };
  for (const Pv pv : {Pv{8, 2}, Pv{8, 3}, Pv{4, 4}, Pv{2, 2}}) {
    Workload w = make_workload(gpt3_175b(), 8, pv.p, 1, 2, 32, pv.v);
    w.training.sequence_parallel = true;
    w.training.recompute_granularity = RecomputeGranularity::kSelective;
    const double p = static_cast<double>(w.training.pipeline_model_parallel_size);
    const double vv = static_cast<double>(w.training.virtual_pipeline_model_parallel_size);
    const double expected = 96 * 34 * sbh / t * (1 + (p - 1) / (p * vv));
    EXPECT_NEAR(static_cast<double>(analytic_memory(w)[0].layer_activations_bytes), expected,
                1.0);
  }
}

TEST(StaticMemory, EighteenBytesPerParameter) {
  Workload w = make_workload(gpt3_175b(), 8, 8, 4, 1, 8);
  const std::vector<StageMemory> mem = analytic_memory(w);
  for (const StageMemory& m : mem) {
    const std::int64_t params = chunk_parameters(w, m.stage, 0);
    EXPECT_EQ(m.weights_bytes, 2 * params);
    EXPECT_EQ(m.gradients_bytes, 4 * params);
    EXPECT_EQ(m.optimizer_bytes, 12 * params);
  }
}

TEST(StaticMemory, DistributedOptimizerSixPlusTwelveOverDp) {
  TrainingConfig tc;
  tc.params_dtype = DType::kBf16;
  tc.data_parallel_size = 8;
  tc.use_distributed_optimizer = true;
  const StaticMemory m = static_memory(tc, 8000);
  EXPECT_EQ(m.total(), 8000 * 6 + 8000 * 12 / 8);
  tc.params_dtype = DType::kFp32;
  tc.use_distributed_optimizer = false;
  EXPECT_EQ(static_memory(tc, 1000).total(), 16000);  // fp32: weights, grads, two moments
}

TEST(AnalyticMemory, StagesOfAPipelineFallFromFirstToLast) {
  Workload w = make_workload(testing::llama2_70b(), 8, 4, 2, 1, 16);
  w.training.sequence_parallel = true;
  const std::vector<StageMemory> mem = analytic_memory(w);
  for (std::size_t r = 1; r < mem.size(); ++r) {
    EXPECT_LT(mem[r].layer_activations_bytes, mem[r - 1].layer_activations_bytes);
    EXPECT_GE(mem[r].peak_bytes, mem[r].weights_bytes + mem[r].gradients_bytes +
                                     mem[r].optimizer_bytes + mem[r].activations_bytes);
  }
}

}  // namespace
}  // namespace stepsim
