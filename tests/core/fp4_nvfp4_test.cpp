// training.fp4 "e2m1" with fp4_recipe "nvfp4": Transformer Engine's NVFP4BlockScaling as
// Megatron-Core runs it on Blackwell (transformer_engine/common/recipe/__init__.py,
// pytorch/csrc/quantizer.cpp NVFP4Quantizer::quantize_impl, common/gemm/cublaslt_gemm.cu;
// megatron/core/fp4_utils.py). The closed forms below are TE's storage: E2M1 values two to a
// byte, an E4M3 scale per 16 values of each copy (get_scale_shape), both copies quantized from
// the 16-bit tensor after an amax pass over it.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "plan_ops.hpp"
#include "shipped_scenario.hpp"
#include "stepsim/config/parse.hpp"
#include "stepsim/cost/calibrated_cost_model.hpp"
#include "stepsim/cost/roofline_cost_model.hpp"
#include "stepsim/memory/memory_model.hpp"
#include "stepsim/plan/decompose.hpp"

namespace stepsim {
namespace {

constexpr const char* kScenario = "llama3-8b-b200-8-nvfp4.json";

using testing::bytes_of_op;
using testing::gather_after;
using testing::index_of;

/// The index of the first step op named `name` (step ops belong to no layer).
std::size_t step_index(const std::vector<Op>& ops, std::string_view name) {
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].name == name) return i;
  }
  ADD_FAILURE() << "no step op " << name;
  return 0;
}

std::string errors_of(const Result<Workload>& r) {
  return r.ok() ? std::string() : format_errors(r.errors());
}

// Llama 3 8B on one rank (TP 1): micro-batch 4 x sequence 8192 tokens, bf16.
constexpr std::int64_t kTokens = 4 * 8192, kH = 4096, kQkv = 4096 + 2 * 8 * 128, kFfn = 14336,
                       kFc1 = 2 * 14336, kE = 2;
constexpr std::int64_t kLayerWeights = kQkv * kH + kH * kH + kFc1 * kH + kH * kFfn;
constexpr std::int64_t kWeights = 32 * kLayerWeights;

/// One NVFP4 copy of n values: half a byte each and an E4M3 byte per 16.
constexpr std::int64_t nvfp4_copy(std::int64_t n) { return n / 2 + n / 16; }
/// TE's NVFP4 quantize of n 16-bit values: the amax pass reads them, the cast reads them again
/// and writes both copies.
constexpr std::int64_t nvfp4_quantize(std::int64_t n) { return 2 * n * kE + 2 * nvfp4_copy(n); }

Result<Workload> sixteen_bit_params() {
  return testing::shipped_with(kScenario, "",
                               {{"\"fp4_param_gather\": true", "\"fp4_param_gather\": false"}});
}

Result<Workload> bf16() {
  return testing::shipped_with(kScenario, "",
                               {{"\"training.fp4\": ", "\"training.bf16\": "},
                                {"\"fp4\": \"e2m1\"", "\"fp4\": null"},
                                {"\"fp4_param_gather\": true", "\"fp4_param_gather\": false"}});
}

TEST(Fp4Nvfp4, LinearsRunNvfp4GemmsTnTheRestStaysBf16) {
  const auto w = testing::shipped_with(kScenario, "");
  ASSERT_TRUE(w.ok()) << format_errors(w.errors());
  const ChunkPlan c = decompose(*w).stages[0].chunks[0];
  int fp4 = 0;
  for (const auto* list : {&c.forward, &c.backward}) {
    for (const Op& op : *list) {
      // No delayed-scaling amax history, no FP8 transposes: NVFP4 quantizes both copies.
      EXPECT_EQ(op.name.find("fp8_amax"), std::string::npos) << op.name;
      const auto* g = std::get_if<GemmOp>(&op.shape);
      if (g == nullptr) continue;
      EXPECT_NE(g->dtype, DType::kFp8) << op.name;
      if (g->dtype != DType::kFp4) {
        // The output layer stays bf16 (Megatron's ColumnParallelLinear, outside fp8_autocast).
        EXPECT_TRUE(op.name.starts_with("logits")) << op.name;
        EXPECT_EQ(g->dtype, DType::kBf16) << op.name;
        continue;
      }
      ++fp4;
      // cublaslt_gemm.cu: "NVFP4 gemm is only supported in TN layout", VEC16_UE4M3 scales.
      EXPECT_EQ(g->layout, GemmLayout::kTN) << op.name;
      EXPECT_EQ(g->scaling, GemmScaling::kNv1x16) << op.name;
      EXPECT_FALSE(g->fast_accum) << op.name;
    }
  }
  EXPECT_EQ(fp4, 32 * 4 * 3);  // QKV, projection, FC1, FC2: fprop, dgrad, wgrad
  // FC1's wgrad: [fc1 x h] from the tokens, 2 m n k FLOPs.
  const Op& wgrad = c.backward[index_of(c.backward, "fc1_wgrad")];
  const auto& g = std::get<GemmOp>(wgrad.shape);
  EXPECT_EQ(g.m * g.n * g.k, kFc1 * kH * kTokens);
  EXPECT_EQ(g.flops(), 2.0 * kFc1 * kH * kTokens);
}

