// System files, through the loader's internal entry (the text of a file, no disk access).
#include "fuzz_common.hpp"
#include "stepsim/base/json_fields.hpp"
#include "stepsim/config/load_internal.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace stepsim;
  Errors errors;
  const auto json = detail::parse_json(fuzz::as_text(data, size), "fuzz.json", errors);
  if (!json || !json->is_object()) return 0;
  (void)detail::parse_system(*json, "fuzz.json", "", errors);
  return 0;
}
