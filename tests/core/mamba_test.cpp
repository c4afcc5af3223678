// Hybrid Mamba models against closed forms written out by hand from Megatron-Core's MambaMixer
// (megatron/core/ssm/mamba_mixer.py) and mamba_ssm's mamba_split_conv1d_scan_combined
// (mamba_ssm/ops/triton/ssd_combined.py): a Mamba layer's FLOPs and bytes per TP rank, its TP
// communication with sequence parallelism, the parameters of Nemotron-H 8B, 56B and Nemotron 3
// Nano from their configurations, the pipeline stages of '|' segments, and the rules.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "stepsim/check/load.hpp"
#include "stepsim/layout/moe_layout.hpp"
#include "stepsim/layout/pipeline_split.hpp"
#include "stepsim/ops/flops.hpp"
#include "stepsim/plan/decompose.hpp"

namespace stepsim {
namespace {

// A small hybrid model "M-": h 1024, 32 Mamba heads of 64 (d_inner 2048), state 128 in 8
// groups, chunk 128, then a squared-ReLU MLP of 4096; seq 1024, micro-batch 2 (T = 2048
// tokens, 16 chunks).
constexpr double kH = 1024, kHeads = 32, kP = 64, kN = 128, kG = 8, kQ = 128, kT = 2048;
constexpr double kInner = kHeads * kP;
constexpr double kInProj = 2 * kInner + 2 * kG * kN + kHeads;  // z, x, B, C, dt
constexpr double kConv = kInner + 2 * kG * kN;                 // x, B, C

std::string scenario(std::int64_t t, const std::string& pattern = "M-",
                     const std::string& extra_training = "", std::int64_t world = 0) {
  return R"({"name": "hybrid", "model": {"num_layers": 2, "hybrid_layer_pattern": ")" + pattern +
         R"(", "hidden_size": 1024, "num_attention_heads": 16, "ffn_hidden_size": 4096,
      "mamba_num_heads": 32, "mamba_head_dim": 64, "mamba_state_dim": 128, "mamba_num_groups": 8,
      "seq_length": 1024, "padded_vocab_size": 32000, "squared_relu": true,
      "add_bias_linear": false, "normalization": "RMSNorm", "position_embedding_type": "none",
      "attention_backend": "auto", "attention_dropout": 0, "hidden_dropout": 0,
      "untie_embeddings_and_output_weights": true}, "training": {"world_size": )" +
         std::to_string(world > 0 ? world : t) + R"(, "tensor_model_parallel_size": )" + std::to_string(t) +
         R"(, "sequence_parallel": )" + (t > 1 ? "true" : "false") +
         R"(, "micro_batch_size": 2, "bf16": true)" +
         (extra_training.find("global_batch_size") == std::string::npos
              ? R"(, "global_batch_size": 2)"
              : "") +
         extra_training +
         R"(}, "system": "systems/dgx-h100-80gb.json"})";
}

Result<Workload> load(const std::string& text) {
  LoadOptions o;
  o.scenarios_dir = STEPSIM_SCENARIOS_DIR;
  return load_scenario_text(text, "hybrid.json", ".", o);
}

Workload load_ok(const std::string& text) {
  auto w = load(text);
  EXPECT_TRUE(w.ok()) << (w.ok() ? "" : format_errors(w.errors()));
  return w.ok() ? std::move(w).value() : Workload{};
}

double flops_of(const std::vector<Op>& ops, std::int32_t layer, bool recompute) {
  double sum = 0;
  for (const Op& op : ops) {
    if (op.layer == layer && (op.phase == Phase::kRecompute) == recompute) sum += op.flops();
  }
  return sum;
}

const Op* find(const std::vector<Op>& ops, const std::string& name) {
  for (const Op& op : ops) {
    if (op.name == name && op.layer == 0) return &op;
  }
  ADD_FAILURE() << "no op " << name;
  return nullptr;
}

// The scan's forward by hand: chunk_state (B^T x per chunk and head: 2 T H P N), bmm_chunk
// (C B^T per chunk and group: 2 T Q N G), chunk_scan (C B^T x and C states in one
// accumulator: 2 T H P (Q + N)).
double ssd_forward(double ranks) {
  return (2 * kT * kHeads * kP * kN + 2 * kT * kQ * kN * kG +
          2 * kT * kHeads * kP * (kQ + kN)) / ranks;
}
// The linears: in_proj (h -> z x B C dt) and out_proj (d_inner -> h).
double linears(double ranks) { return (2 * kT * kH * kInProj + 2 * kT * kInner * kH) / ranks; }

