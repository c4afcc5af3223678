#include "stepsim/ops/flops.hpp"
#include "stepsim/plan/plan_flops.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "model_workloads.hpp"

namespace stepsim {
namespace {

using testing::gpt3_175b;
using testing::make_workload;

/// Reference §8, model FLOPs per step: 72 B s L h^2 (1 + s/(6h) + V/(12 h L)).
double closed_form_model_flops(const Workload& w) {
  const double B = static_cast<double>(w.training.global_batch_size);
  const double s = static_cast<double>(w.model.seq_length);
  const double L = static_cast<double>(w.model.num_layers);
  const double h = static_cast<double>(w.model.hidden_size);
  const double V = static_cast<double>(w.model.padded_vocab_size);
  return 72.0 * B * s * L * h * h * (1.0 + s / (6.0 * h) + V / (12.0 * h * L));
}

/// Reference §8, hardware FLOPs with full recompute: 96 B s L h^2 (1 + s/(6h) + V/(16 L h)).
double closed_form_full_recompute_flops(const Workload& w) {
  const double B = static_cast<double>(w.training.global_batch_size);
  const double s = static_cast<double>(w.model.seq_length);
  const double L = static_cast<double>(w.model.num_layers);
  const double h = static_cast<double>(w.model.hidden_size);
  const double V = static_cast<double>(w.model.padded_vocab_size);
  return 96.0 * B * s * L * h * h * (1.0 + s / (6.0 * h) + V / (16.0 * L * h));
}

void expect_rel(double actual, double expected, double tol) {
  EXPECT_LE(std::abs(actual - expected), tol * std::abs(expected))
      << "actual " << actual << " expected " << expected;
}

TEST(Flops, ModelFlopsMatchClosedFormForEveryParallelLayout) {
  struct Layout {
    std::int64_t t, p, dp, b, m, v;
    bool sp;
  };
  for (const Layout& l : {Layout{1, 1, 1, 1, 1, 1, false}, Layout{8, 1, 2, 2, 4, 1, false},
                          Layout{8, 8, 4, 1, 16, 1, true}, Layout{8, 8, 1, 1, 16, 3, true},
                          Layout{4, 12, 2, 2, 24, 2, false}}) {
    Workload w = make_workload(gpt3_175b(), l.t, l.p, l.dp, l.b, l.m, l.v);
    w.training.sequence_parallel = l.sp;
    const FlopsSummary f = count_flops(w);
    expect_rel(f.model_flops_per_step, closed_form_model_flops(w), 1e-9);
    // Without recompute the hardware does exactly the model's work.
    EXPECT_EQ(f.hardware_flops_per_step, f.model_flops_per_step);
    ASSERT_EQ(f.stage_model_flops_per_microbatch.size(), static_cast<std::size_t>(l.p));
    const double sum = std::accumulate(f.stage_model_flops_per_microbatch.begin(),
                                       f.stage_model_flops_per_microbatch.end(), 0.0);
    expect_rel(sum * static_cast<double>(l.t * l.m * l.dp), f.model_flops_per_step, 1e-12);
  }
}

TEST(Flops, FullRecomputeHardwareFlopsMatchClosedForm) {
  Workload w = make_workload(gpt3_175b(), 8, 8, 2, 1, 8);
  w.training.recompute_granularity = RecomputeGranularity::kFull;
  w.training.recompute_method = RecomputeMethod::kUniform;
  w.training.recompute_num_layers = 1;
  const FlopsSummary f = count_flops(w);
  expect_rel(f.model_flops_per_step, closed_form_model_flops(w), 1e-9);
  expect_rel(f.hardware_flops_per_step, closed_form_full_recompute_flops(w), 1e-9);
  // Block recompute of every layer of the chunk is the same work.
  w.training.recompute_method = RecomputeMethod::kBlock;
  w.training.recompute_num_layers = 12;
  expect_rel(count_flops(w).hardware_flops_per_step, closed_form_full_recompute_flops(w), 1e-9);
}

TEST(Flops, SelectiveRecomputeAddsOnlyAttentionScores) {
  Workload w = make_workload(gpt3_175b(), 8, 1, 1, 1, 4);
  w.training.recompute_granularity = RecomputeGranularity::kSelective;
  const FlopsSummary f = count_flops(w);
  // Re-done QK^T and AV: 4 b s^2 h per layer per micro-batch.
  const double s = 2048;
  const double h = 12288;
  const double extra = 4.0 * s * s * h * 96 * 4;
  expect_rel(f.hardware_flops_per_step - f.model_flops_per_step, extra, 1e-9);
}

TEST(Flops, FlashAttentionCountsTheSameModelFlops) {
  Workload w = make_workload(gpt3_175b(), 8, 2, 1, 1, 4);
  w.model.use_flash_attn = true;
  expect_rel(count_flops(w).model_flops_per_step, closed_form_model_flops(w), 1e-9);
}

TEST(Parameters, GptClosedForm) {
  // Reference §8: 12 L h^2 (1 + 13/(12h) + (V + s)/(12 L h)), plus the final LayerNorm (2h)
  // the closed form leaves out.
  const ModelConfig m = gpt3_175b();
  const std::int64_t L = 96;
  const std::int64_t h = 12288;
  const std::int64_t expected = 12 * L * h * h + 13 * L * h + (51200 + 2048) * h + 2 * h;
  EXPECT_EQ(count_parameters(m), expected);
}

TEST(Parameters, PublishedModelSizes) {
  expect_rel(static_cast<double>(count_parameters(gpt3_175b())), 174.6e9, 1e-3);
  expect_rel(static_cast<double>(count_parameters(testing::llama2_70b())), 68.98e9, 1e-3);
  expect_rel(static_cast<double>(count_parameters(testing::llama3(32, 4096, 32, 14336))), 8.03e9,
             1e-3);
  expect_rel(static_cast<double>(count_parameters(testing::llama3(80, 8192, 64, 28672))),
             70.55e9, 1e-3);
  expect_rel(static_cast<double>(count_parameters(testing::codegeex_13b())), 13e9, 0.02);
}

TEST(Parameters, ShardsAddUpToTheModel) {
  // Untied: every weight lives on exactly one stage; TP splits everything but norms and the
  // row-parallel biases.
  Workload w = make_workload(testing::llama2_70b(), 1, 4, 1, 1, 8, 2);
  std::int64_t total = 0;
  for (std::int32_t r = 0; r < 4; ++r) {
    for (std::int32_t c = 0; c < 2; ++c) total += chunk_parameters(w, r, c);
  }
  EXPECT_EQ(total, count_parameters(w.model));
  // Tied with p > 1: the last stage holds a second copy of the word embedding.
  w = make_workload(gpt3_175b(), 1, 2, 1, 1, 4);
  const std::int64_t both = chunk_parameters(w, 0, 0) + chunk_parameters(w, 1, 0);
  EXPECT_EQ(both, count_parameters(w.model) + 51200 * 12288);
}

TEST(Utilisation, FlopsOverCapacity) {
  EXPECT_DOUBLE_EQ(utilisation(3.12e17, 2.0, 1000, 312e12), 0.5);
  EXPECT_EQ(utilisation(1e15, 0.0, 8, 1e12), 0.0);
}

}  // namespace
}  // namespace stepsim
