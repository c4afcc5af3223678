// A scenario's model section from a Hugging Face config.json. Each supported architecture
// names its fields differently; all map onto Megatron's argument names. Fields that change
// the cost but that stepsim does not model are reported as notes, never silently dropped.

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "stepsim/base/json_input.hpp"
#include "stepsim/config/enum_names.hpp"
#include "stepsim/import/import.hpp"

namespace stepsim {
namespace {

using json = nlohmann::ordered_json;

/// Field names of one architecture family.
struct HfNames {
  const char* hidden;
  const char* layers;
  const char* heads;
  const char* ffn;  // nullptr: 4h (GPT-2's n_inner = null)
  const char* positions;
  bool swiglu;  // gated SiLU MLP (LLaMA family)
  bool rms_norm;
  bool rope;
  bool tied_default;  // tie_word_embeddings when absent
  bool bias_default;  // linear layers have biases
};

constexpr HfNames kLlama{"hidden_size",
                         "num_hidden_layers",
                         "num_attention_heads",
                         "intermediate_size",
                         "max_position_embeddings",
                         true,
                         true,
                         true,
                         false,
                         false};
/// Mixture-of-experts families: Mixtral (transformers' MixtralConfig: num_local_experts,
/// num_experts_per_tok, every layer sparse, experts of intermediate_size) and Qwen2/Qwen3-MoE
/// (Qwen2MoeConfig, Qwen3MoeConfig: num_experts, num_experts_per_tok, moe_intermediate_size,
/// decoder_sparse_step, mlp_only_layers; Qwen2-MoE's shared_expert_intermediate_size).
/// DeepSeek-V2/V3 (the checkpoints' DeepseekV2Config/DeepseekV3Config): multi-latent attention
/// (q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim), n_routed_experts
/// of moe_intermediate_size, n_shared_experts of it, dense first_k_dense_replace layers.
/// GPT-OSS (transformers' GptOssConfig): num_local_experts of intermediate_size in every layer,
/// biases on the attention and expert projections and the router, head_dim apart from
/// hidden / heads.
enum class MoeFamily : std::uint8_t { kNone, kMixtral, kQwen, kDeepseek, kGptOss };

constexpr HfNames kGpt2{"n_embd", "n_layer", "n_head", "n_inner", "n_positions",
                        false,    false,     false,    true,      true};
constexpr HfNames kNeoX{"hidden_size",
                        "num_hidden_layers",
                        "num_attention_heads",
                        "intermediate_size",
                        "max_position_embeddings",
                        false,
                        false,
                        true,
                        false,
                        true};

/// Nemotron-4 (transformers' NemotronConfig): squared ReLU (hidden_act "relu2"), RoPE on
/// partial_rotary_factor of each head, LayerNorm1P, untied, no biases; those are its defaults.
constexpr HfNames kNemotron{"hidden_size",
                            "num_hidden_layers",
                            "num_attention_heads",
                            "intermediate_size",
                            "max_position_embeddings",
                            false,
                            false,
                            true,
                            false,
                            false};

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
                        " (multi-token prediction, Megatron's mtp_num_layers) is not modelled: "
                        "left out of the model");
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
  if (doc.contains("layer_types") && !doc["layer_types"].is_null()) {
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
      return;
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
      return;
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
      const std::size_t n = types.size();
      if (static_cast<std::size_t>(sliding) < n) {
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
          if (matches) {
            model["window_attn_skip_freq"] = freq;
            break;
          }
        }
        if (!model.contains("window_attn_skip_freq")) model["window_attn_skip_freq"] = pattern;
      }
    }
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

}  // namespace

