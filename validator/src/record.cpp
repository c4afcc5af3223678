// Record files of the regression gate: write, read.

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "figures_json.hpp"
#include "stepsim/validator/regress.hpp"
#include "stepsim/base/json_input.hpp"
#include "stepsim/config/parse.hpp"
#include "stepsim/calibration/text_file.hpp"

namespace stepsim::calib {
namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

namespace {

Result<std::string> read_text(const std::string& path, const std::string& what) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return Error{path, "", "cannot read the " + what};
  return read_input_file(path);
}

// Checked by the one reading path (json_input.hpp), then read again keeping the key order
// (records are written back as they were read).
Result<json> read_json(const std::string& path, const std::string& what) {
  auto text = read_text(path, what);
  if (!text) return text.errors();
  if (auto checked = parse_json_text(*text, path); !checked) return checked.errors();
  json j = json::parse(*text, nullptr, false);
  if (j.is_discarded()) return Error{path, "", "is not valid JSON"};
  return j;
}

std::string record_id(const RecordInputs& in) {
  std::string id = fs::path(in.scenario_path).stem().string();
  if (in.overrides.num_layers > 0) id += "-L" + std::to_string(in.overrides.num_layers);
  if (in.overrides.world_size > 0) id += "-W" + std::to_string(in.overrides.world_size);
  return id;
}

}  // namespace

Result<std::string> write_record(const std::string& dir, const RecordInputs& in) {
  STEPSIM_ASSERT(in.report != nullptr);
  const ValidationReport& r = *in.report;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Error{dir, "", "cannot create the records folder: " + ec.message()};

  auto scenario = read_json(in.scenario_path, "scenario");
  if (!scenario) return scenario.errors();
  json sc = std::move(scenario).value();
  if (auto it = sc.find("system"); it != sc.end() && it->is_string()) {
    // Self-contained: the record outlives the checkout's files.
    const std::string system_path =
        resolve_path(it->get<std::string>(), fs::path(in.scenario_path).parent_path().string(),
                     LoadOptions{in.scenarios_dir});
    if (system_path.empty()) return Error{in.scenario_path, "system", "cannot be found"};
    auto system = read_json(system_path, "system file");
    if (!system) return system.errors();
    sc["system"] = *system;
  }
  const std::string id = record_id(in);
  std::string profile_file;
  if (!in.profile_path.empty()) {
    profile_file = id + ".profile.json";
    auto text = read_text(in.profile_path, "profile");
    if (!text) return text.errors();
    if (auto w = write_text_file((fs::path(dir) / profile_file).string(), *text); !w) {
      return w.errors();
    }
    sc["cost_model"] = {{"profile", profile_file}};
  }

  json j;
  j["format_version"] = 1;
  j["id"] = id;
  j["scenario_name"] = r.scenario;
  j["scenario_file"] = in.scenario_path;
  j["scenario"] = sc;
  j["overrides"] = {{"num_layers", in.overrides.num_layers},
                    {"world_size", in.overrides.world_size}};
  j["profile_file"] = profile_file;
  j["backend"] = r.backend;
  j["machine"] = in.machine;
  j["date"] = in.date;
  j["world_size"] = r.world_size;
  j["warmup_steps"] = r.warmup_steps;
  j["steps"] = r.steps;
  j["async_p2p"] = r.async_p2p;
  j["async_grad_reduce"] = r.async_grad_reduce;
  j["measured_step_time_s"] = r.measured_step_time_s;
  j["measured_step_times_s"] = r.measured_step_times_s;
  auto stages = json::array();
  for (const auto& s : r.stages) stages.push_back(figures_json(s.measured));
  j["measured_stages"] = stages;
  j["predicted_step_time_s"] = r.predicted_step_time_s;
  j["tolerance"] = 0.0;
  const std::string path = (fs::path(dir) / (id + ".record.json")).string();
  if (auto w = write_text_file(path, j.dump(2) + "\n"); !w) return w.errors();
  return path;
}

