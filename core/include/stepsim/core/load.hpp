#pragma once
// The only place JSON is read. Loads and validates scenario, system and sweep inputs; every
// problem of a file is reported in one Result (see validate.hpp for the rules).

#include <string>
#include <string_view>

#include "stepsim/core/result.hpp"
#include "stepsim/core/scenario.hpp"

namespace stepsim {

struct LoadOptions {
  /// The project's scenarios/ folder: relative paths (system files, profiles) are tried
  /// against the scenario file's folder first, then against this folder.
  std::string scenarios_dir;
};

/// Reads, parses and validates a scenario file. Errors name the file and the key.
Result<Workload> load_scenario_file(const std::string& path, const LoadOptions& options);

/// Same, from text already in memory; `file_label` names it in errors, `base_dir` resolves
/// relative paths.
Result<Workload> load_scenario_text(std::string_view text, const std::string& file_label,
                                    const std::string& base_dir, const LoadOptions& options);

/// Reads and validates a system file.
Result<SystemConfig> load_system_file(const std::string& path);

/// Resolves `relative` against `base_dir`, then `options.scenarios_dir`: the first path that
/// exists in any form (a directory or a FIFO too, so that its reader can say what it is and
/// why it is not read); "" if neither exists.
std::string resolve_path(const std::string& relative, const std::string& base_dir,
                         const LoadOptions& options);

}  // namespace stepsim