TEST(Fp4Nvfp4, GemmOperandsAreHalfAByteWithAScalePerSixteenAndPricedAtTheFp4Peak) {
  // Operands 1/2 + 1/16 byte per element, the bf16 result.
  EXPECT_EQ(gemm_bytes_of(DType::kFp4, 8192, 4096, 14336, 1),
            (8192.0 * 14336 + 14336.0 * 4096) * 9 / 16 + 2.0 * 8192 * 4096);
  const auto w = testing::shipped_with(kScenario, "");
  ASSERT_TRUE(w.ok()) << format_errors(w.errors());
  EXPECT_EQ(w->system.peak_flops(DType::kFp4), 9.0e15);
  const RooflineCostModel roofline(w->system);
  const GemmOp fp4{.m = 32768, .n = 28672, .k = 4096, .dtype = DType::kFp4,
                   .layout = GemmLayout::kTN, .scaling = GemmScaling::kNv1x16};
  GemmOp fp8 = fp4;
  fp8.dtype = DType::kFp8;
  fp8.scaling = GemmScaling::kTensor;
  const double launch = w->system.efficiency.kernel_launch_s;
  // Compute-bound: the FLOPs at 9 PFLOP/s dense NVFP4 times gemm_max, twice FP8's rate.
  EXPECT_DOUBLE_EQ(roofline.gemm_s(fp4) - launch,
                   fp4.flops() / (9.0e15 * w->system.efficiency.gemm_max));
  EXPECT_NEAR((roofline.gemm_s(fp4) - launch) / (roofline.gemm_s(fp8) - launch), 0.5, 1e-12);
}

TEST(Fp4Nvfp4, QuantizeKernelsWriteBothCopiesWithTheirScales) {
  const auto w = testing::shipped_with(kScenario, "");
  ASSERT_TRUE(w.ok()) << format_errors(w.errors());
  const ChunkPlan c = decompose(*w).stages[0].chunks[0];
  // Inputs: the norm writes bf16 (the Hadamard-transformed column-wise copy's amax is TE's
  // own pass, so no fused norm-quantize), then each linear input is quantized.
  EXPECT_EQ(bytes_of_op(c.forward[index_of(c.forward, "ln1")]), kTokens * kH * 2 * kE + kTokens * 4);
  EXPECT_EQ(bytes_of_op(c.forward[index_of(c.forward, "qkv_input_quantize")]),
            nvfp4_quantize(kTokens * kH));
  EXPECT_EQ(bytes_of_op(c.forward[index_of(c.forward, "proj_input_quantize")]),
            nvfp4_quantize(kTokens * kH));
  EXPECT_EQ(bytes_of_op(c.forward[index_of(c.forward, "fc1_input_quantize")]),
            nvfp4_quantize(kTokens * kH));
  EXPECT_EQ(bytes_of_op(c.forward[index_of(c.forward, "fc2_input_quantize")]),
            nvfp4_quantize(kTokens * kFfn));
  // Output gradients: row-wise for dgrad, Hadamard-transformed column-wise for wgrad.
  EXPECT_EQ(bytes_of_op(c.backward[index_of(c.backward, "fc2_grad_quantize")]),
            nvfp4_quantize(kTokens * kH));
  EXPECT_EQ(bytes_of_op(c.backward[index_of(c.backward, "fc1_grad_quantize")]),
            nvfp4_quantize(kTokens * kFc1));
  EXPECT_EQ(bytes_of_op(c.backward[index_of(c.backward, "qkv_grad_quantize")]),
            nvfp4_quantize(kTokens * kQkv));
  // 5 1/8 bytes per element against MXFP8's 4 1/16: the FP4 copies are smaller, but the
  // 16-bit tensor is read twice (the amax pass, then the cast).
  EXPECT_EQ(nvfp4_quantize(kTokens * kH), kTokens * kH / 16 * 82);
}

