// System files: one GPU type, its node and network, and the roofline efficiency curves.
// The format is documented in scenarios/README.md; every figure must be cited in `sources`.

#include <cmath>
#include <limits>
#include <optional>
#include <string_view>
#include <vector>

#include "stepsim/base/json_fields.hpp"
#include "stepsim/config/load_internal.hpp"
#include "stepsim/base/json_input.hpp"
#include "stepsim/config/parse.hpp"
#include "stepsim/config/schema.hpp"

namespace stepsim {

namespace detail {

namespace {

using nlohmann::json;

// Every figure a system file holds, as the dotted key its citation goes under in `sources`:
// the schema's numeric "system." rows. An optional figure (peak_flops_fp8, sm_count,
// compute_capability) is cited
// when given.
struct CitedKey {
  std::string_view key;
  bool required = true;
};
std::vector<CitedKey> cited_keys() {
  std::vector<CitedKey> keys;
  for (const KeyInfo& k : scenario_schema()) {
    if (k.key.starts_with("system.") && (k.kind == KnobKind::kInt || k.kind == KnobKind::kReal)) {
      keys.push_back({k.key.substr(std::string_view("system.").size()), k.required});
    }
  }
  return keys;
}

// Reads the number `key` of `r` (whose path within a system is `dotted`) under its rule.
std::optional<double> ruled_number(ObjectReader& r, std::string_view key, std::string_view dotted,
                                   bool required = true) {
  const auto v = r.number(key, required, -std::numeric_limits<double>::max(),
                          std::numeric_limits<double>::max());
  if (!v) return std::nullopt;
  if (auto problem = system_number_problem(dotted, *v)) {
    r.error(key, *problem);
    return std::nullopt;
  }
  return v;
}

LinkSpec parse_link(ObjectReader& parent, std::string_view key, Errors& errors) {
  LinkSpec link;
  const json* object = parent.object(key, true);
  if (object == nullptr) return link;
  ObjectReader r(*object, parent.file(), parent.path(key), errors);
  const std::string link_key(key);
  if (auto v = ruled_number(r, "bandwidth_Bps", link_key + ".bandwidth_Bps")) {
    link.bandwidth_bytes_per_s = *v;
  }
  if (auto v = ruled_number(r, "latency_s", link_key + ".latency_s")) link.latency_s = *v;
  r.reject_unknown_keys();
  return link;
}

RooflineEfficiency parse_efficiency(ObjectReader& parent, Errors& errors) {
  RooflineEfficiency e;
  const json* object = parent.object("efficiency", true);
  if (object == nullptr) return e;
  ObjectReader r(*object, parent.file(), parent.path("efficiency"), errors);
  if (auto v = ruled_number(r, "gemm_max", "efficiency.gemm_max")) e.gemm_max = *v;
  if (auto v = ruled_number(r, "gemm_half_flops", "efficiency.gemm_half_flops")) {
    e.gemm_half_flops = *v;
  }
  if (auto v = ruled_number(r, "memory_max", "efficiency.memory_max")) e.memory_max = *v;
  if (auto v = ruled_number(r, "kernel_launch_s", "efficiency.kernel_launch_s")) {
    e.kernel_launch_s = *v;
  }
  if (auto v = ruled_number(r, "link_max", "efficiency.link_max")) e.link_max = *v;
  r.reject_unknown_keys();
  return e;
}

// The optional interference block: both factors when given (1, none, when absent).
Interference parse_interference(ObjectReader& parent, Errors& errors) {
  Interference k;
  const json* object = parent.object("interference", false);
  if (object == nullptr) return k;
  ObjectReader r(*object, parent.file(), parent.path("interference"), errors);
  if (auto v = ruled_number(r, "compute_slowdown", "interference.compute_slowdown")) {
    k.compute_slowdown = *v;
  }
  if (auto v = ruled_number(r, "collective_slowdown", "interference.collective_slowdown")) {
    k.collective_slowdown = *v;
  }
  r.reject_unknown_keys();
  return k;
}

void check_sources(ObjectReader& parent, const json& system, Errors& errors) {
  const json* object = parent.object("sources", true);
  if (object == nullptr) return;
  ObjectReader r(*object, parent.file(), parent.path("sources"), errors);
  for (const auto& [key, required] : cited_keys()) {
    const json* cited = r.raw(key);
    // An optional figure (a top-level key) needs its citation only when the file gives it.
    if (!required && cited == nullptr && !has_dotted_key(system, key)) continue;
    if (cited == nullptr) {
      r.error(key, " must cite where the figure " + parent.path(key) + " comes from");
    } else if (!cited->is_string() || cited->get<std::string>().empty()) {
      r.error(key, std::string("=") + describe(*cited) + " must be a non-empty citation string");
    }
  }
  r.reject_unknown_keys();
}

// An integer figure of a system file under its schema row's bounds (> 0, at most
// int_key_max): the NCCL model and the memory report hold these in int and int64.
std::optional<std::int64_t> bounded_int(ObjectReader& r, std::string_view key, bool required) {
  auto v = r.positive_int(key, required);
  if (!v) return v;
  if (const KeyInfo* row = find_schema_key("system." + std::string(key))) {
    if (const std::string problem = int_key_bound_problem(*row, *v); !problem.empty()) {
      r.error(key, problem);
      return std::nullopt;
    }
  }
  return v;
}

}  // namespace

// The range of every number of a system file is its schema row's (schema/system.cpp).
std::optional<std::string> system_number_problem(std::string_view dotted_key, double value) {
  for (const KeyInfo& rule : scenario_schema()) {
    if (rule.unit.empty() || !rule.key.starts_with("system.") ||
        rule.key.substr(std::string_view("system.").size()) != dotted_key) {
      continue;
    }
    if (std::isfinite(value) && rule.zero_allowed && value == 0) return std::nullopt;
    if (std::isfinite(value) && value >= rule.min && value <= rule.max) return std::nullopt;
    return "=" + format_number(value) + " must be " + (rule.zero_allowed ? "0 or " : "") +
           "between " + format_number(rule.min) + " and " + format_number(rule.max);
  }
  return std::nullopt;
}

SystemConfig parse_system(const json& object, const std::string& file, const std::string& prefix,
                          Errors& errors) {
  SystemConfig s;
  ObjectReader r(object, file, prefix, errors);
  if (auto v = r.string("name", true)) s.name = *v;
  r.string("description", false);
  if (auto v = r.string("gpu_name", true)) s.gpu_name = *v;
  const auto fp32 = ruled_number(r, "peak_flops_fp32", "peak_flops_fp32");
  const auto fp16 = ruled_number(r, "peak_flops_fp16", "peak_flops_fp16");
  const auto bf16 = ruled_number(r, "peak_flops_bf16", "peak_flops_bf16");
  s.peak_flops_fp32 = fp32.value_or(0);
  s.peak_flops_fp16 = fp16.value_or(0);
  s.peak_flops_bf16 = bf16.value_or(0);
  s.peak_flops_fp8 = ruled_number(r, "peak_flops_fp8", "peak_flops_fp8", false).value_or(0);
  s.peak_flops_fp4 = ruled_number(r, "peak_flops_fp4", "peak_flops_fp4", false).value_or(0);
  if (fp32 && fp16 && bf16 && *fp32 <= 0 && *fp16 <= 0 && *bf16 <= 0) {
    r.error("peak_flops_bf16", "=0: at least one of peak_flops_fp32/fp16/bf16 must be positive");
  }
  if (auto v = bounded_int(r, "memory_bytes", true)) s.memory_bytes = *v;
  if (auto v = ruled_number(r, "hbm_bandwidth_Bps", "hbm_bandwidth_Bps")) {
    s.hbm_bandwidth_bytes_per_s = *v;
  }
  if (auto v = bounded_int(r, "gpus_per_node", true)) s.gpus_per_node = *v;
  if (auto v = bounded_int(r, "nics_per_node", true)) s.nics_per_node = *v;
  if (auto v = bounded_int(r, "nvlink_domain_size", false)) {
    // A domain holds whole hosts (an NVL72 rack: 18 trays of 4 GPUs).
    if (s.gpus_per_node > 0 && *v % s.gpus_per_node != 0) {
      r.error("nvlink_domain_size", "=" + std::to_string(*v) +
                                        " must be a multiple of gpus_per_node=" +
                                        std::to_string(s.gpus_per_node) +
                                        " (an NVLink domain holds whole nodes)");
    } else {
      s.nvlink_domain_size = *v;
    }
  }
  if (auto v = bounded_int(r, "sm_count", false)) s.sm_count = *v;
  if (auto v = r.positive_int("compute_capability", false)) {
    // NCCL's cudaCompCap spelling: 10.0 is 100; a figure outside [10, 1000] is a typo.
    if (*v < 10 || *v > 1000) {
      r.error("compute_capability", "=" + std::to_string(*v) +
                                        " is not a compute capability as major * 10 + minor "
                                        "(90 for 9.0, 100 for 10.0)");
    } else {
      s.compute_capability = *v;
    }
  }
  s.intra_node = parse_link(r, "intra_node", errors);
  s.inter_node = parse_link(r, "inter_node", errors);
  s.efficiency = parse_efficiency(r, errors);
  s.interference = parse_interference(r, errors);
  check_sources(r, object, errors);
  r.reject_unknown_keys();
  return s;
}

std::optional<std::string> read_text_file(const std::string& path, Errors& errors) {
  auto text = read_input_file(path);
  if (!text) {
    errors.insert(errors.end(), text.errors().begin(), text.errors().end());
    return std::nullopt;
  }
  return std::move(text).value();
}

std::string parent_dir(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace detail

Result<SystemConfig> load_system_file(const std::string& path) {
  Errors errors;
  const auto text = detail::read_text_file(path, errors);
  if (!text) return errors;
  const auto json = detail::parse_json(*text, path, errors);
  if (!json) return errors;
  if (!json->is_object()) {
    return Error{path, "", "a system file must hold one JSON object"};
  }
  SystemConfig system = detail::parse_system(*json, path, "", errors);
  if (!errors.empty()) return errors;
  return system;
}

}  // namespace stepsim
