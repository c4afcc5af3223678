#pragma once
// Helpers shared by the subcommands: loading a scenario and reporting its problems.

#include <optional>
#include <string>

#include "commands.hpp"
#include "stepsim/core/scenario.hpp"

namespace stepsim::cli {

/// The scenario `stepsim predict` uses when none is given, under Env::scenarios_dir.
inline constexpr const char* kDefaultScenario = "gpt3-175b-a100-64.json";

/// Loads and validates `path` (the default scenario under env.scenarios_dir when empty).
/// On failure prints one line per problem to *env.err, sets env.exit_code = 2 and returns
/// nullopt.
std::optional<Workload> load_or_report(const std::string& path, Env& env);

}  // namespace stepsim::cli