TEST(Fp4Nvfp4, WeightsAreNvfp4CopiesWithTheirScalesAndNoBf16CopyWithFp4Params) {
  const auto params = testing::shipped_with(kScenario, "");
  const auto plain = sixteen_bit_params();
  const auto b = bf16();
  ASSERT_TRUE(params.ok()) << format_errors(params.errors());
  ASSERT_TRUE(plain.ok()) << format_errors(plain.errors());
  ASSERT_TRUE(b.ok()) << format_errors(b.errors());
  EXPECT_EQ(fp8_weight_elements(*params, 0), kWeights);
  const std::int64_t base = analytic_memory(*b)[0].weights_bytes;
  // 16-bit parameters: the bf16 weights stay and both NVFP4 copies come on top.
  EXPECT_EQ(analytic_memory(*plain)[0].weights_bytes - base, 2 * nvfp4_copy(kWeights));
  // NVFP4 parameters: the linears' bf16 copy is gone.
  EXPECT_EQ(analytic_memory(*params)[0].weights_bytes - base,
            2 * nvfp4_copy(kWeights) - kWeights * kE);
  // Without NVFP4 parameters each weight is quantized once a step, both copies (2D 16x16
  // blocks: nvte_quantize_v2 after an amax pass, no Hadamard transform).
  int quantized = 0;
  const auto plan = decompose(*plain);
  for (const Op& op : plan.stages[0].step_ops) {
    EXPECT_NE(op.name, "nvfp4_weight_transpose");
    if (op.name != "nvfp4_weight_quantize" || op.layer != 0) continue;
    ++quantized;
    const std::int64_t bytes = bytes_of_op(op);
    EXPECT_TRUE(bytes == nvfp4_quantize(kQkv * kH) || bytes == nvfp4_quantize(kH * kH) ||
                bytes == nvfp4_quantize(kFc1 * kH) || bytes == nvfp4_quantize(kH * kFfn))
        << bytes;
  }
  EXPECT_EQ(quantized, 4);
}

TEST(Fp4Nvfp4, Fp4ParametersAreQuantizedFromTheShardsGatheredInFp4AndTransposed) {
  const auto w = testing::shipped_with(kScenario, "");
  const auto plain = sixteen_bit_params();
  ASSERT_TRUE(w.ok()) << format_errors(w.errors());
  ASSERT_TRUE(plain.ok()) << format_errors(plain.errors());
  const auto plan = decompose(*w);
  const StagePlan& stage = plan.stages[0];
  const std::vector<Op>& ops = stage.step_ops;
  const std::int64_t shard = kWeights / 8;  // the distributed optimizer's, over DP 8
  // quantize_nvfp4_param_shard (TE _cast_master_weights_to_nvfp4_2d): an fp32 amax per 16x16
  // tile and per tensor, MAX-reduced over the data-parallel group, then the partial cast.
  const std::int64_t tiles = kWeights / 256 * 4, globals = 32 * 4 * 4;
  EXPECT_EQ(bytes_of_op(ops[step_index(ops, "nvfp4_param_amax")]), shard * 4 + tiles + globals);
  EXPECT_EQ(bytes_of_op(ops[step_index(ops, "nvfp4_param_amax_all_reduce")]), tiles);
  EXPECT_EQ(bytes_of_op(ops[step_index(ops, "nvfp4_param_global_amax_all_reduce")]), globals);
  EXPECT_EQ(bytes_of_op(ops[step_index(ops, "nvfp4_param_scale")]),
            2 * tiles + globals + kWeights / 16);
  EXPECT_EQ(bytes_of_op(ops[step_index(ops, "nvfp4_param_cast")]), shard * 4 + shard / 2);
  // The main-parameter copy skips them (the optimizer writes only the rest in bf16).
  const auto plain_plan = decompose(*plain);
  const auto copy = [](const std::vector<Op>& list) {
    return bytes_of_op(list[step_index(list, "main_param_copy")]);
  };
  EXPECT_EQ(copy(plain_plan.stages[0].step_ops) - copy(ops), shard * (4 + kE));
  // The gather moves the NVFP4 row-wise data, half a byte per weight, the rest in bf16.
  const std::size_t gather = step_index(ops, "dp_param_all_gather");
  EXPECT_EQ(bytes_of_op(ops[gather]), (stage.parameters - kWeights) * kE + kWeights / 2);
  EXPECT_LT(step_index(ops, "nvfp4_param_cast"), gather);
  // After it each weight's column-wise copy is made from the row-wise one.
  int transposed = 0;
  for (const Op& op : ops) {
    EXPECT_NE(op.name, "nvfp4_weight_quantize");
    if (op.name != "nvfp4_weight_transpose") continue;
    ++transposed;
    const std::int64_t bytes = bytes_of_op(op);
    EXPECT_TRUE(bytes == 2 * nvfp4_copy(kQkv * kH) || bytes == 2 * nvfp4_copy(kH * kH) ||
                bytes == 2 * nvfp4_copy(kFc1 * kH) || bytes == 2 * nvfp4_copy(kH * kFfn))
        << bytes;
  }
  EXPECT_EQ(transposed, 32 * 4);
  // A primary NVFP4 weight's scales are not pre-swizzled (base.py _enable_weight_preswizzle):
  // fprop and dgrad swizzle the copy they read, its n x k / 16 E4M3 scales read and written.
  const ChunkPlan& c = stage.chunks[0];
  EXPECT_EQ(bytes_of_op(c.forward[index_of(c.forward, "fc1_gemm_weight_swizzle")]),
            2 * (kFc1 * kH / 16));
  EXPECT_EQ(bytes_of_op(c.backward[index_of(c.backward, "fc2_dgrad_weight_swizzle")]),
            2 * (kH * kFfn / 16));
  for (const auto* list : {&c.forward, &c.backward}) {
    for (const Op& op : *list) EXPECT_FALSE(op.name.starts_with("fc1_wgrad_weight")) << op.name;
  }
  // 16-bit weights are quantized with swizzled scales (shapes of 128-multiples): no swizzle.
  for (const Op& op : plain_plan.stages[0].chunks[0].forward) {
    EXPECT_EQ(op.name.find("swizzle"), std::string::npos) << op.name;
  }
}

