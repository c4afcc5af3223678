// The viewer's trace reader (Chrome trace event JSON with stepsim's summary); no Qt involved.
#include "fuzz_common.hpp"
#include "stepsim/gui/trace_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  (void)stepsim::gui::parse_trace(stepsim::fuzz::as_text(data, size), "fuzz.json");
  return 0;
}
