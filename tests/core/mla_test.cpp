// Multi-latent attention against closed forms written out by hand from Megatron-Core's
// MLASelfAttention (megatron/core/transformer/multi_latent_attention.py) and Megatron-LM's
// num_floating_point_operations (megatron/training/training.py, its MLA branch): the layer's
// FLOPs, its parameters, its TP communication with sequence parallelism, its latents in
// activation memory, and DeepSeek-V3's router options, which leave the step as it is.

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "stepsim/cost/calibrated_cost_model.hpp"
#include "stepsim/plan/decompose.hpp"
#include "stepsim/ops/flops.hpp"
#include "stepsim/import/import.hpp"
#include "stepsim/check/load.hpp"
#include "stepsim/memory/memory_model.hpp"
#include "stepsim/layout/moe_layout.hpp"
#include "stepsim/cost/roofline_cost_model.hpp"

namespace stepsim {
namespace {

// A small MLA model: h 1024, 16 heads, q_lora 384, kv_lora 256, qk 64 + rope 32, v 48,
// one dense SwiGLU layer of 2048, seq 512, micro-batch 2.
constexpr double kH = 1024, kA = 16, kQl = 384, kKl = 256, kDqk = 64, kDr = 32, kDv = 48;
constexpr double kF = 2048, kS = 512, kB = 2, kV = 32000;

const std::string kMla = R"("multi_latent_attention": true, "q_lora_rank": 384,
    "kv_lora_rank": 256, "qk_head_dim": 64, "qk_pos_emb_head_dim": 32, "v_head_dim": 48)";

std::string mla_scenario(std::int64_t t, bool sp, const std::string& extra_model = "",
                         const std::string& mla = kMla + R"(, "qk_layernorm": true)") {
  return R"({"name": "mla", "model": {"num_layers": 2, "hidden_size": 1024,
      "num_attention_heads": 16, "ffn_hidden_size": 2048, "seq_length": 512,
      "padded_vocab_size": 32000, "swiglu": true, "add_bias_linear": false,
      "normalization": "RMSNorm", "position_embedding_type": "rope", "attention_backend": "auto",
      "attention_dropout": 0, "hidden_dropout": 0, "untie_embeddings_and_output_weights": true,
      )" + mla + extra_model + R"(}, "training": {"world_size": )" + std::to_string(t) +
         R"(, "tensor_model_parallel_size": )" + std::to_string(t) +
         R"(, "sequence_parallel": )" + (sp ? "true" : "false") +
         R"(, "micro_batch_size": 2, "global_batch_size": 4, "bf16": true},
      "system": "systems/dgx-h100-80gb.json"})";
}

Workload load_text(const std::string& text) {
  LoadOptions o;
  o.scenarios_dir = STEPSIM_SCENARIOS_DIR;
  auto w = load_scenario_text(text, "mla.json", ".", o);
  EXPECT_TRUE(w.ok()) << (w.ok() ? "" : format_errors(w.errors()));
  return w.ok() ? std::move(w).value() : Workload{};
}

double layer_flops(const std::vector<Op>& ops, std::int32_t layer) {
  double sum = 0;
  for (const Op& op : ops) {
    if (op.layer == layer && op.phase != Phase::kRecompute) sum += op.flops();
  }
  return sum;
}

/// One layer's forward by hand: q down (h -> q_lora), q up (q_lora -> a (qk + rope)), kv down
/// (h -> kv_lora + rope), kv up (kv_lora -> a (qk + v)), QK^T with the (qk + rope) head dim,
/// PV with the v head dim (the whole s x s rectangle, as the model FLOPs count it), the output
/// projection (a v -> h), and the SwiGLU MLP.
double forward_by_hand() {
  const double tokens = kS * kB;
  const double linears = kH * kQl + kQl * kA * (kDqk + kDr) + kH * (kKl + kDr) +
                         kKl * kA * (kDqk + kDv) + kA * kDv * kH + 3 * kH * kF;
  const double core = 2 * kB * kS * kS * kA * ((kDqk + kDr) + kDv);
  return 2 * tokens * linears + core;
}

