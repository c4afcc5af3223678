// Reads a sweep file: the base scenario (inline or a path, loaded with the scenario loader),
// the search space, constraints, objective and top. Every problem is collected and reported
// with the file and the key.

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "stepsim/config/layout_words.hpp"
#include "stepsim/config/load_internal.hpp"
#include "stepsim/config/shipped.hpp"
#include "stepsim/base/json_input.hpp"
#include "stepsim/base/nearest_name.hpp"
#include "stepsim/sweep/sweep_spec.hpp"

namespace stepsim {
namespace {

using json = nlohmann::json;

// Bounds on what a sweep file may ask for (each refused with the key that asks).
constexpr std::size_t kMaxKnobValues = 4096;                   // values listed for one knob
constexpr std::uint64_t kMaxListedConfigurations = 1u << 24;  // product of the listed values
constexpr std::int64_t kMaxKnobInteger = std::int64_t{1} << 53;
constexpr std::uint64_t kMaxSystemVariants = 1024;  // product of the system knobs' values

// A value for a message, cut to 40 characters (a list of 10^5 values stays one line).
std::string describe_value(const json& v) {
  if (v.is_object()) return "an object";
  if (v.is_array()) return "an array";
  std::string text = v.dump();
  if (text.size() > 40) text = text.substr(0, 40) + "...";
  return text;
}

std::string dir_of(const std::string& path) {
  return std::filesystem::path(path).parent_path().string();
}

std::string_view leaf(std::string_view dotted) {
  return dotted.substr(dotted.rfind('.') == std::string_view::npos ? 0 : dotted.rfind('.') + 1);
}

/// "is not a sweepable scenario key ...", with the knob a common abbreviation stands for
/// ("tp", "vpp", "mbs": layout_words.hpp), else the knob whose last part is nearest when one
/// is close (the section prefix, common to all, would make any guess look close).
std::string unknown_knob_message(std::string_view key) {
  std::string out = "is not a sweepable scenario key";
  const std::string_view meant = key_of_abbreviation(leaf(key));
  if (!meant.empty() && find_knob(meant) >= 0) {
    return out + "; did you mean \"search." + std::string(meant) + "\"?";
  }
  if (!meant.empty()) {
    return out + " (" + std::string(meant) +
           " is derived from the swept knobs: sweep training.world_size, "
           "training.global_batch_size and the parallel sizes instead)";
  }
  std::vector<std::string_view> leaves;
  for (const KnobInfo& k : knob_table()) leaves.push_back(leaf(k.key));
  if (const auto i = nearest_name_index(leaf(key), leaves)) {
    out += "; did you mean \"search." + std::string(knob_table()[*i].key) + "\"?";
  } else {
    out += " (see the knob list in stepsim sweep --help)";
  }
  return out;
}

/// Collects errors for one sweep file.
class SpecReader {
 public:
  SpecReader(std::string file, std::string base_dir, const LoadOptions& options)
      : file_(std::move(file)), base_dir_(std::move(base_dir)), options_(options) {}

  Errors& errors() { return errors_; }
  /// Error::to_string joins key and message as they are ("key=8 must ...", "key is ..."); the
  /// messages here read as a sentence after the key, so the space is added once, here.
  void fail(const std::string& key, const std::string& message) {
    const bool joined = key.empty() || message.starts_with('=') || message.starts_with(' ');
    errors_.push_back(Error{file_, key, joined ? message : " " + message});
  }

  void read_base(const json& doc, std::string_view base_override, SweepSpec& spec);
  void read_search(const json& search, SweepSpec& spec);
  void read_constraints(const json& c, SweepSpec& spec);
  void read_objective(const json& doc, SweepSpec& spec);
  /// The inputs the objective needs: train_tokens, price_per_gpu_hour.
  void check_objective_inputs(const SweepSpec& spec);

 private:
  bool read_value(const std::string& key, KnobId knob, const json& v, KnobValue& out,
                  SweepSpec& spec);

