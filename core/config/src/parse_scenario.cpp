// Scenario files (contract v1 in docs/scenario.md): keys are Megatron-LM argument dests, read
// row by row from the schema table (src/schema/). Reading here covers types, presence and paths;
// Megatron's defaults and rules live in the check layer (check.cpp, finalize_workload), which
// load_scenario_text runs after this.

#include "stepsim/config/parse.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "stepsim/base/json_fields.hpp"
#include "stepsim/config/load_internal.hpp"
#include "nccl_cfg.hpp"
#include "stepsim/base/assert.hpp"
#include "stepsim/base/json_input.hpp"
#include "stepsim/base/nearest_name.hpp"
#include "stepsim/config/enum_names.hpp"
#include "stepsim/config/pipeline_layout.hpp"
#include "stepsim/config/schema.hpp"
#include "stepsim/config/shipped.hpp"
#include "stepsim/config/ub_cfg.hpp"

namespace stepsim {

namespace {

using detail::ObjectReader;
using nlohmann::json;

// The schema rows of one section ("model." or "training."), in table order.
std::vector<const KeyInfo*> section_rows(std::string_view prefix) {
  std::vector<const KeyInfo*> rows;
  for (const KeyInfo& k : scenario_schema()) {
    if (k.key.starts_with(prefix)) rows.push_back(&k);
  }
  return rows;
}

// The values a section gave, by schema row (absent: nullopt).
struct SectionValues {
  std::vector<const KeyInfo*> rows;
  std::vector<std::optional<KnobValue>> values;

