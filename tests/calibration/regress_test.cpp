// Records and the regression gate: write/read round trip, re-prediction with the current
// code (overrides re-applied), tolerance, history; the scale-down overrides.

#include "stepsim/validator/regress.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "stepsim/plan/decompose.hpp"
#include "stepsim/check/load.hpp"
#include "validation_workloads.hpp"

namespace stepsim::calib {
namespace {
namespace fs = std::filesystem;

const std::string kScenarios = STEPSIM_SCENARIOS_DIR;
const std::string kPp2 = kScenarios + "/validation/pp2-1f1b.json";
const std::string kProfile = kScenarios + "/profiles/a100-sxm4-80gb-public.json";

Workload load(const std::string& path) {
  auto w = load_scenario_file(path, LoadOptions{kScenarios});
  EXPECT_TRUE(w.ok()) << (w.ok() ? "" : format_errors(w.errors()));
  return std::move(w).value();
}

CostModelFactory fixed_factory() {
  return [](const Workload&) -> Result<std::unique_ptr<CostModel>> {
    return std::unique_ptr<CostModel>(std::make_unique<testing::FixedCost>(1e-4));
  };
}

double predict_fixed(const Workload& w, bool async_p2p = false, bool async_grad = false) {
  const testing::FixedCost cost(1e-4);
  auto r = sim::simulate(w, decompose(w), cost, validation_simulate_options(async_p2p, async_grad));
  EXPECT_TRUE(r.ok());
  return r->prediction.step_time_s;
}

class RegressTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("stepsim_regress_" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  /// Records `measured_s` for the pp2-1f1b scenario with `overrides`.
  std::string record(double measured_s, ScaleOverrides overrides = {},
                     const std::string& scenario = kPp2, bool async_p2p = false,
                     bool async_grad = false) {
    ValidationReport r;
    r.scenario = "validation-pp2-1f1b";
    r.async_p2p = async_p2p;
    r.async_grad_reduce = async_grad;
    r.backend = "cpu";
    r.world_size = 2;
    r.warmup_steps = 1;
    r.steps = 3;
    r.measured_step_time_s = measured_s;
    r.measured_step_times_s = {measured_s, measured_s * 1.1, measured_s * 0.9};
    r.predicted_step_time_s = 0.123;
    r.stages = {StageComparison{0, {}, {0.3, 0.1, 0.05}, 0.0},
                StageComparison{1, {}, {0.35, 0.1, 0.0}, 0.0}};
    RecordInputs in;
    in.scenario_path = scenario;
    in.scenarios_dir = kScenarios;
    in.profile_path = kProfile;
    in.overrides = overrides;
    in.machine = "test-host / test cpu";
    in.date = "2026-11-22T00:00:00Z";
    in.report = &r;
    auto path = write_record(dir_.string(), in);
    EXPECT_TRUE(path.ok()) << (path.ok() ? "" : format_errors(path.errors()));
    return path.ok() ? *path : "";
  }

  fs::path dir_;
};

TEST_F(RegressTest, RecordRoundTripIsSelfContained) {
  const std::string path = record(0.5, ScaleOverrides{2, 0});
  EXPECT_EQ(fs::path(path).filename(), "pp2-1f1b-L2.record.json");
  auto r = load_record(path);
  ASSERT_TRUE(r.ok()) << format_errors(r.errors());
  EXPECT_EQ(r->id, "pp2-1f1b-L2");
  EXPECT_EQ(r->scenario_name, "validation-pp2-1f1b");
  EXPECT_EQ(r->overrides, (ScaleOverrides{2, 0}));
  EXPECT_DOUBLE_EQ(r->measured_step_time_s, 0.5);
  EXPECT_EQ(r->measured_step_times_s.size(), 3U);
  ASSERT_EQ(r->measured_stages.size(), 2U);
  EXPECT_DOUBLE_EQ(r->measured_stages[1].busy_s, 0.35);
  EXPECT_EQ(r->machine, "test-host / test cpu");
  EXPECT_EQ(r->profile_file, "pp2-1f1b-L2.profile.json");
  EXPECT_TRUE(fs::exists(dir_ / r->profile_file));
  // The system is inlined and the cost model points at the copy next to the record.
  const auto scenario = nlohmann::json::parse(r->scenario_json);
  EXPECT_TRUE(scenario.at("system").is_object());
  EXPECT_EQ(scenario.at("system").at("name"), "cpu-localhost");
  EXPECT_EQ(scenario.at("cost_model").at("profile"), "pp2-1f1b-L2.profile.json");
}

TEST_F(RegressTest, RePredictsWithOverridesAndAppliesTheTolerance) {
  Workload scaled = load(kPp2);
  auto l2 = apply_overrides(scaled, ScaleOverrides{2, 0});
  ASSERT_TRUE(l2.ok()) << format_errors(l2.errors());
  const double predicted = predict_fixed(*l2);
  ASSERT_GT(predicted, 0.0);
  record(predicted / 1.05, ScaleOverrides{2, 0});  // the prediction is 5% above

  auto pass = regress(dir_.string(), 0.1, kScenarios, fixed_factory());
  ASSERT_TRUE(pass.ok()) << format_errors(pass.errors());
  ASSERT_EQ(pass->rows.size(), 1U);
  EXPECT_TRUE(pass->rows[0].error.empty()) << pass->rows[0].error;
  EXPECT_NEAR(pass->rows[0].predicted_step_time_s, predicted, 1e-12);
  EXPECT_NEAR(pass->rows[0].relative_error, 0.05, 1e-9);
  EXPECT_TRUE(pass->pass);
  EXPECT_NEAR(pass->median_abs_relative_error, 0.05, 1e-9);

  auto fail = regress(dir_.string(), 0.04, kScenarios, fixed_factory());
  ASSERT_TRUE(fail.ok());
  EXPECT_FALSE(fail->pass);
  EXPECT_FALSE(fail->rows[0].pass);
  EXPECT_NE(format_regress_table(*fail).find("FAIL"), std::string::npos);

  ASSERT_TRUE(append_history(dir_.string(), *pass).ok());
  ASSERT_TRUE(append_history(dir_.string(), *fail).ok());
  std::ifstream history(dir_ / "history.jsonl");
  std::string line;
  std::vector<bool> passes;
  while (std::getline(history, line)) {
    passes.push_back(nlohmann::json::parse(line).at("pass").get<bool>());
  }
  EXPECT_EQ(passes, (std::vector<bool>{true, false}));
}

// A record says whether the executor ran Megatron's non-blocking P2P calls beside the
// compute; the re-prediction models the same execution (and old records, without the key,
// the serialised one).
TEST_F(RegressTest, RePredictsTheExecutionTheRecordSays) {
  const std::string interleaved = std::string(kScenarios) + "/validation/pp2-interleaved.json";
  const Workload w = load(interleaved);
  const double serial = predict_fixed(w, false);
  const double async = predict_fixed(w, true);
  ASSERT_LT(async, serial);
  const std::string path = record(async, {}, interleaved, true);
  auto r = load_record(path);
  ASSERT_TRUE(r.ok()) << format_errors(r.errors());
  EXPECT_TRUE(r->async_p2p);
  auto run = regress(dir_.string(), 0.1, kScenarios, fixed_factory());
  ASSERT_TRUE(run.ok()) << format_errors(run.errors());
  EXPECT_NEAR(run->rows.at(0).predicted_step_time_s, async, 1e-12);

  auto j = nlohmann::json::parse(std::ifstream(path));
  j.erase("async_p2p");
  std::ofstream(path) << j.dump();
  auto old = load_record(path);
  ASSERT_TRUE(old.ok()) << format_errors(old.errors());
  EXPECT_FALSE(old->async_p2p);
  run = regress(dir_.string(), 0.1, kScenarios, fixed_factory());
  ASSERT_TRUE(run.ok());
  EXPECT_NEAR(run->rows.at(0).predicted_step_time_s, serial, 1e-12);
}

// The same for overlap_grad_reduce's reductions beside the backward (dp2-overlap).
TEST_F(RegressTest, RePredictsTheGradientReductionTheRecordSays) {
  const std::string scenario = std::string(kScenarios) + "/validation/dp2-overlap.json";
  const Workload w = load(scenario);
  const double serial = predict_fixed(w, true, false);
  const double async = predict_fixed(w, true, true);
  ASSERT_LT(async, serial);
  const std::string path = record(async, {}, scenario, true, true);
  auto r = load_record(path);
  ASSERT_TRUE(r.ok()) << format_errors(r.errors());
  EXPECT_TRUE(r->async_grad_reduce);
  auto run = regress(dir_.string(), 0.1, kScenarios, fixed_factory());
  ASSERT_TRUE(run.ok()) << format_errors(run.errors());
  EXPECT_NEAR(run->rows.at(0).predicted_step_time_s, async, 1e-12);
  auto j = nlohmann::json::parse(std::ifstream(path));
  j.erase("async_grad_reduce");  // a record written before the key existed
  std::ofstream(path) << j.dump();
  run = regress(dir_.string(), 0.1, kScenarios, fixed_factory());
  ASSERT_TRUE(run.ok());
  EXPECT_NEAR(run->rows.at(0).predicted_step_time_s, serial, 1e-12);
}

TEST_F(RegressTest, BadRecordsAreReportedByFileAndKey) {
  fs::create_directories(dir_);
  EXPECT_FALSE(load_records(dir_.string()).ok());  // no records at all
  std::ofstream(dir_ / "broken.record.json") << R"({"format_version": 1, "id": "broken"})";
  auto r = load_records(dir_.string());
  ASSERT_FALSE(r.ok());
  bool names_key = false;
  for (const auto& e : r.errors()) {
    names_key = names_key || (e.key == "measured_step_time_s" &&
                              e.file.find("broken.record.json") != std::string::npos);
  }
  EXPECT_TRUE(names_key) << format_errors(r.errors());
  EXPECT_FALSE(regress(dir_.string(), 0.0, kScenarios, fixed_factory()).ok());  // tolerance
}

TEST(Overrides, ScaleDownKeepsShapesAndMicroBatches) {
  const Workload w = load(kPp2);
  auto fewer = apply_overrides(w, ScaleOverrides{2, 0});
  ASSERT_TRUE(fewer.ok()) << format_errors(fewer.errors());
  EXPECT_EQ(fewer->model.num_layers, 2);
  EXPECT_EQ(fewer->model.hidden_size, w.model.hidden_size);
  EXPECT_EQ(fewer->training.num_microbatches, w.training.num_microbatches);

  const Workload dp = load(kScenarios + "/validation/dp2.json");
  auto one = apply_overrides(dp, ScaleOverrides{0, 1});
  ASSERT_TRUE(one.ok()) << format_errors(one.errors());
  EXPECT_EQ(one->training.data_parallel_size, 1);
  EXPECT_EQ(one->training.num_microbatches, dp.training.num_microbatches);
  EXPECT_EQ(one->training.global_batch_size, dp.training.global_batch_size / 2);

  const Workload il = load(kScenarios + "/validation/pp2-interleaved.json");
  auto odd = apply_overrides(il, ScaleOverrides{6, 0});  // p * v = 4 does not divide 6
  ASSERT_FALSE(odd.ok());
  EXPECT_EQ(odd.errors().front().key, "--num-layers");
  auto eight = apply_overrides(il, ScaleOverrides{8, 0});
  ASSERT_TRUE(eight.ok()) << format_errors(eight.errors());
  EXPECT_EQ(eight->training.num_layers_per_virtual_pipeline_stage, 2);
  auto bad_world = apply_overrides(w, ScaleOverrides{0, 3});
  ASSERT_FALSE(bad_world.ok());
  EXPECT_EQ(bad_world.errors().front().key, "--world-size");
}

}  // namespace
}  // namespace stepsim::calib
