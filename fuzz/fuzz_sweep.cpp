// Sweep files: base scenario, search space, constraints, objective.
#include "fuzz_common.hpp"
#include "stepsim/sweep/sweep_spec.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace stepsim;
  const auto options = fuzz::load_options();
  (void)load_sweep_text(fuzz::as_text(data, size), "fuzz.json", STEPSIM_SCENARIOS_DIR, options);
  return 0;
}
