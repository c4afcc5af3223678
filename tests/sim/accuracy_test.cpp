// The accuracy report's inputs and bookkeeping (scenarios/published/). The predictions
// themselves are a report, not a gate: see the accuracy_report test.

#include "stepsim/report/accuracy.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "stepsim/ops/flops.hpp"
#include "stepsim/check/load.hpp"
#include "stepsim/config/published_runs.hpp"

namespace stepsim {
namespace {

const std::string kScenarios = STEPSIM_SCENARIOS_DIR;

TEST(PublishedRuns, ShippedRunsLoadAndCiteTheirSource) {
  Result<std::vector<PublishedRun>> runs = load_published_runs(kScenarios + "/published/runs.json");
  ASSERT_TRUE(runs.ok()) << format_errors(runs.errors());
  // Narayanan et al. 2021, Table 1: 1.7B .. 1T; MLPerf Training v4.1 GPT-3 175B on 256, 512.
  ASSERT_EQ(runs->size(), 12u);
  for (std::size_t i = 0; i < runs->size(); ++i) {
    const PublishedRun& r = (*runs)[i];
    EXPECT_NE(r.source.find(i < 10 ? "arXiv:2104.04473" : "mlcommons/training_results_v4.1"),
              std::string::npos)
        << r.scenario;
    EXPECT_EQ(r.formula, i < 10 ? FlopsFormula::kNarayanan2021Eq3 : FlopsFormula::kMegatron);
    EXPECT_TRUE(load_scenario_file(r.scenario, LoadOptions{kScenarios}).ok()) << r.scenario;
  }
}

TEST(PublishedRuns, BadFilesNameTheKey) {
  const std::string path = ::testing::TempDir() + "/runs_bad.json";
  std::ofstream(path) << R"({"format_version": 1, "runs": [{"scenario": "x.json",
      "measured_tflops_per_gpu": -3, "source": "s", "colour": 1}]})";
  Result<std::vector<PublishedRun>> runs = load_published_runs(path);
  ASSERT_FALSE(runs.ok());
  const std::string text = format_errors(runs.errors());
  EXPECT_NE(text.find("runs[0].measured_tflops_per_gpu"), std::string::npos) << text;
  EXPECT_NE(text.find("runs[0].colour"), std::string::npos) << text;
  EXPECT_NE(text.find("runs[0].flops_formula"), std::string::npos) << text;
  std::remove(path.c_str());
}

// Runs whose authors published the step time itself (MLPerf's logs give train_step_timing):
// measured_step_s, with Megatron's own FLOPs count for the TFLOP/s columns. Exactly one of
// the two measured figures.
TEST(PublishedRuns, AStepTimeWithMegatronsFlops) {
  const std::string path = ::testing::TempDir() + "/runs_step.json";
  const std::string scenario = kScenarios + "/gpt3-175b-h100-512-fp8.json";
  std::ofstream(path) << R"({"format_version": 1, "runs": [{"scenario": ")" << scenario
                      << R"(", "flops_formula": "megatron", "measured_step_s": 9.5,
      "source": "s"}]})";
  Result<std::vector<PublishedRun>> runs = load_published_runs(path);
  ASSERT_TRUE(runs.ok()) << format_errors(runs.errors());
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ((*runs)[0].formula, FlopsFormula::kMegatron);
  EXPECT_DOUBLE_EQ((*runs)[0].measured_step_s, 9.5);
  Result<sim::AccuracyReport> report = sim::accuracy_report(*runs, kScenarios);
  ASSERT_TRUE(report.ok()) << format_errors(report.errors());
  const sim::AccuracyRow& row = report->rows.at(0);
  Result<Workload> w = load_scenario_file(scenario, LoadOptions{kScenarios});
  ASSERT_TRUE(w.ok());
  EXPECT_DOUBLE_EQ(row.flops_per_iteration, megatron_logged_flops_per_step(*w));
  EXPECT_DOUBLE_EQ(row.measured_step_s, 9.5);
  EXPECT_DOUBLE_EQ(row.measured_tflops_per_gpu, row.flops_per_iteration / (9.5 * 512) / 1e12);
  EXPECT_DOUBLE_EQ(row.error, row.predicted_step_s / 9.5 - 1.0);

  std::ofstream(path) << R"({"format_version": 1, "runs": [{"scenario": "x.json",
      "flops_formula": "megatron", "measured_step_s": 9.5, "measured_tflops_per_gpu": 400,
      "source": "s"}]})";
  Result<std::vector<PublishedRun>> both = load_published_runs(path);
  ASSERT_FALSE(both.ok());
  EXPECT_NE(format_errors(both.errors()).find("exactly one of the two must be given"),
            std::string::npos)
      << format_errors(both.errors());
  std::remove(path.c_str());
}

