#include "stepsim/engine/engine.hpp"

#include <gtest/gtest.h>

#include "stepsim/engine/intervals.hpp"

namespace stepsim::sim {
namespace {

Task compute(std::int32_t rank, double seconds) {
  return Task{rank, Stream::kCompute, TaskKind::kCompute, seconds, -1, -1};
}

TEST(Engine, ChainRunsBackToBack) {
  TaskGraph g;
  const TaskId a = g.add_task(compute(0, 1.0));
  const TaskId b = g.add_task(compute(0, 2.0));
  const TaskId c = g.add_task(compute(0, 0.5));
  g.add_edge(a, b);
  g.add_edge(b, c);
  g.finalize();
  const Result<EngineResult> r = run_engine(g);
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(r->makespan_s, 3.5);
  EXPECT_DOUBLE_EQ(r->timings[c.value].start_s, 3.0);
  EXPECT_EQ(r->timings[c.value].critical_pred, b.value);
  EXPECT_EQ(r->timings[a.value].critical_pred, TaskTiming::kNone);
  EXPECT_EQ(r->last_task, c.value);
}

TEST(Engine, JoinWaitsForTheLatestPredecessor) {
  TaskGraph g;
  const TaskId a = g.add_task(compute(0, 1.0));
  const TaskId b = g.add_task(compute(1, 4.0));
  const TaskId j = g.add_task(compute(0, 1.0));
  g.add_edge(a, j);
  g.add_edge(b, j);
  g.finalize();
  const Result<EngineResult> r = run_engine(g);
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(r->timings[j.value].start_s, 4.0);
  EXPECT_EQ(r->timings[j.value].critical_pred, b.value);
}

TEST(Engine, RendezvousStartsAndEndsTogether) {
  TaskGraph g;
  const std::int32_t rv = g.new_rendezvous();
  const TaskId early = g.add_task(compute(0, 1.0));
  const TaskId late = g.add_task(compute(1, 3.0));
  const TaskId send = g.add_task(Task{0, Stream::kPipelineComm, TaskKind::kTransfer, 2.0, rv, -1});
  const TaskId recv = g.add_task(Task{1, Stream::kPipelineComm, TaskKind::kTransfer, 2.0, rv, -1});
  g.add_edge(early, send);
  g.add_edge(late, recv);
  g.finalize();
  const Result<EngineResult> r = run_engine(g);
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(r->timings[send.value].start_s, 3.0);
  EXPECT_DOUBLE_EQ(r->timings[recv.value].start_s, 3.0);
  EXPECT_DOUBLE_EQ(r->timings[send.value].end_s, 5.0);
  EXPECT_EQ(r->timings[send.value].critical_pred, late.value);
}

TEST(Engine, CrossedRendezvousIsReportedAsDeadlock) {
  // Rank 0 sends A then B; rank 1 receives B then A, each blocking: neither can proceed.
  TaskGraph g;
  const std::int32_t a = g.new_rendezvous();
  const std::int32_t b = g.new_rendezvous();
  const TaskId send_a = g.add_task(Task{0, Stream::kPipelineComm, TaskKind::kTransfer, 1, a, -1});
  const TaskId send_b = g.add_task(Task{0, Stream::kPipelineComm, TaskKind::kTransfer, 1, b, -1});
  const TaskId recv_b = g.add_task(Task{1, Stream::kPipelineComm, TaskKind::kTransfer, 1, b, -1});
  const TaskId recv_a = g.add_task(Task{1, Stream::kPipelineComm, TaskKind::kTransfer, 1, a, -1});
  g.add_edge(send_a, send_b);
  g.add_edge(recv_b, recv_a);
  g.finalize();
  const Result<EngineResult> r = run_engine(g);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.errors().front().message.find("deadlock"), std::string::npos);
}

TEST(Intervals, MergesTwoSortedRunsAndUnorderedSpans) {
  std::vector<Interval> runs{{0, 1}, {4, 5}, {8, 9}, {2, 3}, {4.5, 6}};
  merge_intervals(runs);
  ASSERT_EQ(runs.size(), 4u);  // [0,1) [2,3) [4,6) [8,9)
  EXPECT_DOUBLE_EQ(runs[2].start_s, 4.0);
  EXPECT_DOUBLE_EQ(runs[2].end_s, 6.0);
  std::vector<Interval> shuffled{{8, 9}, {0, 1}, {4.5, 6}, {2, 3}, {4, 5}};
  merge_intervals(shuffled);
  ASSERT_EQ(shuffled.size(), 4u);
  EXPECT_DOUBLE_EQ(measure(shuffled), measure(runs));
}

TEST(Intervals, MergeAndMeasureMinus) {
  std::vector<Interval> a{{0, 2}, {1, 3}, {5, 6}, {6, 7}};
  merge_intervals(a);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_DOUBLE_EQ(measure(a), 5.0);
  std::vector<Interval> b{{0.5, 1}, {2.5, 5.5}};
  merge_intervals(b);
  // a = [0,3) [5,7); minus [0.5,1) [2.5,5.5) leaves [0,0.5) [1,2.5) [5.5,7) = 0.5+1.5+1.5
  EXPECT_DOUBLE_EQ(measure_minus(a, b), 3.5);
  EXPECT_DOUBLE_EQ(measure_minus(a, {}), 5.0);
  // a and b overlap and touch: [0,3) [5,7) with [0.5,1) [2.5,5.5) is [0,7).
  const std::vector<Interval> u = union_of(a, b);
  ASSERT_EQ(u.size(), 1u);
  EXPECT_DOUBLE_EQ(u[0].start_s, 0.0);
  EXPECT_DOUBLE_EQ(u[0].end_s, 7.0);
  EXPECT_EQ(union_of({{0, 1}}, {{2, 3}}).size(), 2u);
}

}  // namespace
}  // namespace stepsim::sim
