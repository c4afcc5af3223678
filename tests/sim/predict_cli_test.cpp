// `stepsim predict` as a user runs it: the default scenario, the JSON contract, the trace
// format, byte-identical reruns, and bad input.

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <set>

#include "../support/cli_runner.hpp"

namespace stepsim {
namespace {

using testing::read_file;
using testing::run_stepsim;

const std::string kScenarios = STEPSIM_SCENARIOS_DIR;

TEST(PredictCli, DefaultScenarioPrintsAReport) {
  const auto run = run_stepsim("predict");
  ASSERT_EQ(run.status, 0) << run.out;
  EXPECT_NE(run.out.find("gpt3-175b-a100-64"), std::string::npos);
  EXPECT_NE(run.out.find("step time"), std::string::npos);
  EXPECT_NE(run.out.find("critical path"), std::string::npos);
}

TEST(PredictCli, JsonHasTheContractKeys) {
  const auto run = run_stepsim("predict " + kScenarios + "/gpt3-175b-a100-64.json --format json",
                               false);
  ASSERT_EQ(run.status, 0) << run.out;
  const auto j = nlohmann::json::parse(run.out);
  for (const char* key : {"step_time_s", "bubble_fraction", "mfu", "hfu", "tflops_per_gpu",
                          "tokens_per_s", "peak_memory_bytes", "fits_in_memory", "stages"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  ASSERT_EQ(j["stages"].size(), 8u);
  for (const auto& s : j["stages"]) {
    for (const char* key : {"stage", "busy_s", "bubble_s", "exposed_comm_s", "peak_memory_bytes"}) {
      EXPECT_TRUE(s.contains(key)) << key;
    }
    EXPECT_GT(s["busy_s"].get<double>(), 0.0);
  }
  const double step = j["step_time_s"].get<double>();
  const auto& cp = j["critical_path"];
  const double parts = cp["compute_s"].get<double>() + cp["tp_comm_s"].get<double>() +
                       cp["p2p_s"].get<double>() + cp["dp_comm_s"].get<double>() +
                       cp["optimizer_s"].get<double>() + cp["bubble_s"].get<double>();
  EXPECT_NEAR(parts, step, 1e-9 * step);
  EXPECT_GT(j["mfu"].get<double>(), 0.0);
  EXPECT_LT(j["mfu"].get<double>(), 1.0);
  EXPECT_LE(j["mfu"].get<double>(), j["hfu"].get<double>());
}

TEST(PredictCli, TraceHasOneProcessPerStageAndIsDeterministic) {
  const std::string a = ::testing::TempDir() + "/stepsim_trace_a.json";
  const std::string b = ::testing::TempDir() + "/stepsim_trace_b.json";
  const std::string scenario = kScenarios + "/llama3-8b-h100-8.json";
  ASSERT_EQ(run_stepsim("predict " + scenario + " --format json --trace " + a).status, 0);
  ASSERT_EQ(run_stepsim("predict " + scenario + " --format json --trace " + b).status, 0);
  const std::string text = read_file(a);
  EXPECT_EQ(text, read_file(b));
  const auto j = nlohmann::json::parse(text);
  std::set<int> pids;
  std::set<std::string> cats;
  std::size_t slices = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "X") {
      ++slices;
      pids.insert(e["pid"].get<int>());
      cats.insert(e["cat"].get<std::string>());
      EXPECT_GE(e["dur"].get<double>(), 0.0);
    }
  }
  EXPECT_GT(slices, 1000u);
  EXPECT_EQ(pids, (std::set<int>{0}));  // p = 1
  EXPECT_TRUE(cats.count("forward") && cats.count("backward_input") &&
              cats.count("backward_weight") && cats.count("tp_comm") && cats.count("dp_comm"));
  EXPECT_EQ(j["stepsim"]["label"], "predicted");
  std::remove(a.c_str());
  std::remove(b.c_str());
}

TEST(PredictCli, BadInputExitsTwoNamingTheFile) {
  const std::string bad = ::testing::TempDir() + "/stepsim_bad.json";
  {
    std::FILE* f = std::fopen(bad.c_str(), "w");
    std::fputs("{\"name\": \"x\", \"model\": {", f);
    std::fclose(f);
  }
  const auto malformed = run_stepsim("predict " + bad);
  EXPECT_EQ(malformed.status, 2) << malformed.out;
  EXPECT_NE(malformed.out.find("stepsim_bad.json"), std::string::npos) << malformed.out;
  const auto missing = run_stepsim("predict /nonexistent/scenario.json");
  EXPECT_EQ(missing.status, 2);
  const auto flag = run_stepsim("predict --format yaml");
  EXPECT_EQ(flag.status, 2);
  std::remove(bad.c_str());
}

}  // namespace
}  // namespace stepsim