  std::string file_;
  std::string base_dir_;
  const LoadOptions& options_;
  Errors errors_;
};

void SpecReader::read_base(const json& doc, std::string_view base_override, SweepSpec& spec) {
  std::string text;
  std::string label = file_;
  std::string dir = base_dir_;
  std::string key_prefix = "base.";
  if (!base_override.empty()) {
    if (doc.contains("base")) {
      fail("base",
           "is given but the base scenario also comes from the command line "
           "(--megatron-args); give one of them");
      return;
    }
    text = std::string(base_override);
  } else if (!doc.contains("base")) {
    fail("base", "is missing: give a scenario (inline object or path)");
    return;
  } else if (doc["base"].is_string()) {
    const std::string path = resolve_path(doc["base"].get<std::string>(), base_dir_, options_);
    if (path.empty()) {
      fail("base", "=\"" + doc["base"].get<std::string>() +
                       "\" cannot be read (tried beside the sweep file and in " +
                       options_.scenarios_dir + ")");
      return;
    }
    auto read = read_input_file(path);
    if (!read) {
      fail("base", "=\"" + doc["base"].get<std::string>() + "\" (" + path +
                       "): " + read.errors().front().message);
      return;
    }
    text = std::move(read).value();
    label = path;
    dir = dir_of(path);
    key_prefix.clear();
  } else if (doc["base"].is_object()) {
    text = doc["base"].dump();
  } else {
    fail("base", "must be a scenario object or a path to a scenario file");
    return;
  }
  Result<Workload> base = load_scenario_text(text, label, dir, options_);
  if (!base.ok()) {
    for (Error e : base.errors()) {
      if (!key_prefix.empty()) e.key = e.key.empty() ? "base" : key_prefix + e.key;
      errors_.push_back(std::move(e));
    }
    return;
  }
  spec.base = std::move(base).value();
  spec.defaulted = defaulted_keys_of_scenario(text);
}

bool SpecReader::read_value(const std::string& key, KnobId knob, const json& v, KnobValue& out,
                            SweepSpec& spec) {
  const KnobInfo& info = knob_table()[static_cast<std::size_t>(knob)];
  switch (info.kind) {
    case KnobKind::kInt:
      // Every integer knob is a size or count the scenario loader requires positive
      // (positive_int): 0 would reach a division (tensor_model_parallel_size) or an empty
      // loop. A value beyond int64 arrives as an unsigned integer and is refused too.
      if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<std::uint64_t>() >
                                                                   static_cast<std::uint64_t>(
                                                                       kMaxKnobInteger)) ||
          v.get<std::int64_t>() < 1) {
        fail(key, std::string("=") + describe_value(v) + " must be a positive integer");
        return false;
      }
      out.integer = v.get<std::int64_t>();
      if (const std::string problem = int_key_bound_problem(info, out.integer);
          !problem.empty()) {
        fail(key, problem);
        return false;
      }
      return true;
    case KnobKind::kBool:
      if (!v.is_boolean()) {
        fail(key, std::string("=") + describe_value(v) + " must be true or false");
        return false;
      }
      out.integer = v.get<bool>() ? 1 : 0;
      return true;
    case KnobKind::kReal:
      if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0) {
        fail(key, std::string("=") + describe_value(v) + " must be a non-negative number");
        return false;
      }
      // system.* what-ifs obey the system file's ranges (their schema rows): a gemm_max of 0
      // would otherwise give an infinite step time ranked as feasible.
      if (info.key.starts_with("system.")) {
        if (auto problem = detail::system_number_problem(info.key.substr(7), v.get<double>())) {
          fail(key, *problem);
          return false;
        }
      }
      out.real = v.get<double>();
      return true;
    case KnobKind::kChoice: {
      const std::string name = v.is_null() ? "none" : v.is_string() ? v.get<std::string>() : "";
      for (std::size_t i = 0; i < info.choices.size(); ++i) {
        if (info.choices[i] == name) {
          out.integer = static_cast<std::int64_t>(i);
          return true;
        }
      }
      std::string allowed;
      for (std::string_view c : info.choices)
        allowed += (allowed.empty() ? "" : ", ") + std::string(c);
      fail(key, std::string("=") + describe_value(v) + " is not one of: " + allowed);
      return false;
    }
    case KnobKind::kSystem: {
      if (!v.is_string()) {
        fail(key, std::string("=") + describe_value(v) + " must be a path to a system file");
        return false;
      }
      std::string path = resolve_path(v.get<std::string>(), base_dir_, options_);
      if (path.empty() && is_short_name(v.get<std::string>())) {
        const ShortNameMatch match =
            find_shipped(v.get<std::string>(), options_.scenarios_dir, ShippedKind::kSystem);
        if (!match.candidates.empty()) {
          fail(key, std::string("=") + describe_value(v) +
                        ambiguous_short_name(match, ShippedKind::kSystem));
          return false;
        }
        path = match.path;
      }
      if (path.empty()) {
        fail(key, std::string("=") + describe_value(v) +
                      " cannot be found (tried beside the sweep file and in " +
                      options_.scenarios_dir + ")");
        return false;
      }
      if (const std::string problem = input_file_problem(path); !problem.empty()) {
        fail(key, std::string("=") + describe_value(v) + " (" + path + "): " + problem);
        return false;
      }
      Result<SystemConfig> sys = load_system_file(path);
      if (!sys.ok()) {
        for (const Error& e : sys.errors()) errors_.push_back(e);
        return false;
      }
      out.system = static_cast<std::int32_t>(spec.systems.size());
      spec.systems.push_back(std::move(sys).value());
      return true;
    }
    case KnobKind::kString:
      return false;  // never a knob
  }
  return false;
}

