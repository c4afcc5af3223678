// training.fp8_recipe "mxfp8": Transformer Engine's MXFP8BlockScaling as Megatron-Core runs
// it on Blackwell. An E8M0 scale per 32 consecutive values, row- and column-wise copies of
// every tensor quantized from its 16-bit values, GEMMs on those copies in the 16-bit layouts
// (cublaslt_gemm.cu), no amaxes, and under sequence parallelism FP8 all-gathers of data and
// scales whose scales are swizzled before their GEMM (distributed.py _all_gather_mxfp8,
// csrc/extensions/gemm.cpp swizzle_scales_for_gemm).

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "plan_ops.hpp"
#include "shipped_scenario.hpp"
#include "stepsim/cost/calibrated_cost_model.hpp"
#include "stepsim/plan/decompose.hpp"
#include "stepsim/config/parse.hpp"
#include "stepsim/memory/memory_model.hpp"

namespace stepsim {
namespace {

constexpr const char* kScenario = "llama3-8b-b200-8-mxfp8.json";

/// The shipped B200 job (micro-batch 2, sequence 8192) with TP 2 and SP, `seq` its
/// sequence length.
Result<Workload> tp2(int seq = 8192, const std::string& training = "") {
  return testing::shipped_with(
      kScenario, training,
      {{"\"tensor_model_parallel_size\": 1", "\"tensor_model_parallel_size\": 2"},
       {"\"sequence_parallel\": false", "\"sequence_parallel\": true"},
       {"\"seq_length\": 8192", "\"seq_length\": " + std::to_string(seq)}});
}

using testing::bytes_of_op;
using testing::gather_after;
using testing::index_of;

bool has_op(const ChunkPlan& c, std::string_view name) {
  for (const auto* list : {&c.forward, &c.backward}) {
    for (const Op& op : *list) {
      if (op.name == name) return true;
    }
  }
  return false;
}

TEST(Fp8Mxfp8, GemmsRunMxScaledInTheSixteenBitLayouts) {
  const auto w = testing::shipped_with(kScenario, "");
  ASSERT_TRUE(w.ok()) << format_errors(w.errors());
  const ChunkPlan c = decompose(*w).stages[0].chunks[0];
  int fp8 = 0;
  for (const auto* list : {&c.forward, &c.backward}) {
    for (const Op& op : *list) {
      EXPECT_EQ(op.name.find("amax"), std::string::npos) << op.name << ": MXFP8 has no amaxes";
      // No FP8 transposes (the embedding's 16-bit ones stay).
      if (!op.name.starts_with("embedding")) {
        EXPECT_EQ(op.name.find("transpose"), std::string::npos) << op.name;
      }
      const auto* g = std::get_if<GemmOp>(&op.shape);
      if (g == nullptr || g->dtype != DType::kFp8) continue;
      ++fp8;
      EXPECT_EQ(g->scaling, GemmScaling::kMx1x32) << op.name;
      EXPECT_FALSE(g->fast_accum) << op.name;
      // fprop TN, dgrad NN (the weight's column-wise copy), wgrad NT.
      const GemmLayout want = op.phase == Phase::kBackwardInput    ? GemmLayout::kNN
                              : op.phase == Phase::kBackwardWeight ? GemmLayout::kNT
                                                                   : GemmLayout::kTN;
      EXPECT_EQ(g->layout, want) << op.name;
    }
  }
  EXPECT_EQ(fp8, 32 * 4 * 3);
}

TEST(Fp8Mxfp8, QuantizeKernelsGathersAndSwizzlesMoveTheirBytes) {
  const auto w = tp2();
  ASSERT_TRUE(w.ok()) << format_errors(w.errors());
  const ChunkPlan c = decompose(*w).stages[0].chunks[0];
  // s 8192 x micro-batch 2 tokens, a TP rank's shard half of them, h 4096, FC2 input
  // 14336 / 2, bf16.
  const std::int64_t tokens = 16384, shard = 8192, h = 4096, ffn = 7168, e = 2;
  // Read 16 bits, write both FP8 copies and an E8M0 byte per 32 values of each.
  const auto quantize = [&](std::int64_t n) { return n * (e + 2) + 2 * (n / 32); };
  const auto copy = [](std::int64_t n) { return n + n / 32; };
  const auto swizzle = [](std::int64_t n) { return 2 * (n / 32); };  // scales read + written
  const std::size_t q = index_of(c.forward, "qkv_input_quantize");
  EXPECT_EQ(bytes_of_op(c.forward[q]), quantize(shard * h));
  EXPECT_EQ(bytes_of_op(gather_after(c.forward, q)), copy(tokens * h));
  EXPECT_EQ(bytes_of_op(c.forward[index_of(c.forward, "qkv_input_scale_swizzle")]),
            swizzle(tokens * h));
  // The norm writes 16 bits (TE's MXFP8 norm is cuDNN's, off by default).
  EXPECT_EQ(bytes_of_op(c.forward[index_of(c.forward, "ln1")]), shard * h * 2 * e + shard * 4);
  EXPECT_EQ(bytes_of_op(c.forward[index_of(c.forward, "fc2_input_quantize")]),
            quantize(tokens * ffn));
  // FC2's gradient shard: both copies quantized and gathered, both copies' scales swizzled.
  const std::size_t g = index_of(c.backward, "fc2_grad_quantize");
  EXPECT_EQ(bytes_of_op(c.backward[g]), quantize(shard * h));
  EXPECT_EQ(bytes_of_op(gather_after(c.backward, g)), 2 * copy(tokens * h));
  EXPECT_EQ(bytes_of_op(c.backward[index_of(c.backward, "fc2_grad_scale_swizzle")]),
            swizzle(tokens * h));
  EXPECT_EQ(bytes_of_op(c.backward[index_of(c.backward, "fc2_grad_scale_swizzle_t")]),
            swizzle(tokens * h));
  // FC1: the saved column-wise input shard gathered beside dgrad, then only its scales
  // swizzled (the copy keeps its layout: no reordering as block scaling's).
  const std::size_t fc1 = index_of(c.backward, "fc1_grad_quantize");
  const std::size_t dgrad = index_of(c.backward, "fc1_dgrad");
  const std::size_t swz = index_of(c.backward, "fc1_input_scale_swizzle_bwd");
  const std::size_t wgrad = index_of(c.backward, "fc1_wgrad");
  EXPECT_EQ(bytes_of_op(c.backward[fc1]), quantize(tokens * 2 * ffn));
  EXPECT_EQ(bytes_of_op(gather_after(c.backward, fc1)), copy(tokens * h));
  EXPECT_EQ(bytes_of_op(c.backward[swz]), swizzle(tokens * h));
  EXPECT_LT(fc1, dgrad);
  EXPECT_LT(dgrad, swz);
  EXPECT_LT(swz, wgrad);
  for (const char* name : {"qkv_input_scale_swap", "fc2_grad_swap", "fc1_input_swap_bwd"}) {
    EXPECT_FALSE(has_op(c, name)) << name;
  }
}

/// The shipped job with 16-bit parameters (no MXFP8 parameter gather).
Result<Workload> sixteen_bit_params(const std::string& training = "") {
  return testing::shipped_with(kScenario, training,
                               {{"\"fp8_param_gather\": true", "\"fp8_param_gather\": false"},
                                {"\"reuse_grad_buf_for_mxfp8_param_ag\": true",
                                 "\"reuse_grad_buf_for_mxfp8_param_ag\": false"}});
}

constexpr std::int64_t kH = 4096, kQkv = 4096 + 2 * 8 * 128, kFc1 = 2 * 14336, kFfn = 14336;
constexpr std::int64_t kLayerWeights = kQkv * kH + kH * kH + kFc1 * kH + kH * kFfn;

/// Read 16 bits, write two FP8 copies and their scales: (2 + 2) n + 2 n / 32.
bool is_weight_quantize(std::int64_t bytes) {
  for (const std::int64_t n : {kQkv * kH, kH * kH, kFc1 * kH, kH * kFfn}) {
    if (bytes == n * 4 + 2 * (n / 32)) return true;
  }
  return false;
}

TEST(Fp8Mxfp8, WeightsAreQuantizedWithBothCopiesAndKeptWithTheirScales) {
  const auto mx = sixteen_bit_params();
  const auto bf16 =
      testing::shipped_with(kScenario, "",
                            {{"\"fp8\": \"hybrid\"", "\"fp8\": null"},
                             {"\"fp8_param_gather\": true", "\"fp8_param_gather\": false"},
                             {"\"reuse_grad_buf_for_mxfp8_param_ag\": true",
                              "\"reuse_grad_buf_for_mxfp8_param_ag\": false"}});
  ASSERT_TRUE(mx.ok()) << format_errors(mx.errors());
  ASSERT_TRUE(bf16.ok()) << format_errors(bf16.errors());
  int casts = 0;
  const auto mx_plan = decompose(*mx);
  for (const Op& op : mx_plan.stages[0].step_ops) {
    if (op.name != "fp8_weight_cast" || op.layer != 0) continue;
    ++casts;
    EXPECT_TRUE(is_weight_quantize(bytes_of_op(op))) << bytes_of_op(op);
  }
  EXPECT_EQ(casts, 4);
  // The 16-bit weights stay; the MXFP8 copies and their scales come on top.
  const std::int64_t weights = 32 * kLayerWeights;
  const StageMemory m = analytic_memory(*mx)[0];
  const StageMemory b = analytic_memory(*bf16)[0];
  EXPECT_EQ(m.weights_bytes - b.weights_bytes, 2 * weights + 2 * (weights / 32));
}

TEST(Fp8Mxfp8, ParametersAreGatheredIn16BitsThenQuantizedAndSwizzledBeforeEachGemm) {
  const auto params = testing::shipped_with(kScenario, "");
  const auto plain = sixteen_bit_params();
  ASSERT_TRUE(params.ok()) << format_errors(params.errors());
  ASSERT_TRUE(plain.ok()) << format_errors(plain.errors());
  const auto plan = decompose(*params);
  const StagePlan& stage = plan.stages[0];
  // The optimizer quantizes nothing (its shards go to the gradient buffer in bf16) and the
  // gather moves every parameter in 16 bits, as without FP8 parameters.
  std::int64_t gathered = -1, plain_gathered = -2;
  std::size_t gather_at = 0;
  for (std::size_t i = 0; i < stage.step_ops.size(); ++i) {
    const Op& op = stage.step_ops[i];
    EXPECT_FALSE(op.name.starts_with("fp8_param")) << op.name;
    if (op.name == "dp_param_all_gather") {
      gathered = bytes_of_op(op);
      gather_at = i;
    }
  }
  const auto plain_plan = decompose(*plain);
  for (const Op& op : plain_plan.stages[0].step_ops) {
    if (op.name == "dp_param_all_gather") plain_gathered = bytes_of_op(op);
  }
  EXPECT_EQ(gathered, plain_gathered);
  EXPECT_EQ(gathered, stage.parameters * 2);
  // After the gather every MXFP8 weight is quantized into its two copies, once a step.
  int quantized = 0;
  for (std::size_t i = 0; i < stage.step_ops.size(); ++i) {
    const Op& op = stage.step_ops[i];
    if (op.name != "mxfp8_param_quantize") continue;
    ++quantized;
    EXPECT_GT(i, gather_at);
    EXPECT_TRUE(is_weight_quantize(bytes_of_op(op))) << bytes_of_op(op);
  }
  EXPECT_EQ(quantized, 32 * 4);
  // Every fprop and dgrad swizzles its weight's scales first (2 bytes per 32 weights), wgrad
  // reads no weight.
  const ChunkPlan& c = stage.chunks[0];
  const std::size_t swizzle = index_of(c.forward, "qkv_gemm_weight_swizzle");
  EXPECT_EQ(bytes_of_op(c.forward[swizzle]), 2 * (kQkv * kH / 32));
  EXPECT_EQ(c.forward[swizzle + 1].name, "qkv_gemm");
  EXPECT_EQ(bytes_of_op(c.backward[index_of(c.backward, "fc2_dgrad_weight_swizzle")]),
            2 * (kH * kFfn / 32));
  int swizzles = 0;
  for (const auto* list : {&c.forward, &c.backward}) {
    for (const Op& op : *list) {
      if (op.name.ends_with("_weight_swizzle")) ++swizzles;
      EXPECT_EQ(op.name.find("wgrad_weight_swizzle"), std::string::npos) << op.name;
    }
  }
  EXPECT_EQ(swizzles, 32 * 4 * 2);
  // No 16-bit copy of the MXFP8 weights: they hold 2 + 1/16 bytes per element instead of
  // 2 + 2 + 1/16.
  const std::int64_t weights = 32 * kLayerWeights;
  EXPECT_EQ(analytic_memory(*plain)[0].weights_bytes - analytic_memory(*params)[0].weights_bytes,
            2 * weights);
}

std::string errors_of(const Result<Workload>& w) {
  EXPECT_FALSE(w.ok());
  return w.ok() ? "" : format_errors(w.errors());
}

TEST(Fp8Mxfp8, RunsOnBlackwellOnlyAndTheHopperRecipesNotThere) {
  const std::string hopper = errors_of(testing::shipped_with(
      kScenario, "", {{"systems/dgx-b200.json", "systems/dgx-h100-80gb.json"}}));
  EXPECT_NE(hopper.find("training.fp8_recipe"), std::string::npos) << hopper;
  EXPECT_NE(hopper.find("compute capability 9.0"), std::string::npos) << hopper;
  EXPECT_NE(hopper.find("check_mxfp8_support"), std::string::npos) << hopper;
  const std::string delayed = errors_of(testing::shipped_with(
      kScenario, "", {{"\"fp8_recipe\": \"mxfp8\"", "\"fp8_recipe\": \"delayed\""}}));
  EXPECT_NE(delayed.find("training.fp8_recipe=\"delayed\" on system \"dgx-b200\""),
            std::string::npos)
      << delayed;
  EXPECT_NE(delayed.find("only \"mxfp8\" is modelled"), std::string::npos) << delayed;
}

TEST(Fp8Mxfp8, WhatIsNotModelledYetIsAnError) {
  const std::string params =
      errors_of(testing::shipped_with(kScenario, "",
                                      {{"\"reuse_grad_buf_for_mxfp8_param_ag\": true",
                                        "\"reuse_grad_buf_for_mxfp8_param_ag\": false"}}));
  EXPECT_NE(params.find("training.fp8_param_gather=true with fp8_recipe \"mxfp8\" is modelled "
                        "with reuse_grad_buf_for_mxfp8_param_ag"),
            std::string::npos)
      << params;
  const std::string overlap = errors_of(testing::shipped_with(
      kScenario, "", {{"\"overlap_param_gather\": false", "\"overlap_param_gather\": true"}}));
  EXPECT_NE(overlap.find("training.reuse_grad_buf_for_mxfp8_param_ag=true with "
                         "overlap_param_gather is not modelled yet"),
            std::string::npos)
      << overlap;
  // Megatron-Core's own rule: the reuse only with MXFP8 parameters.
  const std::string reuse = errors_of(testing::shipped_with(
      kScenario, "", {{"\"fp8_param_gather\": true", "\"fp8_param_gather\": false"}}));
  EXPECT_NE(reuse.find("Reuse grad buffer only when keeping params in MXFP8."), std::string::npos)
      << reuse;
  const std::string ub = errors_of(tp2(8192, R"("tp_comm_overlap": true)"));
  EXPECT_NE(ub.find("training.tp_comm_overlap=true with fp8_recipe \"mxfp8\""), std::string::npos)
      << ub;
  // 8200 x 2 tokens over TP 2: 8200 a shard, not a multiple of 32.
  const std::string rows = errors_of(tp2(8200));
  EXPECT_NE(rows.find("with 8200 tokens per rank"), std::string::npos) << rows;
  EXPECT_NE(rows.find("is_quantizable"), std::string::npos) << rows;
}

TEST(Fp8Mxfp8, MxGemmsArePricedFromTheirOwnSamples) {
  const GemmSample tensor = testing::kFp8Sample;
  GemmSample mx = tensor;
  mx.scaling = GemmScaling::kMx1x32;
  mx.layout = GemmLayout::kNN;
  mx.seconds = 1.1e-4;
  const auto p = testing::gemm_profile({tensor, mx});
  const auto w = testing::shipped_with(kScenario, "");
  ASSERT_TRUE(w.ok()) << format_errors(w.errors());
  const CalibratedCostModel m(p, "test", w->system);
  GemmOp op{.m = 4096,
            .n = 4096,
            .k = 4096,
            .dtype = DType::kFp8,
            .layout = GemmLayout::kNN,
            .scaling = GemmScaling::kMx1x32};
  EXPECT_EQ(m.gemm_s(op), 1.1e-4);
  EXPECT_TRUE(m.warnings().empty());
  // Without MXFP8 samples: the per-tensor (TN) price, said.
  const CalibratedCostModel without(testing::gemm_profile({tensor}), "test", w->system);
  EXPECT_EQ(without.gemm_s(op), 1.0e-4);
  ASSERT_EQ(without.warnings().size(), 1u);
  EXPECT_NE(without.warnings()[0].find("no MXFP8 GEMM samples"), std::string::npos)
      << without.warnings()[0];
}

}  // namespace
}  // namespace stepsim
