// stepsim_scenario_keys: prints the scenario key reference generated from the schema table
// (docs/scenario-keys.md): `build/bin/stepsim_scenario_keys > docs/scenario-keys.md`; with
// --coverage, the generated end of docs/coverage.md (the arguments not modelled).

#include <cstdio>
#include <string>
#include <string_view>

#include "stepsim/config/coverage_doc.hpp"
#include "stepsim/config/schema.hpp"

int main(int argc, char** argv) {
  const bool coverage = argc == 2 && std::string_view(argv[1]) == "--coverage";
  if (argc > 1 && !coverage) {
    std::fputs("usage: stepsim_scenario_keys [--coverage]\n", stderr);
    return 2;
  }
  const std::string text =
      coverage ? stepsim::unmodelled_arguments_markdown() : stepsim::scenario_keys_markdown();
  return std::fwrite(text.data(), 1, text.size(), stdout) == text.size() ? 0 : 1;
}
