// Nemotron-4's two MLP/attention variants: squared ReLU (Megatron's --squared-relu) and partial
// rotary embeddings (--rotary-percent). Closed forms against the decomposition, the FLOP counts
// and the activation memory model.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model_workloads.hpp"
#include "stepsim/plan/decompose.hpp"
#include "stepsim/ops/flops.hpp"
#include "stepsim/plan/plan_flops.hpp"
#include "stepsim/memory/memory_model.hpp"

namespace stepsim {
namespace {

using testing::make_workload;

/// Nemotron-4 15B (NeMo's Nemotron4Config15B, nemo/collections/llm/gpt/model/nemotron.py):
/// 32 layers, h 6144, f 24576, 48 heads, 8 query groups, head dim 128, seq 4096, vocabulary
/// 256000, squared ReLU, RoPE on half of each head, LayerNorm, untied, no biases, no dropout.
ModelConfig nemotron4_15b() {
  ModelConfig m;
  m.num_layers = 32;
  m.hidden_size = 6144;
  m.num_attention_heads = 48;
  m.num_query_groups = 8;
  m.kv_channels = 128;
  m.ffn_hidden_size = 24576;
  m.seq_length = 4096;
  m.max_position_embeddings = 4096;
  m.vocab_size = 256000;
  m.padded_vocab_size = 256000;
  m.squared_relu = true;
  m.untie_embeddings_and_output_weights = true;
  m.add_bias_linear = false;
  m.position_embedding_type = PositionEmbedding::kRope;
  m.rotary_percent = 0.5;
  m.attention_backend = AttentionBackend::kAuto;
  m.attention_dropout = 0.0;
  m.hidden_dropout = 0.0;
  return m;
}

/// NeMo's H100 layout for it: t2 with sequence parallelism, micro-batch 2.
Workload nemotron_workload(const ModelConfig& m) {
  Workload w = make_workload(m, 2, 1, 1, 2, 1);
  w.training.sequence_parallel = true;
  return w;
}

const Op* find_op(const std::vector<Op>& ops, const std::string& name, std::int32_t layer) {
  for (const Op& op : ops) {
    if (op.name == name && op.layer == layer) return &op;
  }
  return nullptr;
}

constexpr std::int64_t kTokens = 4096 * 2;  // s * b
constexpr std::int64_t kT = 2;
constexpr std::int64_t kE = 2;  // bf16

TEST(SquaredRelu, Fc1IsOneUngatedGemmOfFfnWidth) {
  const WorkloadPlan plan = decompose(nemotron_workload(nemotron4_15b()));
  const ChunkPlan& c = plan.stages[0].chunks[0];
  const Op* fc1 = find_op(c.forward, "fc1_gemm", 3);
  const Op* fc2 = find_op(c.forward, "fc2_gemm", 3);
  ASSERT_NE(fc1, nullptr);
  ASSERT_NE(fc2, nullptr);
  // m = s*b (all-gathered), n = f / t (not 2f / t: no gate), k = h.
  EXPECT_EQ(std::get<GemmOp>(fc1->shape),
            (GemmOp{kTokens, 24576 / kT, 6144, 1, DType::kBf16, GemmLayout::kTN}));
  EXPECT_EQ(std::get<GemmOp>(fc2->shape),
            (GemmOp{kTokens, 6144, 24576 / kT, 1, DType::kBf16, GemmLayout::kTN}));
  const Op* wgrad = find_op(c.backward, "fc1_wgrad", 3);
  ASSERT_NE(wgrad, nullptr);
  EXPECT_EQ(std::get<GemmOp>(wgrad->shape),
            (GemmOp{24576 / kT, 6144, kTokens, 1, DType::kBf16, GemmLayout::kNT}));
  // No GeLU or SwiGLU kernel runs.
  EXPECT_EQ(find_op(c.forward, "bias_gelu", 3), nullptr);
  EXPECT_EQ(find_op(c.forward, "swiglu", 3), nullptr);
}

TEST(SquaredRelu, ActivationKernelBytes) {
  const WorkloadPlan plan = decompose(nemotron_workload(nemotron4_15b()));
  const ChunkPlan& c = plan.stages[0].chunks[0];
  const Op* fwd = find_op(c.forward, "squared_relu", 0);
  const Op* bwd = find_op(c.backward, "squared_relu_bwd", 0);
  ASSERT_NE(fwd, nullptr);
  ASSERT_NE(bwd, nullptr);
  // Forward reads FC1's output and writes relu(x)^2; backward reads the saved input and the
  // gradient and writes dx: [s*b, f/t] bf16 tensors.
  const std::int64_t tensor = kTokens * (24576 / kT) * kE;
  EXPECT_EQ(std::get<MemoryBoundOp>(fwd->shape).bytes, 2 * tensor);
  EXPECT_EQ(std::get<MemoryBoundOp>(bwd->shape).bytes, 3 * tensor);
  EXPECT_EQ(fwd->flops(), 0.0);
}

TEST(SquaredRelu, FlopsAreGeluFlopsAndSwigluAddsOneGemm) {
  const ModelConfig relu2 = nemotron4_15b();
  ModelConfig gelu = relu2;
  gelu.squared_relu = false;
  ModelConfig swiglu = gelu;
  swiglu.swiglu = true;
  const double f_relu2 = count_flops(nemotron_workload(relu2)).model_flops_per_step;
  const double f_gelu = count_flops(nemotron_workload(gelu)).model_flops_per_step;
  const double f_swiglu = count_flops(nemotron_workload(swiglu)).model_flops_per_step;
  EXPECT_DOUBLE_EQ(f_relu2, f_gelu);
  // SwiGLU's gate is one more [s*b, h] x [h, f] GEMM per layer: 2 T h f forward, twice that
  // backward (dgrad and wgrad). One micro-batch, one replica.
  const double extra = 32.0 * 3.0 * 2.0 * kTokens * 6144.0 * 24576.0;
  EXPECT_DOUBLE_EQ(f_swiglu - f_relu2, extra);

  // Megatron's logged FLOPs (training.py num_floating_point_operations): the MLP term has
  // factor 2 (3 only with --swiglu), with q = 128 x 48, kv = 128 x 8 and batch 2.
  const double h = 6144, f = 24576, L = 32, V = 256000, s = 4096, q = 6144, kv = 1024;
  const double tokens = 2.0 * s;
  const double logged =
      tokens * (6 * h * f * 2 * L + 6 * (h * (q + 2 * kv) + q * h) * L + 6 * h * V) +
      2.0 * s * s * L * 6 * q / 2 * 2;
  EXPECT_DOUBLE_EQ(megatron_logged_flops_per_step(nemotron_workload(relu2)), logged);
}

TEST(SquaredRelu, ActivationMemoryKeepsOneInputNotTwo) {
  // Per layer, no recompute, t2 with SP, flash attention, no dropout (Korthikanti et al. 2022's
  // terms per tensor): the sequence-sharded inputs of the two norms, QKV and FC1 (4 h e / t per
  // token); Q, K, V as QKV produced them; the projection's input; the squared ReLU's input and
  // FC2's input (2 f e / t per token; SwiGLU keeps its two-part input instead: 3 f e / t).
  const double outside = kTokens * 6144.0 * 4 * kE / kT;
  const double qkv = kTokens * (48.0 + 2 * 8) * 128 / kT * kE;
  const double proj = kTokens * 48.0 * 128 / kT * kE;
  const double mlp = kTokens * 24576.0 / kT * 2 * kE;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(nemotron_workload(nemotron4_15b())),
                   outside + qkv + proj + mlp);
  ModelConfig swiglu = nemotron4_15b();
  swiglu.squared_relu = false;
  swiglu.swiglu = true;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(nemotron_workload(swiglu)) -
                       layer_activation_bytes(nemotron_workload(nemotron4_15b())),
                   kTokens * 24576.0 / kT * kE);
}