TEST(Mla, LayerFlopsMatchTheClosedForm) {
  const Workload w = load_text(mla_scenario(1, false));
  const WorkloadPlan plan = decompose(w);
  const ChunkPlan& chunk = plan.stages[0].chunks[0];
  const double forward = layer_flops(chunk.forward, 1);
  EXPECT_NEAR(forward / forward_by_hand(), 1.0, 1e-12);
  // Backward: dgrad and wgrad of every linear, twice the core attention's matmuls.
  EXPECT_NEAR(layer_flops(chunk.backward, 1) / (2 * forward_by_hand()), 1.0, 1e-12);
}

TEST(Mla, TensorParallelRanksSplitTheWorkAndGatherTheLatents) {
  const Workload one = load_text(mla_scenario(1, false));
  const Workload two = load_text(mla_scenario(2, true));
  const WorkloadPlan p1 = decompose(one);
  const WorkloadPlan p2 = decompose(two);
  const ChunkPlan& c2 = p2.stages[0].chunks[0];
  // With SP the duplicated down projections run on each rank's own half of the tokens: the
  // two ranks together do the one rank's work.
  EXPECT_NEAR(2 * layer_flops(c2.forward, 1) / layer_flops(p1.stages[0].chunks[0].forward, 1),
              1.0, 1e-12);
  // Forward TP collectives of a layer: the k_pos_emb, q latent and kv latent all-gathers and
  // linear_proj's reduce-scatter, then the MLP's input all-gather and FC2's reduce-scatter
  // (bytes as nccl-tests counts them: the whole tensor).
  std::vector<std::int64_t> gathers;
  std::int64_t scatters = 0;
  for (const Op& op : c2.forward) {
    const auto* c = std::get_if<CollectiveOp>(&op.shape);
    if (op.layer != 1 || c == nullptr || c->group != CommGroup::kTensor) continue;
    if (c->kind == CollectiveKind::kAllGather) gathers.push_back(c->bytes);
    if (c->kind == CollectiveKind::kReduceScatter) ++scatters;
  }
  const auto tokens = static_cast<std::int64_t>(kS * kB);
  EXPECT_EQ(gathers, (std::vector<std::int64_t>{tokens * 32 * 2, tokens * 384 * 2,
                                                tokens * 256 * 2, tokens * 1024 * 2}));
  EXPECT_EQ(scatters, 2);
  // The duplicated down projections' gradients are summed over TP once per step.
  const std::vector<Op>& step = p2.stages[0].step_ops;
  const auto replicated = std::find_if(step.begin(), step.end(), [](const Op& op) {
    return op.name == "tp_replicated_grad_all_reduce";
  });
  ASSERT_NE(replicated, step.end());
  EXPECT_EQ(std::get<CollectiveOp>(replicated->shape).bytes,
            2 * 1024 * (384 + 256 + 32) * two.training.grad_bytes());
  const std::vector<Op>& step1 = p1.stages[0].step_ops;
  EXPECT_EQ(std::count_if(step1.begin(), step1.end(),
                          [](const Op& op) { return op.name == "tp_replicated_grad_all_reduce"; }),
            0);
}

