#include "stepsim/report/open_accuracy.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <ostream>

#include "stepsim/base/json_input.hpp"
#include "stepsim/report/accuracy.hpp"
#include "stepsim/report/json_writer.hpp"

namespace stepsim::sim {

namespace {

/// FNV-1a, 64 bits (offset basis 14695981039346656037, prime 1099511628211), as 16 hex digits.
std::string fnv1a64(std::string_view bytes) {
  std::uint64_t h = 14695981039346656037ULL;
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
  return out;
}

double rounded(double error) { return std::round(error * 1e4) / 1e4; }

/// A number of the table's entry, or an error naming it.
bool number_of(const nlohmann::json& entry, const char* key, double& out) {
  const auto it = entry.find(key);
  if (it == entry.end() || !it->is_number()) return false;
  out = it->get<double>();
  return std::isfinite(out);
}

}  // namespace

Result<CostData> cost_data_of(const Workload& w) {
  if (w.cost_model.kind == CostModelSpec::Kind::kRoofline) {
    return CostData{"roofline " + w.system.name, ""};
  }
  Result<std::string> bytes = read_input_file(w.cost_model.profile_path);
  if (!bytes) return bytes.errors();
  return CostData{std::filesystem::path(w.cost_model.profile_path).filename().string(),
                  fnv1a64(*bytes)};
}

std::vector<CostDataAccuracy> accuracy_by_cost_data(const AccuracyReport& report) {
  std::map<std::pair<std::string, std::string>, std::vector<double>> errors;
  for (const AccuracyRow& r : report.rows) {
    errors[{r.cost_data.name, r.cost_data.fnv1a64}].push_back(r.error);
  }
  std::vector<CostDataAccuracy> out;
  for (const auto& [key, e] : errors) {
    CostDataAccuracy entry{CostData{key.first, key.second}, {}};
    OpenAccuracy& a = entry.accuracy;
    a.runs = static_cast<std::int64_t>(e.size());
    for (const double x : e) {
      a.mean_error += x / static_cast<double>(e.size());
      a.mean_absolute_error += std::abs(x) / static_cast<double>(e.size());
    }
    a.min_error = *std::min_element(e.begin(), e.end());
    a.max_error = *std::max_element(e.begin(), e.end());
    out.push_back(std::move(entry));
  }
  return out;
}

void write_accuracy_by_cost_data_json(const std::vector<CostDataAccuracy>& table,
                                      std::ostream& out) {
  JsonWriter j(out);
  j.begin_object();
  j.field("format_version", std::int64_t{1});
  j.field(
      "note",
      std::string_view(
          "Written by `stepsim accuracy --by-profile` (tests/golden/regenerate.sh): what the open "
          "report measured per cost data (a profile by its bytes' FNV-1a 64 hash, or a "
          "roofline), error = predicted / measured step time - 1. predict states it; nothing "
          "applies it to a prediction."));
  j.key("cost_data").begin_array();
  for (const CostDataAccuracy& e : table) {
    j.begin_object();
    j.field("name", std::string_view(e.cost_data.name));
    if (!e.cost_data.fnv1a64.empty()) j.field("fnv1a64", std::string_view(e.cost_data.fnv1a64));
    j.field("runs", e.accuracy.runs);
    j.field("mean_error", rounded(e.accuracy.mean_error));
    j.field("mean_absolute_error", rounded(e.accuracy.mean_absolute_error));
    j.field("min_error", rounded(e.accuracy.min_error));
    j.field("max_error", rounded(e.accuracy.max_error));
    j.end_object();
  }
  j.end_array();
  j.end_object();
  out << "\n";
}

std::string open_accuracy_table_path(const std::string& scenarios_dir) {
  return (std::filesystem::path(scenarios_dir) / "published" / "accuracy-by-profile.json").string();
}

Result<std::optional<OpenAccuracy>> open_accuracy_of(const Workload& w, const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::optional<OpenAccuracy>{};
  Result<nlohmann::json> doc = read_json_file(path);
  if (!doc) return doc.errors();
  Result<CostData> mine = cost_data_of(w);
  if (!mine) return mine.errors();
  const auto bad = [&path](const std::string& why) {
    return Error{path, "cost_data", why + " (regenerate it: tests/golden/regenerate.sh)",
                 ErrorKind::kInternal};
  };
  const auto entries = doc->find("cost_data");
  if (!doc->is_object() || entries == doc->end() || !entries->is_array()) {
    return bad("must be an array of entries");
  }
  for (const nlohmann::json& e : *entries) {
    const auto name = e.is_object() ? e.find("name") : e.end();
    if (!e.is_object() || name == e.end() || !name->is_string()) return bad("entry without a name");
    const auto hash = e.find("fnv1a64");
    const std::string fnv = hash != e.end() && hash->is_string() ? hash->get<std::string>() : "";
    // A profile matches by its bytes, whatever its file is called; a roofline by its name.
    if (mine->fnv1a64.empty() ? name->get<std::string>() != mine->name : fnv != mine->fnv1a64) {
      continue;
    }
    OpenAccuracy a;
    const auto runs = e.find("runs");
    if (runs == e.end() || !runs->is_number_integer() || runs->get<std::int64_t>() < 1 ||
        !number_of(e, "mean_error", a.mean_error) ||
        !number_of(e, "mean_absolute_error", a.mean_absolute_error) ||
        !number_of(e, "min_error", a.min_error) || !number_of(e, "max_error", a.max_error)) {
      return bad("entry " + name->get<std::string>() + " lacks runs or an error figure");
    }
    a.runs = runs->get<std::int64_t>();
    return std::optional<OpenAccuracy>{a};
  }
  return std::optional<OpenAccuracy>{OpenAccuracy{}};
}

}  // namespace stepsim::sim
