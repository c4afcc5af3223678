#pragma once
// Helpers shared by the subcommands: loading a scenario with errors printed the one way.

#include <optional>
#include <string>

#include "commands.hpp"
#include "stepsim/core/scenario.hpp"

namespace stepsim::cli {

/// The scenario `predict` uses when none is given.
inline constexpr const char* kDefaultScenario = "gpt3-175b-a100-64.json";

/// Loads and validates `path` (or, when empty, the default scenario). On failure prints every
/// error to env.err, sets env.exit_code = 2 and returns nullopt.
std::optional<Workload> load_or_report(const std::string& path, Env& env);

}  // namespace stepsim::cli
