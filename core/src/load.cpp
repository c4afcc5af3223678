// Scenario files (contract v1 in ARCHITECTURE.md): keys are Megatron-LM argument dests.
// Reading here covers types, presence and paths; Megatron's defaults and rules live in
// validate.cpp (finalize_workload), so code that builds Workloads gets the same checks.

#include "stepsim/core/load.hpp"

#include <filesystem>

#include "json_fields.hpp"
#include "load_internal.hpp"
#include "stepsim/core/validate.hpp"

namespace stepsim {

namespace {

using detail::ObjectReader;
using nlohmann::json;

// Reads a positive integer into `field`. A present but invalid value sets the field to 0 so
// that validation skips the rules involving it instead of reporting follow-on errors.
void read_int(ObjectReader& r, Errors& errors, std::string_view key, std::int64_t& field,
              bool required) {
  const std::size_t before = errors.size();
  if (auto v = r.positive_int(key, required)) {
    field = *v;
  } else if (errors.size() != before) {
    field = 0;
  }
}

void read_bool(ObjectReader& r, std::string_view key, bool& field) {
  if (auto v = r.boolean(key)) field = *v;
}

void parse_model(ObjectReader& r, Errors& errors, ModelConfig& m) {
  read_int(r, errors, "num_layers", m.num_layers, true);
  read_int(r, errors, "hidden_size", m.hidden_size, true);
  read_int(r, errors, "num_attention_heads", m.num_attention_heads, true);
  read_int(r, errors, "num_query_groups", m.num_query_groups, false);
  read_int(r, errors, "kv_channels", m.kv_channels, false);
  read_int(r, errors, "ffn_hidden_size", m.ffn_hidden_size, false);
  read_int(r, errors, "seq_length", m.seq_length, true);
  read_int(r, errors, "max_position_embeddings", m.max_position_embeddings, false);
  read_int(r, errors, "vocab_size", m.vocab_size, false);
  read_int(r, errors, "padded_vocab_size", m.padded_vocab_size, false);
  read_int(r, errors, "make_vocab_size_divisible_by", m.make_vocab_size_divisible_by, false);
  if (r.raw("vocab_size") == nullptr && r.raw("padded_vocab_size") == nullptr) {
    r.error("vocab_size", " (or padded_vocab_size) must be given");
  }
  read_bool(r, "swiglu", m.swiglu);
  read_bool(r, "untie_embeddings_and_output_weights", m.untie_embeddings_and_output_weights);
  read_bool(r, "use_flash_attn", m.use_flash_attn);
  read_bool(r, "add_bias_linear", m.add_bias_linear);
  if (auto v = r.choice("position_embedding_type", {"learned_absolute", "rope", "none"})) {
    m.position_embedding_type = *v == "rope"   ? PositionEmbedding::kRope
                                : *v == "none" ? PositionEmbedding::kNone
                                               : PositionEmbedding::kLearnedAbsolute;
  }
  if (auto v = r.choice("normalization", {"LayerNorm", "RMSNorm"})) {
    m.normalization = *v == "RMSNorm" ? Normalization::kRmsNorm : Normalization::kLayerNorm;
  }
  r.reject_unknown_keys();
}

void parse_virtual_stages(ObjectReader& r, Errors& errors, TrainingConfig& t) {
  // Megatron: "No more than one of ... can be set at the same time".
  constexpr std::string_view kForms[] = {"num_layers_per_virtual_pipeline_stage",
                                         "virtual_pipeline_model_parallel_size",
                                         "num_virtual_stages_per_pipeline_rank"};
  std::vector<std::string_view> given;
  for (const std::string_view key : kForms) {
    if (r.raw(key) != nullptr) given.push_back(key);
  }
  if (given.size() > 1) {
    r.error(given[1], std::string(" and ") + std::string(given[0]) +
                          " are both given: give no more than one of them");
  }
  read_int(r, errors, "num_layers_per_virtual_pipeline_stage",
           t.num_layers_per_virtual_pipeline_stage, false);
  read_int(r, errors, "virtual_pipeline_model_parallel_size",
           t.virtual_pipeline_model_parallel_size, false);
  read_int(r, errors, "num_virtual_stages_per_pipeline_rank",
           t.virtual_pipeline_model_parallel_size, false);
}

void parse_recompute(ObjectReader& r, TrainingConfig& t) {
  const auto granularity = r.choice("recompute_granularity", {"selective", "full"});
  if (granularity) {
    t.recompute_granularity =
        *granularity == "full" ? RecomputeGranularity::kFull : RecomputeGranularity::kSelective;
  }
  if (auto v = r.boolean("recompute_activations"); v && *v) {
    // Megatron: --recompute-activations sets recompute_granularity = 'selective'.
    if (granularity && *granularity == "full") {
      r.error("recompute_activations",
              "=true means recompute_granularity \"selective\" but recompute_granularity is "
              "\"full\": give one of them");
    } else {
      t.recompute_granularity = RecomputeGranularity::kSelective;
    }
  }
  if (auto v = r.choice("recompute_method", {"uniform", "block"})) {
    t.recompute_method = *v == "block" ? RecomputeMethod::kBlock : RecomputeMethod::kUniform;
  }
}

// Megatron's default for overlap_p2p_comm is on, and it is forced off without interleaving.
bool interleaving_requested(const ModelConfig& m, const TrainingConfig& t) {
  if (t.virtual_pipeline_model_parallel_size > 1) return true;
  const std::int64_t p = t.pipeline_model_parallel_size;
  const std::int64_t per_chunk = t.num_layers_per_virtual_pipeline_stage;
  if (per_chunk <= 0 || p <= 0 || m.num_layers <= 0 || m.num_layers % p != 0) return false;
  const std::int64_t per_stage = m.num_layers / p;
  return per_stage % per_chunk == 0 && per_stage / per_chunk > 1;
}

void parse_training(ObjectReader& r, Errors& errors, const ModelConfig& m, TrainingConfig& t) {
  read_int(r, errors, "world_size", t.world_size, true);
  read_int(r, errors, "tensor_model_parallel_size", t.tensor_model_parallel_size, false);
  read_int(r, errors, "pipeline_model_parallel_size", t.pipeline_model_parallel_size, false);
  parse_virtual_stages(r, errors, t);
  read_bool(r, "sequence_parallel", t.sequence_parallel);
  read_int(r, errors, "micro_batch_size", t.micro_batch_size, true);
  read_int(r, errors, "global_batch_size", t.global_batch_size, true);
  parse_recompute(r, t);
  read_int(r, errors, "recompute_num_layers", t.recompute_num_layers, false);
  read_bool(r, "distribute_saved_activations", t.distribute_saved_activations);
  read_bool(r, "use_distributed_optimizer", t.use_distributed_optimizer);
  read_bool(r, "overlap_grad_reduce", t.overlap_grad_reduce);
  read_bool(r, "overlap_param_gather", t.overlap_param_gather);
  read_int(r, errors, "microbatch_group_size_per_vp_stage", t.microbatch_group_size_per_vp_stage,
           false);
  t.overlap_p2p_comm = r.boolean("overlap_p2p_comm").value_or(interleaving_requested(m, t));
  const bool fp16 = r.boolean("fp16").value_or(false);
  const bool bf16 = r.boolean("bf16").value_or(false);
  if (fp16 && bf16) {
    r.error("bf16", "=true and fp16=true: Megatron-LM takes one or the other, not both");
  }
  t.params_dtype = bf16 ? DType::kBf16 : fp16 ? DType::kFp16 : DType::kFp32;
  r.reject_unknown_keys();
}

std::string not_found(const std::string& relative, const std::string& base_dir,
                      const LoadOptions& options) {
  std::string where = base_dir;
  if (!options.scenarios_dir.empty() && options.scenarios_dir != base_dir) {
    where += " or " + options.scenarios_dir;
  }
  return "=\"" + relative + "\": no such file (looked in " + where + ")";
}

void parse_system_entry(ObjectReader& r, Errors& errors, const std::string& base_dir,
                        const LoadOptions& options, SystemConfig& system) {
  const json* entry = r.raw("system");
  if (entry == nullptr) {
    r.error("system", " must be given (a system file path or an inline object)");
    return;
  }
  if (entry->is_object()) {
    system = detail::parse_system(*entry, r.file(), "system", errors);
    return;
  }
  if (!entry->is_string()) {
    r.error("system", std::string("=") + detail::describe(*entry) + " must be a path or an object");
    return;
  }
  const std::string relative = entry->get<std::string>();
  const std::string path = resolve_path(relative, base_dir, options);
  if (path.empty()) {
    r.error("system", not_found(relative, base_dir, options));
    return;
  }
  auto loaded = load_system_file(path);
  if (!loaded) {
    errors.insert(errors.end(), loaded.errors().begin(), loaded.errors().end());
    return;
  }
  system = std::move(loaded).value();
}

void parse_cost_model(ObjectReader& r, Errors& errors, const std::string& base_dir,
                      const LoadOptions& options, CostModelSpec& spec) {
  const json* entry = r.raw("cost_model");
  if (entry == nullptr) return;  // roofline
  if (entry->is_string() && entry->get<std::string>() == "roofline") return;
  if (!entry->is_object()) {
    r.error("cost_model", std::string("=") + detail::describe(*entry) +
                              " must be \"roofline\" or {\"profile\": \"<path>\"}");
    return;
  }
  ObjectReader sub(*entry, r.file(), "cost_model", errors);
  if (auto relative = sub.string("profile", true)) {
    const std::string path = resolve_path(*relative, base_dir, options);
    if (path.empty()) {
      sub.error("profile", not_found(*relative, base_dir, options));
    } else {
      spec.kind = CostModelSpec::Kind::kProfile;
      spec.profile_path = path;
    }
  }
  sub.reject_unknown_keys();
}

}  // namespace

std::string resolve_path(const std::string& relative, const std::string& base_dir,
                         const LoadOptions& options) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto usable = [&ec](const fs::path& p) { return fs::is_regular_file(p, ec); };
  const fs::path given(relative);
  if (relative.empty()) return "";
  if (given.is_absolute()) return usable(given) ? relative : "";
  for (const std::string& dir : {base_dir, options.scenarios_dir}) {
    if (dir.empty()) continue;
    const fs::path candidate = fs::path(dir) / given;
    if (usable(candidate)) return candidate.lexically_normal().string();
  }
  return "";
}

