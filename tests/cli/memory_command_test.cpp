// Runs the real `stepsim memory` and checks its output contract against the library.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "../support/cli_runner.hpp"
#include "stepsim/check/load.hpp"
#include "stepsim/memory/memory_model.hpp"

namespace {

/// stdout (stderr too when `merge_stderr`) and the exit status of `stepsim memory <args>`.
stepsim::testing::CliRun run_memory(const std::string& args, bool merge_stderr) {
  return stepsim::testing::run_stepsim("memory " + args + (merge_stderr ? "" : " 2>/dev/null"),
                                       merge_stderr);
}

const std::string kScenario = std::string(STEPSIM_SCENARIOS_DIR) + "/gpt3-175b-a100-64.json";

TEST(MemoryCommand, JsonMatchesAnalyticModel) {
  const stepsim::testing::CliRun r = run_memory("'" + kScenario + "' --format json", false);
  ASSERT_EQ(r.status, 0) << r.out;
  const nlohmann::json doc = nlohmann::json::parse(r.out);
  const stepsim::Result<stepsim::Workload> w =
      stepsim::load_scenario_file(kScenario, {STEPSIM_SCENARIOS_DIR});
  ASSERT_TRUE(w.ok());
  const std::vector<stepsim::StageMemory> expected = stepsim::analytic_memory(*w);
  ASSERT_EQ(doc["stages"].size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const nlohmann::json& s = doc["stages"][i];
    const stepsim::StageMemory& m = expected[i];
    EXPECT_EQ(s["stage"].get<std::int32_t>(), m.stage);
    EXPECT_EQ(s["weights_bytes"].get<std::int64_t>(), m.weights_bytes);
    EXPECT_EQ(s["gradients_bytes"].get<std::int64_t>(), m.gradients_bytes);
    EXPECT_EQ(s["optimizer_bytes"].get<std::int64_t>(), m.optimizer_bytes);
    EXPECT_EQ(s["activations_bytes"].get<std::int64_t>(), m.activations_bytes);
    EXPECT_EQ(s["layer_activations_bytes"].get<std::int64_t>(), m.layer_activations_bytes);
    EXPECT_EQ(s["peak_bytes"].get<std::int64_t>(), m.peak_bytes);
  }
  EXPECT_EQ(doc["capacity_bytes"].get<std::int64_t>(), w->system.memory_bytes);
  EXPECT_TRUE(doc["fits"].is_boolean());
  // Deterministic: byte-identical on a second run.
  EXPECT_EQ(run_memory("'" + kScenario + "' --format json", false).out, r.out);
}

TEST(MemoryCommand, TextTableInGib) {
  const stepsim::testing::CliRun r = run_memory("'" + kScenario + "'", false);
  ASSERT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("stage"), std::string::npos);
  EXPECT_NE(r.out.find("GiB"), std::string::npos);
  EXPECT_NE(r.out.find("fits"), std::string::npos);
}

TEST(MemoryCommand, BadInputExitsTwoNamingTheFile) {
  const stepsim::testing::CliRun missing = run_memory("/nonexistent/scenario.json", true);
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.out.find("/nonexistent/scenario.json"), std::string::npos);
  const stepsim::testing::CliRun format = run_memory("'" + kScenario + "' --format yaml", true);
  EXPECT_EQ(format.status, 2);
}

}  // namespace
