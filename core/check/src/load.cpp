#include "stepsim/check/load.hpp"

#include <utility>

#include "stepsim/check/check.hpp"
#include "stepsim/config/load_internal.hpp"

namespace stepsim {

Result<Workload> load_scenario_text(std::string_view text, const std::string& file_label,
                                    const std::string& base_dir, const LoadOptions& options) {
  Errors errors;
  std::optional<Workload> w = parse_scenario_text(text, file_label, base_dir, options, errors);
  if (!w) return errors;
  // The rules run on what could be read, so one run reports every problem of the file.
  const Errors rules = finalize_workload(*w, file_label);
  errors.insert(errors.end(), rules.begin(), rules.end());
  if (!errors.empty()) return errors;
  return std::move(*w);
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