TEST(Mla, ParametersByHand) {
  const Workload w = load_text(mla_scenario(1, false));
  // Per layer: two RMSNorms, q down, q norm, q up, kv down, kv norm, kv up, output projection,
  // SwiGLU MLP; the word embedding, the output layer and the final norm.
  const double layer = 2 * kH + kH * kQl + kQl + kQl * kA * (kDqk + kDr) + kH * (kKl + kDr) + kKl +
                       kKl * kA * (kDqk + kDv) + kA * kDv * kH + 3 * kH * kF;
  EXPECT_EQ(static_cast<double>(count_parameters(w.model)), 2 * layer + 2 * kV * kH + kH);
  // Without q_lora_rank: one h -> a (qk + rope) projection, no q norm.
  const Workload no_q = load_text(mla_scenario(
      1, false, "",
      R"("multi_latent_attention": true, "kv_lora_rank": 256, "qk_head_dim": 64,
         "qk_pos_emb_head_dim": 32, "v_head_dim": 48, "qk_layernorm": true)"));
  const double layer_no_q = layer - (kH * kQl + kQl + kQl * kA * (kDqk + kDr)) +
                            kH * kA * (kDqk + kDr);
  EXPECT_EQ(static_cast<double>(count_parameters(no_q.model)), 2 * layer_no_q + 2 * kV * kH + kH);
}

TEST(Mla, MegatronLoggedFlopsFollowItsMlaBranch) {
  const Workload w = load_text(mla_scenario(1, false));
  // training.py: 6 x (q_lora (h + a (qk + rope) + 1) + kv_lora (h + a (qk + v) + 1) + h rope +
  // a v h) per token and layer, 6 x (a (qk + rope) / 2 + a v / 2) per s^2 and layer, the
  // SwiGLU MLP 6 x 3 h f and the logits 6 h V per token.
  const double tokens = 4 * kS;  // global batch 4
  const double attn = kQl * (kH + kA * (kDqk + kDr) + 1) + kKl * (kH + kA * (kDqk + kDv) + 1) +
                      kH * kDr + kA * kDv * kH;
  const double want = tokens * (6 * (attn + 3 * kH * kF) * 2 + 6 * kH * kV) +
                      4 * kS * kS * 6 * (kA * (kDqk + kDr) / 2 + kA * kDv / 2) * 2;
  EXPECT_NEAR(megatron_logged_flops_per_step(w) / want, 1.0, 1e-12);
}

TEST(Mla, LatentsInActivationMemory) {
  // qk_layernorm keeps each latent twice (its norm's input and output), with SP sharded.
  const Workload with = load_text(mla_scenario(2, true));
  const Workload without = load_text(mla_scenario(2, true, "", kMla));
  ASSERT_FALSE(without.model.qk_layernorm);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(with) - layer_activation_bytes(without),
                   kS * kB / 2 * (kQl + kKl) * 2);
}

