// Scale is not free (stepsim/cost/spread.hpp): with a measured spread of kernel times, every
// synchronisation waits for its group's slowest member, the expected largest of N normal
// draws. Checked against Blom's approximation and a seeded Monte Carlo computed here, on a
// hand-built step whose gradient all-reduce spans 2,048 GPUs, and inside an action at a
// tensor-parallel collective.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "hand_cost.hpp"
#include "stepsim/cost/spread.hpp"
#include "stepsim/graph/chunk_template.hpp"
#include "stepsim/report/report.hpp"
#include "stepsim/simulate/simulate.hpp"

namespace stepsim::sim {
namespace {

/// Blom's approximation of E[max of n standard normals]: Phi^-1((n - 0.375) / (n + 0.25))
/// (G. Blom, "Statistical Estimates and Transformed Beta-Variables", 1958), the inverse CDF
/// by bisection on erfc so that nothing here shares code with the model.
double blom(std::int64_t n) {
  const double p = (static_cast<double>(n) - 0.375) / (static_cast<double>(n) + 0.25);
  double lo = -10, hi = 10;
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (lo + hi);
    (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

TEST(SyncSpread, ExpectedMaximumOfNormals) {
  EXPECT_EQ(expected_max_std_normal(1), 0.0);
  EXPECT_EQ(variance_max_std_normal(1), 1.0);
  // Two draws: E[max] = 1/sqrt(pi), Var = 1 - 1/pi exactly.
  EXPECT_NEAR(expected_max_std_normal(2), 1.0 / std::sqrt(M_PI), 1e-9);
  EXPECT_NEAR(variance_max_std_normal(2), 1.0 - 1.0 / M_PI, 1e-9);
  // Blom's approximation is within 1% from 8 to 2,048 draws (3.427 for 2,048).
  for (const std::int64_t n : {8, 64, 512, 2048}) {
    EXPECT_NEAR(expected_max_std_normal(n), blom(n), 0.01 * blom(n)) << n;
  }
  EXPECT_GT(expected_max_std_normal(2048), 3.4);
  EXPECT_LT(expected_max_std_normal(2048), 3.5);
  EXPECT_EQ(sync_wait_s(2048, 0.0), 0.0);
  EXPECT_EQ(sync_wait_s(1, 1.0), 0.0);
}

Op kernel(const char* name, Phase phase, double seconds) {
  Op op;
  op.name = name;
  op.phase = phase;
  op.shape = MemoryBoundOp{static_cast<std::int64_t>(std::llround(seconds * 1e9))};
  return op;
}

/// One stage, data-parallel over `dp` GPUs, m 2: forward 1 s, backward 2 s (one memory-bound
/// kernel each), then a 0.5 s gradient all-reduce over the dp group (no overlap).
struct Step {
  Workload w;
  WorkloadPlan plan;
};

Step data_parallel(std::int64_t dp) {
  Step s;
  Workload& w = s.w;
  w.name = "dp";
  w.model.num_layers = 1;
  w.model.seq_length = 1;
  TrainingConfig& t = w.training;
  t.data_parallel_size = dp;
  t.world_size = dp;
  t.micro_batch_size = 1;
  t.global_batch_size = 2 * dp;
  t.num_microbatches = 2;
  w.system.gpus_per_node = 8;
  w.system.memory_bytes = 1 << 30;
  w.system.peak_flops_fp32 = 1;
  StagePlan stage;
  ChunkPlan chunk;
  chunk.forward.push_back(kernel("fwd", Phase::kForward, 1.0));
  chunk.backward.push_back(kernel("bwd", Phase::kBackwardInput, 2.0));
  chunk.parameters = 1000;
  Op& op = chunk.grad_sync.emplace_back();
  op.name = "dp_grad_all_reduce";
  op.phase = Phase::kStep;
  op.stream = Stream::kDataComm;
  op.shape = CollectiveOp{CollectiveKind::kAllReduce, CommGroup::kData, 500'000'000, dp, dp / 8};
  stage.chunks.push_back(chunk);
  stage.parameters = 1000;
  s.plan.stages.push_back(stage);
  return s;
}

HandCost spread_cost(double memory_cv) {
  HandCost::Options o{.gemm_s_per_k = 0};
  o.spread.memory_cv = memory_cv;
  o.spread.repeats = 20;
  return HandCost(o);
}

double step_s(const Step& s, const CostModel& cost) {
  Result<SimulationResult> r = simulate(s.w, s.plan, cost);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : format_errors(r.errors()));
  return r.ok() ? r->prediction.step_time_s : -1.0;
}

// The closed form: 2,048 replicas each run 1 s + 2 s twice, every kernel's time normal with
// a 5% coefficient of variation, independently; the all-reduce starts when the slowest
// replica arrives: sigma = sqrt(2 (0.05 x 1)^2 + 2 (0.05 x 2)^2) s after the mean, times
// E[max of 2,048].
TEST(SyncSpread, AllReduceOver2048GpusWaitsForTheExpectedMaximum) {
  const Step s = data_parallel(2048);
  const double without = step_s(s, HandCost({.gemm_s_per_k = 0}));
  const double with = step_s(s, spread_cost(0.05));
  EXPECT_NEAR(without, 2 * (1.0 + 2.0) + 0.5, 1e-9);
  const double sigma = std::sqrt(2 * 0.05 * 0.05 + 2 * 0.1 * 0.1);
  EXPECT_NEAR(with - without, sigma * blom(2048), 0.01 * sigma * blom(2048));

  // A seeded Monte Carlo of the same step: per trial, every replica's four kernels drawn,
  // the wait the latest replica's arrival after the mean.
  std::mt19937_64 gen(20261207);
  std::normal_distribution<double> z;
  constexpr int kTrials = 1000;
  double sum = 0;
  for (int trial = 0; trial < kTrials; ++trial) {
    double latest = -1e9;
    for (int rank = 0; rank < 2048; ++rank) {
      double late = 0;
      for (const double t : {1.0, 1.0, 2.0, 2.0}) late += 0.05 * t * z(gen);
      latest = std::max(latest, late);
    }
    sum += latest;
  }
  const double monte_carlo = sum / kTrials;
  // The maximum of 2,048 normals has a standard deviation of about 0.4 sigma: 1,000 trials
  // leave a standard error of 0.013 sigma; four of them allowed.
  EXPECT_NEAR(with - without, monte_carlo, 0.052 * sigma) << monte_carlo;

  // One replica waits for no one, whatever the spread.
  const Step alone = data_parallel(1);
  EXPECT_DOUBLE_EQ(step_s(alone, spread_cost(0.05)), step_s(alone, HandCost({.gemm_s_per_k = 0})));
}

double step_s(const Step& s, const CostModel& cost, const SimulateOptions& o) {
  Result<SimulationResult> r = simulate(s.w, s.plan, cost, o);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : format_errors(r.errors()));
  return r.ok() ? r->prediction.step_time_s : -1.0;
}

// Full-rank: every replica's deviation drawn from the seed instead of the expected slowest;
// the same seed gives the same step, and over many seeds the mean wait is the order
// statistic's (64 replicas: the maximum's standard deviation is about 0.45 sigma, 40 seeds
// leave 0.07 sigma of standard error; 0.25 sigma allowed).
TEST(SyncSpread, FullRankDrawsEachReplicaSeeded) {
  const Step s = data_parallel(64);
  const HandCost cost = spread_cost(0.05);
  const double base = step_s(s, HandCost({.gemm_s_per_k = 0}));
  const double sigma = std::sqrt(2 * 0.05 * 0.05 + 2 * 0.1 * 0.1);
  EXPECT_NEAR(step_s(s, cost) - base, sigma * expected_max_std_normal(64), 1e-9);
  SimulateOptions o;
  o.full_rank = true;
  double sum = 0;
  constexpr int kSeeds = 40;
  for (int seed = 1; seed <= kSeeds; ++seed) {
    o.seed = static_cast<std::uint64_t>(seed);
    const double t = step_s(s, cost, o);
    EXPECT_GT(t, base) << seed;  // the latest of 64 draws is late
    sum += t - base;
  }
  EXPECT_NEAR(sum / kSeeds, sigma * expected_max_std_normal(64), 0.25 * sigma);
  o.seed = 7;
  EXPECT_DOUBLE_EQ(step_s(s, cost, o), step_s(s, cost, o));
  SimulateOptions other = o;
  other.seed = 8;
  EXPECT_NE(step_s(s, cost, o), step_s(s, cost, other));
  // Without a measured spread, full-rank and representative agree exactly.
  EXPECT_DOUBLE_EQ(step_s(s, HandCost({.gemm_s_per_k = 0}), o), base);
}

// Inside an action: a tensor-parallel all-reduce over 8 GPUs after a 1 s kernel waits for
// the slowest of 8 (0.05 s x E[max of 8]); what is left to differ between data-parallel
// replicas is that stretch's variance times Var[max of 8] plus the 2 s kernel's after it.
TEST(SyncSpread, TensorParallelCollectiveInsideAnActionWaits) {
  std::vector<Op> ops{kernel("a", Phase::kForward, 1.0), kernel("b", Phase::kForward, 2.0)};
  Op tp;
  tp.name = "tp_all_reduce";
  tp.phase = Phase::kForward;
  tp.shape = CollectiveOp{CollectiveKind::kAllReduce, CommGroup::kTensor, 100'000'000, 8, 1};
  ops.insert(ops.begin() + 1, tp);
  const ChunkTemplate plain = time_ops(ops, HandCost({.gemm_s_per_k = 0}), false);
  const ChunkTemplate spread = time_ops(ops, spread_cost(0.05), false);
  EXPECT_NEAR(plain.duration_s, 3.1, 1e-9);
  EXPECT_EQ(plain.spread_variance_s2, 0.0);
  EXPECT_NEAR(spread.duration_s - plain.duration_s, 0.05 * blom(8), 0.01 * 0.05 * blom(8));
  EXPECT_NEAR(spread.ops[1].end_s - spread.ops[1].start_s, 0.1 + 0.05 * expected_max_std_normal(8),
              1e-12);
  EXPECT_NEAR(spread.spread_variance_s2,
              0.05 * 0.05 * variance_max_std_normal(8) + 0.1 * 0.1, 1e-12);
  // Var[max of 8] by a seeded Monte Carlo: about 0.37.
  std::mt19937_64 gen(8);
  std::normal_distribution<double> z;
  double s1 = 0, s2 = 0;
  constexpr int kTrials = 200000;
  for (int i = 0; i < kTrials; ++i) {
    double m = -1e9;
    for (int r = 0; r < 8; ++r) m = std::max(m, z(gen));
    s1 += m;
    s2 += m * m;
  }
  const double mean = s1 / kTrials;
  EXPECT_NEAR(variance_max_std_normal(8), s2 / kTrials - mean * mean, 0.01);
  EXPECT_NEAR(expected_max_std_normal(8), mean, 0.01);
}

}  // namespace
}  // namespace stepsim::sim
