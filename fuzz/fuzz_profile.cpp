// Calibration profiles: parsing, range checks and the least-squares fits of their samples.
#include "fuzz_common.hpp"
#include "stepsim/cost/profile.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  (void)stepsim::parse_profile(stepsim::fuzz::as_text(data, size), "fuzz.json");
  return 0;
}
