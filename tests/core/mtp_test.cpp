// Multi-token prediction against closed forms written from Megatron-Core's
// MultiTokenPredictionLayer (megatron/core/transformer/multi_token_prediction.py) and
// Megatron-LM's num_floating_point_operations (megatron/training/training.py): the FLOPs it
// logs, the module's parameters on the last stage, its projection and its output heads.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "stepsim/check/load.hpp"
#include "stepsim/ops/flops.hpp"
#include "stepsim/plan/decompose.hpp"

namespace stepsim {
namespace {

// h 1024, 16 heads of 64, 4 query groups, SwiGLU f 2816, V 32000, s 512, b 2; 4 layers.
constexpr double kH = 1024, kQ = 1024, kKv = 256, kF = 2816, kV = 32000, kS = 512;
constexpr double kLayers = 4;

std::string scenario(std::int64_t mtp, std::int64_t t, std::int64_t p, bool sp) {
  return R"({"name": "mtp", "model": {"num_layers": 4, "hidden_size": 1024,
      "num_attention_heads": 16, "num_query_groups": 4, "ffn_hidden_size": 2816,
      "seq_length": 512, "padded_vocab_size": 32000, "swiglu": true, "add_bias_linear": false,
      "normalization": "RMSNorm", "position_embedding_type": "rope", "attention_backend": "auto",
      "attention_dropout": 0, "hidden_dropout": 0, "untie_embeddings_and_output_weights": true,
      "mtp_num_layers": )" + std::to_string(mtp) + R"(}, "training": {"world_size": )" +
         std::to_string(t * p) + R"(, "tensor_model_parallel_size": )" + std::to_string(t) +
         R"(, "pipeline_model_parallel_size": )" + std::to_string(p) +
         R"(, "sequence_parallel": )" + (sp ? "true" : "false") +
         R"(, "micro_batch_size": 2, "global_batch_size": 8, "bf16": true},
      "system": "systems/dgx-h100-80gb.json"})";
}

Workload load_text(const std::string& text) {
  LoadOptions o;
  o.scenarios_dir = STEPSIM_SCENARIOS_DIR;
  auto w = load_scenario_text(text, "mtp.json", ".", o);
  EXPECT_TRUE(w.ok()) << (w.ok() ? "" : format_errors(w.errors()));
  return w.ok() ? std::move(w).value() : Workload{};
}

/// training.py's transformer_flops for this dense GQA model with D MTP depths, by hand.
double megatron_flops(double d) {
  const double tokens = 8 * kS;
  const double layers = kLayers + d;
  const double per_token = 6 * kH * kF * 3 * layers + 6 * (kH * (kQ + 2 * kKv) + kQ * kH) * layers +
                           6 * d * (3 * kH + 2 * kH * kH) + 6 * kH * kV * (d + 1);
  return tokens * per_token + 8 * kS * kS * layers * 6 * kQ / 2 * 2;
}

TEST(Mtp, LoggedFlopsMatchMegatronsFormula) {
  for (const std::int64_t d : {0, 1, 2}) {
    const Workload w = load_text(scenario(d, 1, 1, false));
    EXPECT_DOUBLE_EQ(megatron_logged_flops_per_step(w), megatron_flops(static_cast<double>(d)))
        << "mtp_num_layers " << d;
  }
}

TEST(Mtp, LastStageHoldsTheModulesAndAnEmbeddingCopy) {
  // TP 2, PP 2, untied: the last stage adds per depth enorm, hnorm, final norm (RMSNorm: h
  // each), eh_proj (2h x h/t), one dense layer; and the word embedding (V/t x h) once.
  const Workload plain = load_text(scenario(0, 2, 2, true));
  const Workload mtp = load_text(scenario(1, 2, 2, true));
  const double layer = 2 * kH + kH * (kQ + 2 * kKv) / 2 + kQ / 2 * kH + kH * 2 * kF / 2 + kF / 2 * kH;
  const double module = 3 * kH + 2 * kH * kH / 2 + layer;
  EXPECT_EQ(chunk_parameters(mtp, 1, 0) - chunk_parameters(plain, 1, 0),
            static_cast<std::int64_t>(module + kV / 2 * kH));
  EXPECT_EQ(chunk_parameters(mtp, 0, 0), chunk_parameters(plain, 0, 0));
}

TEST(Mtp, ProjectionHeadsAndEmbeddingGradient) {
  const Workload w = load_text(scenario(2, 2, 2, true));
  const WorkloadPlan plan = decompose(w);
  const ChunkPlan& last = plan.stages[1].chunks[0];
  std::int64_t heads = 0, projections = 0;
  for (const Op& op : last.forward) {
    if (op.name == "logits_gemm") ++heads;
    if (op.name == "mtp_eh_proj_gemm") {
      ++projections;
      const auto& g = std::get<GemmOp>(op.shape);
      EXPECT_EQ(g.m, 2 * 512);   // all-gathered tokens (SP)
      EXPECT_EQ(g.n, 1024 / 2);  // h / t
      EXPECT_EQ(g.k, 2 * 1024);  // [embedding, hidden]
    }
  }
  EXPECT_EQ(heads, 3);  // the main head and one per depth, on the shared output weight
  EXPECT_EQ(projections, 2);
  // finalize_model_grads: the word embedding's gradient is all-reduced between the first and
  // the last stage although the embeddings are untied.
  bool reduced = false;
  for (const Op& op : plan.stages[1].step_ops) reduced |= op.name == "embedding_grad_all_reduce";
  EXPECT_TRUE(reduced);
}

TEST(Mtp, MegatronsRules) {
  std::string text = scenario(1, 1, 1, false);
  text.replace(text.find("\"rope\""), 6, "\"learned_absolute\"");
  LoadOptions o;
  o.scenarios_dir = STEPSIM_SCENARIOS_DIR;
  const auto w = load_scenario_text(text, "mtp.json", ".", o);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(format_errors(w.errors()).find("model.mtp_num_layers"), std::string::npos);
}

}  // namespace
}  // namespace stepsim