void SpecReader::read_search(const json& search, SweepSpec& spec) {
  if (!search.is_object()) {
    fail("search", "must be an object of scenario key -> list of values or \"auto\"");
    return;
  }
  for (const auto& [key, values] : search.items()) {
    std::string path = "search.";
    path += key;
    const KnobId knob = find_knob(key);
    if (knob < 0) {
      fail(path, unknown_knob_message(key));
      continue;
    }
    const KnobInfo& info = knob_table()[static_cast<std::size_t>(knob)];
    SweepAxis axis;
    axis.knob = knob;
    if (values.is_string() && values.get<std::string>() == "auto") {
      if (!info.autoable) {
        fail(path, "=\"auto\" is only for parallel knobs; list the values");
        continue;
      }
      axis.automatic = true;
    } else {
      const json list = values.is_array() ? values : json::array({values});
      if (list.empty()) {
        fail(path, "is an empty list; give at least one value or \"auto\"");
        continue;
      }
      if (list.size() > kMaxKnobValues) {
        fail(path, "lists " + std::to_string(list.size()) + " values, beyond stepsim's limit of " +
                       std::to_string(kMaxKnobValues) + " per knob");
        continue;
      }
      bool ok = true;
      for (const json& v : list) {
        KnobValue kv;
        if (!read_value(path, knob, v, kv, spec)) {
          ok = false;
          continue;
        }
        for (const KnobValue& seen : axis.values) {
          if (seen == kv && info.kind != KnobKind::kSystem) {
            fail(path, "lists " + describe_value(v) + " twice");
            ok = false;
            break;  // once per value: a list of one value repeated stays one error each
          }
        }
        axis.values.push_back(kv);
      }
      if (!ok) continue;
    }
    spec.axes.push_back(std::move(axis));
  }
  // The listed values alone multiply to the number of configurations enumerated (each
  // "auto" axis multiplies it further by at most the divisors of a size).
  std::uint64_t product = 1;
  std::uint64_t systems = 1;
  for (const SweepAxis& axis : spec.axes) {
    if (axis.automatic) continue;
    product *= axis.values.size();
    // Each combination of system values is a system (and a cost model) built up front.
    const std::string_view knob_key = knob_table()[static_cast<std::size_t>(axis.knob)].key;
    if (knob_key == "system" || knob_key.starts_with("system.")) {
      systems *= axis.values.size();
      if (systems > kMaxSystemVariants) {
        fail("search." + std::string(knob_key),
             "gives " + std::to_string(systems) + "+ combinations of system values, beyond "
             "stepsim's limit of " + std::to_string(kMaxSystemVariants) + " systems per sweep");
        break;
      }
    }
    if (product > kMaxListedConfigurations) {
      fail("search", "lists " + std::to_string(product) +
                         "+ combinations of values, beyond stepsim's limit of " +
                         std::to_string(kMaxListedConfigurations) + " configurations");
      break;
    }
  }
  std::sort(spec.axes.begin(), spec.axes.end(),
            [](const SweepAxis& a, const SweepAxis& b) { return a.knob < b.knob; });
  const auto has = [&](std::string_view k) {
    const KnobId id = find_knob(k);
    return std::any_of(spec.axes.begin(), spec.axes.end(),
                       [&](const SweepAxis& a) { return a.knob == id; });
  };
  if (has("training.virtual_pipeline_model_parallel_size") &&
      has("training.num_layers_per_virtual_pipeline_stage")) {
    fail("search.training.num_layers_per_virtual_pipeline_stage",
         "and virtual_pipeline_model_parallel_size are both swept; sweep one of them");
  }
  if (has("training.bf16") && has("training.fp16")) {
    fail("search.training.fp16", "and bf16 are both swept; sweep one of them");
  }
}

