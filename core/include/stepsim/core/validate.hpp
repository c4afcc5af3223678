#pragma once
// Megatron-LM's argument rules for what stepsim models, checked once at load. After
// validate_workload() returns no errors, the Workload's invariants hold.

#include <string>

#include "stepsim/core/result.hpp"
#include "stepsim/core/scenario.hpp"

namespace stepsim {

/// Every rule broken by `w`, each naming `file` and the key in Megatron's vocabulary.
Errors validate_workload(const Workload& w, const std::string& file);

}  // namespace stepsim
