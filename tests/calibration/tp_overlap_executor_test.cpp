// Megatron's --tp-comm-overlap in the validator: with a backend that runs non-blocking
// communication (the CPU backend's MPI threads), Transformer Engine's userbuffers exchanges
// and collectives are posted beside the GEMM chunks and waited for where their rows are
// needed, with the peers TE's comm_gemm_overlap.cpp gives them; the prediction compared with
// it keeps them beside the compute.

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <tuple>

#include "fake_backend.hpp"
#include "stepsim/validator/executor.hpp"
#include "stepsim/validator/validate.hpp"
#include "stepsim/plan/decompose.hpp"
#include "stepsim/simulate/simulate.hpp"
#include "stepsim/engine/timeline.hpp"
#include "validation_workloads.hpp"

namespace stepsim::calib {
namespace {

using testing::FakeBackend;
using testing::FixedCost;
using testing::Shape;
using testing::tiny_workload;

Workload overlapped(std::int64_t t) {
  Workload w = tiny_workload(Shape{t, 1, 1, 1, 2, true});
  w.training.tp_comm_overlap = true;
  return w;
}

// comm_gemm_overlap.cpp: _next_rank = (tp + rank + 1) % tp, _prev_rank = (tp + rank - 1) % tp;
// the aggregated exchange's first swap with (_tp_id % 2 == 0 ? _next_rank : _prev_rank) and
// its steps to (tp_id + 2) and from (tp_id - 2); the ring-exchange reduce-scatter's step i
// sends to (tp_id + i) % tp and receives from (tp + tp_id - i) % tp.
TEST(RingPeers, AreTransformerEnginesUserbuffersPeers) {
  for (const std::int32_t tp : {2, 4, 8}) {
    for (std::int32_t id = 0; id < tp; ++id) {
      EXPECT_EQ(ring_peers(id, tp, 1), (RingPeers{(tp + id + 1) % tp, (tp + id - 1) % tp}));
      const std::int32_t pair = id % 2 == 0 ? (tp + id + 1) % tp : (tp + id - 1) % tp;
      EXPECT_EQ(ring_peers(id, tp, 0), (RingPeers{pair, pair}));
      EXPECT_EQ(ring_peers(id, tp, 2), (RingPeers{(tp + id + 2) % tp, (tp + id - 2) % tp}));
      for (std::int32_t i = 1; i < tp; ++i) {
        EXPECT_EQ(ring_peers(id, tp, i), (RingPeers{(id + i) % tp, (tp + id - i) % tp}));
      }
    }
  }
}

sim::SimulationResult simulate(const Workload& w, const WorkloadPlan& plan, bool async) {
  const FixedCost cost(1e-3);
  auto r = sim::simulate(w, plan, cost, validation_simulate_options(async));
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : format_errors(r.errors()));
  return std::move(r).value();
}

// Every posted task is an op posted_when_serial (the same tasks in the same order as the
// serialised executor's), waited for exactly once and later; a ring exchange is waited for by
// the next GEMM chunk (it brings that chunk's rows), the pipelined reduce-scatters by the
// first task after the last GEMM chunk, the bulk all-gather before the wgrad GEMM.
TEST(TpOverlapExecutor, UserbuffersCommunicationIsPostedAndWaitedForWhereItsRowsAreNeeded) {
  for (const std::int64_t t : {2, 4}) {
    const Workload w = overlapped(t);
    const WorkloadPlan plan = decompose(w);
    const auto sim = simulate(w, plan, false);
    const auto serial = build_stage_tasks(w, plan, *sim.schedule, 0, false);
    const auto tasks = build_stage_tasks(w, plan, *sim.schedule, 0, true);
    ASSERT_EQ(tasks.size(), serial.size());
    std::map<ExecTask::Wait, std::size_t> waited_at;
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      EXPECT_EQ(tasks[i].name, serial[i].name);
      EXPECT_FALSE(serial[i].async) << serial[i].name;
      for (const auto& wt : tasks[i].waits) {
        ASSERT_LT(static_cast<std::size_t>(wt.task), i);
        EXPECT_TRUE(waited_at.emplace(wt, i).second) << "waited for twice";
      }
    }
    std::map<std::string, std::size_t> posted;  // op name -> tasks posted
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      const ExecTask& x = tasks[i];
      EXPECT_EQ(x.async, x.kind == ExecTask::Kind::kOp && posted_when_serial(x.op)) << x.name;
      if (!x.async) continue;
      ++posted[x.op_name];
      const bool p2p = std::holds_alternative<P2POp>(x.op.shape);
      const ExecTask::Wait first{static_cast<std::int32_t>(i), p2p ? 0 : -1};
      ASSERT_TRUE(waited_at.contains(first)) << x.name << " never waited for";
      const std::size_t at = waited_at.at(first);
      if (p2p) {
        EXPECT_EQ(waited_at.at(ExecTask::Wait{static_cast<std::int32_t>(i), 1}), at) << x.name;
      }
      // The tasks between the post and the wait ran beside it; the waiting one needs it.
      std::size_t gemms_between = 0;
      for (std::size_t j = i + 1; j < at; ++j) {
        gemms_between += tasks[j].category == OpCategory::kGemm ? 1U : 0U;
      }
      if (x.op_name == "tp_ring_exchange") {
        EXPECT_EQ(gemms_between, 0U) << x.name;
        EXPECT_EQ(tasks[at].category, OpCategory::kGemm)
            << x.name << " waited by " << tasks[at].name;
      } else if (x.op_name == "tp_ub_all_gather") {
        EXPECT_EQ(gemms_between, 1U) << x.name << ": the dgrad GEMM runs beside it";
      } else if (x.op_name == "tp_ub_reduce_scatter") {
        EXPECT_LE(gemms_between, 3U) << x.name;
        EXPECT_NE(tasks[at].category, OpCategory::kGemm) << x.name;
      }
    }
    // Per layer and micro-batch (2 of them, 4 layers): tp - 1 exchanges in each of the four
    // ring-exchange GEMMs, 4 chunks' reduce-scatters in each of the two pipelined GEMMs, one
    // bulk all-gather and one bulk reduce-scatter in each of the two column-parallel backward
    // passes.
    const std::size_t n = 2 * 4;
    EXPECT_EQ(posted["tp_ring_exchange"], n * 4 * static_cast<std::size_t>(t - 1));
    EXPECT_EQ(posted["tp_ub_reduce_scatter"], n * (2 * 4 + 2));
    EXPECT_EQ(posted["tp_ub_all_gather"], n * 2);
    const auto predicted_serial = simulate(w, plan, false);
    const auto predicted_async = simulate(w, plan, true);
    EXPECT_NEAR(stage_figures(predicted_serial.timeline, 0).overlap_s, 0.0, 1e-12);
    EXPECT_GT(stage_figures(predicted_async.timeline, 0).overlap_s, 1e-3);
    EXPECT_LT(predicted_async.prediction.step_time_s, predicted_serial.prediction.step_time_s);
  }
}