TEST(Mamba, LayerFlopsPerRankMatchTheKernels) {
  for (const std::int64_t t : {1, 2}) {
    const Workload w = load_ok(scenario(t));
    const WorkloadPlan plan = decompose(w);
    const ChunkPlan& chunk = plan.stages[0].chunks[0];
    const double r = static_cast<double>(t);
    EXPECT_NEAR(flops_of(chunk.forward, 0, false) / (linears(r) + ssd_forward(r)), 1.0, 1e-12);
    // Backward: dgrad and wgrad of both linears; the scan's backward kernels: dstates
    // (2 T H P N), dx (2 T H P (Q + N)), dB and dC (2 T H N P each), dCB and ddA_cumsum
    // (2 T Q P H each), two bmm_chunk backwards (2 T Q N G each).
    const double ssd_backward = (2 * kT * kHeads * kP * kN + 2 * kT * kHeads * kP * (kQ + kN) +
                                 4 * kT * kHeads * kN * kP + 4 * kT * kQ * kP * kHeads +
                                 4 * kT * kQ * kN * kG) / r;
    EXPECT_NEAR(flops_of(chunk.backward, 0, false) / (2 * linears(r) + ssd_backward), 1.0, 1e-12);
    // Re-run at the start of backward: chunk_state and bmm_chunk (the states and C B^T).
    EXPECT_NEAR(flops_of(chunk.backward, 0, true) /
                    ((2 * kT * kHeads * kP * kN + 2 * kT * kQ * kN * kG) / r),
                1.0, 1e-12);
  }
}

TEST(Mamba, LayerBytesPerRankMatchTheKernels) {
  for (const std::int64_t t : {1, 2}) {
    const Workload w = load_ok(scenario(t));
    const WorkloadPlan plan = decompose(w);
    const std::vector<Op>& fwd = plan.stages[0].chunks[0].forward;
    const auto bytes = [&](const std::string& name) {
      const Op* op = find(fwd, name);
      return op ? static_cast<double>(std::get<MemoryBoundOp>(op->shape).bytes) : 0.0;
    };
    const double r = static_cast<double>(t);
    // causal_conv1d_fwd reads and writes x, B, C (bf16).
    EXPECT_EQ(bytes("mamba_conv1d"), 2 * kT * kConv / r * 2);
    // RMSNormGated: reads and writes d_inner, one fp32 rstd per token and group.
    EXPECT_EQ(bytes("mamba_gated_norm"), 2 * kT * kInner / r * 2 + kT * kG / r * 4);
    // _chunk_cumsum_fwd: reads dt, writes dt and dA_cumsum in fp32.
    EXPECT_EQ(bytes("ssd_chunk_cumsum"), kT * kHeads / r * (2 + 8));
    // _state_passing_fwd: the chunks' states in fp32 in, in bf16 out.
    EXPECT_EQ(bytes("ssd_state_passing"), 16 * kHeads / r * kP * kN * (4 + 2));
    // b = 2: the rearrange copies of zxBCdt and y.
    EXPECT_EQ(bytes("mamba_zxbcdt_copy"), 2 * kT * kInProj / r * 2);
  }
}

TEST(Mamba, SequenceParallelGathersBeforeInProjAndScattersAfterOutProj) {
  const Workload w = load_ok(scenario(2));
  const WorkloadPlan plan = decompose(w);
  std::vector<std::pair<CollectiveKind, std::int64_t>> seen;
  for (const Op& op : plan.stages[0].chunks[0].forward) {
    const auto* c = std::get_if<CollectiveOp>(&op.shape);
    if (op.layer == 0 && c != nullptr && c->group == CommGroup::kTensor) {
      seen.emplace_back(c->kind, c->bytes);
    }
  }
  const auto hidden = static_cast<std::int64_t>(kT * kH * 2);
  EXPECT_EQ(seen, (std::vector<std::pair<CollectiveKind, std::int64_t>>{
                      {CollectiveKind::kAllGather, hidden},
                      {CollectiveKind::kReduceScatter, hidden}}));
}

TEST(Mamba, ParametersByHand) {
  const Workload w = load_ok(scenario(1));
  // Mamba layer: in_proj's RMSNorm and weight, conv1d (4 taps and a bias per channel),
  // dt_bias, A_log, D, the gated norm, out_proj. MLP layer: its norm, FC1, FC2. Then the
  // embedding, the output layer and the final norm.
  const double mamba = kH + kH * kInProj + kConv * 5 + 3 * kHeads + kInner + kInner * kH;
  const double mlp = kH + 2 * kH * 4096;
  EXPECT_EQ(static_cast<double>(count_parameters(w.model)), mamba + mlp + 2 * 32000 * kH + kH);
}

ModelConfig nemotron(const std::string& pattern, std::int64_t h, std::int64_t heads,
                     std::int64_t state, std::int64_t attn_heads, std::int64_t groups,
                     std::int64_t ffn) {
  ModelConfig m;
  m.hybrid_layer_pattern = pattern;
  m.num_layers = static_cast<std::int64_t>(pattern.size());
  m.hidden_size = h;
  m.mamba_num_heads = heads;
  m.mamba_head_dim = 64;
  m.mamba_state_dim = state;
  m.mamba_num_groups = 8;
  m.num_attention_heads = attn_heads;
  m.num_query_groups = groups;
  m.kv_channels = 128;
  m.ffn_hidden_size = ffn;
  m.padded_vocab_size = 131072;
  m.squared_relu = true;
  m.add_bias_linear = false;
  m.normalization = Normalization::kRmsNorm;
  m.position_embedding_type = PositionEmbedding::kNone;
  m.untie_embeddings_and_output_weights = true;
  return m;
}