TEST(Mla, RouterOptionsLoadAndLeaveTheStepAsItIs) {
  const std::string moe =
      R"(, "num_experts": 8, "moe_router_topk": 2, "moe_ffn_hidden_size": 512)";
  const Workload plain = load_text(mla_scenario(2, true, moe));
  const Workload deepseek = load_text(mla_scenario(
      2, true,
      moe + R"(, "moe_router_score_function": "sigmoid", "moe_router_enable_expert_bias": true,
          "moe_router_num_groups": 4, "moe_router_group_topk": 2)"));
  EXPECT_EQ(deepseek.model.moe_router_score_function, MoeRouterScore::kSigmoid);
  EXPECT_TRUE(deepseek.model.moe_router_enable_expert_bias);
  EXPECT_EQ(deepseek.model.moe_router_num_groups, 4);
  EXPECT_EQ(deepseek.model.moe_router_group_topk, 2);
  EXPECT_EQ(decompose(plain), decompose(deepseek));
}

TEST(Mla, AttentionWithNarrowerValuesIsPricedByItsFlops) {
  // MLA's core attention: keys 192 wide, values 128. Its matmuls are those of a kernel with
  // head dim 160 (the mean), forward and backward; the roofline prices the FLOPs.
  const AttentionOp mla{.batch = 1, .heads = 128, .kv_heads = 128, .seq = 4096,
                        .head_dim = 192, .dtype = DType::kBf16, .v_head_dim = 128};
  AttentionOp mean = mla;
  mean.head_dim = 160;
  mean.v_head_dim = 0;
  EXPECT_DOUBLE_EQ(mla.flops(), 2.0 * 4096.0 * 4096.0 * (192 + 128) * 128);
  EXPECT_DOUBLE_EQ(mla.flops(), mean.flops());
  AttentionOp bwd = mla;
  bwd.backward = true;
  EXPECT_DOUBLE_EQ(bwd.flops(), 2 * mla.flops());
  const Workload w = load_text(mla_scenario(1, false));
  const RooflineCostModel roofline(w.system);
  EXPECT_DOUBLE_EQ(roofline.attention_s(mla), roofline.attention_s(mean));
  AttentionOp square = mla;
  square.v_head_dim = 0;  // values as wide as keys: more work
  EXPECT_GT(roofline.attention_s(square), roofline.attention_s(mla));
  // A profile without attention samples prices the kernel as its matmuls plus its HBM
  // traffic: between the kernels whose values are as wide as the keys (192) and whose keys
  // are as narrow as the values (128), forward and backward.
  const CalibratedCostModel calibrated(std::make_shared<Profile>(), "empty", w.system);
  for (const bool backward : {false, true}) {
    AttentionOp m = mla, wide = square, narrow = mean;
    m.backward = wide.backward = narrow.backward = backward;
    narrow.head_dim = 128;
    EXPECT_LT(calibrated.attention_s(m), calibrated.attention_s(wide)) << backward;
    EXPECT_GT(calibrated.attention_s(m), calibrated.attention_s(narrow)) << backward;
  }
}

TEST(Mla, LaunchLineFlags) {
  const std::string line =
      "torchrun --nnodes 1 --nproc_per_node 8 pretrain_gpt.py --num-layers 2 --hidden-size 1024 "
      "--num-attention-heads 16 --seq-length 512 --max-position-embeddings 512 "
      "--micro-batch-size 1 --global-batch-size 8 --vocab-size 32000 --swiglu "
      "--multi-latent-attention --q-lora-rank 384 --kv-lora-rank 256 --qk-head-dim 64 "
      "--qk-pos-emb-head-dim 32 --v-head-dim 48 --qk-layernorm --rotary-scaling-factor 40 "
      "--mscale 1.0 --mscale-all-dim 1.0 --bf16";
  MegatronImportOptions o;
  o.system = "systems/dgx-h100-80gb.json";
  auto r = scenario_from_megatron_args(line, o);
  ASSERT_TRUE(r.ok()) << format_errors(r.errors());
  const Workload w = load_text(r->scenario_json);
  EXPECT_TRUE(w.model.multi_latent_attention);
  EXPECT_EQ(w.model.q_lora_rank, 384);
  EXPECT_EQ(w.model.v_head_dim, 48);
  EXPECT_TRUE(w.model.qk_layernorm);
  // The fused down projection (FusedMLASelfAttention) is another op sequence: refused.
  auto fused = scenario_from_megatron_args(line + " --mla-down-proj-fusion", o);
  ASSERT_FALSE(fused.ok());
  EXPECT_NE(format_errors(fused.errors()).find("--mla-down-proj-fusion"), std::string::npos);
}

TEST(Mla, ShippedDeepseekV3CountsItsPublishedParameters) {
  LoadOptions o;
  o.scenarios_dir = STEPSIM_SCENARIOS_DIR;
  auto w =
      load_scenario_file(std::string(STEPSIM_SCENARIOS_DIR) + "/deepseek-v3-h100-2048.json", o);
  ASSERT_TRUE(w.ok()) << format_errors(w.errors());
  // arXiv:2412.19437: 671B parameters; 36.7B activated (README_WEIGHTS.md of
  // deepseek-ai/DeepSeek-V3; 37B in the paper), which is the count without the input
  // embedding (docs/outputs.md, "Active parameters").
  EXPECT_NEAR(static_cast<double>(count_parameters(w->model)) / 671e9, 1.0, 0.01);
  EXPECT_NEAR(
      static_cast<double>(count_active_parameters_without_input_embedding(w->model)) / 36.7e9, 1.0,
      0.01);
}

TEST(Mla, OffChangesNothing) {
  // The MLA sizes at Megatron's defaults and multi_latent_attention false: the other
  // attention, op for op.
  const Workload dense = load_text(mla_scenario(1, false, "", R"("kv_channels": 64)"));
  const Workload with_defaults = load_text(mla_scenario(
      1, false, "",
      R"("kv_channels": 64, "multi_latent_attention": false, "kv_lora_rank": 32,
         "qk_head_dim": 128, "qk_pos_emb_head_dim": 64, "v_head_dim": 128)"));
  EXPECT_EQ(decompose(dense), decompose(with_defaults));
  const WorkloadPlan plan = decompose(dense);
  const auto& fwd = plan.stages[0].chunks[0].forward;
  EXPECT_TRUE(
      std::any_of(fwd.begin(), fwd.end(), [](const Op& op) { return op.name == "qkv_gemm"; }));
  EXPECT_FALSE(
      std::any_of(fwd.begin(), fwd.end(), [](const Op& op) { return op.name == "kv_up_gemm"; }));
}

}  // namespace
}  // namespace stepsim