// Each rank's exchanges go to the TP peers TE names, under the tensor-parallel ring's tag, and
// what one rank sends another receives.
TEST(TpOverlapExecutor, ExchangesPairUpBetweenTensorParallelPeers) {
  for (const std::int64_t t : {2, 4}) {
    const Workload w = overlapped(t);
    const WorkloadPlan plan = decompose(w);
    const auto sim = simulate(w, plan, false);
    const RankLayout l = layout_of(w);
    std::map<std::pair<std::int32_t, std::int32_t>, std::int64_t> sent, received;
    for (std::int32_t g = 0; g < l.world_size(); ++g) {
      FakeBackend b(g, l.world_size(), testing::split_sizes(l, g));
      ExecutorOptions o;
      o.warmup_steps = 0;
      o.steps = 1;
      auto m = execute_schedule(w, plan, *sim.schedule, b, o);
      ASSERT_TRUE(m.ok()) << format_errors(m.errors());
      for (const auto& call : b.p2p_calls()) {
        for (const auto& r : call) {
          EXPECT_EQ(r.tag, 32765);
          EXPECT_NE(r.peer, g);
          (r.send ? sent[{g, r.peer}] : received[{r.peer, g}]) += r.bytes;
        }
      }
    }
    EXPECT_FALSE(sent.empty());
    EXPECT_EQ(sent, received);
  }
}

}  // namespace
}  // namespace stepsim::calib
