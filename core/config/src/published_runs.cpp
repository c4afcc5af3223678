#include "stepsim/config/published_runs.hpp"

#include <filesystem>

#include "stepsim/base/json_fields.hpp"
#include "stepsim/base/json_input.hpp"

namespace stepsim {

Result<std::vector<PublishedRun>> load_published_runs(const std::string& path) {
  auto text = read_input_file(path);
  if (!text) return text.errors();
  Errors errors;
  const std::optional<nlohmann::json> doc = detail::parse_json(*text, path, errors);
  if (!doc) return errors;
  if (!doc->is_object()) return Error{path, "", "must be a JSON object"};
  detail::ObjectReader top(*doc, path, "", errors);
  const std::optional<std::int64_t> version = top.positive_int("format_version", true);
  if (version && *version != 1)
    top.error("format_version", "=" + std::to_string(*version) + " is not supported (1)");
  const nlohmann::json* runs = top.raw("runs");
  top.reject_unknown_keys();
  std::vector<PublishedRun> out;
  if (runs == nullptr || !runs->is_array() || runs->empty()) {
    errors.push_back(Error{path, "runs", "must be a non-empty array of runs"});
    return errors;
  }
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  for (std::size_t i = 0; i < runs->size(); ++i) {
    const nlohmann::json& r = (*runs)[i];
    const std::string prefix = "runs[" + std::to_string(i) + "]";
    if (!r.is_object()) {
      errors.push_back(Error{path, prefix, "must be an object"});
      continue;
    }
    detail::ObjectReader reader(r, path, prefix, errors);
    PublishedRun run;
    const auto scenario = reader.string("scenario", true);
    const bool has_formula = r.contains("flops_formula") && !r["flops_formula"].is_null();
    const auto formula = reader.choice("flops_formula", {"narayanan2021_eq3", "megatron"});
    const bool has_tflops = r.contains("measured_tflops_per_gpu");
    const bool has_step = r.contains("measured_step_s");
    const auto tflops = reader.number("measured_tflops_per_gpu", false, 1e-3, 1e6);
    const auto step = reader.number("measured_step_s", false, 1e-6, 1e7);
    const auto source = reader.string("source", true);
    reader.reject_unknown_keys();
    if (!has_formula) {
      reader.error("flops_formula", " must be given (\"narayanan2021_eq3\" or \"megatron\")");
    }
    if (has_tflops == has_step) {
      reader.error("measured_tflops_per_gpu",
                   " or measured_step_s: exactly one of the two must be given (what the run's "
                   "authors published)");
    }
    if (!scenario || !source || !formula || has_tflops == has_step) continue;
    if ((has_tflops && !tflops) || (has_step && !step)) continue;
    run.scenario = (dir / *scenario).string();
    run.formula =
        *formula == "megatron" ? FlopsFormula::kMegatron : FlopsFormula::kNarayanan2021Eq3;
    run.measured_tflops_per_gpu = has_tflops ? *tflops : 0.0;
    run.measured_step_s = has_step ? *step : 0.0;
    run.source = *source;
    out.push_back(std::move(run));
  }
  if (!errors.empty()) return errors;
  return out;
}

}  // namespace stepsim