TEST(Fp4Nvfp4, MegatronsRulesAndTheBlackwellOnlyRuleAreErrorsNamingTheKey) {
  const std::string hopper = errors_of(testing::shipped_with(
      kScenario, "", {{"systems/dgx-b200.json", "systems/dgx-h100-80gb.json"}}));
  EXPECT_NE(hopper.find("training.fp4=\"e2m1\" on system \"dgx-h100-80gb\""), std::string::npos)
      << hopper;
  EXPECT_NE(hopper.find("compute capability 9.0"), std::string::npos) << hopper;
  EXPECT_NE(hopper.find("check_nvfp4_support"), std::string::npos) << hopper;
  const std::string both = errors_of(testing::shipped_with(kScenario, R"("fp8": "hybrid")"));
  EXPECT_NE(both.find("--fp4-format and --fp8-format cannot be used simultaneously"),
            std::string::npos)
      << both;
  const std::string params = errors_of(
      testing::shipped_with(kScenario, "", {{"\"fp4\": \"e2m1\"", "\"fp4\": null"}}));
  EXPECT_NE(params.find("training.fp4_param_gather=true needs fp4"), std::string::npos) << params;
  EXPECT_NE(params.find("--fp4-param-gather must be used together with --fp4-format."),
            std::string::npos)
      << params;
  // A Blackwell system file that gives no NVFP4 peak cannot price the GEMMs.
  const std::string no_peak = errors_of(testing::shipped_with(
      kScenario, "", {{"systems/dgx-b200.json", "systems/cpu-localhost-sm100.json"}}));
  EXPECT_NE(no_peak.find("gives no peak_flops_fp4"), std::string::npos) << no_peak;
}

/// The 8B job on TP 2 with sequence parallelism (DP 4).
Result<Workload> sequence_parallel() {
  return testing::shipped_with(
      kScenario, "",
      {{"\"tensor_model_parallel_size\": 1", "\"tensor_model_parallel_size\": 2"},
       {"\"sequence_parallel\": false", "\"sequence_parallel\": true"}});
}

/// The op of `ops` right after the one at `i`.
const Op& next_op(const std::vector<Op>& ops, std::size_t i) { return ops.at(i + 1); }

