#pragma once
// Shared by the libFuzzer harnesses (fuzz/README.md). Each harness hands one input to the
// reader of one format exactly as stepsim does; a crash, a sanitizer report, an exception that
// escapes or a run past -timeout is a finding. A Result with errors is the expected outcome
// for most inputs.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "stepsim/check/load.hpp"

namespace stepsim::fuzz {

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};  // NOLINT(*-reinterpret-cast)
}

/// Relative paths in a scenario (system files, profiles) resolve against scenarios/.
inline LoadOptions load_options() {
  LoadOptions options;
  options.scenarios_dir = STEPSIM_SCENARIOS_DIR;
  return options;
}

}  // namespace stepsim::fuzz
