// MoE experts with squared ReLU (Nemotron 3's non-gated experts) against closed forms written
// out by hand from Megatron-Core's TEGroupedMLP.forward bias_act_func (megatron/core/
// transformer/moe/experts.py; no bias, no bias_activation_fusion, no
// use_fused_weighted_squared_relu): squared_relu (megatron/core/activations.py, one jit_fuser
// kernel), `intermediate * permuted_probs` and `.to(original_dtype)`, their autograd backward,
// what they keep for backward, the shared expert's activation, FP8 experts, and a hybrid
// Mamba-MoE model of Nemotron 3 Nano's shape.

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "plan_ops.hpp"
#include "stepsim/check/load.hpp"
#include "stepsim/layout/workload_dims.hpp"
#include "stepsim/ops/moe_fp8_ops.hpp"
#include "stepsim/ops/moe_ops.hpp"
#include "stepsim/plan/decompose.hpp"

namespace stepsim {
namespace {

using testing::kept;
using testing::named;

// h 1024, 8 experts of 1024 (top-2) and a shared expert of 2048 over EP 2 (4 local experts),
// seq 2048, micro-batch 2: T = 4096 tokens per rank, and under balanced routing every rank
// receives T * topk = 8192 expert rows.
constexpr std::int64_t kH = 1024, kF = 1024, kShared = 2048, kT = 4096, kRows = kT * 2;

/// The model, with the shared expert unless `shared` is false (FP8 refuses shared experts).
Result<Workload> try_load(const std::string& training_extra, bool shared) {
  const std::string text =
      R"({"name": "relu2", "model": {"num_layers": 2, "hidden_size": 1024,
      "num_attention_heads": 16, "seq_length": 2048, "vocab_size": 32000,
      "squared_relu": true, "add_bias_linear": false, "normalization": "RMSNorm",
      "position_embedding_type": "rope", "attention_backend": "auto", "num_experts": 8,
      "moe_router_topk": 2, "moe_ffn_hidden_size": 1024)" +
      std::string(shared ? R"(, "moe_shared_expert_intermediate_size": 2048)" : "") + R"(},
      "training": {"world_size": 2, "expert_model_parallel_size": 2,
      "moe_token_dispatcher_type": "alltoall", "moe_grouped_gemm": true,
      "micro_batch_size": 2, "global_batch_size": 4, "use_distributed_optimizer": true,
      "bf16": true)" +
      training_extra + R"(}, "system": "systems/dgx-h100-80gb.json"})";
  LoadOptions o;
  o.scenarios_dir = STEPSIM_SCENARIOS_DIR;
  return load_scenario_text(text, "relu2.json", ".", o);
}

Workload load(const std::string& training_extra = "", bool shared = true) {
  auto w = try_load(training_extra, shared);
  EXPECT_TRUE(w.ok()) << (w.ok() ? "" : format_errors(w.errors()));
  return w.ok() ? std::move(w).value() : Workload{};
}

/// The bytes of the one op `name` on layer 0 of `ops` (-1, and a failure, if not one).
std::int64_t bytes(const std::vector<Op>& ops, const std::string& name) {
  const auto found = named(ops, name);
  EXPECT_EQ(found.size(), 1u) << name;
  return found.size() == 1 ? std::get<MemoryBoundOp>(found[0]->shape).bytes : -1;
}

// Not gated: FC1 makes moe_ffn_hidden_size outputs (the shared expert's FC1 its width).
// Forward: squared_relu reads FC1's output and writes its square; the mul reads it and the
// rows' probabilities and writes the product (bf16 router: the same dtype, no cast). Backward:
// MulBackward0's grad * probs and grad * activation, the latter summed over the hidden dim to
// the probabilities' gradient; then 2 relu(x) * grad (reads the gradient and the saved input).
TEST(MoeSquaredRelu, ExpertKernelBytesWithBf16Probabilities) {
  const ChunkPlan& c = kept(decompose(load())).stages[0].chunks[0];
  const auto fc1 = named(c.forward, "expert_fc1_gemm");
  ASSERT_EQ(fc1.size(), 1u);
  EXPECT_EQ(std::get<GemmOp>(fc1[0]->shape).n, kF);
  EXPECT_EQ(std::get<GemmOp>(fc1[0]->shape).batch, 4);
  const auto shared_fc1 = named(c.forward, "shared_fc1_gemm");
  ASSERT_EQ(shared_fc1.size(), 1u);
  EXPECT_EQ(std::get<GemmOp>(shared_fc1[0]->shape).n, kShared);
  const std::int64_t elems = kRows * kF;
  EXPECT_EQ(bytes(c.forward, "expert_squared_relu"), elems * 2 * 2);
  EXPECT_EQ(bytes(c.forward, "expert_probs_scale"), elems * (2 + 2) + kRows * 2);
  EXPECT_TRUE(named(c.forward, "expert_probs_scale_cast").empty());
  EXPECT_EQ(bytes(c.backward, "expert_probs_scale_dgrad"), elems * 2 * 2 + kRows * 2);
  EXPECT_EQ(bytes(c.backward, "expert_probs_scale_wgrad"), elems * 3 * 2);
  EXPECT_EQ(bytes(c.backward, "expert_probs_scale_wgrad_sum"), elems * 2 + kRows * 2);
  EXPECT_EQ(bytes(c.backward, "expert_squared_relu_bwd"), elems * 3 * 2);
  EXPECT_TRUE(named(c.backward, "expert_probs_scale_cast_bwd").empty());
  // No gated or GeLU kernel of the experts.
  for (const char* name : {"expert_gelu", "expert_swiglu", "shared_gelu"}) {
    EXPECT_TRUE(named(c.forward, name).empty()) << name;
  }
  // The shared expert: MLP.forward's activation_func, one kernel as the dense MLP's.
  EXPECT_EQ(bytes(c.forward, "shared_squared_relu"), kT * kShared * 2 * 2);
  EXPECT_EQ(bytes(c.backward, "shared_squared_relu_bwd"), kT * kShared * 3 * 2);
  // In order: FC1, squared ReLU, the scaling, FC2; backward the reverse.
  const std::size_t fc1_at = testing::index_of(c.forward, "expert_fc1_gemm");
  EXPECT_LT(fc1_at, testing::index_of(c.forward, "expert_squared_relu"));
  EXPECT_LT(testing::index_of(c.forward, "expert_squared_relu"),
            testing::index_of(c.forward, "expert_probs_scale"));
  EXPECT_LT(testing::index_of(c.forward, "expert_probs_scale"),
            testing::index_of(c.forward, "expert_fc2_gemm"));
  EXPECT_LT(testing::index_of(c.backward, "expert_fc2_dgrad"),
            testing::index_of(c.backward, "expert_probs_scale_dgrad"));
  EXPECT_LT(testing::index_of(c.backward, "expert_squared_relu_bwd"),
            testing::index_of(c.backward, "expert_fc1_dgrad"));
}

// fp32 probabilities (moe_router_dtype fp32): bf16 x fp32 promotes to fp32, so the mul writes
// 4 bytes and .to(bf16) copies back; backward widens the gradient, and the activation's
// gradient is cast back to bf16 by autograd.
TEST(MoeSquaredRelu, Fp32ProbabilitiesAddTheCasts) {
  const ChunkPlan& c =
      kept(decompose(load(R"(, "moe_router_dtype": "fp32")"))).stages[0].chunks[0];
  const std::int64_t elems = kRows * kF;
  EXPECT_EQ(bytes(c.forward, "expert_squared_relu"), elems * 2 * 2);
  EXPECT_EQ(bytes(c.forward, "expert_probs_scale"), elems * (2 + 4) + kRows * 4);
  EXPECT_EQ(bytes(c.forward, "expert_probs_scale_cast"), elems * (4 + 2));
  EXPECT_EQ(bytes(c.backward, "expert_probs_scale_cast_bwd"), elems * (2 + 4));
  EXPECT_EQ(bytes(c.backward, "expert_probs_scale_dgrad"), elems * 2 * 4 + kRows * 4);
  EXPECT_EQ(bytes(c.backward, "expert_probs_scale_dgrad_cast"), elems * (4 + 2));
  EXPECT_EQ(bytes(c.backward, "expert_probs_scale_wgrad"), elems * (2 * 4 + 2));
  EXPECT_EQ(bytes(c.backward, "expert_probs_scale_wgrad_sum"), elems * 4 + kRows * 4);
  EXPECT_EQ(bytes(c.backward, "expert_squared_relu_bwd"), elems * 3 * 2);
}

// Kept for backward by an MoE layer's MLP half: the router's probabilities (T x experts), per
// expert row FC1's input (h), squared_relu's input (FC1's output), the mul's activation
// operand, FC2's input and the row's probability; the shared expert's activation input and
// FC2 input.
TEST(MoeSquaredRelu, ActivationMemoryKeepsTheScaledOperand) {
  const detail::Dims x = detail::dims_of(load());
  const double expected = static_cast<double>(kT * 8 * 2 + kRows * ((kH + 3 * kF) * 2 + 2) +
                                              kT * 2 * kShared * 2);
  EXPECT_DOUBLE_EQ(detail::moe_mlp_stored_bytes(x), expected);
}

// Forward FLOPs of the experts are the non-gated GEMMs: 2 x rows x h x F each for FC1 and FC2.
TEST(MoeSquaredRelu, ExpertGemmFlopsAreNotGated) {
  const ChunkPlan& c = kept(decompose(load())).stages[0].chunks[0];
  for (const char* name : {"expert_fc1_gemm", "expert_fc2_gemm"}) {
    const auto g = named(c.forward, name);
    ASSERT_EQ(g.size(), 1u) << name;
    const GemmOp& op = std::get<GemmOp>(g[0]->shape);
    EXPECT_EQ(2.0 * static_cast<double>(op.m * op.n * op.k * op.batch),
              2.0 * static_cast<double>(kRows * kH * kF))
        << name;
  }
}

// FP8 experts (TE GroupedLinear; without the shared expert, whose FP8 linears are refused): the
// same squared-ReLU kernels over the padded rows (8192 / 4 experts = 2048 rows each, aligned
// to 16: no padding), and the FP8 stored bytes keep the mul's 16-bit operand too.
TEST(MoeSquaredRelu, Fp8ExpertsRunTheSameKernels) {
  const Workload w = load(R"(, "fp8": "hybrid", "fp8_recipe": "tensorwise")", false);
  const ChunkPlan& c = kept(decompose(w)).stages[0].chunks[0];
  const std::int64_t elems = kRows * kF;
  EXPECT_EQ(bytes(c.forward, "expert_squared_relu"), elems * 2 * 2);
  EXPECT_EQ(bytes(c.forward, "expert_probs_scale"), elems * (2 + 2) + kRows * 2);
  EXPECT_EQ(bytes(c.backward, "expert_squared_relu_bwd"), elems * 3 * 2);
  const detail::Dims x = detail::dims_of(w);
  // FC1's and FC2's inputs as FP8 (1 byte), FC1's 16-bit output, the probability, the mul's
  // 16-bit operand.
  EXPECT_DOUBLE_EQ(detail::fp8_expert_stored_bytes(x, detail::moe_tokens(x)),
                   static_cast<double>(kRows * ((kH + kF) + kF * 2 + 2 + kF * 2)));
}

// A hybrid Mamba-Transformer MoE of Nemotron 3 Nano's shape (nvidia/NVIDIA-Nemotron-3-Nano-
// 30B-A3B-BF16's config.json: 52 layers "MEMEM*E...", h 2688, 128 experts of 1856 top-6, a
// shared expert of 3712, squared ReLU): loads and decomposes, each E layer running the
// squared-ReLU expert kernels.
TEST(MoeSquaredRelu, HybridNemotron3NanoShapePredicts) {
  const std::string text =
      R"({"name": "nano", "model": {"num_layers": 52,
      "hybrid_layer_pattern": "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME",
      "hidden_size": 2688, "num_attention_heads": 32, "num_query_groups": 2,
      "kv_channels": 128, "ffn_hidden_size": 1856,
      "mamba_num_heads": 64, "mamba_head_dim": 64, "mamba_state_dim": 128,
      "mamba_num_groups": 8, "num_experts": 128, "moe_router_topk": 6,
      "moe_ffn_hidden_size": 1856, "moe_shared_expert_intermediate_size": 3712,
      "seq_length": 2048, "padded_vocab_size": 131072, "squared_relu": true,
      "add_bias_linear": false, "normalization": "RMSNorm", "position_embedding_type": "none",
      "attention_backend": "auto", "attention_dropout": 0, "hidden_dropout": 0,
      "untie_embeddings_and_output_weights": true},
      "training": {"world_size": 8, "expert_model_parallel_size": 8,
      "moe_token_dispatcher_type": "alltoall", "moe_grouped_gemm": true,
      "micro_batch_size": 1, "global_batch_size": 8, "use_distributed_optimizer": true,
      "bf16": true}, "system": "systems/dgx-h100-80gb.json"})";
  LoadOptions o;
  o.scenarios_dir = STEPSIM_SCENARIOS_DIR;
  auto w = load_scenario_text(text, "nano.json", ".", o);
  ASSERT_TRUE(w.ok()) << format_errors(w.errors());
  const ChunkPlan& c = kept(decompose(*w)).stages[0].chunks[0];
  // Layer 1 is the first E; 16 local experts of 2048 x 6 / 128 x 8 = 768 rows each.
  const auto act = named(c.forward, "expert_squared_relu", 1);
  ASSERT_EQ(act.size(), 1u);
  EXPECT_EQ(std::get<MemoryBoundOp>(act[0]->shape).bytes, 2048 * 6 * 1856 * 2 * 2);
  EXPECT_EQ(named(c.forward, "shared_squared_relu", 1).size(), 1u);
  EXPECT_TRUE(named(c.forward, "expert_squared_relu", 0).empty());  // a Mamba layer
  std::int64_t moe_layers = 0;
  for (const Op& op : c.forward) moe_layers += op.name == "expert_squared_relu" ? 1 : 0;
  EXPECT_EQ(moe_layers, 23);
}

}  // namespace
}  // namespace stepsim
