// Scenario files: the loader and its rules, then what `stepsim check` builds from a scenario
// that loads (its cost model, its decomposition and analytic memory).
#include "fuzz_common.hpp"
#include "stepsim/plan/decompose.hpp"
#include "stepsim/cost/make_cost_model.hpp"
#include "stepsim/memory/memory_model.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace stepsim;
  const auto options = fuzz::load_options();
  Result<Workload> w = load_scenario_text(fuzz::as_text(data, size), "fuzz.json",
                                          STEPSIM_SCENARIOS_DIR, options);
  if (!w.ok()) return 0;
  // Bounded work only: a scenario within the loader's limits may still be large, so the
  // per-op decomposition runs only for models a test would use.
  if (w->model.num_layers <= 64 && w->training.world_size <= 1024) {
    (void)make_cost_model(*w);
    (void)decompose(*w);
    (void)analytic_memory(*w);
  }
  return 0;
}
