// stepsim_scenario_keys: prints the scenario key reference generated from the schema table
// (docs/scenario-keys.md): `build/bin/stepsim_scenario_keys > docs/scenario-keys.md`; with
// --bounds the input-bounds table (`... --bounds > docs/input-bounds.md`); with --coverage the
// generated end of docs/coverage.md (the arguments not modelled).

#include <cstdio>
#include <string>
#include <string_view>

#include "stepsim/config/coverage_doc.hpp"
#include "stepsim/config/schema.hpp"
#include "stepsim/cost/input_bounds_doc.hpp"

int main(int argc, char** argv) {
  const std::string_view mode = argc == 2 ? std::string_view(argv[1]) : std::string_view();
  if (argc > 2 || (argc == 2 && mode != "--bounds" && mode != "--coverage")) {
    std::fputs("usage: stepsim_scenario_keys [--bounds | --coverage]\n", stderr);
    return 2;
  }
  const std::string text = mode == "--bounds"     ? stepsim::input_bounds_markdown()
                           : mode == "--coverage" ? stepsim::unmodelled_arguments_markdown()
                                                  : stepsim::scenario_keys_markdown();
  return std::fwrite(text.data(), 1, text.size(), stdout) == text.size() ? 0 : 1;
}