  std::optional<KnobValue> of(std::string_view key) const {
    for (std::size_t i = 0; i < rows.size(); ++i) {
      if (leaf_of(rows[i]->key) == key) return values[i];
    }
    return std::nullopt;
  }
  static std::string_view leaf_of(std::string_view dotted) {
    return dotted.substr(dotted.find('.') + 1);
  }
};

// Reads every schema row of a section by its kind and writes the given values into `w`.
// A present but invalid integer writes 0 so that validation skips the rules involving it
// instead of reporting follow-on errors. Keys the schema does not know are reported with
// the schema's message (not modelled yet, or did you mean).
SectionValues read_section(ObjectReader& r, const nlohmann::json& object, std::string_view section,
                           Errors& errors, Workload& w) {
  SectionValues out;
  out.rows = section_rows(std::string(section) + ".");
  out.values.resize(out.rows.size());
  for (std::size_t i = 0; i < out.rows.size(); ++i) {
    const KeyInfo& k = *out.rows[i];
    const std::string_view key = SectionValues::leaf_of(k.key);
    std::optional<KnobValue> value;
    switch (k.kind) {
      case KnobKind::kInt: {
        const std::size_t before = errors.size();
        auto v = r.positive_int(key, k.required, k.zero_allowed);
        if (v) {
          if (const std::string problem = int_key_bound_problem(k, *v); !problem.empty()) {
            r.error(key, problem);
            v.reset();
          }
        }
        if (v) {
          value = KnobValue{.integer = *v};
        } else if (errors.size() != before && k.set != nullptr) {
          k.set(w, KnobValue{.integer = 0});
        }
        break;
      }
      case KnobKind::kBool:
        if (auto v = r.boolean(key)) value = KnobValue{.integer = *v ? 1 : 0};
        break;
      case KnobKind::kChoice: {
        const json* given = r.raw(key);
        if (given == nullptr) break;
        std::string listed;
        for (std::size_t c = k.null_choice ? 1 : 0; c < k.choices.size(); ++c) {
          if (given->is_string() && given->get<std::string>() == k.choices[c]) {
            value = KnobValue{.integer = static_cast<std::int64_t>(c)};
          }
          if (!listed.empty()) listed += ", ";
          listed += "\"" + std::string(k.choices[c]) + "\"";
        }
        if (!value)
          r.error(key, "=" + detail::describe(*given) + " must be one of " + listed + " or null");
        break;
      }
      case KnobKind::kString:
        STEPSIM_ASSERT(k.set == nullptr);  // strings are read by hand (parse_training)
        break;
      case KnobKind::kReal:
        // MoE coefficients and factors: >= 0 (a capacity factor of 0 is refused by its rule).
        if (auto v = r.number(key, false, 0, 1e6)) value = KnobValue{.real = *v};
        break;
      case KnobKind::kSystem:
        STEPSIM_UNREACHABLE("read_section: no such key kind in model or training");
        break;
    }
    if (value && k.set != nullptr) k.set(w, *value);
    out.values[i] = value;
  }
  for (const auto& item : object.items()) {
    // A named copy, not a structured binding: clang before 16 cannot capture those.
    const std::string& key = item.key();
    const bool known = std::any_of(out.rows.begin(), out.rows.end(), [&](const KeyInfo* k) {
      return SectionValues::leaf_of(k->key) == key;
    });
    if (!known) r.error(key, unknown_key_message(section, key));
  }
  return out;
}

// Megatron's default for overlap_p2p_comm is on, and it is forced off without interleaving.
bool interleaving_requested(const ModelConfig& m, const TrainingConfig& t) {
  if (t.virtual_pipeline_model_parallel_size > 1) return true;
  const std::int64_t p = t.pipeline_model_parallel_size;
  if (m.hybrid()) {
    // arguments.py: virtual stages are the pattern's '|' segments over pp (MTP's '/' part
    // after the main pattern does not count).
    const std::string main = m.hybrid_layer_pattern.substr(0, m.hybrid_layer_pattern.find('/'));
    const auto segments = static_cast<std::int64_t>(std::count(main.begin(), main.end(), '|')) + 1;
    return p > 0 && segments % p == 0 && segments / p > 1;
  }
  if (!t.pipeline_model_parallel_layout.empty()) {
    const auto stages = parse_pipeline_layout(t.pipeline_model_parallel_layout);
    const auto n = stages ? static_cast<std::int64_t>(stages->size()) : 0;
    return p > 0 && n % p == 0 && n / p > 1;
  }
  // Megatron refuses num_layers_per_virtual_pipeline_stage with first/last stage sizes.
  if (t.decoder_first_pipeline_num_layers > 0 || t.decoder_last_pipeline_num_layers > 0) {
    return false;
  }
  const std::int64_t per_chunk = t.num_layers_per_virtual_pipeline_stage;
  const std::int64_t counted = m.num_layers + (t.account_for_embedding_in_pipeline_split ? 1 : 0) +
                               (t.account_for_loss_in_pipeline_split ? 1 : 0);
  if (per_chunk <= 0 || p <= 0 || m.num_layers <= 0 || counted % p != 0) return false;
  const std::int64_t per_stage = counted / p;
  return per_stage % per_chunk == 0 && per_stage / per_chunk > 1;
}

// Megatron's --window-size (arguments.py tuple_type: "L,R" or "(L,R)") as a two-integer array
// or that text, and --window-attn-skip-freq (moe_freq_type: an integer, or a string holding
// one or a list pattern). The rules between them and the rest are validate's.
void read_window(ObjectReader& r, ModelConfig& m) {
  if (const json* window = r.raw("window_size")) {
    std::vector<std::int64_t> pair;
    if (window->is_array()) {
      for (const json& v : *window) {
        if (!v.is_number_integer()) break;
        pair.push_back(v.get<std::int64_t>());
      }
      if (pair.size() != window->size()) pair.clear();
    } else if (window->is_string()) {
      std::string text = window->get<std::string>();
      if (text.starts_with('(') && text.ends_with(')')) text = text.substr(1, text.size() - 2);
      std::size_t at = 0;
      while (at <= text.size()) {
        const std::size_t comma = std::min(text.find(',', at), text.size());
        const std::string item = text.substr(at, comma - at);
        char* end = nullptr;
        const long long v = std::strtoll(item.c_str(), &end, 10);
        if (item.empty() || end != item.c_str() + item.size()) {
          pair.clear();
          break;
        }
        pair.push_back(v);
        at = comma + 1;
      }
    }
    if (pair.size() != 2) {
      r.error("window_size", "=" + detail::describe(*window) +
                                 " must be two integers [left, right], e.g. [127, 0]");
    } else {
      m.window_size = std::move(pair);
    }
  }
  if (const json* freq = r.raw("window_attn_skip_freq")) {
    if (freq->is_number_integer()) {
      m.window_attn_skip_freq = std::to_string(freq->get<std::int64_t>());
    } else if (freq->is_string() && !freq->get<std::string>().empty()) {
      m.window_attn_skip_freq = freq->get<std::string>();
    } else {
      r.error("window_attn_skip_freq", "=" + detail::describe(*freq) +
                                           " must be an integer or a list pattern such as "
                                           "\"[1,1,1,0]*9\"");
    }
  }
}

// Megatron's --hybrid-layer-pattern and its deprecated --hybrid-override-pattern (arguments.py
// forwards the one to the other and refuses both together). The letters are check_hybrid's.
void read_hybrid_pattern(ObjectReader& r, ModelConfig& m) {
  const json* layer = r.raw("hybrid_layer_pattern");
  const json* override_pattern = r.raw("hybrid_override_pattern");
  if (layer != nullptr && override_pattern != nullptr) {
    r.error("hybrid_override_pattern",
            " and hybrid_layer_pattern cannot both be given (Megatron-LM: "
            "--hybrid-override-pattern is deprecated; use --hybrid-layer-pattern)");
    return;
  }
  const json* given = layer != nullptr ? layer : override_pattern;
  if (given == nullptr) return;
  if (!given->is_string() || given->get<std::string>().empty()) {
    r.error(layer != nullptr ? "hybrid_layer_pattern" : "hybrid_override_pattern",
            "=" + detail::describe(*given) + " must be a pattern of layer letters such as "
                                             "\"M-M-M*-\"");
    return;
  }
  m.hybrid_layer_pattern = given->get<std::string>();
}

void parse_model(ObjectReader& r, const nlohmann::json& object, Errors& errors, Workload& w) {
  const SectionValues given = read_section(r, object, "model", errors, w);
  if (r.raw("vocab_size") == nullptr && r.raw("padded_vocab_size") == nullptr) {
    r.error("vocab_size", " (or padded_vocab_size) must be given");
  }
  // Megatron's moe_freq_type: an integer, or a string holding one or a list pattern.
  if (const json* freq = r.raw("moe_layer_freq")) {
    if (freq->is_number_integer()) {
      w.model.moe_layer_freq = std::to_string(freq->get<std::int64_t>());
    } else if (freq->is_string() && !freq->get<std::string>().empty()) {
      w.model.moe_layer_freq = freq->get<std::string>();
    } else {
      r.error("moe_layer_freq", "=" + detail::describe(*freq) +
                                    " must be an integer or a list pattern such as "
                                    "\"([0]*3+[1]*58)\"");
    }
  }
  read_window(r, w.model);
  read_hybrid_pattern(r, w.model);
  // Megatron's "no clamp" is leaving it out (None); 0 here would clamp everything to 0.
  if (const json* clamp = r.raw("activation_func_clamp_value");
      clamp != nullptr && clamp->is_number() && clamp->get<double>() <= 0) {
    r.error("activation_func_clamp_value",
            "=" + detail::describe(*clamp) + " must be > 0 (leave it out for no clamp)");
  }
  // Left out: Megatron-Core's default, "auto" (TransformerConfig.attention_backend,
  // megatron/core/transformer/transformer_config.py); with the older use_flash_attn=true it
  // stays as that flag asks, FlashAttention.
  if (!given.of("attention_backend") && !w.model.use_flash_attn) {
    w.model.attention_backend = AttentionBackend::kAuto;
  }
  const ModelConfig& m = w.model;
  if (given.of("attention_backend") && m.use_flash_attn &&
      (m.attention_backend == AttentionBackend::kUnfused ||
       m.attention_backend == AttentionBackend::kLocal)) {
    r.error("attention_backend",
            m.attention_backend == AttentionBackend::kLocal
                ? "=\"local\" materialises the attention scores but use_flash_attn=true: give one"
                : "=\"unfused\" materialises the attention scores but use_flash_attn=true: give "
                  "one");
  }
}

// Megatron-LM's silent adjustments (arguments.py validate_args), done the same way and noted.
void apply_megatron_adjustments(const SectionValues& given, Workload& w) {
  TrainingConfig& t = w.training;
  if (t.sequence_parallel && t.tensor_model_parallel_size == 1) {
    t.sequence_parallel = false;
    w.notes.push_back(
        "training.sequence_parallel=true turned off: tensor_model_parallel_size is 1 "
        "(Megatron-LM disables sequence parallelism without tensor parallelism)");
  }
  if (t.grad_reduce_in_bf16 && t.params_dtype != DType::kBf16) {
    t.grad_reduce_in_bf16 = false;
    w.notes.push_back(
        "training.grad_reduce_in_bf16=true turned off: the parameters are not bf16 (Megatron-LM "
        "reads --grad-reduce-in-bf16 only with --bf16)");
  }
  if (!t.hierarchical_context_parallel_sizes.empty() && t.cp_comm_type != CpCommType::kA2aP2p) {
    w.notes.push_back(
        "training.hierarchical_context_parallel_sizes unused: only cp_comm_type \"a2a+p2p\" "
        "reads them (Megatron-LM builds the hierarchical groups and runs the plain form)");
  }
  if (t.moe_shared_expert_overlap && w.model.moe_shared_expert_intermediate_size <= 0) {
    w.notes.push_back(
        "training.moe_shared_expert_overlap=true has no effect: the model has no shared experts "
        "(Megatron-LM overlaps only their computation with the dispatcher)");
  }
  const auto p2p = given.of("overlap_p2p_comm");
  if (p2p && p2p->integer != 0 && !interleaving_requested(w.model, t)) {
    t.overlap_p2p_comm = false;
    w.notes.push_back(
        "training.overlap_p2p_comm=true turned off: there are no virtual pipeline stages "
        "(Megatron-LM overlaps P2P communication only in the interleaved schedule)");
  }
}

// Megatron: "No more than one of ... can be set at the same time".
void check_virtual_stage_forms(ObjectReader& r) {
  constexpr std::string_view kForms[] = {
      "num_layers_per_virtual_pipeline_stage", "virtual_pipeline_model_parallel_size",
      "num_virtual_stages_per_pipeline_rank", "pipeline_model_parallel_layout"};
  std::vector<std::string_view> given;
  for (const std::string_view key : kForms) {
    if (r.raw(key) != nullptr) given.push_back(key);
  }
  if (given.size() > 1) {
    r.error(given[1], std::string(" and ") + std::string(given[0]) +
                          " are both given: give no more than one of them");
  }
}

/// Megatron's --cuda-graph-modules (nargs='+'): a list of CudaGraphModule names, kept
/// space-separated; "full" (deprecated) is the empty list, as Megatron normalizes it.
void read_cuda_graph_modules(ObjectReader& r, TrainingConfig& t) {
  const nlohmann::json* modules = r.raw("cuda_graph_modules");
  if (modules == nullptr) return;
  const auto known = [](const nlohmann::json& v) {
    return v.is_string() && (v.get<std::string>() == "full" ||
                             std::find(kCudaGraphModuleNames.begin(), kCudaGraphModuleNames.end(),
                                       v.get<std::string>()) != kCudaGraphModuleNames.end());
  };
  if (!modules->is_array() || !std::all_of(modules->begin(), modules->end(), known)) {
    r.error("cuda_graph_modules",
            "=" + detail::describe(*modules) +
                " must be a list of \"attn\", \"mlp\", \"moe\", \"moe_router\", "
                "\"moe_preprocess\", \"mamba\" (e.g. [\"attn\", \"moe_router\"]; [] for the "
                "whole layer)");
    return;
  }
  for (const auto& v : *modules) {
    if (v.get<std::string>() == "full") continue;
    if (!t.cuda_graph_modules.empty()) t.cuda_graph_modules += ' ';
    t.cuda_graph_modules += v.get<std::string>();
  }
}

void parse_training(ObjectReader& r, const nlohmann::json& object, Errors& errors, Workload& w) {
  check_virtual_stage_forms(r);
  TrainingConfig& t = w.training;
  const SectionValues given = read_section(r, object, "training", errors, w);
  if (const nlohmann::json* layout = r.raw("pipeline_model_parallel_layout")) {
    if (!layout->is_string() || layout->get<std::string>().empty()) {
      r.error("pipeline_model_parallel_layout",
              "=" + detail::describe(*layout) +
                  " must be a non-empty layout string (e.g. \"Et*4|(t*4|)*6,t*3L\")");
    } else {
      t.pipeline_model_parallel_layout = layout->get<std::string>();
    }
  }
  // Megatron's --hierarchical-context-parallel-sizes (nargs='+', type=int): a list of sizes;
  // validate.cpp checks them against context_parallel_size and cp_comm_type.
  if (const nlohmann::json* sizes = r.raw("hierarchical_context_parallel_sizes")) {
    const bool ints = sizes->is_array() && !sizes->empty() &&
                      std::all_of(sizes->begin(), sizes->end(), [](const nlohmann::json& v) {
                        return v.is_number_integer() && v.get<std::int64_t>() >= 1;
                      });
    if (ints) {
      for (const auto& v : *sizes) {
        t.hierarchical_context_parallel_sizes.push_back(v.get<std::int64_t>());
      }
    } else {
      r.error("hierarchical_context_parallel_sizes",
              "=" + detail::describe(*sizes) +
                  " must be a non-empty list of integers >= 1 (e.g. [2, 4])");
    }
  }
  read_cuda_graph_modules(r, t);
  // A capacity factor of 0 would drop every token; Megatron's "no capacity" is leaving it out.
  if (const nlohmann::json* cf = r.raw("moe_expert_capacity_factor");
      cf != nullptr && cf->is_number() && cf->get<double>() <= 0) {
    r.error("moe_expert_capacity_factor",
            "=" + detail::describe(*cf) + " must be > 0 (leave it out for no capacity)");
  }
  // stepsim's routing imbalance: a skew factor or per-expert shares (validate_moe.cpp checks
  // them against num_experts and expert_model_parallel_size).
  if (const nlohmann::json* load = r.raw("moe_load")) {
    const auto finite = [](const nlohmann::json& v) {
      return v.is_number() && std::isfinite(v.get<double>());
    };
    if (finite(*load)) {
      t.moe_load_skew = load->get<double>();
    } else if (load->is_array() && !load->empty() &&
               std::all_of(load->begin(), load->end(), finite)) {
      for (const auto& v : *load) t.moe_load_shares.push_back(v.get<double>());
    } else {
      r.error("moe_load", "=" + detail::describe(*load) +
                              " must be a skew factor (a number >= 1) or a list of per-expert "
                              "shares (numbers >= 0, one per expert)");
    }
  }
  // Megatron: --recompute-activations sets recompute_granularity = 'selective'.
  if (const auto v = given.of("recompute_activations"); v && v->integer != 0) {
    if (t.recompute_granularity == RecomputeGranularity::kFull) {
      r.error("recompute_activations",
              "=true means recompute_granularity \"selective\" but recompute_granularity is "
              "\"full\": give one of them");
    } else {
      t.recompute_granularity = RecomputeGranularity::kSelective;
    }
  }
  if (!given.of("overlap_p2p_comm")) t.overlap_p2p_comm = interleaving_requested(w.model, t);
  apply_megatron_adjustments(given, w);
  const auto fp16 = given.of("fp16");
  const auto bf16 = given.of("bf16");
  if (fp16 && bf16 && fp16->integer != 0 && bf16->integer != 0) {
    r.error("bf16", "=true and fp16=true: Megatron-LM takes one or the other, not both");
  }
}

/// The file nearest to `relative` in the folder it names ("systems/x.json": the systems/
/// beside the scenario and under the scenarios folder), spelled as `relative` is; "" when
/// none is close. Listing stops at 4096 entries per folder (a hostile folder stays cheap).
std::string nearest_file(const std::string& relative, const std::string& base_dir,
                         const LoadOptions& options) {
  namespace fs = std::filesystem;
  const fs::path typed(relative);
  if (typed.is_absolute() || !typed.has_filename()) return "";
  const fs::path folder = typed.parent_path();
  std::vector<std::string> candidates;
  for (const std::string& root : {base_dir, options.scenarios_dir}) {
    if (root.empty()) continue;
    std::error_code ec;
    fs::directory_iterator it(fs::path(root) / folder, ec);
    for (std::size_t n = 0; !ec && it != fs::directory_iterator() && n < 4096;
         it.increment(ec), ++n) {
      if (it->is_regular_file(ec)) {
        candidates.push_back((folder / it->path().filename()).generic_string());
      }
    }
  }
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  const std::vector<std::string_view> names(candidates.begin(), candidates.end());
  const auto near = nearest_name(typed.generic_string(), names);
  return near ? std::string(*near) : "";
}

std::string not_found(const std::string& relative, const std::string& base_dir,
                      const LoadOptions& options) {
  std::string where = base_dir;
  if (!options.scenarios_dir.empty() && options.scenarios_dir != base_dir) {
    where += " or " + options.scenarios_dir;
  }
  std::string out = "=\"" + relative + "\": no such file (looked in " + where + ")";
  if (const std::string near = nearest_file(relative, base_dir, options); !near.empty()) {
    out += "; did you mean \"" + near + "\"?";
  }
  return out;
}

/// A system or profile given by short name (stepsim/config/shipped.hpp): `relative` itself when
/// it is written as a path or is a file as given, else the shipped file of `kind` it names (or
/// `relative` again when none, for readable_path to report); nullopt, reported under `key`,
/// when it is a prefix of several.
std::optional<std::string> shipped_or_given(ObjectReader& r, std::string_view key,
                                            const std::string& relative,
                                            const std::string& base_dir, const LoadOptions& options,
                                            ShippedKind kind) {
  if (!is_short_name(relative) || !resolve_path(relative, base_dir, options).empty()) {
    return relative;
  }
  const ShortNameMatch match = find_shipped(relative, options.scenarios_dir, kind);
  if (!match.candidates.empty()) {
    r.error(key, "=\"" + relative + "\"" + ambiguous_short_name(match, kind));
    return std::nullopt;
  }
  return match.path.empty() ? relative : match.path;
}

/// `relative` (the value of `key` of `r`) resolved and readable: its path, or "" with the
/// problem reported under the key (no such file; a directory, FIFO, device or link loop).
std::string readable_path(ObjectReader& r, std::string_view key, const std::string& relative,
                          const std::string& base_dir, const LoadOptions& options) {
  const std::string path = resolve_path(relative, base_dir, options);
  if (path.empty()) {
    r.error(key, not_found(relative, base_dir, options));
    return "";
  }
  if (const std::string problem = input_file_problem(path); !problem.empty()) {
    r.error(key, "=\"" + relative + "\"" + (path == relative ? "" : " (" + path + ")") + ": " +
                     problem);
    return "";
  }
  return path;
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
  const auto relative = shipped_or_given(r, "system", entry->get<std::string>(), base_dir, options,
                                         ShippedKind::kSystem);
  if (!relative) return;
  const std::string path = readable_path(r, "system", *relative, base_dir, options);
  if (path.empty()) return;
  auto loaded = load_system_file(path);
  if (!loaded) {
    errors.insert(errors.end(), loaded.errors().begin(), loaded.errors().end());
    return;
  }
  system = std::move(loaded).value();
}

void parse_cost_model(ObjectReader& r, Errors& errors, const std::string& base_dir,
                      const LoadOptions& options, const SystemConfig& system,
                      CostModelSpec& spec) {
  const json* entry = r.raw("cost_model");
  if (entry == nullptr) {
    // Left out: the GPU's shipped public profile, as `stepsim systems` lists it; else roofline.
    spec = default_cost_model(system.gpu_name, options.scenarios_dir);
    return;
  }
  if (entry->is_string() && entry->get<std::string>() == "roofline") return;
  if (!entry->is_object()) {
    r.error("cost_model", std::string("=") + detail::describe(*entry) +
                              " must be \"roofline\" or {\"profile\": \"<path>\"}");
    return;
  }
  ObjectReader sub(*entry, r.file(), "cost_model", errors);
  std::optional<std::string> relative = sub.string("profile", true);
  if (relative) {
    relative =
        shipped_or_given(sub, "profile", *relative, base_dir, options, ShippedKind::kProfile);
  }
  if (relative) {
    const std::string path = readable_path(sub, "profile", *relative, base_dir, options);
    if (!path.empty()) {
      spec.kind = CostModelSpec::Kind::kProfile;
      spec.profile_path = path;
    }
  }
  sub.reject_unknown_keys();
}

/// A side file a training key names (a path relative to the scenario file, then under
/// scenarios/): its relative path, resolved path and text; nullopt (the problem reported,
/// naming the key) when the key is absent, not a non-empty string (`what` says what it must
/// be) or the file cannot be read.
struct SideFile {
  std::string relative;
  std::string path;
  std::string text;
};
std::optional<SideFile> read_side_file(ObjectReader& r, std::string_view key, std::string_view what,
                                       Errors& errors, const std::string& base_dir,
                                       const LoadOptions& options) {
  const json* entry = r.raw(key);
  if (entry == nullptr) return std::nullopt;
  if (!entry->is_string() || entry->get<std::string>().empty()) {
    r.error(key, "=" + detail::describe(*entry) + " must be a path to " + std::string(what));
    return std::nullopt;
  }
  SideFile out;
  out.relative = entry->get<std::string>();
  out.path = readable_path(r, key, out.relative, base_dir, options);
  if (out.path.empty()) return std::nullopt;
  auto text = detail::read_text_file(out.path, errors);
  if (!text) return std::nullopt;
  out.text = std::move(*text);
  return out;
}

/// training.tp_comm_overlap_cfg: the YAML file of TE's per-GEMM userbuffers settings (Megatron's
/// --tp-comm-overlap-cfg); its problems name the YAML file, the line and the GEMM's setting
/// (ub_cfg.cpp).
void parse_ub_cfg_entry(ObjectReader& r, Errors& errors, const std::string& base_dir,
                        const LoadOptions& options, TrainingConfig& t) {
  const auto file =
      read_side_file(r, "tp_comm_overlap_cfg", "a YAML file of per-GEMM userbuffers settings",
                     errors, base_dir, options);
  if (!file) return;
  t.tp_comm_overlap_cfg = file->relative;
  detail::read_ub_cfg(file->text, file->path, t.tp_comm_overlap_gemms, errors);
}

/// training.nccl_communicator_config_path: the YAML file of ncclConfig_t options per process
/// group (Megatron's --nccl-communicator-config-path); its problems name the YAML file, the
/// line and the group's option (nccl_cfg.cpp).
void parse_nccl_cfg_entry(ObjectReader& r, Errors& errors, const std::string& base_dir,
                          const LoadOptions& options, TrainingConfig& t) {
  const auto file =
      read_side_file(r, "nccl_communicator_config_path",
                     "a YAML file of per-process-group NCCL options", errors, base_dir, options);
  if (!file) return;
  t.nccl_communicator_config_path = file->relative;
  detail::read_nccl_cfg(file->text, file->path, t.nccl_group_options, errors);
}

/// training.nccl_algo / nccl_proto: NCCL_ALGO and NCCL_PROTO in NCCL's syntax, refused at load
/// as NCCL refuses them (nccl_env.cpp, src/graph/tuning.cc parseList).
void parse_nccl_env_entry(ObjectReader& r, TrainingConfig& t) {
  for (const auto& [key, env, member] :
       {std::tuple{"nccl_algo", "NCCL_ALGO", &t.nccl_algo},
        std::tuple{"nccl_proto", "NCCL_PROTO", &t.nccl_proto}}) {
    const nlohmann::json* entry = r.raw(key);
    if (entry == nullptr) continue;
    if (!entry->is_string()) {
      r.error(key, "=" + detail::describe(*entry) + " (" + env +
                       ") must be a string in NCCL's syntax, e.g. \"Ring\" or \"^LL128\"");
      continue;
    }
    const std::string value = entry->get<std::string>();
    NcclEnabled scratch;
    const std::string problem = apply_nccl_enable_list(value, std::string_view(env) == "NCCL_ALGO",
                                                       scratch);
    if (!problem.empty()) {
      r.error(key, "=\"" + value + "\" (" + env + ")" + problem + ": NCCL stops");
      continue;
    }
    *member = value;
  }
}

/// The `heterogeneity` section: {"full_rank": bool, "stragglers": {"RANK": FACTOR, ...},
/// "slow_nics": {"NODE": FACTOR, ...}, "jitter_sigma": SIGMA, "jitter_seed": N}, checked
/// against the job (ranks and nodes inside it, factors in [0.001, 1000], SIGMA in [0, 1]; slow NICs,
/// jitter and stragglers in several data-parallel replicas need full_rank).
void parse_heterogeneity(ObjectReader& top, Errors& errors, Workload& w) {
  const json* entry = top.object("heterogeneity", false);
  if (entry == nullptr) return;
  HeterogeneityConfig& h = w.heterogeneity;
  ObjectReader r(*entry, top.file(), "heterogeneity", errors);
  if (auto v = r.boolean("full_rank")) h.full_rank = *v;
  const TrainingConfig& t = w.training;
  const std::int64_t per_node = std::max<std::int64_t>(1, w.system.gpus_per_node);
  const std::int64_t world = t.world_size;
  const auto read_map = [&](std::string_view key, std::int64_t limit, const char* what,
                            std::vector<std::pair<std::int64_t, double>>& out) {
    const json* map = r.raw(key);
    if (map == nullptr) return;
    if (!map->is_object()) {
      r.error(key, "=" + detail::describe(*map) + " must be an object {\"" + what +
                       "\": FACTOR, ...}");
      return;
    }
    for (const auto& item : map->items()) {
      const std::string& index = item.key();
      const bool number = !index.empty() && index.size() < 10 &&
                          index.find_first_not_of("0123456789") == std::string::npos;
      const std::int64_t i = number ? std::stoll(index) : -1;
      if (!number || i >= limit) {
        r.error(std::string(key) + "." + index,
                ": \"" + index + "\" is not a " + what + " of the job (0.." +
                    std::to_string(limit - 1) + ")");
        continue;
      }
      const json& f = item.value();
      if (!f.is_number() || !(f.get<double>() >= 1e-3 && f.get<double>() <= 1e3)) {
        r.error(std::string(key) + "." + index,
                "=" + detail::describe(f) + " must be a factor in [0.001, 1000]");
        continue;
      }
      out.emplace_back(i, f.get<double>());
    }
  };
  read_map("stragglers", world, "global rank", h.stragglers);
  read_map("slow_nics", (world + per_node - 1) / per_node, "node", h.slow_nics);
  if (auto v = r.number("jitter_sigma", false, 0, 1)) h.jitter_sigma = *v;
  if (auto v = r.positive_int("jitter_seed", false, true)) h.jitter_seed = *v;
  r.reject_unknown_keys();
  if (h.full_rank) return;
  if (!h.slow_nics.empty() || h.jitter_sigma > 0) {
    r.error(h.slow_nics.empty() ? "jitter_sigma" : "slow_nics",
            ": per-GPU heterogeneity needs every GPU simulated: set heterogeneity.full_rank true");
  }
  // Representative mode: the simulated replica holds the stragglers (RankGenerator order
  // tp-cp-ep-dp-pp: the dp index of rank r is r / (tp * cp) % dp).
  const std::int64_t replica_stride = t.tensor_model_parallel_size * t.context_parallel_size;
  const std::int64_t model = replica_stride * t.pipeline_model_parallel_size;
  if (replica_stride <= 0 || model <= 0 || world % model != 0) return;
  const std::int64_t dp = world / model;
  for (const auto& [rank, factor] : h.stragglers) {
    if (rank / replica_stride % dp != h.stragglers.front().first / replica_stride % dp) {
      r.error("stragglers", ": stragglers in different data-parallel replicas need every GPU "
                            "simulated: set heterogeneity.full_rank true");
      break;
    }
  }
}

// `description` is one line a person reads; `sources` cites, under each dotted key of this
// file ("training.fp8", "model", "name"), where its value comes from (as system files do).
void check_provenance(ObjectReader& top, const nlohmann::json& scenario, Errors& errors) {
  if (auto text = top.string("description", false); text && text->find('\n') != std::string::npos) {
    top.error("description", " must be one line: citations and reasons go under `sources`");
  }
  const nlohmann::json* sources = top.object("sources", false);
  if (sources == nullptr) return;
  ObjectReader r(*sources, top.file(), "sources", errors);
  for (const auto& [key, cited] : sources->items()) {
    r.raw(key);  // every key is read here: none is unknown to reject_unknown_keys
    if (!cited.is_string() || cited.get<std::string>().empty()) {
      r.error(key, "=" + detail::describe(cited) + " must be a non-empty citation string");
    } else if (key == "sources" || key.starts_with("sources.") ||
               !detail::has_dotted_key(scenario, key)) {
      r.error(key,
              " names no key of this scenario: cite a dotted key it gives (\"training.fp8\", "
              "\"model\", \"name\")");
    }
  }
}

}  // namespace

std::string resolve_path(const std::string& relative, const std::string& base_dir,
                         const LoadOptions& options) {
  namespace fs = std::filesystem;
  std::error_code ec;
  // symlink_status: a dangling link or a link loop exists too, and its reader says so.
  const auto usable = [&ec](const fs::path& p) { return fs::exists(fs::symlink_status(p, ec)); };
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

std::optional<Workload> parse_scenario_text(std::string_view text, const std::string& file_label,
                                            const std::string& base_dir,
                                            const LoadOptions& options, Errors& errors) {
  const auto json = detail::parse_json(text, file_label, errors);
  if (!json) return std::nullopt;
  if (!json->is_object()) {
    errors.push_back(Error{file_label, "", "a scenario must be one JSON object"});
    return std::nullopt;
  }

  Workload w;
  ObjectReader top(*json, file_label, "", errors);
  if (auto name = top.string("name", true)) w.name = *name;
  check_provenance(top, *json, errors);
  if (const auto* model = top.object("model", true)) {
    ObjectReader r(*model, file_label, "model", errors);
    parse_model(r, *model, errors, w);
  }
  if (const auto* training = top.object("training", true)) {
    ObjectReader r(*training, file_label, "training", errors);
    parse_training(r, *training, errors, w);
    parse_ub_cfg_entry(r, errors, base_dir, options, w.training);
    parse_nccl_cfg_entry(r, errors, base_dir, options, w.training);
    parse_nccl_env_entry(r, w.training);
  } else {
    // Unknown parallel sizes: skip their rules rather than check the defaults of 1.
    w.training.tensor_model_parallel_size = w.training.pipeline_model_parallel_size = 0;
  }
  if (const nlohmann::json* unmodelled = top.raw("unmodelled")) {
    const bool strings =
        unmodelled->is_array() && std::all_of(unmodelled->begin(), unmodelled->end(),
                                              [](const nlohmann::json& v) { return v.is_string(); });
    if (strings) {
      for (const nlohmann::json& v : *unmodelled) w.unmodelled.push_back(v.get<std::string>());
    } else {
      top.error("unmodelled", "=" + detail::describe(*unmodelled) + " must be a list of strings");
    }
  }
  parse_system_entry(top, errors, base_dir, options, w.system);
  parse_cost_model(top, errors, base_dir, options, w.system, w.cost_model);
  parse_heterogeneity(top, errors, w);
  top.reject_unknown_keys();

  return w;
}

}  // namespace stepsim
