// The mixture-of-experts families of Hugging Face configs whose experts and attention need
// more than field renames: DeepSeek-V2/V3 (MLA) and GPT-OSS (sliding windows, sinks).

#include "import_hf_moe.hpp"

#include <cstdint>
#include <string>

#include "stepsim/config/enum_names.hpp"

namespace stepsim {
namespace {

using json = nlohmann::ordered_json;

/// Megatron's window_attn_skip_freq for layer_types with some full-attention layers: an
/// integer N where layer number l (from 1) slides exactly when l % N != 0, else the list.
json window_skip_freq(const json& types) {
  const std::size_t n = types.size();
  std::string pattern = "[";
  for (std::size_t l = 0; l < n; ++l) {
    pattern += std::string(l > 0 ? "," : "") + (types[l] == "sliding_attention" ? "1" : "0");
  }
  pattern += "]";
  for (std::size_t freq = 2; freq <= n; ++freq) {
    bool matches = true;
    for (std::size_t l = 0; l < n && matches; ++l) {
      matches = (types[l] == "sliding_attention") == ((l + 1) % freq != 0);
    }
    if (matches) return freq;
  }
  return pattern;
}

/// GPT-OSS's sliding windows from layer_types: the window, the attention dropout windows
/// need, and which layers slide. false: an error, added to `errors`.
bool read_gpt_oss_windows(const json& doc, const std::string& file_label, json& model,
                          Errors& errors) {
  std::int64_t sliding = 0;
  const json& types = doc["layer_types"];
  bool valid = types.is_array();
  for (const auto& t : valid ? types : json::array()) {
    valid = valid && (t == "sliding_attention" || t == "full_attention");
    sliding += t == "sliding_attention" ? 1 : 0;
  }
  if (!valid) {
    errors.push_back(Error{file_label, "layer_types",
                           "=" + types.dump() +
                               " must list \"sliding_attention\" or \"full_attention\" per "
                               "layer"});
    return false;
  }
  const std::string window =
      doc.contains("sliding_window") ? doc["sliding_window"].dump() : "null";
  const bool window_ok = doc.contains("sliding_window") &&
                         doc["sliding_window"].is_number_integer() &&
                         doc["sliding_window"].get<std::int64_t>() > 0;
  if (sliding > 0 && !window_ok) {
    errors.push_back(
        Error{file_label, "sliding_window",
              "=" + window + " must be a positive integer with sliding_attention layers"});
    return false;
  }
  if (sliding > 0) {
    // Megatron-Bridge's GPTOSSBridge.provider_bridge (src/megatron/bridge/models/gpt_oss/
    // gpt_oss_bridge.py): window_size (sliding_window - 1, 0), and window_attn_skip_freq 2 for
    // the alternating layers. Here the skip frequency is read from layer_types: an integer N
    // where layer number l (from 1) slides exactly when l % N != 0 (Megatron's
    // is_layer_window_attention), Megatron's list pattern otherwise, none when all slide.
    model["window_size"] = json::array({doc["sliding_window"].get<std::int64_t>() - 1, 0});
    // Transformer Engine's fused attention runs windows only without dropout: the config's
    // attention_dropout (gpt-oss: 0.0), rather than Megatron's default 0.1.
    if (doc.contains("attention_dropout") && doc["attention_dropout"].is_number()) {
      model["attention_dropout"] = doc["attention_dropout"];
    }
    if (static_cast<std::size_t>(sliding) < types.size()) {
      model["window_attn_skip_freq"] = window_skip_freq(types);
    }
  }
  return true;
}

}  // namespace

/// DeepSeek-V2/V3's multi-latent attention and mixture of experts (transformers'
/// modeling_deepseek.py: layer i has MoE experts when n_routed_experts is set, i >=
/// first_k_dense_replace and i % moe_layer_freq == 0; the q and kv latents are RMSNorm'ed,
/// Megatron's --qk-layernorm; q_lora_rank null is one Q projection, DeepSeek-V2-Lite).
void import_deepseek(const json& doc, const std::string& file_label, json& model,
                     ImportedModel& out, Errors& errors) {
  const auto integer = [&](const char* key, bool required, std::int64_t fallback,
                           bool zero_ok = false) -> std::int64_t {
    if (!doc.contains(key) || doc[key].is_null()) {
      if (required) errors.push_back(Error{file_label, key, " is missing"});
      return fallback;
    }
    const std::int64_t v = doc[key].is_number_integer() ? doc[key].get<std::int64_t>() : -1;
    const bool ok = v > 0 || (zero_ok && v == 0);
    if (!ok) {
      errors.push_back(Error{file_label, key,
                             std::string("=") + doc[key].dump() + " must be a positive integer"});
      return fallback;
    }
    return doc[key].get<std::int64_t>();
  };
  const auto text = [&](const char* key) -> std::string {
    return doc.contains(key) && doc[key].is_string() ? doc[key].get<std::string>() : "";
  };
  // DeepSeek's configs give num_key_value_heads = num_attention_heads: MLA has no query groups.
  model.erase("num_query_groups");
  model["multi_latent_attention"] = true;
  if (const std::int64_t q_lora = integer("q_lora_rank", false, 0); q_lora > 0) {
    model["q_lora_rank"] = q_lora;
  }
  model["kv_lora_rank"] = integer("kv_lora_rank", true, 0);
  model["qk_head_dim"] = integer("qk_nope_head_dim", true, 0);
  model["qk_pos_emb_head_dim"] = integer("qk_rope_head_dim", true, 0);
  model["v_head_dim"] = integer("v_head_dim", true, 0);
  model["qk_layernorm"] = true;
  const std::int64_t experts = integer("n_routed_experts", false, 0);
  if (experts == 0) {
    out.notes.push_back("n_routed_experts is null: a dense model");
  } else {
    const std::int64_t moe_f = integer("moe_intermediate_size", true, 0);
    model["num_experts"] = experts;
    model["moe_router_topk"] = integer("num_experts_per_tok", true, 0);
    model["moe_ffn_hidden_size"] = moe_f;
    if (const std::int64_t shared = integer("n_shared_experts", false, 0, true); shared > 0) {
      model["moe_shared_expert_intermediate_size"] = shared * moe_f;
    }
    const std::int64_t layers = model["num_layers"].get<std::int64_t>();
    const std::int64_t first_dense = integer("first_k_dense_replace", false, 0, true);
    const std::int64_t freq = integer("moe_layer_freq", false, 1);
    std::string pattern;
    bool all_sparse = true;
    for (std::int64_t i = 0; i < layers; ++i) {
      const bool sparse = i >= first_dense && freq > 0 && i % freq == 0;
      all_sparse = all_sparse && sparse;
      pattern += pattern.empty() ? "[" : ",";
      pattern += sparse ? "1" : "0";
    }
    if (!all_sparse && layers > 0) model["moe_layer_freq"] = pattern + "]";
    if (text("scoring_func") == "sigmoid") {
      model["moe_router_score_function"] = std::string(to_string(MoeRouterScore::kSigmoid));
    }
    // noaux_tc: DeepSeek-V3's auxiliary-loss-free balancing (e_score_correction_bias).
    if (text("topk_method") == "noaux_tc") model["moe_router_enable_expert_bias"] = true;
    const std::string method = text("topk_method");
    if (method == "noaux_tc" || method == "group_limited_greedy") {
      model["moe_router_num_groups"] = integer("n_group", true, 0);
      model["moe_router_group_topk"] = integer("topk_group", true, 0);
    }
  }
  if (doc.contains("num_nextn_predict_layers") && doc["num_nextn_predict_layers"].is_number() &&
      doc["num_nextn_predict_layers"].get<double>() > 0) {
    out.notes.push_back("num_nextn_predict_layers=" + doc["num_nextn_predict_layers"].dump() +
                        " (multi-token prediction) is a training choice, not the checkpoint's: "
                        "left out of the model (model.mtp_num_layers adds it, as "
                        "Megatron-Bridge's recipes do)");
  }
  if (doc.contains("quantization_config")) {
    out.notes.push_back(
        "quantization_config (the checkpoint's FP8 weights) is not a training setting: "
        "the scenario's dtype decides");
  }
}

/// GPT-OSS (transformers' modeling_gpt_oss.py, OpenAI's model card arXiv:2508.10925): every
/// layer's MLP is num_local_experts experts with biases, top num_experts_per_tok, a clamped
/// quick-GEGLU activation; attention has learned sinks and alternates sliding windows. Set as
/// Megatron-Bridge's GPTOSSBridge.provider_bridge sets them (models/gpt_oss/gpt_oss_bridge.py).
void import_gpt_oss(const json& doc, const std::string& file_label, json& model, ImportedModel& out,
                    Errors& errors) {
  model["moe_ffn_hidden_size"] = model["ffn_hidden_size"];
  // GptOssAttention: q/k/v/o all with bias=config.attention_bias; GptOssExperts: the
  // gate_up_proj and down_proj biases and GptOssTopKRouter's, always (Megatron-Bridge's
  // GPTOSSBridge sets add_bias_linear, and add_qkv_bias from attention_bias).
  model["add_bias_linear"] = true;
  if (doc.contains("attention_bias") && doc["attention_bias"] == false) {
    out.notes.push_back(
        "attention_bias=false: the experts' and router's biases need add_bias_linear, which "
        "also gives the attention projections theirs");
  }
  if (doc.contains("layer_types") && !doc["layer_types"].is_null() &&
      !read_gpt_oss_windows(doc, file_label, model, errors)) {
    return;
  }
  // GptOssAttention.sinks: one learned logit per head in the softmax's denominator, as
  // Megatron-Bridge's GPTOSSBridge.provider_bridge sets it (softmax_type "learnable").
  model["softmax_type"] = std::string(to_string(SoftmaxType::kLearnable));
  // GptOssExperts._apply_gate: gate.clamp(max=limit), up.clamp(-limit, limit), then
  // gate * sigmoid(1.702 gate) * (up + 1): Megatron's quick-GEGLU with glu_linear_offset 1 and
  // activation_func_clamp_value = swiglu_limit (GPTOSSBridge: quick_gelu, 1.0, 7.0).
  model["swiglu"] = false;
  model["quick_geglu"] = true;
  model["glu_linear_offset"] = 1.0;
  if (doc.contains("swiglu_limit") && !doc["swiglu_limit"].is_null()) {
    if (!doc["swiglu_limit"].is_number() || !(doc["swiglu_limit"].get<double>() > 0)) {
      errors.push_back(Error{file_label, "swiglu_limit",
                             "=" + doc["swiglu_limit"].dump() + " must be a number > 0"});
    } else {
      model["activation_func_clamp_value"] = doc["swiglu_limit"];
    }
  }
  if (doc.contains("quantization_config")) {
    out.notes.push_back(
        "quantization_config (the checkpoint's MXFP4 expert weights) is not a training setting: "
        "the scenario's dtype decides");
  }
}

}  // namespace stepsim