Result<Workload> load_scenario_text(std::string_view text, const std::string& file_label,
                                    const std::string& base_dir, const LoadOptions& options) {
  Errors errors;
  const auto json = detail::parse_json(text, file_label, errors);
  if (!json) return errors;
  if (!json->is_object()) return Error{file_label, "", "a scenario must be one JSON object"};

  Workload w;
  ObjectReader top(*json, file_label, "", errors);
  if (auto name = top.string("name", true)) w.name = *name;
  top.string("description", false);
  if (const auto* model = top.object("model", true)) {
    ObjectReader r(*model, file_label, "model", errors);
    parse_model(r, errors, w.model);
  }
  if (const auto* training = top.object("training", true)) {
    ObjectReader r(*training, file_label, "training", errors);
    parse_training(r, errors, w.model, w.training);
  } else {
    // Unknown parallel sizes: skip their rules rather than check the defaults of 1.
    w.training.tensor_model_parallel_size = w.training.pipeline_model_parallel_size = 0;
  }
  parse_system_entry(top, errors, base_dir, options, w.system);
  parse_cost_model(top, errors, base_dir, options, w.cost_model);
  top.reject_unknown_keys();

  const Errors rules = finalize_workload(w, file_label);
  errors.insert(errors.end(), rules.begin(), rules.end());
  if (!errors.empty()) return errors;
  return w;
}

Result<Workload> load_scenario_file(const std::string& path, const LoadOptions& options) {
  Errors errors;
  const auto text = detail::read_text_file(path, errors);
  if (!text) return errors;
  auto loaded = load_scenario_text(*text, path, detail::parent_dir(path), options);
  if (!loaded) return loaded;
  Workload w = std::move(loaded).value();
  w.source_file = path;
  return w;
}

}  // namespace stepsim
