#pragma once
// Megatron-LM's flags that stepsim knows without a schema row: the harmless ones, by class
// (schema_harmless.cpp), and the job-changing ones added to the not-modelled table
// (schema_unmodelled_megatron.cpp). core/config/data/megatron-arguments.txt pins every flag of
// the Megatron-LM commit stepsim follows; tests/core/megatron_arguments_test.cpp checks each is
// classified (a schema row's, a not-modelled one, or a harmless one).

#include <span>
#include <string_view>

#include "stepsim/config/schema.hpp"

namespace stepsim {

/// A class of Megatron-LM flags that leave a step's time and memory alone.
struct HarmlessFlagClass {
  std::string_view name;  ///< "checkpointing", "logging", ...
  std::string_view why;   ///< one line: why the class changes no step
  std::span<const std::string_view> flags;
};

/// Every harmless class, in the order the docs list them.
std::span<const HarmlessFlagClass> harmless_flag_classes();

/// The harmless class that lists `flag` ("--save"), or nullptr.
const HarmlessFlagClass* find_harmless_flag_class(std::string_view flag);

/// Classifies a flag by the explicit tables only (the not-modelled table and the harmless
/// classes; no family prefixes): kUnknown when neither lists it.
FlagClass classify_listed_flag(std::string_view flag, std::string_view value);

namespace detail {
/// The job-changing not-modelled arguments of schema_unmodelled_megatron.cpp; joined with
/// schema_unmodelled.cpp's own in unmodelled_arguments().
std::span<const UnmodelledArgument> more_unmodelled_arguments();
}  // namespace detail

}  // namespace stepsim
