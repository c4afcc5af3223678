// stepsim_scenario_keys: prints the scenario key reference generated from the schema table
// (docs/scenario-keys.md): `build/bin/stepsim_scenario_keys > docs/scenario-keys.md`.

#include <cstdio>
#include <string>

#include "stepsim/config/schema.hpp"

int main() {
  const std::string text = stepsim::scenario_keys_markdown();
  return std::fwrite(text.data(), 1, text.size(), stdout) == text.size() ? 0 : 1;
}
