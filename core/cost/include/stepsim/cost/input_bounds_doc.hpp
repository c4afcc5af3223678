#pragma once
// The input-bounds reference (docs/input-bounds.md), generated from the schema table's integer
// bounds and the profile reader's (`build/bin/stepsim_scenario_keys --bounds`).

#include <string>

namespace stepsim {

/// docs/input-bounds.md: every integer key of scenarios, system files, sweep knobs and
/// calibration profiles, with its range and why.
std::string input_bounds_markdown();

}  // namespace stepsim
