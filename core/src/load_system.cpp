// System files: one GPU type, its node and network, and the roofline efficiency curves.
// The format is documented in scenarios/README.md; every figure must be cited in `sources`.

#include <array>
#include <fstream>
#include <sstream>
#include <string_view>
#include <vector>

#include "json_fields.hpp"
#include "load_internal.hpp"
#include "stepsim/core/load.hpp"
#include "stepsim/core/schema.hpp"

namespace stepsim {

namespace detail {

namespace {

using nlohmann::json;

constexpr double kHuge = 1e30;  // upper bound for rates: anything above is a typo

// Every figure a system file holds, as the dotted key its citation goes under in `sources`:
// the schema's numeric "system." rows.
std::vector<std::string_view> cited_keys() {
  std::vector<std::string_view> keys;
  for (const KeyInfo& k : scenario_schema()) {
    if (k.key.starts_with("system.") && (k.kind == KnobKind::kInt || k.kind == KnobKind::kReal)) {
      keys.push_back(k.key.substr(std::string_view("system.").size()));
    }
  }
  return keys;
}

LinkSpec parse_link(ObjectReader& parent, std::string_view key, Errors& errors) {
  LinkSpec link;
  const json* object = parent.object(key, true);
  if (object == nullptr) return link;
  ObjectReader r(*object, parent.file(), parent.path(key), errors);
  if (auto v = r.positive_number("bandwidth_Bps")) link.bandwidth_bytes_per_s = *v;
  if (auto v = r.number("latency_s", true, 0, 1)) link.latency_s = *v;
  r.reject_unknown_keys();
  return link;
}

RooflineEfficiency parse_efficiency(ObjectReader& parent, Errors& errors) {
  RooflineEfficiency e;
  const json* object = parent.object("efficiency", true);
  if (object == nullptr) return e;
  ObjectReader r(*object, parent.file(), parent.path("efficiency"), errors);
  if (auto v = r.fraction("gemm_max")) e.gemm_max = *v;
  if (auto v = r.number("gemm_half_flops", true, 0, kHuge)) e.gemm_half_flops = *v;
  if (auto v = r.fraction("memory_max")) e.memory_max = *v;
  if (auto v = r.number("kernel_launch_s", true, 0, 1)) e.kernel_launch_s = *v;
  if (auto v = r.fraction("link_max")) e.link_max = *v;
  r.reject_unknown_keys();
  return e;
}

void check_sources(ObjectReader& parent, Errors& errors) {
  const json* object = parent.object("sources", true);
  if (object == nullptr) return;
  ObjectReader r(*object, parent.file(), parent.path("sources"), errors);
  for (const std::string_view key : cited_keys()) {
    const json* cited = r.raw(key);
    if (cited == nullptr) {
      r.error(key, " must cite where the figure " + parent.path(key) + " comes from");
    } else if (!cited->is_string() || cited->get<std::string>().empty()) {
      r.error(key, std::string("=") + describe(*cited) + " must be a non-empty citation string");
    }
  }
  r.reject_unknown_keys();
}

}  // namespace

SystemConfig parse_system(const json& object, const std::string& file, const std::string& prefix,
                          Errors& errors) {
  SystemConfig s;
  ObjectReader r(object, file, prefix, errors);
  if (auto v = r.string("name", true)) s.name = *v;
  r.string("description", false);
  if (auto v = r.string("gpu_name", true)) s.gpu_name = *v;
  const auto fp32 = r.number("peak_flops_fp32", true, 0, kHuge);
  const auto fp16 = r.number("peak_flops_fp16", true, 0, kHuge);
  const auto bf16 = r.number("peak_flops_bf16", true, 0, kHuge);
  s.peak_flops_fp32 = fp32.value_or(0);
  s.peak_flops_fp16 = fp16.value_or(0);
  s.peak_flops_bf16 = bf16.value_or(0);
  if (fp32 && fp16 && bf16 && *fp32 <= 0 && *fp16 <= 0 && *bf16 <= 0) {
    r.error("peak_flops_bf16", "=0: at least one of peak_flops_fp32/fp16/bf16 must be positive");
  }
  if (auto v = r.positive_int("memory_bytes", true)) s.memory_bytes = *v;
  if (auto v = r.positive_number("hbm_bandwidth_Bps")) s.hbm_bandwidth_bytes_per_s = *v;
  if (auto v = r.positive_int("gpus_per_node", true)) s.gpus_per_node = *v;
  if (auto v = r.positive_int("nics_per_node", true)) s.nics_per_node = *v;
  s.intra_node = parse_link(r, "intra_node", errors);
  s.inter_node = parse_link(r, "inter_node", errors);
  s.efficiency = parse_efficiency(r, errors);
  check_sources(r, errors);
  r.reject_unknown_keys();
  return s;
}

std::optional<std::string> read_text_file(const std::string& path, Errors& errors) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    errors.push_back({path, "", "cannot open the file (missing or unreadable)"});
    return std::nullopt;
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    errors.push_back({path, "", "cannot read the file"});
    return std::nullopt;
  }
  return text.str();
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