// transformer_engine/pytorch/module/layernorm_linear.py and distributed.py _all_gather_nvfp4:
// the norm's sequence shard quantized into both copies (the amaxes MAX-reduced over TP between
// the amax kernel and the cast: NVFP4Quantizer::quantize_impl reduce_amaxes), the row-wise
// copy gathered for fprop (its E2M1 data and unpadded E4M3 scales), the saved column-wise one
// re-gathered for wgrad and de-interleaved (swap_first_dims); the row-parallel output
// gradient's shard quantized the same way and both copies gathered; the input gradients
// reduce-scattered in bf16.
TEST(Fp4Nvfp4, SequenceParallelGathersTheNvfp4ShardsAsTransformerEngineDoes) {
  const auto w = sequence_parallel();
  ASSERT_TRUE(w.ok()) << format_errors(w.errors());
  const ChunkPlan c = decompose(*w).stages[0].chunks[0];
  constexpr std::int64_t kShard = kTokens / 2;  // 16384 rows per TP rank
  const auto& f = c.forward;
  const std::size_t amax = index_of(f, "qkv_input_amax");
  EXPECT_EQ(bytes_of_op(f[amax]), kShard * kH * kE);
  const Op& reduce = next_op(f, amax);
  EXPECT_EQ(reduce.name, "nvfp4_amax_all_reduce");
  EXPECT_EQ(bytes_of_op(reduce), 8);  // two fp32 amaxes, allreduce_coalesced
  const Op& quantize = next_op(f, amax + 1);
  EXPECT_EQ(quantize.name, "qkv_input_quantize");
  // The two kernels together: TE's quantize of the shard, not of the gathered tensor.
  EXPECT_EQ(bytes_of_op(f[amax]) + bytes_of_op(quantize), nvfp4_quantize(kShard * kH));
  // The gather: 32768 x 4096 E2M1 values (half a byte) and 32768 x 256 E4M3 scales, 72 MiB
  // against bf16's 256 MiB.
  const Op& gather = gather_after(f, amax);
  EXPECT_EQ(bytes_of_op(gather), kTokens * kH / 2 + kTokens * kH / 16);
  EXPECT_EQ(bytes_of_op(gather), 9 * (8 << 20));
  EXPECT_EQ(bytes_of_op(f[index_of(f, "qkv_input_scale_swizzle")]), 2 * kTokens * kH / 16);
  const auto& b = c.backward;
  // Row-parallel FC2: the gradient shard quantized, amaxes reduced, both copies gathered.
  const std::size_t grad = index_of(b, "fc2_grad_amax");
  EXPECT_EQ(next_op(b, grad).name, "nvfp4_amax_all_reduce");
  EXPECT_EQ(bytes_of_op(b[grad]) + bytes_of_op(next_op(b, grad + 1)),
            nvfp4_quantize(kShard * kH));
  EXPECT_EQ(bytes_of_op(gather_after(b, grad)), 2 * nvfp4_copy(kTokens * kH));
  EXPECT_EQ(bytes_of_op(b[index_of(b, "fc2_grad_swap")]), 2 * nvfp4_copy(kTokens * kH));
  // Column-parallel QKV: the saved column-wise copy re-gathered for wgrad, de-interleaved,
  // its scales swizzled; dgrad's bf16 output reduce-scattered.
  const std::size_t dgrad = index_of(b, "qkv_dgrad");
  const std::size_t regather = [&] {
    for (std::size_t i = dgrad; i-- > 0;) {
      if (b[i].name == "tp_all_gather") return i;
    }
    ADD_FAILURE() << "no re-gather before qkv_dgrad";
    return dgrad;
  }();
  EXPECT_EQ(bytes_of_op(b[regather]), nvfp4_copy(kTokens * kH));
  EXPECT_EQ(bytes_of_op(b[index_of(b, "qkv_input_swap_bwd")]), 2 * nvfp4_copy(kTokens * kH));
  EXPECT_EQ(bytes_of_op(b[index_of(b, "qkv_input_scale_swizzle_bwd")]), 2 * kTokens * kH / 16);
  EXPECT_EQ(next_op(b, dgrad).name, "tp_reduce_scatter");
  EXPECT_EQ(bytes_of_op(next_op(b, dgrad)), kTokens * kH * kE);
  // Nothing of a transformer layer is gathered in 16 bits: every TP all-gather there is an
  // NVFP4 one (the embedding's and output layer's, layer -1, stay bf16).
  for (const auto* list : {&f, &b}) {
    for (const Op& op : *list) {
      if (op.name != "tp_all_gather" || op.layer < 0) continue;
      const std::int64_t n = bytes_of_op(op);
      EXPECT_TRUE(n == nvfp4_copy(kTokens * kH) || n == 2 * nvfp4_copy(kTokens * kH))
          << n << " on layer " << op.layer;
    }
  }
}

