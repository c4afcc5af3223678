// Hugging Face config.json import (`stepsim import-hf`), then loading the model it builds.
#include "fuzz_common.hpp"
#include "stepsim/import/import.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace stepsim;
  (void)model_from_hf_config(fuzz::as_text(data, size), "config.json", 0);
  return 0;
}
