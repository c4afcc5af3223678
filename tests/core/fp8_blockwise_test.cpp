// training.fp8_recipe "blockwise": Transformer Engine's Float8BlockScaling as Megatron-Core
// runs it on Hopper. 1x128 tiles of activations and gradients, 128x128 blocks of weights:
// block-scaled GEMMs (fprop and dgrad one 128x128 operand, wgrad two 1x128 ones), quantize
// kernels that write row- and column-wise copies from the 16-bit values with their scales,
// no amax pass, reduction or history, and under sequence parallelism FP8 all-gathers of
// data and scales (transformer_engine/pytorch/module/linear.py, layernorm_linear.py,
// distributed.py; common/gemm/cublaslt_gemm.cu).

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "plan_ops.hpp"
#include "shipped_scenario.hpp"
#include "stepsim/cost/calibrated_cost_model.hpp"
#include "stepsim/cost/cost_model.hpp"
#include "stepsim/plan/decompose.hpp"
#include "stepsim/config/parse.hpp"
#include "stepsim/cost/make_cost_model.hpp"

namespace stepsim {
namespace {

/// Llama 3 8B on 8 H100 (TP 2 with SP, sequence 8192, micro-batch 1), `training` keys added
/// and `seq` as its sequence length.
Result<Workload> llama(const std::string& training, int seq = 8192) {
  return testing::shipped_with(
      "llama3-8b-h100-8.json", training,
      {{"\"seq_length\": 8192", "\"seq_length\": " + std::to_string(seq)}});
}

constexpr const char* kBlockwise = R"("fp8": "e4m3", "fp8_recipe": "blockwise")";

using testing::bytes_of_op;
using testing::gather_after;
using testing::index_of;

TEST(Fp8Blockwise, GemmsAreBlockScaledAsTransformerEngineRunsThem) {
  const auto w = llama(kBlockwise);
  ASSERT_TRUE(w.ok()) << format_errors(w.errors());
  const ChunkPlan c = decompose(*w).stages[0].chunks[0];
  int fp8 = 0;
  for (const auto* list : {&c.forward, &c.backward}) {
    for (const Op& op : *list) {
      EXPECT_EQ(op.name.find("amax"), std::string::npos) << op.name << ": no amax with blocks";
      const auto* g = std::get_if<GemmOp>(&op.shape);
      if (g == nullptr) continue;
      if (g->dtype != DType::kFp8) {
        EXPECT_EQ(g->scaling, GemmScaling::kTensor) << op.name;
        continue;
      }
      ++fp8;
      EXPECT_EQ(g->layout, GemmLayout::kTN) << op.name;
      EXPECT_FALSE(g->fast_accum) << op.name << ": block scaling accumulates split";
      const GemmScaling want = op.phase == Phase::kBackwardWeight ? GemmScaling::kBlock1x128
                                                                  : GemmScaling::kBlock128x128;
      EXPECT_EQ(g->scaling, want) << op.name;
    }
  }
  // QKV, projection, FC1, FC2: forward, dgrad and wgrad in each of 32 layers.
  EXPECT_EQ(fp8, 32 * 4 * 3);
}

TEST(Fp8Blockwise, QuantizeKernelsAndGathersMoveTheirBytes) {
  const auto w = llama(kBlockwise);
  ASSERT_TRUE(w.ok()) << format_errors(w.errors());
  const ChunkPlan c = decompose(*w).stages[0].chunks[0];
  // s 8192 tokens, 4096 per TP rank's shard, h 4096, FC2 input 14336 / 2, bf16 (2 bytes).
  const std::int64_t tokens = 8192, shard = 4096, h = 4096, ffn = 7168, e = 2;
  // A 1x128 quantize: read 16 bits, write both FP8 copies and an fp32 scale per 128 values
  // of each.
  const auto quantize = [&](std::int64_t n) { return n * (e + 2) + n / 16; };
  const auto copy = [](std::int64_t n) { return n + n / 32; };
  // Forward: the norm's 16-bit output shard quantized, its row-wise copy and scales
  // gathered in FP8, the gathered scales reordered.
  const std::size_t q = index_of(c.forward, "qkv_input_quantize");
  EXPECT_EQ(bytes_of_op(c.forward[q]), quantize(shard * h));
  EXPECT_EQ(bytes_of_op(gather_after(c.forward, q)), copy(tokens * h));
  EXPECT_EQ(bytes_of_op(c.forward[index_of(c.forward, "qkv_input_scale_swap")]),
            2 * (tokens * h / 32));
  // The norm writes 16 bits: no FP8 norm for a block quantizer (RMSNorm: + fp32 rstd).
  EXPECT_EQ(bytes_of_op(c.forward[index_of(c.forward, "ln1")]), shard * h * 2 * e + shard * 4);
  EXPECT_EQ(bytes_of_op(c.forward[index_of(c.forward, "fc2_input_quantize")]),
            quantize(tokens * ffn));
  // Backward of FC2 (row-parallel): the gradient shard's two copies quantized and both
  // gathered, the column-wise one reordered.
  const std::size_t g = index_of(c.backward, "fc2_grad_quantize");
  EXPECT_EQ(bytes_of_op(c.backward[g]), quantize(shard * h));
  EXPECT_EQ(bytes_of_op(gather_after(c.backward, g)), 2 * copy(tokens * h));
  EXPECT_EQ(bytes_of_op(c.backward[index_of(c.backward, "fc2_grad_swap")]), 2 * copy(tokens * h));
  // Backward of FC1 (column-parallel): the saved column-wise input shard gathered beside
  // dgrad, which runs before the gather is waited for.
  const std::size_t fc1 = index_of(c.backward, "fc1_grad_quantize");
  const std::size_t dgrad = index_of(c.backward, "fc1_dgrad");
  const std::size_t swap = index_of(c.backward, "fc1_input_swap_bwd");
  const std::size_t wgrad = index_of(c.backward, "fc1_wgrad");
  EXPECT_EQ(bytes_of_op(c.backward[fc1]), quantize(tokens * 2 * ffn));
  EXPECT_EQ(bytes_of_op(gather_after(c.backward, fc1)), copy(tokens * h));
  EXPECT_LT(fc1, dgrad);
  EXPECT_LT(dgrad, swap);
  EXPECT_LT(swap, wgrad);
  for (const std::string name : {"qkv_input_cast_transpose", "fc2_grad_transpose",
                                 "fc1_input_transpose_bwd", "fc2_grad_cast"}) {
    for (const Op& op : c.forward) EXPECT_NE(op.name, name);
    for (const Op& op : c.backward) EXPECT_NE(op.name, name);
  }
}

TEST(Fp8Blockwise, AShardNotOf128MultiplesIsGatheredIn16Bits) {
  // Sequence 8064: shards of 4032 tokens, not a multiple of 128. TE gathers such a shard in
  // 16 bits and quantizes the whole tensor (distributed.py), whose column-wise copy backward
  // then needs no gather.
  const auto w = llama(kBlockwise, 8064);
  ASSERT_TRUE(w.ok()) << format_errors(w.errors());
  const ChunkPlan c = decompose(*w).stages[0].chunks[0];
  const std::int64_t tokens = 8064, h = 4096, e = 2;
  const std::size_t g = index_of(c.forward, "qkv_input_quantize");
  EXPECT_EQ(bytes_of_op(c.forward[g]), tokens * h * (e + 2) + tokens * h / 16);
  EXPECT_EQ(bytes_of_op(c.forward[g - 1]), tokens * h * e) << c.forward[g - 1].name;
  EXPECT_EQ(c.forward[g - 1].name, "tp_all_gather");
  for (const Op& op : c.backward) EXPECT_NE(op.name, "qkv_input_swap_bwd");
}

using testing::gemm_profile;
using testing::kFp8Sample;

TEST(Fp8Blockwise, BlockScaledGemmsArePricedFromTheirOwnSamples) {
  const GemmSample tensor = kFp8Sample;
  GemmSample block = tensor;
  block.scaling = GemmScaling::kBlock128x128;
  block.seconds = 1.2e-4;
  const auto p = gemm_profile({tensor, block});
  const auto w = llama(kBlockwise);
  ASSERT_TRUE(w.ok()) << format_errors(w.errors());
  const CalibratedCostModel m(p, "test", w->system);
  GemmOp op{.m = 4096, .n = 4096, .k = 4096, .dtype = DType::kFp8, .layout = GemmLayout::kTN};
  EXPECT_EQ(m.gemm_s(op), 1.0e-4);
  op.scaling = GemmScaling::kBlock128x128;
  EXPECT_EQ(m.gemm_s(op), 1.2e-4);
  EXPECT_TRUE(m.warnings().empty());
  // A scaling the profile has no samples of: the per-tensor price, said.
  op.scaling = GemmScaling::kBlock1x128;
  EXPECT_EQ(m.gemm_s(op), 1.0e-4);
  ASSERT_EQ(m.warnings().size(), 1u);
  EXPECT_NE(m.warnings()[0].find("no block-scaled FP8 GEMM samples"), std::string::npos)
      << m.warnings()[0];
  EXPECT_NE(m.warnings()[0].find("block_1x128"), std::string::npos) << m.warnings()[0];
}

TEST(Fp8Accumulation, FastAccumulatingGemmsArePricedFromTheirOwnSamples) {
  const GemmSample split = kFp8Sample;
  GemmSample fast = split;
  fast.fast_accum = true;
  fast.seconds = 0.9e-4;
  const auto p = gemm_profile({split, fast});
  const auto w = llama(kBlockwise);
  ASSERT_TRUE(w.ok()) << format_errors(w.errors());
  const CalibratedCostModel m(p, "test", w->system);
  GemmOp op{.m = 4096, .n = 4096, .k = 4096, .dtype = DType::kFp8, .layout = GemmLayout::kTN};
  EXPECT_EQ(m.gemm_s(op), 1.0e-4);
  op.fast_accum = true;
  EXPECT_EQ(m.gemm_s(op), 0.9e-4);
  // Another shape takes the fast samples' efficiency (here: the one's, clamped at its edge,
  // with that warning), never the split samples' (2 x 1.0e-4): twice the work, with the
  // kernel's launch latency paid once (gemm_waves.hpp), so a little under twice the time.
  op.m = 8192;
  EXPECT_NEAR(m.gemm_s(op), 2 * 0.9e-4, 2 * 0.9e-4 * 0.01);
  EXPECT_LT(m.gemm_s(op), 2 * 0.9e-4);
  for (const std::string& warning : m.warnings()) {
    EXPECT_EQ(warning.find("fast-accumulation"), std::string::npos) << warning;
  }
  // Without fast samples: the split price, said.
  const CalibratedCostModel without(gemm_profile({split}), "test", w->system);
  op.m = 4096;
  EXPECT_EQ(without.gemm_s(op), 1.0e-4);
  ASSERT_EQ(without.warnings().size(), 1u);
  EXPECT_NE(without.warnings()[0].find("no fast-accumulation FP8 GEMM samples"), std::string::npos)
      << without.warnings()[0];
}

TEST(Fp8Blockwise, ItsGemmsCostMoreThanPerTensorScalingsOnTheShippedH100Profile) {
  // The public H100 profile holds stepsim's measured block-scaled GEMMs: the linears of a
  // step cost more with blocks than with one scale per tensor, and less than in bf16.
  const auto sum = [](const std::string& training) {
    const auto w = llama(training);
    EXPECT_TRUE(w.ok()) << format_errors(w.errors());
    auto model = make_cost_model(*w);
    EXPECT_TRUE(model.ok());
    double s = 0;
    const ChunkPlan c = decompose(*w).stages[0].chunks[0];
    for (const auto* list : {&c.forward, &c.backward}) {
      for (const Op& op : *list) {
        const auto* g = std::get_if<GemmOp>(&op.shape);
        if (g != nullptr && op.layer >= 0) s += (*model)->op_s(op);
      }
    }
    EXPECT_TRUE((*model)->warnings().empty() ||
                (*model)->warnings()[0].find("block-scaled") == std::string::npos);
    return s;
  };
  const double bf16 = sum("");
  const double tensor = sum(R"("fp8": "e4m3", "fp8_recipe": "tensorwise")");
  const double block = sum(kBlockwise);
  EXPECT_LT(tensor, block);
  EXPECT_LT(block, bf16);
}

TEST(Fp8Blockwise, UserbuffersAreRefusedAsTransformerEngineRefusesThem) {
  const auto w = llama(std::string(kBlockwise) + R"(, "tp_comm_overlap": true)");
  ASSERT_FALSE(w.ok());
  const std::string all = format_errors(w.errors());
  EXPECT_NE(all.find("training.fp8_recipe=\"blockwise\" with tp_comm_overlap"), std::string::npos)
      << all;
  EXPECT_NE(all.find("Unsupported quantizer for Userbuffers"), std::string::npos) << all;
}

}  // namespace
}  // namespace stepsim