TEST(RotaryPercent, FusedRopeBytesAreWholeHeadsAtHalf) {
  // Transformer Engine's fused RoPE rotates int(128 * 0.5) = 64 dims of each head and copies
  // the other 64 to its output: Q (48 / t heads) and K (8 / t groups), read and written whole.
  const std::int64_t bytes = kTokens * (48 + 8) * 128 / kT * 2 * kE;
  ModelConfig full = nemotron4_15b();
  full.rotary_percent = 1.0;
  for (const ModelConfig& m : {nemotron4_15b(), full}) {
    const WorkloadPlan plan = decompose(nemotron_workload(m));
    const ChunkPlan& c = plan.stages[0].chunks[0];
    const Op* fwd = find_op(c.forward, "rope", 7);
    const Op* bwd = find_op(c.backward, "rope_bwd", 7);
    ASSERT_NE(fwd, nullptr);
    ASSERT_NE(bwd, nullptr);
    EXPECT_EQ(std::get<MemoryBoundOp>(fwd->shape).bytes, bytes) << m.rotary_percent;
    EXPECT_EQ(std::get<MemoryBoundOp>(bwd->shape).bytes, bytes) << m.rotary_percent;
    EXPECT_EQ(fwd->flops(), 0.0);  // neither Megatron nor stepsim counts RoPE's FLOPs
  }
  EXPECT_DOUBLE_EQ(count_flops(nemotron_workload(nemotron4_15b())).model_flops_per_step,
                   count_flops(nemotron_workload(full)).model_flops_per_step);
}

}  // namespace
}  // namespace stepsim
