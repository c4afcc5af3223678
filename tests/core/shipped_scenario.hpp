#pragma once
// A shipped scenario with keys added to its `training` section (and, optionally, text of it
// replaced), loaded as a file of the scenarios folder: for tests that vary one setting of a
// real job.

#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "stepsim/check/load.hpp"

namespace stepsim::testing {

/// scenarios/`file` with `training` ("\"key\": value, ...", may be empty) put first in its
/// training section and each `replace` pair's first text replaced by its second.
inline Result<Workload> shipped_with(
    const std::string& file, const std::string& training,
    const std::vector<std::pair<std::string, std::string>>& replace = {}) {
  const std::string dir = STEPSIM_SCENARIOS_DIR;
  std::ifstream in(dir + "/" + file);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string at = "\"training\": {";
  const auto pos = text.find(at);
  if (pos == std::string::npos) return Error{file, "training", "no training section"};
  if (!training.empty()) text.insert(pos + at.size(), training + ",");
  for (const auto& [from, to] : replace) {
    const auto where = text.find(from);
    if (where == std::string::npos) return Error{file, "", "no text " + from};
    text.replace(where, from.size(), to);
  }
  return load_scenario_text(text, "test-" + file, dir, LoadOptions{dir});
}

}  // namespace stepsim::testing
