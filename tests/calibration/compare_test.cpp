// Predicted vs measured: relative errors, per-stage figures, slice matching, the JSON report.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "stepsim/validator/validate.hpp"

namespace stepsim::calib {
namespace {

/// A predicted slice whose identity is (rank, forward, op = `op`, or `name` when empty).
sim::Slice slice(std::int32_t rank, sim::SliceKind kind, double start, double end,
                 const std::string& name, const std::string& op = "") {
  sim::Slice s;
  s.rank = rank;
  s.phase = Phase::kForward;
  s.op = op.empty() ? name : op;
  s.kind = kind;
  s.stream = kind == sim::SliceKind::kTensorComm ? Stream::kTensorComm : Stream::kCompute;
  s.start_s = start;
  s.end_s = end;
  s.name = name;
  return s;
}

/// A measured forward op whose op name is its `name`.
ExecTask task(const std::string& name, OpCategory category, Stream stream) {
  ExecTask t;
  t.name = name;
  t.op_name = name;
  t.category = category;
  t.stream = stream;
  t.slice_kind =
      stream == Stream::kTensorComm ? sim::SliceKind::kTensorComm : sim::SliceKind::kForward;
  return t;
}

/// One stage, one rank; tasks "F gemm" then "F ar" (an all-reduce), each measured in three
/// steps.
Measurement two_task_measurement() {
  Measurement m;
  m.layout = RankLayout{1, 1, 1};
  m.stage_tasks = {{task("F gemm", OpCategory::kGemm, Stream::kCompute),
                    task("F ar", OpCategory::kAllReduce, Stream::kTensorComm)}};
  // gemm durations 1.0, 1.2, 0.8 (median 1.0); all-reduce 0.5, 0.5, 0.5.
  // The backend's own clock reports the work without the call's overhead (0.1 s here).
  m.steps = {{{{10.0, 11.0, 0.9}, {11.0, 11.5, 0.4}}},
             {{{20.0, 21.2, 1.1}, {21.2, 21.7, 0.4}}},
             {{{30.0, 30.8, 0.7}, {30.8, 31.3, 0.4}}}};
  m.step_times_s = {1.5, 1.7, 1.3};
  m.complete = true;
  return m;
}

TEST(Compare, RelativeErrorIsAgainstTheMeasurement) {
  EXPECT_NEAR(relative_error(1.1, 1.0), 0.1, 1e-15);
  EXPECT_NEAR(relative_error(0.9, 1.0), -0.1, 1e-15);
  EXPECT_DOUBLE_EQ(relative_error(0.0, 0.0), 0.0);
  EXPECT_DOUBLE_EQ(relative_error(1.0, 0.0), 1.0);
}

TEST(Compare, StageFiguresSplitComputeCommunicationAndIdle) {
  sim::Timeline t;
  t.step_time_s = 4.0;
  t.slices = {slice(0, sim::SliceKind::kForward, 0.0, 1.0, "a"),
              slice(0, sim::SliceKind::kBackwardInput, 0.5, 2.0, "b"),
              slice(0, sim::SliceKind::kTensorComm, 1.5, 3.0, "c"),
              slice(1, sim::SliceKind::kForward, 0.0, 4.0, "other stage")};
  const StageFigures f = stage_figures(t, 0);
  EXPECT_DOUBLE_EQ(f.busy_s, 2.0);  // union of [0,1] and [0.5,2]
  EXPECT_DOUBLE_EQ(f.comm_s, 1.0);  // [1.5,3] outside compute
  EXPECT_DOUBLE_EQ(f.idle_s, 1.0);
  EXPECT_DOUBLE_EQ(f.overlap_s, 0.5);  // [1.5,2] under compute
  EXPECT_DOUBLE_EQ(stage_figures(t, 1).busy_s, 4.0);
  EXPECT_DOUBLE_EQ(stage_figures(t, 1).overlap_s, 0.0);
}

TEST(Compare, MatchesSlicesByIdentityAndUsesMedians) {
  const Measurement m = two_task_measurement();
  sim::Prediction p;
  p.step_time_s = 1.65;
  sim::Timeline t;
  t.label = "predicted";
  t.step_time_s = 1.65;
  t.slices = {slice(0, sim::SliceKind::kForward, 0.0, 1.1, "F gemm"),
              slice(0, sim::SliceKind::kTensorComm, 1.1, 1.35, "F ar"),
              slice(0, sim::SliceKind::kForward, 1.35, 1.65, "F only predicted")};
  const ValidationReport r = compare(p, t, m);
  EXPECT_DOUBLE_EQ(r.measured_step_time_s, 1.5);            // median of 1.5, 1.7, 1.3
  EXPECT_NEAR(r.measured_backend_step_time_s, 1.3, 1e-12);  // step 0 on the backend clock
  EXPECT_NEAR(r.relative_error, 0.1, 1e-12);
  EXPECT_EQ(r.steps, 3);
  EXPECT_EQ(r.matched_slices, 2);
  EXPECT_EQ(r.unmatched_predicted, 1);
  EXPECT_EQ(r.unmatched_measured, 0);
  ASSERT_EQ(r.ops.size(), 2U);
  EXPECT_EQ(r.ops[0].category, OpCategory::kGemm);
  EXPECT_NEAR(r.ops[0].measured_total_s, 0.9, 1e-12);  // backend clock, median
  EXPECT_NEAR(r.ops[0].measured_wall_total_s, 1.0, 1e-12);
  EXPECT_NEAR(r.ops[0].mean_relative_error, 0.2 / 0.9, 1e-12);
  EXPECT_EQ(r.ops[1].category, OpCategory::kAllReduce);
  EXPECT_NEAR(r.ops[1].mean_relative_error, -0.375, 1e-12);
  EXPECT_NEAR(r.ops[1].mean_abs_relative_error, 0.375, 1e-12);
  // Largest absolute deviation first: the GEMM is off by 0.2 s, the all-reduce by 0.15 s.
  ASSERT_EQ(r.largest_deviations.size(), 2U);
  EXPECT_EQ(r.largest_deviations[0].name, "F gemm");
  EXPECT_EQ(r.largest_deviations[1].name, "F ar");
  ASSERT_EQ(r.stages.size(), 1U);
  EXPECT_NEAR(r.stages[0].predicted.busy_s, 1.4, 1e-12);
  EXPECT_NEAR(r.stages[0].measured.busy_s, 1.0, 1e-12);  // the median step: gemm 1.0 s
  EXPECT_NEAR(r.stages[0].measured.comm_s, 0.5, 1e-12);
  EXPECT_NEAR(r.stages[0].measured_backend_overhead_s, 0.1, 1e-12);  // the GEMM's call
}

TEST(Compare, TheBackendsClockCountsTheHostsWaitsForPostedCalls) {
  // A posted reduce-scatter (done 1.5 s after its post at 0), a GEMM beside it (0.9 s of
  // work in its 1 s call), then a GEMM that waits for the reduce-scatter: the host waited
  // from 1.0 to 1.5, and set the second GEMM up until 1.6.
  ExecTask posted = task("F rs", OpCategory::kReduceScatter, Stream::kTensorComm);
  posted.async = true;
  ExecTask waiting = task("F gemm2", OpCategory::kGemm, Stream::kCompute);
  waiting.waits = {ExecTask::Wait{.task = 0, .transfer = -1}};
  const std::vector<ExecTask> tasks = {posted, task("F gemm", OpCategory::kGemm, Stream::kCompute),
                                       waiting};
  EXPECT_NEAR(backend_step_s(tasks, {{0.0, 1.5, 1.5}, {0.0, 1.0, 0.9}, {1.6, 2.6, 1.0}}),
              0.9 + 0.5 + 1.0, 1e-12);
  // Done before the host got to it (0.8 s): no wait.
  EXPECT_NEAR(backend_step_s(tasks, {{0.0, 0.8, 0.8}, {0.0, 1.0, 0.9}, {1.1, 2.1, 1.0}}), 1.9,
              1e-12);
  // Posted after the first GEMM instead: the host left off at the post (1.2), waited to 3.0.
  const std::vector<ExecTask> later = {task("F gemm", OpCategory::kGemm, Stream::kCompute), posted,
                                       waiting};
  std::vector<ExecTask> waits_for_1 = later;
  waits_for_1[2].waits = {ExecTask::Wait{.task = 1, .transfer = -1}};
  EXPECT_NEAR(backend_step_s(waits_for_1, {{0.0, 1.0, 0.9}, {1.2, 3.0, 1.8}, {3.1, 4.1, 1.0}}),
              0.9 + 1.8 + 1.0, 1e-12);
}

TEST(Compare, MatchesByIdentityNeverByName) {
  // The predicted "F gemm" slice is named like the measured task but is another op; the
  // slice named "renamed" is the measured "F ar" op under another name.
  const Measurement m = two_task_measurement();
  sim::Timeline t;
  t.slices = {slice(0, sim::SliceKind::kForward, 0.0, 1.1, "F gemm", "some_other_op"),
              slice(0, sim::SliceKind::kTensorComm, 1.1, 1.35, "renamed", "F ar")};
  const ValidationReport r = compare(sim::Prediction{}, t, m);
  EXPECT_EQ(r.matched_slices, 1);
  EXPECT_EQ(r.unmatched_predicted, 1);
  EXPECT_EQ(r.unmatched_measured, 1);
  ASSERT_EQ(r.ops.size(), 1U);
  EXPECT_EQ(r.ops[0].category, OpCategory::kAllReduce);
}

TEST(Compare, RepeatedIdentitiesPairInOccurrenceOrder) {
  Measurement m;
  m.layout = RankLayout{1, 1, 1};
  m.stage_tasks = {{task("x", OpCategory::kGemm, Stream::kCompute),
                    task("x", OpCategory::kGemm, Stream::kCompute)}};
  m.steps = {{{{0.0, 1.0, 1.0}, {1.0, 4.0, 3.0}}}};
  m.step_times_s = {4.0};
  sim::Timeline t;
  t.slices = {slice(0, sim::SliceKind::kForward, 0.0, 1.0, "x"),
              slice(0, sim::SliceKind::kForward, 1.0, 4.0, "x")};
  const ValidationReport r = compare(sim::Prediction{}, t, m);
  ASSERT_EQ(r.ops.size(), 1U);
  EXPECT_NEAR(r.ops[0].mean_abs_relative_error, 0.0, 1e-12);
}

TEST(Compare, WidelySpreadStepsWarnThatTheMachineWasBusy) {
  // 1.3 to 1.7 s around a median of 1.5: 27% > 25%.
  const ValidationReport r = compare(sim::Prediction{}, sim::Timeline{}, two_task_measurement());
  bool warned = false;
  for (const std::string& note : r.notes) warned |= note.find("machine was busy") != std::string::npos;
  EXPECT_TRUE(warned);
  EXPECT_EQ(busy_machine_note({1.0, 1.1, 1.2}), "");  // 20% of 1.1
  EXPECT_NE(busy_machine_note({1.0, 1.3, 1.1}), "");  // 27% of 1.1
  EXPECT_EQ(busy_machine_note({1.0}), "");
}

TEST(Compare, NoMeasuredStepGivesAnIncompleteReport) {
  Measurement m;
  m.layout = RankLayout{1, 2, 1};
  m.failure = "rank 1 hung";
  const ValidationReport r = compare(sim::Prediction{}, sim::Timeline{}, m);
  EXPECT_FALSE(r.complete);
  EXPECT_EQ(r.failure, "rank 1 hung");
  EXPECT_EQ(r.steps, 0);
  EXPECT_FALSE(r.notes.empty());
}

TEST(Compare, JsonReportHasTheContractKeys) {
  sim::Prediction p;
  p.step_time_s = 1.65;
  sim::Timeline t;
  t.slices = {slice(0, sim::SliceKind::kForward, 0.0, 1.1, "F gemm")};
  ValidationReport r = compare(p, t, two_task_measurement());
  r.scenario = "tiny";
  const auto j = nlohmann::json::parse(report_to_json(r));
  EXPECT_DOUBLE_EQ(j.at("predicted_step_time_s").get<double>(), 1.65);
  EXPECT_DOUBLE_EQ(j.at("measured_step_time_s").get<double>(), 1.5);
  EXPECT_NEAR(j.at("relative_error").get<double>(), 0.1, 1e-12);
  EXPECT_EQ(j.at("stages").size(), 1U);
  EXPECT_EQ(j.at("ops").at(0).at("kind"), "gemm");
  EXPECT_EQ(j.at("largest_deviations").at(0).at("name"), "F gemm");
  EXPECT_EQ(j.at("scenario"), "tiny");
  EXPECT_TRUE(j.at("complete").get<bool>());
  EXPECT_FALSE(j.at("async_p2p").get<bool>());
  for (const char* key : {"busy_s", "comm_s", "wait_s", "idle_s", "overlap_s"}) {
    EXPECT_TRUE(j.at("stages").at(0).at("measured").contains(key)) << key;
  }
  const std::string text = format_report_text(r);
  EXPECT_NE(text.find("predicted 1650.000 ms, measured 1500.000 ms, error +10.0%"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace stepsim::calib
