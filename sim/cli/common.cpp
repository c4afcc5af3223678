#include "common.hpp"

#include <ostream>

#include "stepsim/core/load.hpp"

namespace stepsim::cli {

std::optional<Workload> load_or_report(const std::string& path, Env& env) {
  const std::string file = path.empty() ? env.scenarios_dir + "/" + kDefaultScenario : path;
  LoadOptions options;
  options.scenarios_dir = env.scenarios_dir;
  auto loaded = load_scenario_file(file, options);
  if (!loaded) {
    *env.err << format_errors(loaded.errors());
    env.exit_code = 2;
    return std::nullopt;
  }
  return std::move(loaded).value();
}

}  // namespace stepsim::cli
