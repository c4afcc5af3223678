#pragma once
// Loading a scenario: its file read into config types (stepsim/config/parse.hpp), then
// Megatron's defaults and rules (check.hpp). Every problem of a file is reported in one Result.

#include <string>
#include <string_view>

#include "stepsim/base/result.hpp"
#include "stepsim/config/parse.hpp"
#include "stepsim/config/scenario.hpp"

namespace stepsim {

/// Reads, parses and checks a scenario file. Errors name the file and the key.
Result<Workload> load_scenario_file(const std::string& path, const LoadOptions& options);

/// Same, from text already in memory; `file_label` names it in errors, `base_dir` resolves
/// relative paths.
Result<Workload> load_scenario_text(std::string_view text, const std::string& file_label,
                                    const std::string& base_dir, const LoadOptions& options);

}  // namespace stepsim
