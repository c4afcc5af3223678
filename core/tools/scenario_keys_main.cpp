// stepsim_scenario_keys: prints the scenario key reference generated from the schema table
// (docs/scenario-keys.md): `build/bin/stepsim_scenario_keys > docs/scenario-keys.md`; with
// --bounds the input-bounds table (`... --bounds > docs/input-bounds.md`).

#include <cstdio>
#include <string>

#include "stepsim/core/schema.hpp"

int main(int argc, char** argv) {
  const bool bounds = argc > 1 && std::string(argv[1]) == "--bounds";
  const std::string text =
      bounds ? stepsim::input_bounds_markdown() : stepsim::scenario_keys_markdown();
  return std::fwrite(text.data(), 1, text.size(), stdout) == text.size() ? 0 : 1;
}
