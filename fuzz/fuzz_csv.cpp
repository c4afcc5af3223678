// The viewer's sweep CSV reader; no Qt involved.
#include "fuzz_common.hpp"
#include "stepsim/gui/sweep_csv.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  (void)stepsim::gui::parse_sweep_csv(stepsim::fuzz::as_text(data, size), "fuzz.csv");
  return 0;
}
