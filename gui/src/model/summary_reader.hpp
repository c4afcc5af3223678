#pragma once
// Reads the trace's small `stepsim` summary object (label, step time, capacity, stages).

#include <string>
#include <string_view>

#include "stepsim/base/result.hpp"
#include "stepsim/gui/trace_model.hpp"

namespace stepsim::gui::detail {

/// Parses `json` (the text of the `stepsim` member) into `out`, appending a problem per
/// bad key to `errors` (keys as `stepsim.stages[1].busy_s`).
void read_summary(std::string_view json, const std::string& file, TraceSummary& out,
                  Errors& errors);

}  // namespace stepsim::gui::detail