void SpecReader::read_constraints(const json& c, SweepSpec& spec) {
  if (!c.is_object()) {
    fail("constraints", "must be an object (memory_headroom, max_gpus, step_time_budget_s)");
    return;
  }
  for (const auto& [key, v] : c.items()) {
    std::string path = "constraints.";
    path += key;  // (not "..." + key: GCC 12 raises a false -Wrestrict on it)
    if (key == "memory_headroom") {
      if (!v.is_number() || v.get<double>() < 0.0 || v.get<double>() >= 1.0) {
        fail(path, std::string("=") + describe_value(v) + " must be a fraction in [0, 1)");
        continue;
      }
      spec.constraints.memory_headroom = v.get<double>();
    } else if (key == "max_gpus") {
      if (!v.is_number_integer() || v.get<std::int64_t>() < 1) {
        fail(path, std::string("=") + describe_value(v) + " must be a positive integer");
        continue;
      }
      spec.constraints.max_gpus = v.get<std::int64_t>();
    } else if (key == "step_time_budget_s") {
      if (!v.is_number() || !(v.get<double>() > 0.0)) {
        fail(path, std::string("=") + describe_value(v) + " must be a positive number of seconds");
        continue;
      }
      spec.constraints.step_time_budget_s = v.get<double>();
    } else {
      fail(path, "is not a constraint (memory_headroom, max_gpus, step_time_budget_s)");
    }
  }
}

void SpecReader::read_objective(const json& doc, SweepSpec& spec) {
  if (doc.contains("objective")) {
    const json& o = doc["objective"];
    const std::string name = o.is_string() ? o.get<std::string>() : "";
    const std::optional<SweepObjective> named = sweep_objective_named(name);
    const bool found = named.has_value();
    if (named) spec.objective = *named;
    if (!found) {
      fail("objective", std::string("=") + o.dump() +
                            " is not one of: " + sweep_objective_names());
    }
  }
  if (doc.contains("train_tokens")) {
    const json& t = doc["train_tokens"];
    if (!t.is_number() || !(t.get<double>() >= 1.0 && t.get<double>() <= 1e18)) {
      fail("train_tokens", std::string("=") + t.dump() + " must be a number of tokens in [1, 1e18]");
    } else {
      spec.train_tokens = static_cast<std::int64_t>(t.get<double>());
    }
  }
  if (doc.contains("price_per_gpu_hour")) {
    const json& p = doc["price_per_gpu_hour"];
    if (!p.is_number() || !(p.get<double>() > 0.0 && p.get<double>() <= kMaxPricePerGpuHour)) {
      fail("price_per_gpu_hour", std::string("=") + describe_value(p) +
                                     " must be a price in (0, 1e6] per GPU-hour");
    } else {
      spec.price_per_gpu_hour = p.get<double>();
    }
  }
  check_objective_inputs(spec);
  if (doc.contains("top")) {
    const json& t = doc["top"];
    if (!t.is_number_integer() || t.get<std::int64_t>() < 1) {
      fail("top", std::string("=") + describe_value(t) + " must be a positive integer");
    } else {
      spec.top = t.get<std::int64_t>();
    }
  }
}

