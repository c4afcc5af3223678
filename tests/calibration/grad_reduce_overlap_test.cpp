// overlap_grad_reduce in the validator: the executor posts each DDP bucket's reduction where
// Megatron issues it (the simulator's own sim::grad_sync_launches) and the step ops wait for
// them all; the prediction compared with it keeps them beside the backward.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>

#include "stepsim/validator/executor.hpp"
#include "stepsim/validator/validate.hpp"
#include "stepsim/plan/decompose.hpp"
#include "stepsim/check/load.hpp"
#include "stepsim/graph/ddp_buckets.hpp"
#include "stepsim/simulate/simulate.hpp"
#include "validation_workloads.hpp"

namespace stepsim::calib {
namespace {

using testing::FixedCost;
using testing::Shape;
using testing::tiny_workload;

/// The dp2 validation shape with overlapped gradient reduction in buckets of `bucket` params.
Workload overlapped(std::int64_t bucket, std::int64_t p = 1, std::int64_t v = 1) {
  Workload w = tiny_workload(Shape{1, p, 2, v, 4});
  w.training.overlap_grad_reduce = true;
  w.training.ddp_bucket_size = bucket;
  return w;
}

std::int64_t bytes_of(const ExecTask& t) { return std::get<CollectiveOp>(t.op.shape).bytes; }

TEST(GradReduceOverlap, EachBucketIsPostedWhereItsGradientsAreFinal) {
  const Workload w = overlapped(20'000);
  const WorkloadPlan plan = decompose(w);
  const FixedCost cost(1e-3);
  auto sim = sim::simulate(w, plan, cost, validation_simulate_options(false, true));
  ASSERT_TRUE(sim.ok()) << format_errors(sim.errors());
  const auto& chunk = plan.stages[0].chunks[0];
  auto buckets =
      sim::ddp_buckets(w, chunk, sim::ddp_bucket_size(w.training, plan.stages[0].parameters, 0, 0));
  ASSERT_TRUE(buckets.ok());
  ASSERT_GT(buckets->size(), 2U);
  ASSERT_EQ(chunk.grad_sync.size(), 1U);
  const std::int64_t total = std::get<CollectiveOp>(chunk.grad_sync[0].shape).bytes;

  const auto serial = build_stage_tasks(w, plan, *sim->schedule, 0, false, false);
  const auto tasks = build_stage_tasks(w, plan, *sim->schedule, 0, false, true);
  // The last backward (the last micro-batch's, p = 1): its ops, the reductions in between.
  std::int32_t last_mb = 0;
  for (const auto& t : tasks) last_mb = std::max(last_mb, t.microbatch);
  std::size_t last_backward_start = tasks.size();
  for (std::size_t i = 0; i < tasks.size() && last_backward_start == tasks.size(); ++i) {
    if (tasks[i].kind == ExecTask::Kind::kOp && tasks[i].microbatch == last_mb &&
        tasks[i].op.phase != Phase::kForward) {
      last_backward_start = i;
    }
  }
  ASSERT_LT(last_backward_start, tasks.size());
  std::vector<std::size_t> posts;
  std::int64_t sum = 0;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    if (!tasks[i].async) continue;
    posts.push_back(i);
    sum += bytes_of(tasks[i]);
    EXPECT_EQ(tasks[i].name.find("c0 b" + std::to_string(posts.size() - 1) + " "), 0U)
        << tasks[i].name;
  }
  ASSERT_EQ(posts.size(), buckets->size());
  EXPECT_EQ(sum, total);  // the chunk's reduction, split by the buckets' parameters
  // Bucket b right after op ready_op of the last backward (every post before counted).
  for (std::size_t b = 0; b < posts.size(); ++b) {
    const std::size_t ready =
        last_backward_start + static_cast<std::size_t>((*buckets)[b].ready_op) + b;
    EXPECT_EQ(posts[b], ready + 1) << "bucket " << b;
    EXPECT_EQ(tasks[ready].op.name,
              chunk.backward[static_cast<std::size_t>((*buckets)[b].ready_op)].name);
  }
  // The step's first op waits for every one of them, and nothing else does.
  std::set<std::int32_t> waited;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    for (const auto& wt : tasks[i].waits) {
      EXPECT_EQ(wt.transfer, -1);
      EXPECT_EQ(tasks[i].op.phase, Phase::kStep) << tasks[i].name;
      waited.insert(wt.task);
    }
  }
  EXPECT_EQ(waited.size(), posts.size());
  // Without the backend's collective thread: the chunk's one reduction after the program.
  std::size_t serial_reductions = 0;
  for (const auto& t : serial) {
    EXPECT_FALSE(t.async);
    serial_reductions += t.op_name == chunk.grad_sync[0].name ? 1U : 0U;
  }
  EXPECT_EQ(serial_reductions, 1U);
  EXPECT_EQ(tasks.size(), serial.size() + posts.size() - 1);
}

// The prediction for such a backend: the reductions on the DP stream beside the backward
// (communication while computing, none when serialised), the step no longer.
TEST(GradReduceOverlap, ThePredictionOverlapsTheBucketsWithTheBackward) {
  const Workload w = overlapped(20'000);
  const WorkloadPlan plan = decompose(w);
  const FixedCost cost(1e-3);
  auto serial = sim::simulate(w, plan, cost, validation_simulate_options(false, false));
  auto async = sim::simulate(w, plan, cost, validation_simulate_options(false, true));
  ASSERT_TRUE(serial.ok() && async.ok());
  EXPECT_DOUBLE_EQ(stage_figures(serial->timeline, 0).overlap_s, 0.0);
  EXPECT_GT(stage_figures(async->timeline, 0).overlap_s, 0.0);
  EXPECT_LT(async->prediction.step_time_s, serial->prediction.step_time_s);
}

// Interleaved and pipelined: the same launches as the simulator's (a chunk's reductions after
// the backward that is its last, counted with the rank's lag), each waited for once.
TEST(GradReduceOverlap, InterleavedChunksAreReducedAfterTheirLastBackward) {
  const Workload w = overlapped(0, 2, 2);
  const WorkloadPlan plan = decompose(w);
  const FixedCost cost(1e-3);
  auto sim = sim::simulate(w, plan, cost, validation_simulate_options(true, true));
  ASSERT_TRUE(sim.ok()) << format_errors(sim.errors());
  for (std::int32_t s = 0; s < 2; ++s) {
    const auto tasks = build_stage_tasks(w, plan, *sim->schedule, s, true, true);
    std::int32_t collectives = 0;
    std::set<std::int32_t> waited;
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      if (tasks[i].async && tasks[i].kind == ExecTask::Kind::kOp) ++collectives;
      for (const auto& wt : tasks[i].waits) {
        if (wt.transfer >= 0) continue;
        EXPECT_TRUE(waited.insert(wt.task).second);
        EXPECT_LT(static_cast<std::size_t>(wt.task), i);
      }
    }
    EXPECT_EQ(collectives, 2) << "stage " << s;  // one per chunk (no bucketing after chunk 0)
    EXPECT_EQ(waited.size(), 2U) << "stage " << s;
  }
}

// Apex DistributedFusedAdam (NVIDIA's MLPerf GPT-3 job): the validator posts each later
// chunk's bucket reduce-scatters where the simulator launches them, runs the first chunk's
// group in the step ops, and gathers each later chunk's buckets after them.
TEST(GradReduceOverlap, DistributedFusedAdamsGroupsRunAsTheSimulatorPlacesThem) {
  auto loaded =
      load_scenario_file(std::string(STEPSIM_SCENARIOS_DIR) + "/gpt3-175b-h100-512-mlperf41.json",
                         LoadOptions{STEPSIM_SCENARIOS_DIR});
  ASSERT_TRUE(loaded.ok()) << format_errors(loaded.errors());
  const Workload& w = *loaded;
  const WorkloadPlan plan = decompose(w);
  const FixedCost cost(1e-3);
  auto sim = sim::simulate(w, plan, cost, validation_simulate_options(true, true));
  ASSERT_TRUE(sim.ok()) << format_errors(sim.errors());
  const auto tasks = build_stage_tasks(w, plan, *sim->schedule, 3, true, true);
  std::int32_t posted = 0, gathers = 0, tail = 0;
  std::size_t last_posted = 0, first_gather = tasks.size();
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const std::string& name = tasks[i].op.name;
    if (tasks[i].async && name == "dfa_grad_reduce_scatter") {
      ++posted;
      last_posted = i;
    }
    if (name == "dfa_grad_reduce_scatter_first") ++tail;
    if (name == "dfa_param_all_gather") {
      ++gathers;
      first_gather = std::min(first_gather, i);
    }
  }
  EXPECT_EQ(posted, 5 * 9);   // chunks 1..5, 9 buckets each
  EXPECT_EQ(gathers, 5 * 9);  // after the step's ops
  EXPECT_EQ(tail, 2);         // the first chunk's FP8 buckets, the bf16 bucket
  EXPECT_LT(last_posted, first_gather);
}

}  // namespace
}  // namespace stepsim::calib
