#include "stepsim/config/shipped.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <system_error>

#include "stepsim/config/parse.hpp"

namespace stepsim {

const char* shipped_folder(ShippedKind kind) {
  return kind == ShippedKind::kSystem ? "systems" : "profiles";
}

bool is_short_name(const std::string& value) {
  return !value.empty() && value.find('/') == std::string::npos &&
         value.find(".json") == std::string::npos;
}

std::vector<std::string> shipped_stems(const std::string& scenarios_dir, ShippedKind kind) {
  namespace fs = std::filesystem;
  std::vector<std::string> stems;
  if (scenarios_dir.empty()) return stems;
  std::error_code ec;
  for (fs::directory_iterator it(fs::path(scenarios_dir) / shipped_folder(kind), ec), end;
       !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    if (p.extension() == ".json" && it->is_regular_file(ec)) stems.push_back(p.stem().string());
  }
  std::sort(stems.begin(), stems.end());
  return stems;
}

ShortNameMatch find_shipped(const std::string& value, const std::string& scenarios_dir,
                            ShippedKind kind) {
  ShortNameMatch match;
  const std::vector<std::string> stems = shipped_stems(scenarios_dir, kind);
  const auto path_of = [&](const std::string& stem) {
    return (std::filesystem::path(scenarios_dir) / shipped_folder(kind) / (stem + ".json"))
        .lexically_normal()
        .string();
  };
  if (std::find(stems.begin(), stems.end(), value) != stems.end()) {
    match.path = path_of(value);
    return match;
  }
  for (const std::string& stem : stems) {
    if (stem.starts_with(value)) match.candidates.push_back(stem);
  }
  if (match.candidates.size() == 1) {
    match.path = path_of(match.candidates.front());
    match.candidates.clear();
  }
  return match;
}

std::string ambiguous_short_name(const ShortNameMatch& match, ShippedKind kind) {
  std::string listed;
  for (const std::string& c : match.candidates) listed += (listed.empty() ? "" : ", ") + c;
  return std::string(" matches several shipped ") + shipped_folder(kind) + ": " + listed +
         "; give one of them";
}

std::string profile_prefix_of_gpu(const std::string& gpu_name) {
  const std::size_t space = gpu_name.find(' ');
  std::string prefix = space == std::string::npos ? gpu_name : gpu_name.substr(space + 1);
  for (char& c : prefix) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return prefix;
}

std::string public_profile_of_gpu(const std::string& gpu_name, const std::string& scenarios_dir) {
  if (gpu_name.empty() || scenarios_dir.empty()) return "";
  const std::string stem = profile_prefix_of_gpu(gpu_name) + "-public";
  const std::vector<std::string> stems = shipped_stems(scenarios_dir, ShippedKind::kProfile);
  if (std::find(stems.begin(), stems.end(), stem) == stems.end()) return "";
  return (std::filesystem::path(scenarios_dir) / shipped_folder(ShippedKind::kProfile) /
          (stem + ".json"))
      .lexically_normal()
      .string();
}

CostModelSpec default_cost_model(const std::string& gpu_name, const std::string& scenarios_dir) {
  CostModelSpec spec;
  spec.profile_path = public_profile_of_gpu(gpu_name, scenarios_dir);
  if (!spec.profile_path.empty()) spec.kind = CostModelSpec::Kind::kProfile;
  spec.defaulted = true;
  return spec;
}

std::string default_cost_model_note(const CostModelSpec& spec, const std::string& gpu_name) {
  if (!spec.defaulted) return "";
  if (spec.kind == CostModelSpec::Kind::kProfile) {
    return "default: the shipped public profile of the system's GPU; \"cost_model\": "
           "\"roofline\" for the data sheet's roofline";
  }
  return "default: no public profile of the " + gpu_name +
         " ships; \"cost_model\": {\"profile\": \"<file>\"} for a calibrated one";
}

Result<std::vector<ShippedSystem>> shipped_systems(const std::string& scenarios_dir) {
  const std::vector<std::string> profiles = shipped_stems(scenarios_dir, ShippedKind::kProfile);
  std::vector<ShippedSystem> rows;
  Errors errors;
  for (const std::string& stem : shipped_stems(scenarios_dir, ShippedKind::kSystem)) {
    Result<SystemConfig> sys = load_system_file(
        (std::filesystem::path(scenarios_dir) / "systems" / (stem + ".json")).string());
    if (!sys.ok()) {
      errors.insert(errors.end(), sys.errors().begin(), sys.errors().end());
      continue;
    }
    ShippedSystem row{.name = stem,
                      .gpu_name = sys->gpu_name,
                      .gpus_per_node = sys->gpus_per_node,
                      .intra_node_bandwidth_bytes_per_s = sys->intra_node.bandwidth_bytes_per_s,
                      .inter_node_bandwidth_bytes_per_s = sys->inter_node.bandwidth_bytes_per_s,
                      .profiles = {},
                      .default_cost_model = "roofline"};
    const std::string public_profile = public_profile_of_gpu(sys->gpu_name, scenarios_dir);
    if (!public_profile.empty()) {
      row.default_cost_model = std::filesystem::path(public_profile).stem().string();
    }
    const std::string prefix = profile_prefix_of_gpu(sys->gpu_name) + "-";
    for (const std::string& p : profiles) {
      if (p.starts_with(prefix)) row.profiles.push_back(p);
    }
    rows.push_back(std::move(row));
  }
  if (!errors.empty()) return errors;
  return rows;
}

std::string shipped_systems_json(const std::vector<ShippedSystem>& rows) {
  nlohmann::json doc = nlohmann::json::array();
  for (const ShippedSystem& s : rows) {
    doc.push_back({{"name", s.name},
                   {"gpu_name", s.gpu_name},
                   {"gpus_per_node", s.gpus_per_node},
                   {"intra_node_bandwidth_bytes_per_s", s.intra_node_bandwidth_bytes_per_s},
                   {"inter_node_bandwidth_bytes_per_s", s.inter_node_bandwidth_bytes_per_s},
                   {"profiles", s.profiles},
                   {"default_cost_model", s.default_cost_model}});
  }
  return doc.dump(2) + "\n";
}

}  // namespace stepsim