// Configurations: Megatron-Bridge's recipes (src/megatron/bridge/recipes/nemotronh/h100/
// nemotronh.py, nemotron_3_nano.py) with the Hugging Face vocabulary of 131072.
TEST(Mamba, NemotronParameterCountsMatchThePublishedTotals) {
  const ModelConfig h8 = nemotron("M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-", 4096, 128,
                                  128, 32, 8, 21504);
  // nvidia/Nemotron-H-8B-Base-8K: 8.1B parameters in its safetensors (the card rounds to 8B).
  EXPECT_NEAR(static_cast<double>(count_parameters(h8)) / 8.1e9, 1.0, 0.01);
  const std::string p56 =
      "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-"
      "M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-";
  const ModelConfig h56 = nemotron(p56, 8192, 256, 256, 64, 8, 32768);
  // nvidia/Nemotron-H-56B-Base-8K: "This model has 56B model parameters."
  EXPECT_NEAR(static_cast<double>(count_parameters(h56)) / 56e9, 1.0, 0.01);
  ModelConfig nano = nemotron("MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME", 2688, 64,
                              128, 32, 2, 1856);
  nano.num_experts = 128;
  nano.moe_router_topk = 6;
  nano.moe_ffn_hidden_size = 1856;
  nano.moe_shared_expert_intermediate_size = 3712;
  // nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16: 31.6B parameters, 3.6B active with embeddings.
  EXPECT_NEAR(static_cast<double>(count_parameters(nano)) / 31.6e9, 1.0, 0.01);
  EXPECT_NEAR(static_cast<double>(count_active_parameters(nano)) / 3.6e9, 1.0, 0.01);
}

TEST(Mamba, PipeSeparatorsAreThePipelineStages) {
  // Four segments over PP 2: two virtual stages (segment vp * pp + rank).
  const Workload w = load_ok(scenario(
      1, "M-|M|*-M|-", R"(, "pipeline_model_parallel_size": 2,
          "overlap_p2p_comm": true, "global_batch_size": 4)", 2));
  EXPECT_EQ(w.model.num_layers, 7);
  EXPECT_EQ(w.training.virtual_pipeline_model_parallel_size, 2);
  const PipelineSplit split = pipeline_split(w.training, w.model);
  EXPECT_EQ(split.at(0, 0).first, 0);
  EXPECT_EQ(split.at(0, 0).count, 2);
  EXPECT_EQ(split.at(1, 0).first, 2);
  EXPECT_EQ(split.at(1, 0).count, 1);
  EXPECT_EQ(split.at(0, 1).first, 3);
  EXPECT_EQ(split.at(0, 1).count, 3);
  EXPECT_EQ(split.at(1, 1).first, 6);
  EXPECT_EQ(split.at(1, 1).count, 1);
}

std::string errors_of(const std::string& text) {
  auto w = load(text);
  return w.ok() ? std::string() : format_errors(w.errors());
}

TEST(Mamba, RefusesWhatMegatronRefusesNamingTheKey) {
  EXPECT_NE(errors_of(scenario(1, "M-|M-|M", R"(,
                 "pipeline_model_parallel_size": 2)", 2))
                .find("model.hybrid_layer_pattern"),
            std::string::npos);
  EXPECT_NE(errors_of(scenario(1, "M-M-", R"(, "pipeline_model_parallel_size": 2,
                 "pipeline_model_parallel_layout": "Et|tL")", 2))
                .find("training.pipeline_model_parallel_layout"),
            std::string::npos);
  EXPECT_NE(errors_of(scenario(1, "MG")).find("model.hybrid_layer_pattern"), std::string::npos);
  EXPECT_NE(errors_of(scenario(1, "M-/M")).find("not modelled"), std::string::npos);
  // MambaMixer: nheads % tp_size (32 heads over 64 ranks), ngroups % tp_size.
  EXPECT_NE(errors_of(scenario(16)).find("model.mamba_num_groups"), std::string::npos);
  // Context parallelism with Mamba layers: not modelled yet.
  EXPECT_NE(errors_of(scenario(1, "M-", R"(, "context_parallel_size": 2)", 2))
                .find("training.context_parallel_size"),
            std::string::npos);
  EXPECT_EQ(errors_of(scenario(1, "*-")), "");
}

TEST(Mamba, MegatronLogsTheHybridFlops) {
  const Workload w = load_ok(scenario(1));
  // hybrid_flops: Mamba 2 T h (2 d + 2 G N + H) + 7 T d N + 2 T d h with d = 2 h; the MLP
  // 4 T f h; logits 2 T h V; times 3. T = global batch 2 x seq 1024.
  const double d = 2 * kH;
  const double mamba = 2 * kT * kH * (2 * d + 2 * kG * kN + kHeads) + 7 * kT * d * kN + 2 * kT * d * kH;
  const double mlp = 4 * kT * 4096 * kH;
  EXPECT_NEAR(megatron_logged_flops_per_step(w) / (3 * (mamba + mlp + 2 * kT * kH * 32000)), 1.0,
              1e-12);
}

}  // namespace
}  // namespace stepsim
