// A scenario's model section from a Hugging Face config.json. Each supported architecture
// names its fields differently; all map onto Megatron's argument names. Fields that change
// the cost but that stepsim does not model are reported as notes, never silently dropped.

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "import_hf_moe.hpp"
#include "stepsim/config/enum_names.hpp"
#include "stepsim/import/import.hpp"
#include "stepsim/base/json_input.hpp"
#include "stepsim/check/load.hpp"

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

/// One config's fields read as Megatron wants them; every error is collected rather than
/// stopping at the first.
struct HfFields {
  const json& doc;
  const std::string& file_label;
  Errors errors;

  /// A positive integer; `fallback` when absent (an error too when `required`) or wrong.
  std::int64_t integer(const char* key, bool required, std::int64_t fallback) {
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
  }

  // A wrongly typed value is an error, never replaced by the default: `"tie_word_embeddings":
  // "false"` would otherwise import the opposite model.
  bool boolean(const char* key, bool fallback) {
    if (!doc.contains(key) || doc[key].is_null()) return fallback;
    if (!doc[key].is_boolean()) {
      errors.push_back(Error{file_label, key,
                             std::string("=") + doc[key].dump() + " must be true or false"});
      return fallback;
    }
    return doc[key].get<bool>();
  }

  std::string text(const char* key) {
    if (!doc.contains(key) || doc[key].is_null()) return "";
    if (!doc[key].is_string()) {
      errors.push_back(Error{file_label, key, std::string("=") + doc[key].dump() +
                                                  " must be a string"});
      return "";
    }
    return doc[key].get<std::string>();
  }
};

/// The architecture family of a config: its field names and its experts' kind.
struct HfFamily {
  const HfNames* names = nullptr;
  MoeFamily moe = MoeFamily::kNone;
};

/// The family from `architectures[0]`, else from `model_type`; an error for any other.
Result<HfFamily> family_of(const std::string& architecture, const std::string& model_type,
                           const std::string& file_label) {
  if (architecture == "LlamaForCausalLM" || architecture == "MistralForCausalLM" ||
      (architecture.empty() && (model_type == "llama" || model_type == "mistral"))) {
    return HfFamily{&kLlama, MoeFamily::kNone};
  }
  if (architecture == "MixtralForCausalLM" || architecture == "Qwen2MoeForCausalLM" ||
      architecture == "Qwen3MoeForCausalLM" ||
      (architecture.empty() &&
       (model_type == "mixtral" || model_type == "qwen2_moe" || model_type == "qwen3_moe"))) {
    return HfFamily{&kLlama, architecture == "MixtralForCausalLM" || model_type == "mixtral"
                                 ? MoeFamily::kMixtral
                                 : MoeFamily::kQwen};
  }
  if (architecture == "DeepseekV2ForCausalLM" || architecture == "DeepseekV3ForCausalLM" ||
      (architecture.empty() && (model_type == "deepseek_v2" || model_type == "deepseek_v3"))) {
    return HfFamily{&kLlama, MoeFamily::kDeepseek};
  }
  if (architecture == "GptOssForCausalLM" || (architecture.empty() && model_type == "gpt_oss")) {
    return HfFamily{&kLlama, MoeFamily::kGptOss};
  }
  if (architecture == "GPT2LMHeadModel" || (architecture.empty() && model_type == "gpt2")) {
    return HfFamily{&kGpt2, MoeFamily::kNone};
  }
  if (architecture == "GPTNeoXForCausalLM" || (architecture.empty() && model_type == "gpt_neox")) {
    return HfFamily{&kNeoX, MoeFamily::kNone};
  }
  if (architecture == "NemotronForCausalLM" || (architecture.empty() && model_type == "nemotron")) {
    return HfFamily{&kNemotron, MoeFamily::kNone};
  }
  return Error{file_label, "architectures",
               std::string("=") + (architecture.empty() ? model_type : architecture) +
                   " is not supported (LlamaForCausalLM, MistralForCausalLM, "
                   "MixtralForCausalLM, Qwen2MoeForCausalLM, Qwen3MoeForCausalLM, "
                   "DeepseekV2ForCausalLM, DeepseekV3ForCausalLM, GptOssForCausalLM, "
                   "GPT2LMHeadModel, GPTNeoXForCausalLM, NemotronForCausalLM)"};
}

