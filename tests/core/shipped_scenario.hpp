#pragma once
// A shipped scenario with keys added to its `training` section (and, optionally, text of it
// replaced), loaded as a file of the scenarios folder: for tests that vary one setting of a
// real job.

#include <gtest/gtest.h>

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

/// A small GPT launch line's flags (torchrun onwards, after any environment assignments):
/// for tests of what a launch line's environment imports as.
inline const std::string kSmallLaunchFlags =
    " torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 4 --hidden-size 1024 "
    "--num-attention-heads 16 --seq-length 1024 --max-position-embeddings 1024 "
    "--micro-batch-size 1 --global-batch-size 8 --bf16 --vocab-size 32000";

/// An imported scenario's JSON loaded with the shipped scenarios folder; a failure to load
/// fails the test.
inline Workload load_imported(const std::string& json) {
  LoadOptions lo;
  lo.scenarios_dir = STEPSIM_SCENARIOS_DIR;
  auto w = load_scenario_text(json, "line", ".", lo);
  EXPECT_TRUE(w.ok()) << (w.ok() ? "" : format_errors(w.errors()));
  return w.ok() ? std::move(w).value() : Workload{};
}

}  // namespace stepsim::testing
