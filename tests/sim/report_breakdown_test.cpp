// The report's summaries: the one bubble figure and its parts, hand-checked; warnings as one
// short line each.

#include <gtest/gtest.h>

#include "stepsim/report/report.hpp"

namespace stepsim::sim {
namespace {

StageSummary stage(std::int32_t r, double busy, double bubble, double optimizer = 0) {
  return StageSummary{.stage = r, .busy_s = busy, .bubble_s = bubble, .exposed_comm_s = 0,
                      .peak_memory_bytes = 0, .optimizer_s = optimizer};
}

TEST(BubbleBreakdown, EqualStagesAre1F1BsOwnBubble) {
  // p = 4, m = 8, 1F1B: the schedule leaves (p-1)/m of each stage's 8 s of work idle, 3 s.
  Prediction p;
  p.step_time_s = 11.0;
  for (std::int32_t r = 0; r < 4; ++r) p.stages.push_back(stage(r, 8.0, 3.0));
  const ScheduleParams s{.kind = ScheduleKind::kOneFOneB, .pipeline_size = 4, .virtual_size = 1,
                         .microbatches = 8};
  const BubbleBreakdown b = bubble_breakdown(p, s);
  EXPECT_DOUBLE_EQ(b.total_s, 3.0);
  EXPECT_DOUBLE_EQ(b.schedule_s, 3.0);
  EXPECT_DOUBLE_EQ(b.imbalance_s, 0.0);
  EXPECT_DOUBLE_EQ(b.waits_s, 0.0);
  EXPECT_DOUBLE_EQ(b.fraction_of_step, 3.0 / 11.0);
}

TEST(BubbleBreakdown, ImbalanceAndWaitsTakeTheRest) {
  // p = 2, v = 2, m = 4: schedule (p-1)/(v*m) = 1/8 of the heaviest stage's 8 s less its
  // 0.4 s optimizer: 0.95 s. Stage 0 (busy 8): 0.95 schedule + 0.55 waits. Stage 1 (busy 6):
  // 0.95 schedule, 2 imbalance, 0.55 waits.
  Prediction p;
  p.step_time_s = 10.0;
  p.stages = {stage(0, 8.0, 1.5, 0.4), stage(1, 6.0, 3.5, 0.4)};
  const ScheduleParams s{.kind = ScheduleKind::kInterleaved, .pipeline_size = 2,
                         .virtual_size = 2, .microbatches = 4};
  const BubbleBreakdown b = bubble_breakdown(p, s);
  EXPECT_DOUBLE_EQ(b.total_s, 2.5);
  EXPECT_DOUBLE_EQ(b.schedule_s, 0.95);
  EXPECT_DOUBLE_EQ(b.imbalance_s, 1.0);
  EXPECT_NEAR(b.waits_s, 0.55, 1e-12);
  EXPECT_NEAR(b.schedule_s + b.imbalance_s + b.waits_s, b.total_s, 1e-12);
}

TEST(BubbleBreakdown, NoPipelineNoScheduleBubble) {
  Prediction p;
  p.step_time_s = 5.0;
  p.stages = {stage(0, 4.0, 0.5)};
  const BubbleBreakdown b = bubble_breakdown(p, ScheduleParams{});
  EXPECT_DOUBLE_EQ(b.schedule_s, 0.0);
  EXPECT_DOUBLE_EQ(b.waits_s, 0.5);
}

TEST(ShortWarnings, OneLineACategoryWithItsCases) {
  const std::vector<std::string> lines = short_warnings(
      {"GEMM shape beyond the profile's measured range: efficiency clamped at its edge: "
       "bf16 m=1 n=2 k=3 batch=1; bf16 m=4 n=5 k=6 batch=1; and 3 more",
       "collective group not measured: all_gather over 4 ranks on 1 node (ring/Simple)",
       "peak memory exceeds the 85899345920 bytes of a NVIDIA H100"},
      60);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "GEMM shape beyond the profile's measured ... (5 cases)");
  EXPECT_EQ(lines[1], "collective group not measured (1 case)");
  EXPECT_EQ(lines[2], "peak memory exceeds the 85899345920 bytes of a NVIDIA H100");
  for (const std::string& l : lines) EXPECT_LE(l.size(), 60u) << l;
}

}  // namespace
}  // namespace stepsim::sim
