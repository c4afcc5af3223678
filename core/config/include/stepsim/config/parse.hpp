#pragma once
// Reading scenario and system files into config types: types, presence and paths. Megatron's
// rules come after (stepsim/check/load.hpp loads a scenario and checks it).

#include <optional>
#include <string>
#include <string_view>

#include "stepsim/base/result.hpp"
#include "stepsim/config/scenario.hpp"

namespace stepsim {

struct LoadOptions {
  /// The project's scenarios/ folder: relative paths (system files, profiles) are tried
  /// against the scenario file's folder first, then against this folder.
  std::string scenarios_dir;
};

/// Parses a scenario's text into a Workload without Megatron's rules; every problem found is
/// appended to `errors` (naming `file_label` and the key). nullopt when the text is no JSON
/// object; otherwise the Workload as far as it could be read. `base_dir` resolves relative paths.
std::optional<Workload> parse_scenario_text(std::string_view text, const std::string& file_label,
                                            const std::string& base_dir,
                                            const LoadOptions& options, Errors& errors);

/// Reads and validates a system file.
Result<SystemConfig> load_system_file(const std::string& path);

/// Resolves `relative` against `base_dir`, then `options.scenarios_dir`: the first path that
/// exists in any form (a directory or a FIFO too, so that its reader can say what it is and
/// why it is not read); "" if neither exists.
std::string resolve_path(const std::string& relative, const std::string& base_dir,
                         const LoadOptions& options);

}  // namespace stepsim