void SpecReader::check_objective_inputs(const SweepSpec& spec) {
  if (spec.objective == SweepObjective::kMinTimeToTrain && spec.train_tokens == 0) {
    fail("objective", "=\"min_time_to_train\" needs \"train_tokens\": the token budget to train");
  }
  if (spec.objective == SweepObjective::kMinCost && spec.price_per_gpu_hour == 0) {
    fail("objective",
         "=\"min_cost\" needs \"price_per_gpu_hour\" (or --price-per-gpu-hour): the price "
         "of one GPU for one hour");
  }
}

bool present(const json& section, const char* key) {
  return section.is_object() && section.contains(key) && !section[key].is_null();
}

}  // namespace

DefaultedKeys defaulted_keys_of_scenario(std::string_view scenario_json) {
  DefaultedKeys d;
  // The scenario was loaded (and its errors reported) before; an unreadable one defaults all.
  auto parsed = parse_json_text(scenario_json, "");
  const json doc = parsed ? std::move(parsed).value() : json::object();
  const json model = doc.is_object() && doc.contains("model") ? doc["model"] : json::object();
  const json training =
      doc.is_object() && doc.contains("training") ? doc["training"] : json::object();
  d.num_query_groups = !present(model, "num_query_groups");
  d.kv_channels = !present(model, "kv_channels");
  d.ffn_hidden_size = !present(model, "ffn_hidden_size");
  d.max_position_embeddings = !present(model, "max_position_embeddings");
  d.padded_vocab_size = !present(model, "padded_vocab_size");
  d.microbatch_group_size_per_vp_stage = !present(training, "microbatch_group_size_per_vp_stage");
  d.recompute_num_layers = !present(training, "recompute_num_layers");
  d.overlap_p2p_comm = !present(training, "overlap_p2p_comm");
  d.virtual_from_layers_per_stage = present(training, "num_layers_per_virtual_pipeline_stage");
  return d;
}

Result<SweepSpec> load_sweep_text(std::string_view text, const std::string& file_label,
                                  const std::string& base_dir, const LoadOptions& options,
                                  std::string_view base_override) {
  SpecReader r(file_label, base_dir, options);
  auto parsed = parse_json_text(text, file_label);
  if (!parsed) return parsed.errors();
  const json doc = std::move(parsed).value();
  if (!doc.is_object()) {
    r.fail("", "is not a JSON object (a sweep file has base, search, constraints, objective, top)");
    return r.errors();
  }
  SweepSpec spec;
  spec.file = file_label;
  spec.scenarios_dir = options.scenarios_dir;
  for (const auto& [key, v] : doc.items()) {
    if (key != "base" && key != "search" && key != "constraints" && key != "objective" &&
        key != "top" && key != "train_tokens" && key != "price_per_gpu_hour") {
      r.fail(key,
             "is not a sweep key (base, search, constraints, objective, top, train_tokens, "
             "price_per_gpu_hour)");
    }
  }
  r.read_base(doc, base_override, spec);
  if (!doc.contains("search")) {
    r.fail("search", "is missing: give the knobs to sweep");
  } else {
    r.read_search(doc["search"], spec);
  }
  if (doc.contains("constraints")) r.read_constraints(doc["constraints"], spec);
  r.read_objective(doc, spec);
  if (!r.errors().empty()) return r.errors();
  return spec;
}

Errors check_sweep_objective(const SweepSpec& spec) {
  SpecReader r(spec.file, "", LoadOptions{});
  r.check_objective_inputs(spec);
  return r.errors();
}

Result<SweepSpec> load_sweep_file(const std::string& path, const LoadOptions& options) {
  auto text = read_input_file(path);
  if (!text) return text.errors();
  return load_sweep_text(*text, path, dir_of(path), options);
}

}  // namespace stepsim
