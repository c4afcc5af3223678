// Mixture-of-experts Hugging Face configs (tests/data/hf-configs/, the checkpoints' own
// config.json files, cited in its README): their total and active parameter counts against
// the published figures, each under the publisher's definition of "active".

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "stepsim/ops/flops.hpp"
#include "stepsim/import/import.hpp"
#include "stepsim/check/load.hpp"
#include "stepsim/layout/moe_layout.hpp"

namespace stepsim {
namespace {

Workload load(const std::string& json) {
  LoadOptions o;
  o.scenarios_dir = STEPSIM_SCENARIOS_DIR;
  auto w = load_scenario_text(json, "imported.json", ".", o);
  if (!w.ok()) ADD_FAILURE() << format_errors(w.errors()) << json;
  return w.ok() ? w.value() : Workload{};
}

std::string with_training(const std::string& model_json) {
  nlohmann::json doc = nlohmann::json::parse(model_json);
  doc["name"] = "hf";
  doc["training"] = {{"world_size", 8}, {"micro_batch_size", 1}, {"global_batch_size", 8}};
  doc["system"] = "systems/dgx-h100-80gb.json";
  return doc.dump();
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string fixture(const char* file) {
  return read_text(std::string(STEPSIM_SOURCE_DIR) + "/tests/data/hf-configs/" + file);
}

ImportedModel imported(const char* file) {
  auto r = model_from_hf_config(fixture(file), file, 4096);
  if (!r.ok()) ADD_FAILURE() << format_errors(r.errors());
  return r.ok() ? r.value() : ImportedModel{};
}

bool noted(const ImportedModel& r, const std::string& what) {
  for (const std::string& note : r.notes) {
    if (note.find(what) != std::string::npos) return true;
  }
  return false;
}

// Which tables a publisher's "active parameters" hold. kBothTables: Mistral ("Mixtral of
// experts", 2024: 12.9B "per token"), Qwen (model cards) and DeepSeek (README_WEIGHTS.md:
// "including 0.9B for Embedding and 0.9B for the output Head") say they count the input
// embedding and the output layer. kWithoutInputEmbedding: the weights of the GEMMs a token
// passes, as OpenAI counts gpt-oss's "active parameters per forward pass" (its model card,
// arXiv:2508.10925, table 1: 5.13B of 116.83B, with 1.16B embedding and unembedding) and as
// Megatron's logged FLOPs count (the logits GEMM, not the lookup).
enum class Active : std::uint8_t { kBothTables, kWithoutInputEmbedding };

struct Published {
  const char* file;
  double total;
  double active;
  Active definition;
  const char* source;
};

// Every published figure within 1% under the definition that matches it (README of
// tests/data/hf-configs for the sources). Two figures do not reach 1% under either definition,
// tested below on their own: Qwen3-30B-A3B's 3.3B and Qwen2-57B-A14B's 14B.
const Published kPublished[] = {
    {"mixtral-8x7b-config.json", 46.7e9, 12.9e9, Active::kBothTables, "Mistral AI"},
    {"qwen3-235b-a22b-config.json", 235e9, 22e9, Active::kBothTables, "Qwen3 model card"},
    {"qwen3-30b-a3b-config.json", 30.5e9, 0, Active::kBothTables, "Qwen3 model card"},
    {"qwen2-57b-a14b-config.json", 57e9, 0, Active::kBothTables, "Qwen2 model card"},
    // DeepSeek's 36.7B (README_WEIGHTS.md; the paper rounds it to 37B) is stepsim's count
    // without the input embedding (36.6B), though DeepSeek says it holds both tables (37.5B).
    {"deepseek-v3-config.json", 671e9, 36.7e9, Active::kWithoutInputEmbedding, "DeepSeek"},
    {"deepseek-v2-config.json", 236e9, 21e9, Active::kWithoutInputEmbedding, "DeepSeek-V2"},
    {"gpt-oss-120b-config.json", 116.83e9, 5.13e9, Active::kWithoutInputEmbedding, "OpenAI"},
    {"gpt-oss-20b-config.json", 20.91e9, 3.61e9, Active::kWithoutInputEmbedding, "OpenAI"},
};

double active_of(const ModelConfig& m, Active definition) {
  return static_cast<double>(definition == Active::kBothTables
                                 ? count_active_parameters(m)
                                 : count_active_parameters_without_input_embedding(m));
}

TEST(ImportHfMoe, PublishedParameterCountsWithinOnePercent) {
  for (const Published& c : kPublished) {
    const ImportedModel r = imported(c.file);
    const Workload w = load(with_training(r.model_json));
    const ModelConfig& m = w.model;
    ASSERT_TRUE(m.moe()) << c.file;
    EXPECT_NEAR(static_cast<double>(count_parameters(m)) / c.total, 1.0, 0.01) << c.file;
    if (c.active > 0) {
      EXPECT_NEAR(active_of(m, c.definition) / c.active, 1.0, 0.01) << c.file << " " << c.source;
    }
    // The two definitions differ by the input embedding exactly (all are untied).
    EXPECT_EQ(count_active_parameters(m) - count_active_parameters_without_input_embedding(m),
              m.padded_vocab_size * m.hidden_size)
        << c.file;
  }
}

// Qwen publishes its non-embedding totals to three digits (Qwen3-30B-A3B 29.9B,
// Qwen3-235B-A22B 234B: both tables out), and the active sizes of two models to two: 3.3B and
// 14B. stepsim's counts with both tables, 3.35B and 14.25B, round to them only at the edge of
// that precision (1.6% and 1.8% above); without the input embedding they are 3.04B and 13.71B.
TEST(ImportHfMoe, QwenTwoDigitActiveSizes) {
  const auto counts = [](const char* file) {
    const ImportedModel r = imported(file);
    return load(with_training(r.model_json)).model;
  };
  const ModelConfig q30 = counts("qwen3-30b-a3b-config.json");
  const ModelConfig q235 = counts("qwen3-235b-a22b-config.json");
  const ModelConfig q57 = counts("qwen2-57b-a14b-config.json");
  const auto non_embedding = [](const ModelConfig& m) {
    return static_cast<double>(count_parameters(m) - 2 * m.padded_vocab_size * m.hidden_size);
  };
  EXPECT_NEAR(non_embedding(q30) / 29.9e9, 1.0, 0.01);
  EXPECT_NEAR(non_embedding(q235) / 234e9, 1.0, 0.01);
  // Within the published figure's last digit (3.3B: 3.25 to 3.35 plus stepsim's router and
  // norms, 13M; 14B: 13.5 to 14.5).
  EXPECT_NEAR(active_of(q30, Active::kBothTables), 3.3e9, 0.065e9);
  EXPECT_NEAR(active_of(q57, Active::kBothTables), 14e9, 0.5e9);
  EXPECT_NEAR(active_of(q57, Active::kWithoutInputEmbedding), 14e9, 0.5e9);
}

TEST(ImportHfMoe, MixtralAndQwenExperts) {
  const Workload mixtral = load(with_training(imported("mixtral-8x7b-config.json").model_json));
  EXPECT_EQ(mixtral.model.num_experts, 8);
  EXPECT_EQ(mixtral.model.moe_router_topk, 2);
  EXPECT_EQ(mixtral.model.moe_ffn_hidden_size, 14336);
  const Workload qwen3 = load(with_training(imported("qwen3-30b-a3b-config.json").model_json));
  EXPECT_EQ(qwen3.model.num_experts, 128);
  EXPECT_EQ(qwen3.model.moe_router_topk, 8);
  EXPECT_EQ(qwen3.model.kv_channels, 128);
  // Qwen2-57B-A14B: a shared expert of 20480 beside 64 routed ones of 2560; its
  // sliding_window is switched off by use_sliding_window=false, so no note.
  const ImportedModel q2 = imported("qwen2-57b-a14b-config.json");
  const Workload qwen2 = load(with_training(q2.model_json));
  EXPECT_EQ(qwen2.model.num_experts, 64);
  EXPECT_EQ(qwen2.model.moe_shared_expert_intermediate_size, 20480);
  EXPECT_FALSE(noted(q2, "sliding_window"));
  // Qwen's dense layers (mlp_only_layers, decoder_sparse_step) become a moe_layer_freq list.
  auto dense_first = model_from_hf_config(
      R"({"architectures": ["Qwen2MoeForCausalLM"], "hidden_size": 1024,
          "intermediate_size": 4096, "max_position_embeddings": 4096, "moe_intermediate_size": 512,
          "num_attention_heads": 8, "num_experts": 8, "num_experts_per_tok": 2,
          "num_hidden_layers": 4, "num_key_value_heads": 8, "vocab_size": 1000,
          "mlp_only_layers": [0], "decoder_sparse_step": 1,
          "shared_expert_intermediate_size": 2048})",
      "config.json", 1024);
  ASSERT_TRUE(dense_first.ok()) << format_errors(dense_first.errors());
  const Workload q = load(with_training(dense_first->model_json));
  EXPECT_EQ(q.model.moe_layer_freq, "[0,1,1,1]");
  EXPECT_EQ(q.model.moe_shared_expert_intermediate_size, 2048);
}

// MLA, shared experts, dense first layers and the router's options of DeepSeek's own configs.
TEST(ImportHfMoe, DeepseekV2AndV3) {
  struct Case {
    const char* file;
    std::int64_t experts, topk, shared, first_dense;
    const char* score;
  };
  const Case cases[] = {
      {"deepseek-v3-config.json", 256, 8, 2048, 3, "sigmoid"},
      {"deepseek-v2-config.json", 160, 6, 2 * 1536, 1, "softmax"},
  };
  for (const Case& c : cases) {
    const Workload w = load(with_training(imported(c.file).model_json));
    const ModelConfig& m = w.model;
    EXPECT_TRUE(m.multi_latent_attention);
    EXPECT_EQ(m.q_lora_rank, 1536);
    EXPECT_EQ(m.kv_lora_rank, 512);
    EXPECT_EQ(m.qk_head_dim, 128);
    EXPECT_EQ(m.qk_pos_emb_head_dim, 64);
    EXPECT_EQ(m.v_head_dim, 128);
    EXPECT_TRUE(m.qk_layernorm);
    EXPECT_EQ(m.num_query_groups, m.num_attention_heads);
    EXPECT_EQ(m.num_experts, c.experts);
    EXPECT_EQ(m.moe_router_topk, c.topk);
    EXPECT_EQ(m.moe_shared_expert_intermediate_size, c.shared);
    const std::vector<bool> pattern = moe_layer_pattern(m);
    ASSERT_EQ(static_cast<std::int64_t>(pattern.size()), m.num_layers);
    for (std::int64_t i = 0; i < m.num_layers; ++i) {
      EXPECT_EQ(pattern[static_cast<std::size_t>(i)], i >= c.first_dense) << c.file << " " << i;
    }
    EXPECT_EQ(m.moe_router_score_function == MoeRouterScore::kSigmoid,
              std::string(c.score) == "sigmoid");
    EXPECT_EQ(m.moe_router_num_groups, 8);
  }
  // V3's multi-token prediction module is named as left out, never dropped silently.
  EXPECT_TRUE(noted(imported("deepseek-v3-config.json"), "mtp_num_layers"));
}

// GPT-OSS (openai/gpt-oss-120b and -20b): every layer MoE, biases everywhere, 64-wide heads;
// the sliding-window layers become window_size (sliding_window - 1, 0) on every other layer
// (window_attn_skip_freq 2, as Megatron-Bridge's GPTOSSBridge sets it); learned attention sinks
// and the clamped quick-GEGLU (offset 1, clamp swiglu_limit) as GPTOSSBridge sets them.
TEST(ImportHfMoe, GptOss) {
  for (const char* file : {"gpt-oss-120b-config.json", "gpt-oss-20b-config.json"}) {
    const ImportedModel r = imported(file);
    EXPECT_EQ(r.architecture, "GptOssForCausalLM");
    const Workload w = load(with_training(r.model_json));
    const ModelConfig& m = w.model;
    EXPECT_EQ(m.hidden_size, 2880);
    EXPECT_EQ(m.num_attention_heads, 64);
    EXPECT_EQ(m.num_query_groups, 8);
    EXPECT_EQ(m.kv_channels, 64);
    EXPECT_EQ(m.moe_router_topk, 4);
    EXPECT_EQ(m.moe_ffn_hidden_size, 2880);
    EXPECT_TRUE(m.add_bias_linear);
    EXPECT_FALSE(m.swiglu);
    EXPECT_TRUE(m.quick_geglu);
    EXPECT_EQ(m.glu_linear_offset, 1.0);
    EXPECT_EQ(m.activation_func_clamp_value, 7.0);
    EXPECT_EQ(m.softmax_type, SoftmaxType::kLearnable);
    EXPECT_EQ(m.attention_backend, AttentionBackend::kAuto);
    EXPECT_TRUE(m.untie_embeddings_and_output_weights);
    EXPECT_EQ(m.moe_layer_freq, "1");
    EXPECT_EQ(m.num_experts, std::string(file).starts_with("gpt-oss-120b") ? 128 : 32);
    EXPECT_EQ(m.num_layers, std::string(file).starts_with("gpt-oss-120b") ? 36 : 24);
    EXPECT_EQ(m.window_size, (std::vector<std::int64_t>{127, 0})) << file;
    EXPECT_EQ(m.window_attn_skip_freq, "2") << file;
    EXPECT_EQ(m.attention_dropout, 0.0) << file;
    EXPECT_FALSE(noted(r, "sliding_attention")) << file;
    EXPECT_FALSE(noted(r, "softmax")) << file;
    EXPECT_FALSE(noted(r, "swiglu_limit")) << file;
    EXPECT_FALSE(noted(r, "not modelled")) << file;
    EXPECT_TRUE(noted(r, "MXFP4")) << file;
  }
  auto missing = model_from_hf_config(
      R"({"architectures": ["GptOssForCausalLM"], "hidden_size": 64, "num_hidden_layers": 2,
          "num_attention_heads": 4, "intermediate_size": 64, "vocab_size": 100,
          "max_position_embeddings": 128, "num_experts_per_tok": 2})",
      "c.json", 128);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.errors().front().key, "num_local_experts");
  // A layer type other than the two, or sliding layers without a window, is an error naming
  // the key.
  const std::string small =
      R"({"architectures": ["GptOssForCausalLM"], "hidden_size": 64, "num_hidden_layers": 2,
          "num_attention_heads": 4, "intermediate_size": 64, "vocab_size": 100,
          "max_position_embeddings": 128, "num_local_experts": 4, "num_experts_per_tok": 2,)";
  auto bad_type = model_from_hf_config(
      small + R"("layer_types": ["sliding_attention", 1], "sliding_window": 8})", "c.json", 128);
  ASSERT_FALSE(bad_type.ok());
  EXPECT_EQ(bad_type.errors().front().key, "layer_types");
  auto no_window = model_from_hf_config(
      small + R"("layer_types": ["sliding_attention", "full_attention"]})", "c.json", 128);
  ASSERT_FALSE(no_window.ok());
  EXPECT_EQ(no_window.errors().front().key, "sliding_window");
  auto full_only = model_from_hf_config(
      small + R"("layer_types": ["full_attention", "full_attention"]})", "c.json", 128);
  ASSERT_TRUE(full_only.ok()) << format_errors(full_only.errors());
  EXPECT_FALSE(noted(full_only.value(), "sliding_attention"));
  EXPECT_EQ(load(with_training(full_only.value().model_json)).model.window_size.size(), 0u);
  // All sliding: no skip frequency; a pattern no integer gives: Megatron's list pattern.
  const std::string three =
      R"({"architectures": ["GptOssForCausalLM"], "hidden_size": 64, "num_hidden_layers": 3,
          "num_attention_heads": 4, "intermediate_size": 64, "vocab_size": 100,
          "max_position_embeddings": 128, "num_local_experts": 4, "num_experts_per_tok": 2,
          "sliding_window": 16, "attention_dropout": 0.0, )";
  auto all = model_from_hf_config(
      three + R"("layer_types": ["sliding_attention", "sliding_attention", "sliding_attention"]})",
      "c.json", 128);
  ASSERT_TRUE(all.ok()) << format_errors(all.errors());
  const Workload all_w = load(with_training(all.value().model_json));
  EXPECT_EQ(all_w.model.window_size, (std::vector<std::int64_t>{15, 0}));
  EXPECT_EQ(all_w.model.window_attn_skip_freq, "");
  auto listed = model_from_hf_config(
      three + R"("layer_types": ["full_attention", "sliding_attention", "sliding_attention"]})",
      "c.json", 128);
  ASSERT_TRUE(listed.ok()) << format_errors(listed.errors());
  EXPECT_EQ(load(with_training(listed.value().model_json)).model.window_attn_skip_freq, "[0,1,1]");
}

