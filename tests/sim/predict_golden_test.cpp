// `stepsim predict S --format json` of every shipped scenario S against its golden file
// (tests/golden/predict_*.json, written by tests/golden/regenerate.sh), so that every change
// of a prediction shows in review: regenerate in the commit that makes it, and say why.

#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "../support/cli_runner.hpp"

namespace stepsim {
namespace {

namespace fs = std::filesystem;
using testing::read_file;
using testing::run_stepsim;

const fs::path kScenarios = STEPSIM_SCENARIOS_DIR;
const fs::path kGolden = fs::path(STEPSIM_SOURCE_DIR) / "tests" / "golden";

/// The shipped scenarios, as paths relative to scenarios/, in a fixed order.
std::vector<std::string> shipped_scenarios() {
  std::set<std::string> out;
  for (const char* folder : {"", "validation"}) {
    for (const auto& entry : fs::directory_iterator(kScenarios / folder)) {
      if (entry.is_regular_file() && entry.path().extension() == ".json") {
        out.insert((fs::path(folder) / entry.path().filename()).generic_string());
      }
    }
  }
  return {out.begin(), out.end()};
}

std::string golden_name(std::string rel) {
  for (char& c : rel) {
    if (c == '/') c = '_';
  }
  return "predict_" + rel;
}

TEST(PredictGolden, EveryShippedScenarioMatchesItsGoldenFile) {
  const std::vector<std::string> scenarios = shipped_scenarios();
  ASSERT_GE(scenarios.size(), 12U) << "expected the 8 shipped and 4 validation scenarios";
  for (const std::string& rel : scenarios) {
    const fs::path golden = kGolden / golden_name(rel);
    ASSERT_TRUE(fs::exists(golden))
        << "no golden file " << golden << " for scenarios/" << rel
        << ": run tests/golden/regenerate.sh and commit it";
    const auto run = run_stepsim("predict '" + (kScenarios / rel).string() + "' --format json",
                                 false);
    ASSERT_EQ(run.status, 0) << rel;
    EXPECT_EQ(run.out, read_file(golden.string()))
        << "stepsim predict scenarios/" << rel << " --format json differs from " << golden
        << "; if the change is intended, run tests/golden/regenerate.sh and explain it in the "
           "commit message";
  }
}

TEST(PredictGolden, EveryGoldenFileHasAShippedScenario) {
  std::set<std::string> expected;
  for (const std::string& rel : shipped_scenarios()) expected.insert(golden_name(rel));
  for (const auto& entry : fs::directory_iterator(kGolden)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("predict_", 0) != 0) continue;
    EXPECT_EQ(expected.count(name), 1U) << name << " has no scenario; regenerate.sh removes it";
  }
}

}  // namespace
}  // namespace stepsim
