#include "common.hpp"

#include <ostream>

#include "stepsim/core/load.hpp"

namespace stepsim::cli {

std::optional<Workload> load_or_report(const std::string& path, Env& env) {
  const std::string file = path.empty() ? env.scenarios_dir + "/" + kDefaultScenario : path;
  Result<Workload> w = load_scenario_file(file, LoadOptions{env.scenarios_dir});
  if (!w.ok()) {
    *env.err << format_errors(w.errors());
    env.exit_code = 2;
    return std::nullopt;
  }
  return std::move(w).value();
}

}  // namespace stepsim::cli
