// Megatron-LM launch lines (`--megatron-args`): shell splitting, flags, then the scenario the
// import builds goes through the loader as `stepsim predict --megatron-args` does.
#include "fuzz_common.hpp"
#include "stepsim/import/import.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace stepsim;
  MegatronImportOptions import;
  import.world_size = 8;
  import.system = "systems/dgx-a100-80gb.json";
  Result<ImportedScenario> s = scenario_from_megatron_args(fuzz::as_text(data, size), import);
  if (!s.ok()) return 0;
  const auto options = fuzz::load_options();
  (void)load_scenario_text(s->scenario_json, "--megatron-args", STEPSIM_SCENARIOS_DIR, options);
  return 0;
}