/// The dense transformer every family shares: sizes, sequence, vocabulary, embeddings,
/// biases, positions, norm and attention backend.
void read_transformer(HfFields& f, const HfNames* names, std::int64_t seq_length, json& model,
                      ImportedModel& out) {
  const std::int64_t h = f.integer(names->hidden, true, 0);
  const std::int64_t heads = f.integer(names->heads, true, 0);
  model["num_layers"] = f.integer(names->layers, true, 0);
  model["hidden_size"] = h;
  model["num_attention_heads"] = heads;
  model["num_query_groups"] = f.integer("num_key_value_heads", false, heads);
  if (f.doc.contains("head_dim") && !f.doc["head_dim"].is_null()) {
    model["kv_channels"] = f.integer("head_dim", false, heads > 0 ? h / heads : 0);
  }
  model["ffn_hidden_size"] =
      f.integer(names->ffn, names == &kLlama || names == &kNeoX || names == &kNemotron, 4 * h);
  const std::int64_t positions = f.integer(names->positions, true, 0);
  // HF configs carry no training sequence length: the full context unless one is given.
  model["seq_length"] = seq_length > 0 ? seq_length : positions;
  model["max_position_embeddings"] = positions;
  if (seq_length <= 0) {
    out.notes.push_back("seq_length=" + std::to_string(positions) +
                        " (the model's full context; --seq-length sets the training length)");
  }
  model["vocab_size"] = f.integer("vocab_size", true, 0);
  model["swiglu"] = names->swiglu;
  model["untie_embeddings_and_output_weights"] =
      !f.boolean("tie_word_embeddings", names->tied_default);
  model["add_bias_linear"] = names == &kLlama || names == &kNemotron
                                 ? f.boolean("attention_bias", false) || f.boolean("mlp_bias", false)
                                 : names->bias_default;
  model["position_embedding_type"] = std::string(
      to_string(names->rope ? PositionEmbedding::kRope : PositionEmbedding::kLearnedAbsolute));
  model["normalization"] = std::string(to_string(names->rms_norm || f.doc.contains("rms_norm_eps")
                                                     ? Normalization::kRmsNorm
                                                     : Normalization::kLayerNorm));
  // Megatron-Core's default attention backend (TransformerConfig.attention_backend).
  model["attention_backend"] = std::string(to_string(AttentionBackend::kAuto));
  out.notes.push_back(
      "attention_backend=auto: Megatron-Core's default (Transformer Engine runs flash or cuDNN "
      "fused attention; priced as one fused attention kernel)");
}

/// The MLP's activation, and Nemotron's squared ReLU and partial rotary.
void read_activation(HfFields& f, const HfFamily& family, json& model, ImportedModel& out) {
  const HfNames* names = family.names;
  // GPT-OSS's experts always have biases (GptOssExperts), whatever attention_bias says.
  if ((names == &kLlama || names == &kNemotron) && family.moe != MoeFamily::kGptOss &&
      f.boolean("attention_bias", false) != f.boolean("mlp_bias", false)) {
    out.notes.push_back("attention_bias and mlp_bias differ; add_bias_linear covers both");
  }
  const std::string hidden_act = f.text("hidden_act");
  const std::string act = !hidden_act.empty() ? hidden_act : f.text("activation_function");
  if (names == &kLlama && !act.empty() && act != "silu") {
    out.notes.push_back("hidden_act=" + act + " is costed as SwiGLU's SiLU");
  }
  if (names != &kNemotron) return;
  // NemotronConfig's defaults: hidden_act "relu2" (Megatron's --squared-relu) and
  // partial_rotary_factor 0.5 (--rotary-percent); its LayerNorm1P is a LayerNorm's cost.
  if (act.empty() || act == "relu2") {
    model["squared_relu"] = true;
  } else {
    out.notes.push_back("hidden_act=" + act + " is costed as a GeLU MLP");
  }
  const json& doc = f.doc;
  if (doc.contains("partial_rotary_factor") && !doc["partial_rotary_factor"].is_null() &&
      !doc["partial_rotary_factor"].is_number()) {
    f.errors.push_back(Error{f.file_label, "partial_rotary_factor",
                             "=" + doc["partial_rotary_factor"].dump() + " must be a number"});
  } else {
    const double factor = doc.contains("partial_rotary_factor") &&
                                  doc["partial_rotary_factor"].is_number()
                              ? doc["partial_rotary_factor"].get<double>()
                              : 0.5;
    if (factor != 1.0) model["rotary_percent"] = factor;
  }
}

