// GPT-OSS's attention sinks (--softmax-type) and clamped quick-GEGLU (--quick-geglu,
// --glu-linear-offset, --activation-func-clamp-value) against closed forms: the sinks'
// parameters and cast kernels, the activation's kernels and bytes, the activation memory the
// clamp keeps, and every rule as an error naming its key.

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <string>
#include <vector>

#include "plan_ops.hpp"
#include "stepsim/plan/decompose.hpp"
#include "stepsim/ops/flops.hpp"
#include "stepsim/check/load.hpp"
#include "stepsim/memory/memory_model.hpp"
#include "stepsim/layout/moe_layout.hpp"

namespace stepsim {
namespace {

constexpr std::int64_t kSeq = 2048;
constexpr std::int64_t kHeads = 16;
constexpr std::int64_t kFfn = 1024;
constexpr std::int64_t kLayers = 4;

/// A small GPT-OSS-like model: 4 MoE layers of 8 experts (width 1024, top-2) with biases,
/// `model_extra` appended to the model section, t-way TP with SP, micro-batch 2.
Result<Workload> try_load(const std::string& model_extra, std::int64_t t = 1,
                          const std::string& training_extra = "", std::int64_t cp = 1) {
  const std::string backend = model_extra.find("attention_backend") == std::string::npos
                                  ? R"(, "attention_backend": "auto")"
                                  : "";
  const std::string text =
      R"({"name": "oss", "model": {"num_layers": 4, "hidden_size": 1024,
      "num_attention_heads": 16, "num_query_groups": 4, "seq_length": 2048, "vocab_size": 32000,
      "normalization": "RMSNorm", "position_embedding_type": "rope",
      "attention_dropout": 0.0, "hidden_dropout": 0.0, "num_experts": 8, "moe_router_topk": 2,
      "moe_ffn_hidden_size": 1024)" +
      backend + model_extra + R"(}, "training": {"world_size": )" + std::to_string(t * 2 * cp) +
      R"(, "context_parallel_size": )" + std::to_string(cp) +
      R"(, "tensor_model_parallel_size": )" + std::to_string(t) + R"(, "sequence_parallel": )" +
      (t > 1 ? "true" : "false") +
      R"(, "expert_model_parallel_size": 2, "expert_tensor_parallel_size": 1,
      "moe_token_dispatcher_type": "alltoall",
      "moe_grouped_gemm": true, "micro_batch_size": 2, "global_batch_size": 8,
      "use_distributed_optimizer": true, "bf16": true)" +
      training_extra + R"(}, "system": "systems/dgx-h100-80gb.json"})";
  LoadOptions o;
  o.scenarios_dir = STEPSIM_SCENARIOS_DIR;
  return load_scenario_text(text, "oss.json", ".", o);
}

Workload load(const std::string& model_extra, std::int64_t t = 1) {
  auto w = try_load(model_extra, t);
  EXPECT_TRUE(w.ok()) << (w.ok() ? "" : format_errors(w.errors()));
  return w.ok() ? std::move(w).value() : Workload{};
}

/// The keys the load errors name.
std::vector<std::string> error_keys(const std::string& model_extra,
                                    const std::string& training_extra = "") {
  auto w = try_load(model_extra, 1, training_extra);
  std::vector<std::string> keys;
  if (!w.ok()) {
    for (const Error& e : w.errors()) keys.push_back(e.key);
  }
  return keys;
}

