#pragma once
// Traces of sweep configurations computed on demand: a sweep CSV names each configuration by
// its index in the sweep's enumeration; given the sweep file it came from, the viewer
// simulates the clicked configuration (sim::sweep_configuration + sim::predict, the same
// library calls as `stepsim sweep` and `stepsim predict`) and opens its predicted step.

#include <cstdint>
#include <functional>
#include <string>

#include "stepsim/base/result.hpp"

namespace stepsim::gui {

/// Chrome trace JSON text of a sweep configuration's predicted step, by index.
using SweepTraceProvider = std::function<Result<std::string>(std::int64_t index)>;

/// Loads the sweep file (relative paths against its folder, then `scenarios_dir`) and
/// returns the provider. Errors: the sweep file is bad.
Result<SweepTraceProvider> make_sweep_trace_provider(const std::string& sweep_file,
                                                     const std::string& scenarios_dir);

}  // namespace stepsim::gui