Result<Record> load_record(const std::string& path) {
  auto parsed = read_json(path, "record");
  if (!parsed) return parsed.errors();
  const json& j = *parsed;
  Errors errors;
  Record r;
  auto need = [&](const char* key, json::value_t type) -> const json* {
    auto it = j.find(key);
    const bool number = type == json::value_t::number_float;
    if (it == j.end() || (number ? !it->is_number() : it->type() != type)) {
      errors.push_back(Error{path, key, "is missing or has the wrong type"});
      return nullptr;
    }
    return &*it;
  };
  using V = json::value_t;
  if (!j.is_object()) return Error{path, "", "must be a JSON object"};
  if (const auto* v = need("format_version", V::number_unsigned)) r.format_version = v->get<int>();
  if (r.format_version != 1) errors.push_back(Error{path, "format_version", "must be 1"});
  if (const auto* v = need("id", V::string)) r.id = v->get<std::string>();
  if (const auto* v = need("scenario_name", V::string)) r.scenario_name = v->get<std::string>();
  if (const auto* v = need("scenario_file", V::string)) r.scenario_file = v->get<std::string>();
  if (const auto* v = need("scenario", V::object)) r.scenario_json = v->dump();
  if (const auto* v = need("overrides", V::object)) {
    r.overrides.num_layers = v->value("num_layers", std::int64_t{0});
    r.overrides.world_size = v->value("world_size", std::int64_t{0});
  }
  if (const auto* v = need("profile_file", V::string)) r.profile_file = v->get<std::string>();
  if (const auto* v = need("backend", V::string)) r.backend = v->get<std::string>();
  if (const auto* v = need("machine", V::string)) r.machine = v->get<std::string>();
  if (const auto* v = need("date", V::string)) r.date = v->get<std::string>();
  if (const auto* v = need("world_size", V::number_unsigned)) r.world_size = v->get<std::int32_t>();
  if (const auto* v = need("warmup_steps", V::number_unsigned)) {
    r.warmup_steps = v->get<std::int32_t>();
  }
  if (const auto* v = need("steps", V::number_unsigned)) r.steps = v->get<std::int32_t>();
  // Absent from records written before the executor ran non-blocking calls beside the compute.
  if (const auto it = j.find("async_p2p"); it != j.end()) {
    if (it->is_boolean()) {
      r.async_p2p = it->get<bool>();
    } else {
      errors.push_back(Error{path, "async_p2p", "must be true or false"});
    }
  }
  // Absent from records written before the executor ran the gradient reductions beside it.
  if (const auto it = j.find("async_grad_reduce"); it != j.end()) {
    if (it->is_boolean()) {
      r.async_grad_reduce = it->get<bool>();
    } else {
      errors.push_back(Error{path, "async_grad_reduce", "must be true or false"});
    }
  }
  if (const auto* v = need("measured_step_time_s", V::number_float)) {
    r.measured_step_time_s = v->get<double>();
  }
  if (const auto* v = need("measured_step_times_s", V::array)) {
    for (const auto& x : *v) r.measured_step_times_s.push_back(x.get<double>());
  }
  if (const auto* v = need("measured_stages", V::array)) {
    for (const auto& s : *v) {
      r.measured_stages.push_back(
          StageFigures{.busy_s = s.value("busy_s", 0.0),
                       .comm_s = s.value("comm_s", 0.0),
                       .wait_s = s.value("wait_s", 0.0),  // absent from records before it
                       .idle_s = s.value("idle_s", 0.0),
                       .overlap_s = s.value("overlap_s", 0.0)});
    }
  }
  if (const auto* v = need("predicted_step_time_s", V::number_float)) {
    r.predicted_step_time_s = v->get<double>();
  }
  if (const auto* v = need("tolerance", V::number_float)) r.tolerance = v->get<double>();
  if (r.measured_step_time_s <= 0 && errors.empty()) {
    errors.push_back(Error{path, "measured_step_time_s", "must be positive"});
  }
  if (!errors.empty()) return errors;
  return r;
}

Result<std::vector<Record>> load_records(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return Error{dir, "", "is not a folder of records"};
  std::vector<std::string> paths;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const std::string suffix = ".record.json";
    if (name.size() > suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      paths.push_back(e.path().string());
    }
  }
  std::sort(paths.begin(), paths.end());
  Errors errors;
  std::vector<Record> records;
  for (const auto& p : paths) {
    auto r = load_record(p);
    if (!r) {
      errors.insert(errors.end(), r.errors().begin(), r.errors().end());
      continue;
    }
    records.push_back(std::move(r).value());
  }
  if (!errors.empty()) return errors;
  if (records.empty()) return Error{dir, "", "holds no *.record.json (run validate --record)"};
  return records;
}

}  // namespace stepsim::calib