bool names(const std::vector<std::string>& keys, const std::string& key) {
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

using testing::kept;
using testing::named;

std::int64_t bytes_of_op(const Op* op) { return std::get<MemoryBoundOp>(op->shape).bytes; }

constexpr const char* kQuickGeglu = R"(, "quick_geglu": true, "glu_linear_offset": 1.0)";
constexpr const char* kClamped =
    R"(, "quick_geglu": true, "glu_linear_offset": 1.0, "activation_func_clamp_value": 7.0)";

// Learnable sinks: one parameter per head and layer (TEDotProductAttention's softmax_offset),
// num_attention_heads / t of them per TP rank; off-by-one's offset is a buffer, no parameter.
TEST(AttentionSinks, LearnableAddsOneParameterPerHeadAndLayer) {
  const ModelConfig vanilla = load("").model;
  ModelConfig learnable = vanilla;
  learnable.softmax_type = SoftmaxType::kLearnable;
  ModelConfig off_by_one = vanilla;
  off_by_one.softmax_type = SoftmaxType::kOffByOne;
  EXPECT_EQ(count_parameters(learnable) - count_parameters(vanilla), kHeads * kLayers);
  EXPECT_EQ(count_parameters(off_by_one), count_parameters(vanilla));
  const Workload t2 = load(R"(, "softmax_type": "learnable")", 2);
  const Workload t2_vanilla = load("", 2);
  EXPECT_EQ(chunk_parameters(t2, 0, 0) - chunk_parameters(t2_vanilla, 0, 0), kHeads / 2 * kLayers);
  // The routed experts' parameters do not change.
  EXPECT_EQ(chunk_expert_parameters(t2, 0, 0), chunk_expert_parameters(t2_vanilla, 0, 0));
}

// Learnable: a cast of the rank's heads/t 16-bit logits to fp32 before the fused kernel and of
// their fp32 gradient back after it; the fused attention kernels themselves stay as they are.
TEST(AttentionSinks, LearnableCastsTheLogitsAroundTheFusedKernels) {
  const ChunkPlan& c =
      kept(decompose(load(R"(, "softmax_type": "learnable")", 2))).stages[0].chunks[0];
  const ChunkPlan& v = kept(decompose(load("", 2))).stages[0].chunks[0];
  const auto cast = named(c.forward, "attn_sink_cast", 1);
  const auto cast_bwd = named(c.backward, "attn_sink_cast_bwd", 1);
  ASSERT_EQ(cast.size(), 1u);
  ASSERT_EQ(cast_bwd.size(), 1u);
  EXPECT_EQ(bytes_of_op(cast[0]), kHeads / 2 * (2 + 4));
  EXPECT_EQ(bytes_of_op(cast_bwd[0]), kHeads / 2 * (2 + 4));
  EXPECT_EQ(cast_bwd[0]->phase, Phase::kBackwardWeight);
  // One more op per layer each way, nothing else.
  EXPECT_EQ(c.forward.size(), v.forward.size() + kLayers);
  EXPECT_EQ(c.backward.size(), v.backward.size() + kLayers);
  ASSERT_EQ(named(c.forward, "attn_flash", 1).size(), 1u);
  EXPECT_EQ(named(c.forward, "attn_flash", 1)[0]->shape,
            named(v.forward, "attn_flash", 1)[0]->shape);
  // Off-by-one: cuDNN adds the fixed zero logit inside the kernel; no kernel of its own.
  const ChunkPlan& o =
      kept(decompose(load(R"(, "softmax_type": "off-by-one")", 2))).stages[0].chunks[0];
  EXPECT_EQ(o.forward.size(), v.forward.size());
  EXPECT_EQ(o.backward.size(), v.backward.size());
}

// Transformer Engine runs sinks in cuDNN fused attention only (get_attention_backend); with
// context parallelism only over cp_comm_type a2a.
TEST(AttentionSinks, RulesNameTheKey) {
  EXPECT_TRUE(names(error_keys(R"(, "softmax_type": "learnable", "attention_backend": "flash")"),
                    "model.softmax_type"));
  EXPECT_TRUE(names(error_keys(R"(, "softmax_type": "off-by-one", "attention_backend": "unfused")"),
                    "model.softmax_type"));
  EXPECT_TRUE(names(error_keys(R"(, "softmax_type": "learnable", "attention_backend": "local")"),
                    "model.softmax_type"));
  EXPECT_TRUE(names(error_keys(R"(, "softmax_type": "sinks")"), "model.softmax_type"));
  EXPECT_TRUE(error_keys(R"(, "softmax_type": "learnable", "attention_backend": "fused")").empty());
  // Context parallelism: p2p refused, a2a runs.
  auto p2p = try_load(R"(, "softmax_type": "learnable")", 1, "", 2);
  ASSERT_FALSE(p2p.ok());
  bool named_key = false;
  for (const Error& e : p2p.errors()) named_key = named_key || e.key == "model.softmax_type";
  EXPECT_TRUE(named_key) << format_errors(p2p.errors());
  auto a2a = try_load(R"(, "softmax_type": "learnable")", 1, R"(, "cp_comm_type": "a2a")", 2);
  EXPECT_TRUE(a2a.ok()) << (a2a.ok() ? "" : format_errors(a2a.errors()));
}

// Quick-GEGLU is gated: FC1 makes 2 x moe_ffn outputs, and its fused kernel moves SwiGLU's
// bytes (reads both halves and the probabilities, writes one half; backward reads the gradient
// and both halves and writes their gradients and the probabilities').
TEST(QuickGeglu, GatedFc1AndSwigluSizedFusedKernel) {
  const ChunkPlan& q = kept(decompose(load(kQuickGeglu))).stages[0].chunks[0];
  const ChunkPlan& s = kept(decompose(load(R"(, "swiglu": true)"))).stages[0].chunks[0];
  const auto fc1_q = named(q.forward, "expert_fc1_gemm");
  const auto fc1_s = named(s.forward, "expert_fc1_gemm");
  ASSERT_EQ(fc1_q.size(), 1u);
  ASSERT_EQ(fc1_s.size(), 1u);
  EXPECT_EQ(std::get<GemmOp>(fc1_q[0]->shape).n, 2 * kFfn);
  EXPECT_EQ(fc1_q[0]->shape, fc1_s[0]->shape);
  const auto act = named(q.forward, "expert_quick_geglu");
  const auto act_bwd = named(q.backward, "expert_quick_geglu_bwd");
  ASSERT_EQ(act.size(), 1u);
  ASSERT_EQ(act_bwd.size(), 1u);
  EXPECT_EQ(act[0]->shape, named(s.forward, "expert_swiglu")[0]->shape);
  EXPECT_EQ(act_bwd[0]->shape, named(s.backward, "expert_swiglu_bwd")[0]->shape);
  EXPECT_TRUE(named(q.forward, "expert_glu_clamp").empty());
  // The offset is a scalar inside the kernel: the same ops without it.
  const ChunkPlan& no_offset =
      kept(decompose(load(R"(, "quick_geglu": true)"))).stages[0].chunks[0];
  EXPECT_EQ(no_offset.forward, q.forward);
}

// With a clamp value: two clamps (one half each, read + write) and their concatenation (both
// halves) before the fused kernel; backward: PyTorch's clamp_backward (one mask for x_glu, two
// and their logical and for x_linear, a where each) and the halves' concatenation.
TEST(QuickGeglu, ClampKernelsAndTheirBytes) {
  const Workload w = load(kClamped);
  const ChunkPlan& c = kept(decompose(w)).stages[0].chunks[0];
  // Balanced routing: every rank receives s * b * topk rows (ep 2, 4 local experts of 8).
  const std::int64_t rows = kSeq * 2 * 2;
  const std::int64_t elems = rows * kFfn;
  const std::int64_t half = elems * 2;
  const auto op = [&](const std::vector<Op>& ops, const std::string& name) {
    const auto found = named(ops, name);
    EXPECT_EQ(found.size(), 1u) << name;
    return found.empty() ? std::int64_t{-1} : bytes_of_op(found[0]);
  };
  EXPECT_EQ(op(c.forward, "expert_glu_clamp"), 2 * half);
  EXPECT_EQ(op(c.forward, "expert_linear_clamp"), 2 * half);
  EXPECT_EQ(op(c.forward, "expert_glu_clamp_cat"), 4 * half);
  EXPECT_EQ(op(c.backward, "expert_glu_clamp_mask"), half + elems);
  EXPECT_EQ(op(c.backward, "expert_glu_clamp_where"), elems + 2 * half);
  EXPECT_EQ(op(c.backward, "expert_linear_clamp_mask_min"), half + elems);
  EXPECT_EQ(op(c.backward, "expert_linear_clamp_mask_max"), half + elems);
  EXPECT_EQ(op(c.backward, "expert_linear_clamp_mask_and"), 3 * elems);
  EXPECT_EQ(op(c.backward, "expert_linear_clamp_where"), elems + 2 * half);
  EXPECT_EQ(op(c.backward, "expert_glu_clamp_cat_bwd"), 4 * half);
  // The clamps run before the fused kernel, their backward after its backward.
  std::size_t clamp_at = 0;
  std::size_t act_at = 0;
  for (std::size_t i = 0; i < c.forward.size(); ++i) {
    if (c.forward[i].layer != 0) continue;
    if (c.forward[i].name == "expert_glu_clamp_cat") clamp_at = i;
    if (c.forward[i].name == "expert_quick_geglu") act_at = i;
  }
  EXPECT_LT(clamp_at, act_at);
  // SwiGLU's clamp is inside its fused kernel: no kernel of its own.
  const ChunkPlan& s =
      kept(decompose(load(R"(, "swiglu": true, "activation_func_clamp_value": 7)")))
          .stages[0]
          .chunks[0];
  EXPECT_EQ(s.forward, kept(decompose(load(R"(, "swiglu": true)"))).stages[0].chunks[0].forward);
}

// The clamps keep FC1's output for their backward beside the concatenated halves the fused
// kernel keeps: rows * 2 * moe_ffn * 2 bytes more per MoE layer.
TEST(QuickGeglu, ClampKeepsFc1OutputForBackward) {
  const ChunkActivations a = chunk_activations(load(kClamped), 0, 0);
  const ChunkActivations b = chunk_activations(load(kQuickGeglu), 0, 0);
  const std::int64_t rows = kSeq * 2 * 2;
  EXPECT_EQ(a.layer_stored_bytes - b.layer_stored_bytes, kLayers * rows * 2 * kFfn * 2);
}

// Megatron's logged FLOPs (training.py num_floating_point_operations) read args.swiglu alone:
// quick-GEGLU's gated FC1 is counted as an ungated one, as a real run's log shows it.
TEST(QuickGeglu, LoggedFlopsCountFc1AsMegatronDoes) {
  Workload q = load(kClamped);
  Workload gelu = q;
  gelu.model.quick_geglu = false;
  gelu.model.glu_linear_offset = 0.0;
  gelu.model.activation_func_clamp_value = 0.0;
  EXPECT_EQ(megatron_logged_flops_per_step(q), megatron_logged_flops_per_step(gelu));
  Workload swiglu = gelu;
  swiglu.model.swiglu = true;
  EXPECT_GT(megatron_logged_flops_per_step(swiglu), megatron_logged_flops_per_step(q));
}

TEST(QuickGeglu, RulesNameTheKey) {
  EXPECT_TRUE(names(error_keys(R"(, "quick_geglu": true, "swiglu": true)"), "model.quick_geglu"));
  EXPECT_TRUE(
      names(error_keys(R"(, "quick_geglu": true, "add_bias_linear": false)"), "model.quick_geglu"));
  EXPECT_TRUE(
      names(error_keys(R"(, "quick_geglu": true, "moe_layer_freq": 2)"), "model.quick_geglu"));
  EXPECT_TRUE(names(error_keys(R"(, "quick_geglu": true,
                    "moe_shared_expert_intermediate_size": 1024)"),
                    "model.quick_geglu"));
  EXPECT_TRUE(names(error_keys(R"(, "swiglu": true, "glu_linear_offset": 1.0)"),
                    "model.glu_linear_offset"));
  EXPECT_TRUE(names(error_keys(R"(, "activation_func_clamp_value": 7.0)"),
                    "model.activation_func_clamp_value"));
  EXPECT_TRUE(names(error_keys(R"(, "quick_geglu": true, "activation_func_clamp_value": 0)"),
                    "model.activation_func_clamp_value"));
  EXPECT_TRUE(names(error_keys(R"(, "quick_geglu": true, "activation_func_clamp_value": -1)"),
                    "model.activation_func_clamp_value"));
  EXPECT_TRUE(names(
      error_keys(R"(, "swiglu": true, "activation_func_clamp_value": 7, "glu_linear_offset": 1)"),
      "model.activation_func_clamp_value"));
  EXPECT_TRUE(error_keys(kClamped).empty());
}

// The shipped GPT-OSS-120B scenario: OpenAI's counts (model card arXiv:2508.10925, table 1:
// 116.83B parameters, 5.13B active without the input embedding), its 36 learned sinks of 64
// heads among them, and the clamped quick-GEGLU's kernels in every layer.
TEST(GptOss120b, ShippedScenarioCountsAndKernels) {
  LoadOptions o;
  o.scenarios_dir = STEPSIM_SCENARIOS_DIR;
  auto loaded =
      load_scenario_file(std::string(STEPSIM_SCENARIOS_DIR) + "/gpt-oss-120b-h100-64.json", o);
  ASSERT_TRUE(loaded.ok()) << format_errors(loaded.errors());
  const Workload& w = loaded.value();
  const ModelConfig& m = w.model;
  EXPECT_NEAR(static_cast<double>(count_parameters(m)) / 116.83e9, 1.0, 0.01);
  EXPECT_NEAR(static_cast<double>(count_active_parameters_without_input_embedding(m)) / 5.13e9, 1.0,
              0.01);
  ModelConfig vanilla = m;
  vanilla.softmax_type = SoftmaxType::kVanilla;
  EXPECT_EQ(count_parameters(m) - count_parameters(vanilla), 36 * 64);
  const ChunkPlan& c = kept(decompose(w)).stages[0].chunks[0];
  for (std::int32_t layer = 0; layer < 9; ++layer) {
    EXPECT_EQ(named(c.forward, "attn_sink_cast", layer).size(), 1u) << layer;
    EXPECT_EQ(named(c.forward, "expert_glu_clamp_cat", layer).size(), 1u) << layer;
    EXPECT_EQ(named(c.forward, "expert_quick_geglu", layer).size(), 1u) << layer;
    EXPECT_EQ(named(c.backward, "expert_glu_clamp_cat_bwd", layer).size(), 1u) << layer;
  }
}

}  // namespace
}  // namespace stepsim