/// Sliding windows, partial rotary, parallel residuals and rope scaling: GPT-NeoX's partial
/// rotary is modelled, the rest are notes.
void read_attention_variants(HfFields& f, const HfFamily& family, json& model,
                             ImportedModel& out) {
  const json& doc = f.doc;
  // Qwen's configs carry a sliding_window that use_sliding_window=false switches off;
  // GPT-OSS's layer_types say which layers use it (import_gpt_oss).
  if (doc.contains("sliding_window") && !doc["sliding_window"].is_null() &&
      f.boolean("use_sliding_window", true) && family.moe != MoeFamily::kGptOss) {
    out.notes.push_back(
        "sliding_window is not modelled: attention is costed over the full "
        "sequence");
  }
  if (doc.contains("rotary_pct") && !doc["rotary_pct"].is_null() &&
      !doc["rotary_pct"].is_number()) {
    f.errors.push_back(Error{f.file_label, "rotary_pct",
                             "=" + doc["rotary_pct"].dump() + " must be a number"});
  } else if (doc.contains("rotary_pct") && doc["rotary_pct"].is_number() &&
             doc["rotary_pct"].get<double>() != 1.0) {
    // GPT-NeoX's partial rotary: Megatron's --rotary-percent (validate checks the range).
    model["rotary_percent"] = doc["rotary_pct"].get<double>();
  }
  if (f.boolean("use_parallel_residual", false)) {
    out.notes.push_back("use_parallel_residual is not modelled: layers are costed sequentially");
  }
  if (doc.contains("rope_scaling") && !doc["rope_scaling"].is_null()) {
    out.notes.push_back("rope_scaling does not change the cost and is ignored");
  }
}

