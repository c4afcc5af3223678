#include "summary_reader.hpp"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "stepsim/base/json_input.hpp"

namespace stepsim::gui::detail {

namespace {

using nlohmann::json;

class SummaryReader {
 public:
  SummaryReader(const std::string& file, Errors& errors) : file_(file), errors_(errors) {}

  void problem(const std::string& key, const std::string& message) {
    errors_.push_back(Error{file_, key, message});
  }

  // A number in [0, max] under `key` of `obj`; `required` makes absence a problem. The bound
  // keeps every later conversion to an integer defined.
  bool number(const json& obj, const std::string& path, const char* key, double& out,
              bool required, double max = 1e18) {
    auto it = obj.find(key);
    if (it == obj.end()) {
      if (required) problem(path + "." + key, " is missing");
      return false;
    }
    if (!it->is_number() || it->get<double>() < 0 || it->get<double>() > max) {
      char bound[32];
      std::snprintf(bound, sizeof bound, "%g", max);
      problem(path + "." + key, std::string(" must be a number >= 0 and at most ") + bound);
      return false;
    }
    out = it->get<double>();
    return true;
  }

  void read(const json& root, TraceSummary& out) {
    if (!root.is_object()) {
      problem("stepsim", " must be an object (the step summary)");
      return;
    }
    out.present = true;
    if (auto it = root.find("label"); it != root.end()) {
      if (it->is_string()) {
        out.label = it->get<std::string>();
      } else {
        problem("stepsim.label", " must be a string (\"predicted\" or \"measured\")");
      }
    }
    number(root, "stepsim", "step_time_s", out.step_time_s, false);
    double value = 0;
    if (number(root, "stepsim", "ranks", value, false, 1 << 24))
      out.ranks = static_cast<std::int32_t>(value);
    if (number(root, "stepsim", "memory_capacity_bytes", value, false)) {
      out.memory_capacity_bytes = static_cast<std::int64_t>(value);
    }
    read_chain(root, out);
    auto stages = root.find("stages");
    if (stages == root.end()) return;
    if (!stages->is_array()) {
      problem("stepsim.stages",
              " must be an array of {stage, busy_s, bubble_s, "
              "exposed_comm_s, peak_memory_bytes}");
      return;
    }
    for (std::size_t i = 0; i < stages->size(); ++i) {
      const json& s = (*stages)[i];
      const std::string path = "stepsim.stages[" + std::to_string(i) + "]";
      if (!s.is_object()) {
        problem(path, " must be an object");
        continue;
      }
      StageSummary stage;
      double id = 0;
      bool ok = number(s, path, "stage", id, true, 1 << 24);
      ok = number(s, path, "busy_s", stage.busy_s, true) && ok;
      ok = number(s, path, "bubble_s", stage.bubble_s, true) && ok;
      ok = number(s, path, "exposed_comm_s", stage.exposed_comm_s, true) && ok;
      double peak = 0;
      ok = number(s, path, "peak_memory_bytes", peak, true) && ok;
      if (!ok) continue;
      stage.stage = static_cast<std::int32_t>(id);
      stage.peak_memory_bytes = static_cast<std::int64_t>(peak);
      out.stages.push_back(stage);
    }
  }

  // `critical_chain`: [{rank, tid, start_s, end_s}, ...] as the simulator writes it.
  void read_chain(const json& root, TraceSummary& out) {
    auto chain = root.find("critical_chain");
    if (chain == root.end()) return;
    if (!chain->is_array()) {
      problem("stepsim.critical_chain", " must be an array of {rank, tid, start_s, end_s}");
      return;
    }
    for (std::size_t i = 0; i < chain->size(); ++i) {
      const json& link = (*chain)[i];
      const std::string path = "stepsim.critical_chain[" + std::to_string(i) + "]";
      if (!link.is_object()) {
        problem(path, " must be an object");
        continue;
      }
      double rank = 0, tid = 0, start = 0, end = 0;
      bool ok = number(link, path, "rank", rank, true, 1 << 24);
      ok = number(link, path, "tid", tid, true, 1 << 24) && ok;
      ok = number(link, path, "start_s", start, true, 1e12) && ok;
      ok = number(link, path, "end_s", end, true, 1e12) && ok;
      if (ok && end < start) {
        problem(path + ".end_s", " must not be before start_s");
        ok = false;
      }
      if (!ok) continue;
      out.critical_chain.push_back(ChainLink{.rank = static_cast<std::int32_t>(rank),
                                             .stream = static_cast<std::int32_t>(tid),
                                             .start_us = start * 1e6,
                                             .end_us = end * 1e6});
    }
  }

 private:
  const std::string& file_;
  Errors& errors_;
};

}  // namespace

void read_summary(std::string_view text, const std::string& file, TraceSummary& out,
                  Errors& errors) {
  SummaryReader reader(file, errors);
  auto root = parse_json_text(text, file);
  if (!root) {
    for (const Error& e : root.errors()) {
      reader.problem(e.key.empty() ? "stepsim" : "stepsim." + e.key,
                     " is not valid JSON: " + e.message);
    }
    return;
  }
  reader.read(*root, out);
}

}  // namespace stepsim::gui::detail