/// The load errors of a scenario text, formatted; empty when it loads.
std::string load_errors(const std::string& json) {
  LoadOptions o;
  o.scenarios_dir = STEPSIM_SCENARIOS_DIR;
  auto w = load_scenario_text(json, "x.json", ".", o);
  return w.ok() ? std::string() : format_errors(w.errors());
}

// The Megatron-Core flags Megatron-Bridge's GPTOSSBridge.provider_bridge sets for GPT-OSS are
// read and written back: the window, the learned sinks, the clamped quick-GEGLU.
TEST(ImportHfMoe, GptOssMegatronFlagsAreRead) {
  const std::string line =
      "torchrun --nnodes 1 --nproc_per_node 8 pretrain_gpt.py --num-layers 4 "
      "--hidden-size 2880 --num-attention-heads 64 --group-query-attention "
      "--num-query-groups 8 --kv-channels 64 --seq-length 4096 --max-position-embeddings 4096 "
      "--micro-batch-size 1 --global-batch-size 8 --vocab-size 201088 "
      "--num-experts 8 --moe-router-topk 4 --moe-ffn-hidden-size 2880 --ffn-hidden-size 2880 "
      "--normalization RMSNorm --position-embedding-type rope "
      "--untie-embeddings-and-output-weights --bf16";
  MegatronImportOptions o;
  o.system = "systems/dgx-h100-80gb.json";
  ASSERT_TRUE(scenario_from_megatron_args(line + " --swiglu", o).ok());
  auto oss = scenario_from_megatron_args(
      line +
          " --attention-dropout 0 --window-size 127,0 --window-attn-skip-freq 2 "
          "--softmax-type learnable --quick-geglu --glu-linear-offset 1.0 "
          "--activation-func-clamp-value 7.0",
      o);
  ASSERT_TRUE(oss.ok()) << format_errors(oss.errors());
  const Workload w = load(oss.value().scenario_json);
  EXPECT_EQ(w.model.window_size, (std::vector<std::int64_t>{127, 0}));
  EXPECT_EQ(w.model.window_attn_skip_freq, "2");
  EXPECT_EQ(w.model.softmax_type, SoftmaxType::kLearnable);
  EXPECT_TRUE(w.model.quick_geglu);
  EXPECT_EQ(w.model.glu_linear_offset, 1.0);
  EXPECT_EQ(w.model.activation_func_clamp_value, 7.0);
  const std::string back = megatron_args_of(w);
  for (const char* flag :
       {"--window-size 127,0 --window-attn-skip-freq '2'", "--softmax-type learnable",
        "--quick-geglu", "--glu-linear-offset 1", "--activation-func-clamp-value 7"}) {
    EXPECT_NE(back.find(flag), std::string::npos) << flag << " in " << back;
  }
  // Megatron's own rules, each an error naming the key: --quick-geglu with --swiglu, sinks on
  // FlashAttention.
  auto both = scenario_from_megatron_args(line + " --swiglu --quick-geglu", o);
  ASSERT_TRUE(both.ok());
  EXPECT_NE(load_errors(both.value().scenario_json).find("model.quick_geglu"), std::string::npos);
  auto flash = scenario_from_megatron_args(
      line + " --swiglu --softmax-type learnable --attention-backend flash", o);
  ASSERT_TRUE(flash.ok());
  EXPECT_NE(load_errors(flash.value().scenario_json).find("model.softmax_type"), std::string::npos);
}

}  // namespace
}  // namespace stepsim