TEST(Fp4Nvfp4, WhatIsNotModelledYetIsAnError) {
  const auto error_of = [](const std::string& training,
                           const std::vector<std::pair<std::string, std::string>>& replace) {
    return errors_of(testing::shipped_with(kScenario, training, replace));
  };
  const std::string custom =
      error_of("", {{"\"fp4_recipe\": \"nvfp4\"", "\"fp4_recipe\": \"custom\""}});
  EXPECT_NE(custom.find("training.fp4_recipe=\"custom\" is not modelled yet"), std::string::npos)
      << custom;
  // Under SP TE quantizes the sequence shards: 4 x 8208 / 2 = 16416 rows, not a multiple of
  // 64 (4 x 8208 = 32832 is, so the same job without SP predicts).
  const std::string sp = error_of(
      "", {{"\"tensor_model_parallel_size\": 1", "\"tensor_model_parallel_size\": 2"},
           {"\"sequence_parallel\": false", "\"sequence_parallel\": true"},
           {"\"seq_length\": 8192", "\"seq_length\": 8208"},
           {"\"max_position_embeddings\": 8192", "\"max_position_embeddings\": 8208"}});
  EXPECT_NE(sp.find("with 16416 tokens per rank (seq_length / context_parallel_size x "
                    "micro_batch_size / tensor_model_parallel_size, sequence-parallel)"),
            std::string::npos)
      << sp;
  EXPECT_EQ(sp.find("training.sequence_parallel"), std::string::npos) << sp;
  const std::string replicated =
      error_of("", {{"\"use_distributed_optimizer\": true", "\"use_distributed_optimizer\": false"},
                    {"\"overlap_param_gather\": true", "\"overlap_param_gather\": false"}});
  EXPECT_NE(replicated.find("training.fp4_param_gather=true without use_distributed_optimizer"),
            std::string::npos)
      << replicated;
  // 4 x 8200 tokens: not a multiple of 64 rows, TE's unfused Hadamard path.
  const std::string rows =
      error_of("", {{"\"seq_length\": 8192", "\"seq_length\": 8200"},
                    {"\"max_position_embeddings\": 8192", "\"max_position_embeddings\": 8200"}});
  EXPECT_NE(rows.find("with 32800 tokens per rank"), std::string::npos) << rows;
  EXPECT_NE(rows.find("is_eligible_for_rht_cast_fusion"), std::string::npos) << rows;
  const std::string widths =
      error_of("", {{"\"ffn_hidden_size\": 14336", "\"ffn_hidden_size\": 14344"}});
  EXPECT_NE(widths.find("model.ffn_hidden_size=14344 with fp4 (per tensor-parallel rank: "
                        "hidden 4096, ffn 14344"),
            std::string::npos)
      << widths;
  const std::string graphs = error_of(R"("cuda_graph_impl": "transformer_engine")", {});
  EXPECT_NE(graphs.find("training.cuda_graph_impl=\"transformer_engine\""), std::string::npos)
      << graphs;
}

TEST(Fp4Nvfp4, Fp4GemmsArePricedFromFp4SamplesElseByTheRooflineSaid) {
  const auto w = testing::shipped_with(kScenario, "");
  ASSERT_TRUE(w.ok()) << format_errors(w.errors());
  const GemmOp op{.m = 4096, .n = 4096, .k = 4096, .dtype = DType::kFp4,
                  .layout = GemmLayout::kTN, .scaling = GemmScaling::kNv1x16};
  GemmSample fp4 = testing::kFp8Sample;
  fp4.dtype = DType::kFp4;
  fp4.scaling = GemmScaling::kNv1x16;
  fp4.seconds = 0.6e-4;
  const CalibratedCostModel m(testing::gemm_profile({testing::kFp8Sample, fp4}), "test",
                              w->system);
  EXPECT_EQ(m.gemm_s(op), 0.6e-4);
  EXPECT_TRUE(m.warnings().empty());
  // FP8 samples only: the roofline at the NVFP4 peak, and a warning that says so.
  const CalibratedCostModel without(testing::gemm_profile({testing::kFp8Sample}), "test",
                                    w->system);
  EXPECT_EQ(without.gemm_s(op), RooflineCostModel(w->system).gemm_s(op));
  ASSERT_EQ(without.warnings().size(), 1u);
  EXPECT_NE(without.warnings()[0].find("no GEMM samples for this dtype"), std::string::npos)
      << without.warnings()[0];
  EXPECT_NE(without.warnings()[0].find("fp4"), std::string::npos) << without.warnings()[0];
}

}  // namespace
}  // namespace stepsim
