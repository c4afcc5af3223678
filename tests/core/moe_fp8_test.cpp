// The routed experts under FP8: Megatron-Core's TEGroupedMLP over Transformer Engine's
// GroupedLinear (experts.py, grouped_linear.py): each local expert's rows padded to the
// recipe's alignment (Fp8Padding: 16, MXFP8 32), both copies of the input and of the output
// gradient split-quantized, grouped FP8 GEMMs, FP8 copies of the expert weights in memory.
// Oracles from those closed forms on the shipped Qwen3-30B-A3B FP8 job.

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <variant>

#include "plan_ops.hpp"
#include "shipped_scenario.hpp"
#include "stepsim/layout/workload_dims.hpp"
#include "stepsim/memory/memory_model.hpp"
#include "stepsim/ops/moe_fp8_ops.hpp"
#include "stepsim/plan/decompose.hpp"

namespace stepsim {
namespace {

constexpr const char* kScenario = "qwen3-30b-a3b-h100-16-fp8.json";
// Qwen3-30B-A3B: h 2048, 128 experts of f 768 (SwiGLU: FC1 1536 wide), top-8; 32 query heads
// and 4 KV groups of 128. EP 16: 8 local experts; TP 1, micro-batch 1.
constexpr std::int64_t kH = 2048, kF = 768, kLocal = 8;

/// The shipped job with `seq` its sequence length and text replaced.
Result<Workload> job(int seq = 4096, std::vector<std::pair<std::string, std::string>> more = {}) {
  more.insert(more.begin(), {"\"seq_length\": 4096", "\"seq_length\": " + std::to_string(seq)});
  return testing::shipped_with(kScenario, "", more);
}

std::string errors_of(const Result<Workload>& w) {
  EXPECT_FALSE(w.ok());
  return w.ok() ? "" : format_errors(w.errors());
}

const Op* find(const std::vector<Op>& ops, std::string_view name) {
  for (const Op& op : ops) {
    if (op.name == name && op.layer == 0) return &op;
  }
  return nullptr;
}

TEST(MoeFp8, ExpertGemmsAreGroupedFp8AtTheirShapes) {
  const auto w = job();
  ASSERT_TRUE(w.ok()) << format_errors(w.errors());
  const ChunkPlan c = decompose(*w).stages[0].chunks[0];
  // Balanced: 4096 tokens x top-8 routed over EP 16 to 128 experts: 4096 rows per expert.
  const Op* fc1 = find(c.forward, "expert_fc1_gemm");
  ASSERT_NE(fc1, nullptr);
  const auto& g = std::get<GemmOp>(fc1->shape);
  EXPECT_EQ(g, (GemmOp{.m = 4096, .n = 2 * kF, .k = kH, .batch = kLocal, .dtype = DType::kFp8,
                       .layout = GemmLayout::kTN, .fast_accum = true}));
  const auto& wgrad = std::get<GemmOp>(find(c.backward, "expert_fc1_wgrad")->shape);
  EXPECT_EQ(wgrad, (GemmOp{.m = 2 * kF, .n = kH, .k = 4096, .batch = kLocal,
                           .dtype = DType::kFp8, .layout = GemmLayout::kTN}));
  // 4096 rows: a multiple of 16, no padding copies.
  EXPECT_EQ(find(c.forward, "expert_fp8_padding"), nullptr);
}

TEST(MoeFp8, QuantizeKernelsMoveTheirBytes) {
  const auto w = job();
  ASSERT_TRUE(w.ok()) << format_errors(w.errors());
  const ChunkPlan c = decompose(*w).stages[0].chunks[0];
  // Per-tensor current scaling: an amax pass (read 2 bytes) and a cast-transpose (read 2,
  // write 1 + 1): 6 bytes per element of the 8 x 4096 rows.
  const std::int64_t rows = kLocal * 4096;
  EXPECT_EQ(testing::bytes_of_op(*find(c.forward, "expert_fc1_input_quantize")), 6 * rows * kH);
  EXPECT_EQ(testing::bytes_of_op(*find(c.forward, "expert_fc2_input_quantize")), 6 * rows * kF);
  EXPECT_EQ(testing::bytes_of_op(*find(c.backward, "expert_fc2_grad_quantize")), 6 * rows * kH);
  EXPECT_EQ(testing::bytes_of_op(*find(c.backward, "expert_fc1_grad_quantize")),
            6 * rows * 2 * kF);
  // Block scaling (1x128 tiles): read 2, write 1 + 1, a 4-byte scale per 128 of each copy.
  const auto block = job(4096, {{"\"tensorwise\"", "\"blockwise\""}});
  ASSERT_TRUE(block.ok()) << format_errors(block.errors());
  const ChunkPlan b = decompose(*block).stages[0].chunks[0];
  const std::int64_t el = rows * kH;
  EXPECT_EQ(testing::bytes_of_op(*find(b.forward, "expert_fc1_input_quantize")),
            4 * el + el / 16);
}

TEST(MoeFp8, UnalignedExpertRowsArePaddedToTheRecipesAlignment) {
  // seq 4100: 4100 rows per expert, padded to 4112 (16); the copies read the rows and write
  // the padded ones, the probabilities (fp32 router) likewise.
  const auto w = job(4100);
  ASSERT_TRUE(w.ok()) << format_errors(w.errors());
  const ChunkPlan c = decompose(*w).stages[0].chunks[0];
  const std::int64_t rows = kLocal * 4100, padded = kLocal * 4112;
  EXPECT_EQ(testing::bytes_of_op(*find(c.forward, "expert_fp8_padding")),
            (rows + padded) * kH * 2);
  EXPECT_EQ(testing::bytes_of_op(*find(c.forward, "expert_fp8_unpadding")),
            (rows + padded) * kH * 2);
  EXPECT_EQ(std::get<GemmOp>(find(c.forward, "expert_fc2_gemm")->shape).m, 4112);
  EXPECT_NE(find(c.backward, "expert_fp8_padding_bwd"), nullptr);
  // MXFP8 on Blackwell aligns to 32: with EP 8 (16 local experts) and seq 4128 an expert gets
  // 4128 x 8 x 8 / 128 = 2064 rows, padded to 2080.
  const auto mx = job(4128, {{"\"tensorwise\"", "\"mxfp8\""},
                             {"\"expert_model_parallel_size\": 16", "\"expert_model_parallel_size\": 8"},
                             {"systems/dgx-h100-80gb.json", "systems/dgx-b200.json"}});
  ASSERT_TRUE(mx.ok()) << format_errors(mx.errors());
  const ChunkPlan m = decompose(*mx).stages[0].chunks[0];
  const auto& g = std::get<GemmOp>(find(m.forward, "expert_fc1_gemm")->shape);
  EXPECT_EQ(g.m, 2080);
  EXPECT_EQ(g.batch, 16);
  EXPECT_EQ(g.scaling, GemmScaling::kMx1x32);
}

TEST(MoeFp8, ExpertWeightsKeepFp8CopiesInMemoryAndAreCastPerExpert) {
  const auto fp8 = job();
  const auto bf16 = job(4096, {{"\"fp8\": \"hybrid\",", ""}, {"\"fp8_recipe\": \"tensorwise\"", "\"fp8_recipe\": \"delayed\""}});
  ASSERT_TRUE(fp8.ok()) << format_errors(fp8.errors());
  ASSERT_TRUE(bf16.ok()) << format_errors(bf16.errors());
  // Per layer: QKV (32 + 2 x 4) x 128 x 2048, projection 2048 x 4096, and the 8 local
  // experts' FC1 (1536 x 2048) and FC2 (2048 x 768); both FP8 copies: 2 bytes each.
  const std::int64_t experts = kLocal * (2 * kF * kH + kH * kF);
  const std::int64_t per_layer = 40 * 128 * kH + kH * 4096 + experts;
  const StageMemory f = analytic_memory(*fp8)[0];
  const StageMemory b = analytic_memory(*bf16)[0];
  EXPECT_EQ(f.weights_bytes - b.weights_bytes, 2 * 48 * per_layer);
  // The weight casts of the step: the experts' FC1 one kernel per local expert; current
  // scaling reads the weight twice (amax, cast) and writes both copies.
  int casts = 0;
  const WorkloadPlan plan = decompose(*fp8);
  for (const Op& op : plan.stages[0].step_ops) {
    if (op.name != "fp8_weight_cast" || op.layer != 0) continue;
    ++casts;
    const auto& m = std::get<MemoryBoundOp>(op.shape);
    if (m.kernels == kLocal) {
      EXPECT_TRUE(m.bytes == 6 * kLocal * 2 * kF * kH || m.bytes == 6 * kLocal * kF * kH)
          << m.bytes;
    }
  }
  EXPECT_EQ(casts, 4);
}

/// The shipped job as MXFP8 on DGX B200 (two hosts): EP 8, so 16 local experts of 2048 rows
/// (4096 x 8 x 8 / 128) each and an expert data-parallel group of 2; `params`: with MXFP8
/// parameters as Megatron-Bridge's bf16_with_mxfp8_mixed sets them (fp8_param_gather,
/// reuse_grad_buf_for_mxfp8_param_ag; its parameter gather not overlapped).
Result<Workload> mxfp8_job(bool params) {
  std::vector<std::pair<std::string, std::string>> more = {
      {"\"tensorwise\"", "\"mxfp8\""},
      {"\"expert_model_parallel_size\": 16", "\"expert_model_parallel_size\": 8"},
      {"\"overlap_param_gather\": true", "\"overlap_param_gather\": false"},
      {"systems/dgx-h100-80gb.json", "systems/dgx-b200.json"}};
  if (params) {
    more.emplace_back("\"fp8_recipe\": \"mxfp8\"",
                      "\"fp8_recipe\": \"mxfp8\", \"fp8_param_gather\": true, "
                      "\"reuse_grad_buf_for_mxfp8_param_ag\": true");
  }
  return job(4096, more);
}

constexpr std::int64_t kMxLocal = 16, kMxRows = 2048;

TEST(MoeFp8, Mxfp8ExpertsQuantizeBothCopiesWithE8m0Scales) {
  const auto w = mxfp8_job(false);
  ASSERT_TRUE(w.ok()) << format_errors(w.errors());
  const ChunkPlan c = decompose(*w).stages[0].chunks[0];
  // MXFP8Quantizer over the 16 x 2048 rows: read 2 bytes, write the row- and column-wise
  // E4M3 copies (1 + 1) and an E8M0 scale per 32 values of each: 4 + 2/32 bytes per element.
  const std::int64_t fc1_in = kMxLocal * kMxRows * kH;
  const std::int64_t fc2_in = kMxLocal * kMxRows * kF;
  EXPECT_EQ(testing::bytes_of_op(*find(c.forward, "expert_fc1_input_quantize")),
            4 * fc1_in + 2 * (fc1_in / 32));
  EXPECT_EQ(testing::bytes_of_op(*find(c.forward, "expert_fc2_input_quantize")),
            4 * fc2_in + 2 * (fc2_in / 32));
  EXPECT_EQ(testing::bytes_of_op(*find(c.backward, "expert_fc1_grad_quantize")),
            4 * (kMxLocal * kMxRows * 2 * kF) + 2 * (kMxLocal * kMxRows * 2 * kF / 32));
  // Every expert GEMM scales both operands per 1x32 block, without fast accumulation.
  for (const char* name : {"expert_fc1_gemm", "expert_fc2_gemm"}) {
    const auto& g = std::get<GemmOp>(find(c.forward, name)->shape);
    EXPECT_EQ(g.scaling, GemmScaling::kMx1x32) << name;
    EXPECT_FALSE(g.fast_accum) << name;
    EXPECT_EQ(g.batch, kMxLocal) << name;
    EXPECT_EQ(g.m, kMxRows) << name;
  }
  const auto& wgrad = std::get<GemmOp>(find(c.backward, "expert_fc2_wgrad")->shape);
  EXPECT_EQ(wgrad.scaling, GemmScaling::kMx1x32);
  // Saved for backward: the column-wise MXFP8 copies of FC1's and FC2's inputs (1 + 1/32 byte
  // per element), FC1's 16-bit output and each row's probability (the router's dtype: the
  // job's bf16, no moe_router_dtype).
  const detail::Dims x = detail::dims_of(*w);
  const detail::MoeTokens n = detail::moe_tokens(x);
  ASSERT_EQ(n.per_expert, kMxRows);
  const double rows = static_cast<double>(kMxLocal * kMxRows);
  EXPECT_DOUBLE_EQ(detail::fp8_expert_stored_bytes(x, n),
                   rows * (static_cast<double>(kH + kF) * (1.0 + 1.0 / 32.0) +
                           static_cast<double>(2 * kF * 2) + 2.0));
}

TEST(MoeFp8, Mxfp8ExpertParametersAreGatheredIn16BitsThenQuantized) {
  const auto bf = mxfp8_job(false);
  const auto mx = mxfp8_job(true);
  ASSERT_TRUE(bf.ok()) << format_errors(bf.errors());
  ASSERT_TRUE(mx.ok()) << format_errors(mx.errors());
  // Per layer the FP8 linears: QKV (32 + 2 x 4) x 128 x 2048, projection 2048 x 4096 and the
  // 16 local experts' FC1 (1536 x 2048) and FC2 (2048 x 768). Without MXFP8 parameters each
  // keeps its 16-bit weight and both MXFP8 copies with their scales; with them the 16-bit
  // weight is gone (fp8_model_init), the copies and scales stay.
  const std::int64_t experts = kMxLocal * (2 * kF * kH + kH * kF);
  const std::int64_t per_layer = 40 * 128 * kH + kH * 4096 + experts;
  const std::int64_t fp8 = 48 * per_layer;
  const StageMemory a = analytic_memory(*bf)[0];
  const StageMemory b = analytic_memory(*mx)[0];
  EXPECT_EQ(a.weights_bytes - b.weights_bytes, 2 * fp8);
  // The step: the experts' 16-bit shards gathered over the expert data-parallel group of 2
  // (through the gradient buffer: 2 bytes per parameter), then each local expert's weight
  // quantized into both copies (read 2, write 1 + 1 and two E8M0 scales per 32).
  const WorkloadPlan plan = decompose(*mx);
  const Op* gather = nullptr;
  int quantized = 0;
  for (const Op& op : plan.stages[0].step_ops) {
    if (op.name == "edp_param_all_gather") gather = &op;
    if (op.name != "mxfp8_param_quantize" || op.layer != 0) continue;
    const auto& m = std::get<MemoryBoundOp>(op.shape);
    if (m.kernels != kMxLocal) continue;
    ++quantized;
    const std::int64_t el = m.bytes == 4 * kMxLocal * 2 * kF * kH + 2 * (kMxLocal * 2 * kF * kH / 32)
                                ? kMxLocal * 2 * kF * kH
                                : kMxLocal * kF * kH;
    EXPECT_EQ(m.bytes, 4 * el + 2 * (el / 32));
  }
  EXPECT_EQ(quantized, 2);
  ASSERT_NE(gather, nullptr);
  const auto& g = std::get<CollectiveOp>(gather->shape);
  EXPECT_EQ(g.group_size, 2);
  EXPECT_EQ(g.bytes, 48 * experts * 2);
  // Primary MXFP8 weights keep unswizzled scales: fprop and dgrad swizzle them first.
  const ChunkPlan c = plan.stages[0].chunks[0];
  const Op* swizzle = find(c.forward, "expert_fc1_gemm_weight_swizzle");
  ASSERT_NE(swizzle, nullptr);
  EXPECT_EQ(testing::bytes_of_op(*swizzle), 2 * (kMxLocal * 2 * kF * kH / 32));
}

TEST(MoeFp8, WhatIsNotModelledYetIsAnError) {
  const std::string delayed = errors_of(job(4096, {{"\"tensorwise\"", "\"delayed\""}}));
  EXPECT_NE(delayed.find("training.fp8_recipe=\"delayed\" with num_experts"), std::string::npos)
      << delayed;
  const std::string params = errors_of(testing::shipped_with(kScenario, "\"fp8_param_gather\": true"));
  EXPECT_NE(params.find("training.fp8_param_gather=true with num_experts and fp8_recipe "
                        "\"tensorwise\""),
            std::string::npos)
      << params;
  const std::string sequential = errors_of(job(4096, {{"\"moe_grouped_gemm\": true", "\"moe_grouped_gemm\": false"}}));
  EXPECT_NE(sequential.find("training.moe_grouped_gemm=false with fp8"), std::string::npos)
      << sequential;
}

}  // namespace
}  // namespace stepsim
