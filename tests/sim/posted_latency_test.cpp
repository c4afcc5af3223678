// The validator's posted calls (time_ops with serial and async_ring): a call posted to an
// idle backend thread first waits for it (Interference::collective_post_latency_s /
// p2p_post_latency_s, measured by calibration); one posted while the thread still runs the
// call before it does not, since the thread goes on to it at once. Closed forms on a hand-made
// op list: GEMM (G), posted reduce-scatter (C) after it, GEMM (G), posted reduce-scatter (C)
// after it, then a memory op (M) that waits for both.

#include <gtest/gtest.h>

#include <vector>

#include "stepsim/graph/chunk_template.hpp"
#include "hand_cost.hpp"

namespace stepsim::sim {
namespace {

constexpr double kG = 1.0;
constexpr double kM = 0.1;

Op gemm() {
  Op op;
  op.name = "gemm";
  op.shape = GemmOp{.m = 1, .n = 1, .k = 1};
  return op;
}

Op posted_reduce_scatter(double seconds, std::int32_t after) {
  Op op;
  op.name = "tp_ub_reduce_scatter";
  op.stream = Stream::kTensorComm;
  CollectiveOp c;
  c.kind = CollectiveKind::kReduceScatter;
  c.group = CommGroup::kTensor;
  c.bytes = static_cast<std::int64_t>(seconds * 1e9);
  c.group_size = 2;
  c.nccl = false;
  op.shape = c;
  op.deps = {after};
  return op;
}

std::vector<Op> two_chunks(double c) {
  std::vector<Op> ops{gemm(), posted_reduce_scatter(c, 0), gemm(), posted_reduce_scatter(c, 2)};
  Op after;
  after.name = "after";
  after.shape = MemoryBoundOp{.bytes = static_cast<std::int64_t>(kM * 1e9)};
  after.deps = {1, 3};
  ops.push_back(after);
  return ops;
}

Interference latency(double collective_s, double p2p_s = 0) {
  Interference k;
  k.collective_post_latency_s = collective_s;
  k.p2p_post_latency_s = p2p_s;
  return k;
}

TEST(PostedLatency, AnIdleThreadStartsThePostedCallLate) {
  const HandCost cost;
  // C = 0.25, L = 0.9: the first call, posted at G to an idle thread, runs from G + L to
  // G + L + C, past the second GEMM; the second, posted at 2 G while the first still runs,
  // follows it at once: G + L + 2 C + M.
  const double c = 0.25;
  EXPECT_NEAR(time_ops(two_chunks(c), cost, true, latency(0.9), true).duration_s,
              kG + 0.9 + 2 * c + kM, 1e-9);
  // L = 0.5 (C + L <= G): the first call is hidden by the second GEMM; the second is posted
  // to an idle thread, but the host blocks on it at once and frees the core: 2 G + C + M, as
  // without a latency.
  EXPECT_NEAR(time_ops(two_chunks(c), cost, true, latency(0.5), true).duration_s, 2 * kG + c + kM,
              1e-9);
  EXPECT_NEAR(time_ops(two_chunks(c), cost, true, latency(0), true).duration_s, 2 * kG + c + kM,
              1e-9);
  // L = 3, longer than the second GEMM: the first call gets the core when the host blocks at
  // 2 G: 2 G + 2 C + M.
  EXPECT_NEAR(time_ops(two_chunks(c), cost, true, latency(3.0), true).duration_s,
              2 * kG + 2 * c + kM, 1e-9);
  // The P2P latency does not apply to a collective; not posted (serialised executor) or not
  // serial: no latency.
  EXPECT_NEAR(time_ops(two_chunks(c), cost, true, latency(0, 0.9), true).duration_s,
              2 * kG + c + kM, 1e-9);
  EXPECT_NEAR(time_ops(two_chunks(c), cost, true, latency(0.9), false).duration_s,
              2 * kG + 2 * c + kM, 1e-9);
  EXPECT_NEAR(time_ops(two_chunks(c), cost, false, latency(0.9), true).duration_s, 2 * kG + c + kM,
              1e-9);
}

TEST(PostedLatency, ABusyThreadGoesOnToTheNextCallAtOnce) {
  const HandCost cost;
  // C > G: the second call is posted (at 2 G) while the first still runs (to G + L + C): it
  // starts when the first ends, without a latency of its own: G + L + 2 C + M.
  const double c = 1.5;
  const double l = 0.5;
  EXPECT_NEAR(time_ops(two_chunks(c), cost, true, latency(l), true).duration_s, kG + l + 2 * c + kM,
              1e-9);
}

// With the profile's interference too (compute 1.5x, the call 2x slower while together), the
// latency neither progresses nor interferes: C = 0.25, L = 0.5. The first call waits from 1 to
// 1.5 while the second GEMM runs alone (half done), then both run together until the call
// ends at 2.0 (GEMM 0.5 + 1/3 done); the GEMM ends alone at 13/6; the second call is posted
// to an idle thread, but the host blocks on it at once: it runs alone to 29/12; the memory op
// ends 0.1 later.
TEST(PostedLatency, TheWaitNeitherProgressesNorInterferes) {
  const HandCost cost;
  Interference k = latency(0.5);
  k.compute_slowdown = 1.5;
  k.collective_slowdown = 2;
  EXPECT_NEAR(time_ops(two_chunks(0.25), cost, true, k, true).duration_s, 29.0 / 12 + kM, 1e-9);
  // L = 0.9: while the first call waits (1 to 1.9) the second GEMM runs alone (0.9 done),
  // then beside the call to 2.05 (0.1 at 2/3 speed: 0.15 s; the call 0.075 of
  // its 0.25 done); the call then alone: 0.175 more, to 2.225; the second call follows it at
  // once (posted at 2.05, busy thread) and runs alone to 2.475.
  EXPECT_NEAR(time_ops(two_chunks(0.25), cost, true, Interference{1.5, 2, 0, 0.9}, true).duration_s,
              2.475 + kM, 1e-9);
}

}  // namespace
}  // namespace stepsim::sim
