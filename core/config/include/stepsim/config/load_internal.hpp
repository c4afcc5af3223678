#pragma once
// Pieces shared by the scenario and system loaders. Private to stepsim_core.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "stepsim/base/result.hpp"
#include "stepsim/config/scenario.hpp"

namespace stepsim::detail {

/// The whole file, or an error naming `path` when it cannot be read.
std::optional<std::string> read_text_file(const std::string& path, Errors& errors);

/// The problem with `value` for the system key `dotted_key` ("peak_flops_bf16",
/// "efficiency.gemm_max"), as the text after the key; nullopt when it is in range or the key
/// has no numeric rule. System files and the sweep's `system.*` knobs both check through it.
std::optional<std::string> system_number_problem(std::string_view dotted_key, double value);

/// The folder part of `path` ("." when it has none).
std::string parent_dir(const std::string& path);

/// Reads a system object (a system file's top level, or a scenario's inline `system`).
/// `prefix` is "" for a file and "system" inline; every problem is appended to `errors`.
SystemConfig parse_system(const nlohmann::json& object, const std::string& file,
                          const std::string& prefix, Errors& errors);

}  // namespace stepsim::detail