// Eq. 3 worked by hand for the 1T row (B 3072, s 2048, l 128, h 25600, V 51200):
// 96 B s l h^2 = 5.0665e19; the bracket 1 + 2048/153600 + 51200/52428800 = 1.0143099;
// F = 5.1391e19 FLOPs. At the measured 163 TFLOP/s on 3072 GPUs that is 102.6 s an iteration.
TEST(Accuracy, Narayanan2021Eq3) {
  Result<Workload> w = load_scenario_file(kScenarios + "/published/sc21-table1-gpt-1t.json",
                                          LoadOptions{kScenarios});
  ASSERT_TRUE(w.ok()) << format_errors(w.errors());
  const double f = sim::published_flops_per_iteration(*w, FlopsFormula::kNarayanan2021Eq3);
  const double expected = 96.0 * 3072 * 2048 * 128 * 25600.0 * 25600.0 *
                          (1 + 2048.0 / 153600 + 51200.0 / (16.0 * 128 * 25600));
  EXPECT_DOUBLE_EQ(f, expected);
  EXPECT_NEAR(f, 5.1391e19, 0.0001e19);
  EXPECT_NEAR(f / (163e12 * 3072), 102.6, 0.1);
}

TEST(Accuracy, TableShowsEveryRunAndTheMeanError) {
  sim::AccuracyReport report;
  report.rows.push_back({.name = "a",
                         .gpus = 8,
                         .measured_tflops_per_gpu = 100,
                         .predicted_tflops_per_gpu = 110,
                         .measured_step_s = 1250,
                         .predicted_step_s = 1136.4,
                         .error = -0.0909,
                         .source = "src"});
  report.rows.push_back({.name = "b",
                         .gpus = 16,
                         .measured_tflops_per_gpu = 100,
                         .predicted_tflops_per_gpu = 90,
                         .measured_step_s = 625,
                         .predicted_step_s = 694.4,
                         .error = 0.111,
                         .source = "src"});
  report.mean_absolute_error = 0.101;
  std::ostringstream out;
  sim::write_accuracy_table(report, out);
  EXPECT_NE(out.str().find("| a | 8 | 100.0 | 110.0 | 1250.00 | 1136.40 | -9.1% |"),
            std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find("mean absolute error of the step time: 10.1% over 2 runs"),
            std::string::npos)
      << out.str();
}

}  // namespace
}  // namespace stepsim

namespace stepsim {
namespace {

// The error budget: each mechanism switched off through the model's own switch. On the
// shipped runs (public profiles, no kernel spread measured): communication adds time on
// every multi-node run, GEMM mechanics move every run (they price the GEMMs), the spread
// nothing (no profile measured one), and switching nothing off gives the report's error.
TEST(AccuracyExplain, EachMechanismSwitchedOffInTurn) {
  const std::string dir = STEPSIM_SCENARIOS_DIR;
  Result<std::vector<PublishedRun>> runs = load_published_runs(dir + "/published/runs.json");
  ASSERT_TRUE(runs.ok()) << format_errors(runs.errors());
  Result<sim::AccuracyReport> report = sim::accuracy_report(*runs, dir);
  Result<sim::ExplainReport> explain = sim::accuracy_explain(*runs, dir);
  ASSERT_TRUE(report.ok() && explain.ok());
  const auto& mechanisms = sim::explained_mechanisms();
  ASSERT_EQ(mechanisms.size(), 5u);
  EXPECT_EQ(mechanisms[3].name, "communication");
  ASSERT_EQ(explain->rows.size(), report->rows.size());
  for (std::size_t i = 0; i < explain->rows.size(); ++i) {
    const sim::ExplainRow& r = explain->rows[i];
    EXPECT_EQ(r.error, report->rows[i].error) << r.name;
    ASSERT_EQ(r.adds.size(), 5u);
    EXPECT_GT(r.adds[3], 0.0) << r.name << ": communication is never free";
    EXPECT_NE(r.adds[1], 0.0) << r.name << ": GEMM mechanics price every GEMM";
    EXPECT_EQ(r.adds[2], 0.0) << r.name << ": no public profile measured a spread";
  }
  std::ostringstream table;
  sim::write_explain_table(*explain, table);
  EXPECT_NE(table.str().find("| mean |"), std::string::npos);
}

}  // namespace
}  // namespace stepsim