Result<ImportedModel> model_from_hf_config(std::string_view config_json,
                                           const std::string& file_label, std::int64_t seq_length) {
  auto parsed = parse_json_text(config_json, file_label);
  if (!parsed) return parsed.errors();
  const json doc = std::move(parsed).value();
  if (!doc.is_object()) {
    return Error{file_label, "", "is not a JSON object (a Hugging Face config.json)"};
  }
  ImportedModel out;
  if (doc.contains("architectures") && doc["architectures"].is_array() &&
      !doc["architectures"].empty() && doc["architectures"][0].is_string()) {
    out.architecture = doc["architectures"][0].get<std::string>();
  }
  const std::string model_type = doc.contains("model_type") && doc["model_type"].is_string()
                                     ? doc["model_type"].get<std::string>()
                                     : "";
  const HfNames* names = nullptr;
  MoeFamily moe = MoeFamily::kNone;
  if (out.architecture == "LlamaForCausalLM" || out.architecture == "MistralForCausalLM" ||
      (out.architecture.empty() && (model_type == "llama" || model_type == "mistral"))) {
    names = &kLlama;
  } else if (out.architecture == "MixtralForCausalLM" || out.architecture == "Qwen2MoeForCausalLM" ||
             out.architecture == "Qwen3MoeForCausalLM" ||
             (out.architecture.empty() &&
              (model_type == "mixtral" || model_type == "qwen2_moe" || model_type == "qwen3_moe"))) {
    names = &kLlama;
    moe = out.architecture == "MixtralForCausalLM" || model_type == "mixtral" ? MoeFamily::kMixtral
                                                                            : MoeFamily::kQwen;
  } else if (out.architecture == "DeepseekV2ForCausalLM" ||
             out.architecture == "DeepseekV3ForCausalLM" ||
             (out.architecture.empty() &&
              (model_type == "deepseek_v2" || model_type == "deepseek_v3"))) {
    names = &kLlama;
    moe = MoeFamily::kDeepseek;
  } else if (out.architecture == "GptOssForCausalLM" ||
             (out.architecture.empty() && model_type == "gpt_oss")) {
    names = &kLlama;
    moe = MoeFamily::kGptOss;
  } else if (out.architecture == "GPT2LMHeadModel" ||
             (out.architecture.empty() && model_type == "gpt2")) {
    names = &kGpt2;
  } else if (out.architecture == "GPTNeoXForCausalLM" ||
             (out.architecture.empty() && model_type == "gpt_neox")) {
    names = &kNeoX;
  } else if (out.architecture == "NemotronForCausalLM" ||
             (out.architecture.empty() && model_type == "nemotron")) {
    names = &kNemotron;
  } else {
    return Error{file_label, "architectures",
                 std::string("=") + (out.architecture.empty() ? model_type : out.architecture) +
                     " is not supported (LlamaForCausalLM, MistralForCausalLM, "
                     "MixtralForCausalLM, Qwen2MoeForCausalLM, Qwen3MoeForCausalLM, "
                     "DeepseekV2ForCausalLM, DeepseekV3ForCausalLM, GptOssForCausalLM, "
                     "GPT2LMHeadModel, GPTNeoXForCausalLM, NemotronForCausalLM)"};
  }
  if (out.architecture.empty()) out.architecture = model_type;

  Errors errors;
  const auto integer = [&](const char* key, bool required, std::int64_t fallback) -> std::int64_t {
    if (key == nullptr || !doc.contains(key) || doc[key].is_null()) {
      if (required) errors.push_back(Error{file_label, key == nullptr ? "" : key, " is missing"});
      return fallback;
    }
    if (!doc[key].is_number_integer() || doc[key].get<std::int64_t>() <= 0) {
      errors.push_back(Error{file_label, key,
                             std::string("=") + doc[key].dump() + " must be a positive integer"});
      return fallback;
    }
    return doc[key].get<std::int64_t>();
  };
  // A wrongly typed value is an error, never replaced by the default: `"tie_word_embeddings":
  // "false"` would otherwise import the opposite model.
  const auto boolean = [&](const char* key, bool fallback) {
    if (!doc.contains(key) || doc[key].is_null()) return fallback;
    if (!doc[key].is_boolean()) {
      errors.push_back(Error{file_label, key,
                             std::string("=") + doc[key].dump() + " must be true or false"});
      return fallback;
    }
    return doc[key].get<bool>();
  };
  const auto text = [&](const char* key) -> std::string {
    if (!doc.contains(key) || doc[key].is_null()) return "";
    if (!doc[key].is_string()) {
      errors.push_back(Error{file_label, key, std::string("=") + doc[key].dump() +
                                                  " must be a string"});
      return "";
    }
    return doc[key].get<std::string>();
  };

  json model = json::object();
  const std::int64_t h = integer(names->hidden, true, 0);
  const std::int64_t heads = integer(names->heads, true, 0);
  model["num_layers"] = integer(names->layers, true, 0);
  model["hidden_size"] = h;
  model["num_attention_heads"] = heads;
  model["num_query_groups"] = integer("num_key_value_heads", false, heads);
  if (doc.contains("head_dim") && !doc["head_dim"].is_null()) {
    model["kv_channels"] = integer("head_dim", false, heads > 0 ? h / heads : 0);
  }
  model["ffn_hidden_size"] =
      integer(names->ffn, names == &kLlama || names == &kNeoX || names == &kNemotron, 4 * h);
  const std::int64_t positions = integer(names->positions, true, 0);
  // HF configs carry no training sequence length: the full context unless one is given.
  model["seq_length"] = seq_length > 0 ? seq_length : positions;
  model["max_position_embeddings"] = positions;
  if (seq_length <= 0) {
    out.notes.push_back("seq_length=" + std::to_string(positions) +
                        " (the model's full context; --seq-length sets the training length)");
  }
  model["vocab_size"] = integer("vocab_size", true, 0);
  model["swiglu"] = names->swiglu;
  model["untie_embeddings_and_output_weights"] =
      !boolean("tie_word_embeddings", names->tied_default);
  model["add_bias_linear"] = names == &kLlama || names == &kNemotron
                                 ? boolean("attention_bias", false) || boolean("mlp_bias", false)
                                 : names->bias_default;
  model["position_embedding_type"] = std::string(
      to_string(names->rope ? PositionEmbedding::kRope : PositionEmbedding::kLearnedAbsolute));
  model["normalization"] = std::string(to_string(names->rms_norm || doc.contains("rms_norm_eps")
                                                     ? Normalization::kRmsNorm
                                                     : Normalization::kLayerNorm));
  // Megatron-Core's default attention backend (TransformerConfig.attention_backend).
  model["attention_backend"] = std::string(to_string(AttentionBackend::kAuto));
  out.notes.push_back(
      "attention_backend=auto: Megatron-Core's default (Transformer Engine runs flash or cuDNN "
      "fused attention; priced as one fused attention kernel)");

  // GPT-OSS's experts always have biases (GptOssExperts), whatever attention_bias says.
  if ((names == &kLlama || names == &kNemotron) && moe != MoeFamily::kGptOss &&
      boolean("attention_bias", false) != boolean("mlp_bias", false)) {
    out.notes.push_back("attention_bias and mlp_bias differ; add_bias_linear covers both");
  }
  const std::string hidden_act = text("hidden_act");
  const std::string act = !hidden_act.empty() ? hidden_act : text("activation_function");
  if (names == &kLlama && !act.empty() && act != "silu") {
    out.notes.push_back("hidden_act=" + act + " is costed as SwiGLU's SiLU");
  }
  if (names == &kNemotron) {
    // NemotronConfig's defaults: hidden_act "relu2" (Megatron's --squared-relu) and
    // partial_rotary_factor 0.5 (--rotary-percent); its LayerNorm1P is a LayerNorm's cost.
    if (act.empty() || act == "relu2") {
      model["squared_relu"] = true;
    } else {
      out.notes.push_back("hidden_act=" + act + " is costed as a GeLU MLP");
    }
    if (doc.contains("partial_rotary_factor") && !doc["partial_rotary_factor"].is_null() &&
        !doc["partial_rotary_factor"].is_number()) {
      errors.push_back(Error{file_label, "partial_rotary_factor",
                             "=" + doc["partial_rotary_factor"].dump() + " must be a number"});
    } else {
      const double factor = doc.contains("partial_rotary_factor") &&
                                    doc["partial_rotary_factor"].is_number()
                                ? doc["partial_rotary_factor"].get<double>()
                                : 0.5;
      if (factor != 1.0) model["rotary_percent"] = factor;
    }
  }
  // Qwen's configs carry a sliding_window that use_sliding_window=false switches off;
  // GPT-OSS's layer_types say which layers use it (import_gpt_oss).
  if (doc.contains("sliding_window") && !doc["sliding_window"].is_null() &&
      boolean("use_sliding_window", true) && moe != MoeFamily::kGptOss) {
    out.notes.push_back(
        "sliding_window is not modelled: attention is costed over the full "
        "sequence");
  }
  if (doc.contains("rotary_pct") && !doc["rotary_pct"].is_null() &&
      !doc["rotary_pct"].is_number()) {
    errors.push_back(Error{file_label, "rotary_pct",
                           "=" + doc["rotary_pct"].dump() + " must be a number"});
  } else if (doc.contains("rotary_pct") && doc["rotary_pct"].is_number() &&
             doc["rotary_pct"].get<double>() != 1.0) {
    // GPT-NeoX's partial rotary: Megatron's --rotary-percent (validate checks the range).
    model["rotary_percent"] = doc["rotary_pct"].get<double>();
  }
  if (boolean("use_parallel_residual", false)) {
    out.notes.push_back("use_parallel_residual is not modelled: layers are costed sequentially");
  }
  if (doc.contains("rope_scaling") && !doc["rope_scaling"].is_null()) {
    out.notes.push_back("rope_scaling does not change the cost and is ignored");
  }
  if (moe == MoeFamily::kMixtral) {
    model["num_experts"] = integer("num_local_experts", true, 0);
    model["moe_router_topk"] = integer("num_experts_per_tok", true, 0);
    model["moe_ffn_hidden_size"] = model["ffn_hidden_size"];
  } else if (moe == MoeFamily::kQwen) {
    model["num_experts"] = integer("num_experts", true, 0);
    model["moe_router_topk"] = integer("num_experts_per_tok", true, 0);
    model["moe_ffn_hidden_size"] = integer("moe_intermediate_size", true, 0);
    const std::int64_t shared = doc.contains("shared_expert_intermediate_size")
                                    ? integer("shared_expert_intermediate_size", false, 0)
                                    : 0;
    if (shared > 0) {
      model["moe_shared_expert_intermediate_size"] = shared;
      out.notes.push_back(
          "the shared expert's sigmoid gate (Megatron's moe_shared_expert_gate) is not modelled");
    }
    // Layer i is sparse unless listed in mlp_only_layers, when (i + 1) % decoder_sparse_step
    // == 0 (transformers' Qwen2MoeDecoderLayer / Qwen3MoeDecoderLayer).
    const std::int64_t layers = model["num_layers"].get<std::int64_t>();
    const std::int64_t step = integer("decoder_sparse_step", false, 1);
    std::vector<bool> dense(static_cast<std::size_t>(std::max<std::int64_t>(0, layers)), false);
    if (doc.contains("mlp_only_layers") && doc["mlp_only_layers"].is_array()) {
      for (const auto& v : doc["mlp_only_layers"]) {
        if (v.is_number_integer() && v.get<std::int64_t>() >= 0 &&
            v.get<std::int64_t>() < layers) {
          dense[static_cast<std::size_t>(v.get<std::int64_t>())] = true;
        } else {
          errors.push_back(Error{file_label, "mlp_only_layers",
                                 "=" + doc["mlp_only_layers"].dump() +
                                     " must list layer indices below num_hidden_layers"});
          break;
        }
      }
    }
    std::string pattern;
    bool all_sparse = true;
    for (std::int64_t i = 0; i < layers; ++i) {
      const bool sparse = !dense[static_cast<std::size_t>(i)] && step > 0 && (i + 1) % step == 0;
      all_sparse = all_sparse && sparse;
      pattern += pattern.empty() ? "[" : ",";
      pattern += sparse ? "1" : "0";
    }
    if (!all_sparse && layers > 0) model["moe_layer_freq"] = pattern + "]";
    if (model_type == "qwen3_moe" || out.architecture == "Qwen3MoeForCausalLM") {
      out.notes.push_back(
          "Qwen3's QK layernorm (q_norm, k_norm: Megatron's --qk-layernorm) is not modelled");
    }
  }
  if (moe == MoeFamily::kDeepseek) import_deepseek(doc, file_label, model, out, errors);
  if (moe == MoeFamily::kGptOss) {
    model["num_experts"] = integer("num_local_experts", true, 0);
    model["moe_router_topk"] = integer("num_experts_per_tok", true, 0);
    import_gpt_oss(doc, file_label, model, out, errors);
  }
  if (moe != MoeFamily::kNone) {
    out.notes.push_back(
        "routing is modelled as balanced; the router's aux loss (router_aux_loss_coef) is not "
        "priced");
  }
  if (!errors.empty()) return errors;
  json wrapped = json::object();
  wrapped["model"] = std::move(model);
  out.model_json = wrapped.dump(2) + "\n";
  return out;
}

}  // namespace stepsim