/// Qwen2-MoE / Qwen3-MoE: experts, the shared expert, and which layers are sparse (layer i
/// is sparse unless listed in mlp_only_layers, when (i + 1) % decoder_sparse_step == 0:
/// transformers' Qwen2MoeDecoderLayer / Qwen3MoeDecoderLayer).
void read_qwen_experts(HfFields& f, const std::string& model_type, json& model,
                       ImportedModel& out) {
  const json& doc = f.doc;
  model["num_experts"] = f.integer("num_experts", true, 0);
  model["moe_router_topk"] = f.integer("num_experts_per_tok", true, 0);
  model["moe_ffn_hidden_size"] = f.integer("moe_intermediate_size", true, 0);
  const std::int64_t shared = doc.contains("shared_expert_intermediate_size")
                                  ? f.integer("shared_expert_intermediate_size", false, 0)
                                  : 0;
  if (shared > 0) {
    model["moe_shared_expert_intermediate_size"] = shared;
    out.notes.push_back(
        "the shared expert's sigmoid gate (Megatron's moe_shared_expert_gate) is not modelled");
  }
  const std::int64_t layers = model["num_layers"].get<std::int64_t>();
  const std::int64_t step = f.integer("decoder_sparse_step", false, 1);
  std::vector<bool> dense(static_cast<std::size_t>(std::max<std::int64_t>(0, layers)), false);
  if (doc.contains("mlp_only_layers") && doc["mlp_only_layers"].is_array()) {
    for (const auto& v : doc["mlp_only_layers"]) {
      if (v.is_number_integer() && v.get<std::int64_t>() >= 0 &&
          v.get<std::int64_t>() < layers) {
        dense[static_cast<std::size_t>(v.get<std::int64_t>())] = true;
      } else {
        f.errors.push_back(Error{f.file_label, "mlp_only_layers",
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

/// The experts of each mixture-of-experts family.
void read_experts(HfFields& f, MoeFamily moe, const std::string& model_type, json& model,
                  ImportedModel& out) {
  if (moe == MoeFamily::kMixtral) {
    model["num_experts"] = f.integer("num_local_experts", true, 0);
    model["moe_router_topk"] = f.integer("num_experts_per_tok", true, 0);
    model["moe_ffn_hidden_size"] = model["ffn_hidden_size"];
  } else if (moe == MoeFamily::kQwen) {
    read_qwen_experts(f, model_type, model, out);
  }
  if (moe == MoeFamily::kDeepseek) import_deepseek(f.doc, f.file_label, model, out, f.errors);
  if (moe == MoeFamily::kGptOss) {
    model["num_experts"] = f.integer("num_local_experts", true, 0);
    model["moe_router_topk"] = f.integer("num_experts_per_tok", true, 0);
    import_gpt_oss(f.doc, f.file_label, model, out, f.errors);
  }
  if (moe != MoeFamily::kNone) {
    out.notes.push_back(
        "routing is modelled as balanced; the router's aux loss (router_aux_loss_coef) is not "
        "priced");
  }
}

/// The rules `stepsim check` applies to a model section (model.* keys): the imported section in
/// a one-GPU bf16 job on a stand-in Hopper system, whose training and system rules cannot
/// fire, through the scenario loader itself. A section check refuses is no import.
Errors check_imported_model(const json& model, const std::string& file_label) {
  json system = {{"name", "import-hf-check"},
                 {"gpu_name", "stand-in Hopper GPU"},
                 {"peak_flops_fp32", 4.947e14},
                 {"peak_flops_fp16", 9.894e14},
                 {"peak_flops_bf16", 9.894e14},
                 {"peak_flops_fp8", 1.9789e15},
                 {"memory_bytes", std::int64_t{85899345920}},
                 {"hbm_bandwidth_Bps", 3.35e12},
                 {"gpus_per_node", 8},
                 {"nics_per_node", 8},
                 {"sm_count", 132},
                 {"compute_capability", 90},
                 {"intra_node", {{"bandwidth_Bps", 4.5e11}, {"latency_s", 1.9e-6}}},
                 {"inter_node", {{"bandwidth_Bps", 5e10}, {"latency_s", 4e-6}}},
                 {"efficiency",
                  {{"gemm_max", 0.8},
                   {"gemm_half_flops", 0},
                   {"memory_max", 0.89},
                   {"kernel_launch_s", 1e-6},
                   {"link_max", 0.82}}}};
  json sources = json::object();
  for (const char* key :
       {"peak_flops_fp32", "peak_flops_fp16", "peak_flops_bf16", "peak_flops_fp8", "memory_bytes",
        "hbm_bandwidth_Bps", "gpus_per_node", "nics_per_node", "sm_count", "compute_capability",
        "intra_node.bandwidth_Bps", "intra_node.latency_s", "inter_node.bandwidth_Bps",
        "inter_node.latency_s", "efficiency.gemm_max", "efficiency.gemm_half_flops",
        "efficiency.memory_max", "efficiency.kernel_launch_s", "efficiency.link_max"}) {
    sources[key] = "import-hf's stand-in system, for the model rules only";
  }
  system["sources"] = std::move(sources);
  const json scenario = {
      {"name", "import-hf"},
      {"model", model},
      {"training",
       {{"world_size", 1}, {"micro_batch_size", 1}, {"global_batch_size", 1}, {"bf16", true}}},
      {"system", std::move(system)}};
  auto loaded = load_scenario_text(scenario.dump(), file_label, ".", LoadOptions{});
  if (loaded.ok()) return {};
  Errors out;
  for (const Error& e : loaded.errors()) {
    if (e.key.starts_with("model.")) {
      out.push_back(Error{file_label, e.key,
                          e.message + "; stepsim check refuses the imported model section"});
    }
  }
  return out;
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
  Result<HfFamily> family = family_of(out.architecture, model_type, file_label);
  if (!family.ok()) return family.errors();
  if (out.architecture.empty()) out.architecture = model_type;

  HfFields fields{.doc = doc, .file_label = file_label, .errors = {}};
  json model = json::object();
  read_transformer(fields, family->names, seq_length, model, out);
  read_activation(fields, *family, model, out);
  read_attention_variants(fields, *family, model, out);
  read_experts(fields, family->moe, model_type, model, out);
  if (!fields.errors.empty()) return fields.errors;
  if (Errors refused = check_imported_model(model, file_label); !refused.empty()) return refused;
  json wrapped = json::object();
  wrapped["model"] = std::move(model);
  out.model_json = wrapped.dump(2) + "\n";
  return out;
}

}  // namespace stepsim
