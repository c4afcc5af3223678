// The validator's executor, single process with a FakeBackend: it walks exactly the program
// the simulator predicts, its point-to-point requests pair up between peers, and its
// measurement is well formed.

#include "stepsim/validator/executor.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <tuple>

#include "fake_backend.hpp"
#include "stepsim/validator/validate.hpp"
#include "stepsim/plan/decompose.hpp"
#include "stepsim/simulate/simulate.hpp"
#include "validation_workloads.hpp"

namespace stepsim::calib {
namespace {

using testing::FakeBackend;
using testing::FixedCost;
using testing::Shape;
using testing::split_sizes;
using testing::tiny_workload;

struct Case {
  const char* name;
  Shape shape;
};

// The shapes of the shipped validation scenarios, and everything at once.
const Case kCases[] = {
    {"pp2_1f1b", Shape{1, 2, 1, 1, 4}},
    {"pp2_interleaved_v2", Shape{1, 2, 1, 2, 4}},
    {"tp2_sequence_parallel", Shape{2, 1, 1, 1, 2, true}},
    {"dp2_all_reduce", Shape{1, 1, 2, 1, 2}},
    {"tp2_pp2_dp2_distributed_optimizer", Shape{2, 2, 2, 1, 4, true, true}},
    {"ep2_moe", Shape{1, 1, 2, 1, 2, false, false, 4, 2}},
    {"cp2_p2p_ring", Shape{1, 1, 1, 1, 2, false, false, 0, 1, 2, CpCommType::kP2p}},
    {"cp2_a2a", Shape{1, 1, 1, 1, 2, false, false, 0, 1, 2, CpCommType::kA2a}},
    {"cp2_allgather", Shape{1, 1, 1, 1, 2, false, false, 0, 1, 2, CpCommType::kAllGather}},
    {"tp2_cp2_pp2", Shape{2, 2, 1, 1, 4, true, false, 0, 1, 2, CpCommType::kP2p}},
    {"cp4_a2a_p2p", Shape{1, 1, 1, 1, 2, false, false, 0, 1, 4, CpCommType::kA2aP2p, 2}},
};

sim::SimulationResult simulate_serialised(const Workload& w, const WorkloadPlan& plan) {
  const FixedCost cost(1e-3);
  auto r = sim::simulate(w, plan, cost, validation_simulate_options(false));
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : format_errors(r.errors()));
  return std::move(r).value();
}

/// Slice names the executor produces for a stage, in issue order.
std::vector<std::string> executed_names(const std::vector<ExecTask>& tasks) {
  std::vector<std::string> names;
  for (const auto& t : tasks) {
    if (t.kind == ExecTask::Kind::kOp) {
      names.push_back(t.name);
      continue;
    }
    names.insert(names.end(), t.transfer_names.begin(), t.transfer_names.end());
  }
  return names;
}

TEST(RankLayout, FollowsMegatronTensorThenDataThenPipeline) {
  const RankLayout l{2, 2, 2};  // t, p, dp
  EXPECT_EQ(l.world_size(), 8);
  EXPECT_EQ(l.global_rank(0, 0, 1), 1);  // TP peers are adjacent
  EXPECT_EQ(l.global_rank(0, 1, 0), 2);  // then DP replicas
  EXPECT_EQ(l.global_rank(1, 0, 0), 4);  // then pipeline stages
  EXPECT_EQ(l.global_rank(1, 1, 1), 7);
  for (std::int32_t g = 0; g < l.world_size(); ++g) {
    const auto c = l.coord_of(g);
    EXPECT_EQ(l.global_rank(c.pp, c.dp, c.tp), g);
  }
}

TEST(ExecutorTasks, IssueOrderEqualsTheSerialisedSimulation) {
  for (const auto& c : kCases) {
    const Workload w = tiny_workload(c.shape);
    const WorkloadPlan plan = decompose(w);
    const auto sim = simulate_serialised(w, plan);
    for (std::int32_t s = 0; s < static_cast<std::int32_t>(c.shape.p); ++s) {
      std::vector<std::string> predicted;
      for (const auto& slice : sim.timeline.slices) {
        if (slice.rank == s) predicted.push_back(slice.name);
      }
      const auto executed = executed_names(build_stage_tasks(w, plan, *sim.schedule, s));
      EXPECT_EQ(executed.size(), predicted.size()) << c.name << " stage " << s;
      for (std::size_t i = 0; i < std::min(executed.size(), predicted.size()); ++i) {
        if (executed[i] == predicted[i]) continue;
        ADD_FAILURE() << c.name << " stage " << s << ": item " << i << " executed '" << executed[i]
                      << "', predicted '" << predicted[i] << "'";
        break;
      }
    }
  }
}

// One vocabulary (stepsim/sim/op_vocabulary.hpp): every op the executor issues is named,
// coloured and described exactly as the simulator's slice of it, so a measured trace reads
// like the predicted one.
TEST(ExecutorTasks, OpsAreNamedKindedAndDescribedAsTheSimulatorDoes) {
  for (const auto& c : kCases) {
    const Workload w = tiny_workload(c.shape);
    const WorkloadPlan plan = decompose(w);
    const auto sim = simulate_serialised(w, plan);
    for (std::int32_t s = 0; s < static_cast<std::int32_t>(c.shape.p); ++s) {
      std::vector<std::tuple<std::string, sim::SliceKind, std::string>> predicted, executed;
      for (const auto& slice : sim.timeline.slices) {
        if (slice.rank == s && slice.stream != Stream::kPipelineComm) {
          predicted.emplace_back(slice.name, slice.kind, slice.detail);
        }
      }
      for (const auto& t : build_stage_tasks(w, plan, *sim.schedule, s)) {
        if (t.kind == ExecTask::Kind::kOp) executed.emplace_back(t.name, t.slice_kind, t.detail);
      }
      EXPECT_EQ(executed, predicted) << c.name << " stage " << s;
    }
  }
}

TEST(ExecutorTasks, EveryMeasuredSliceMatchesAPredictedOneByIdentity) {
  // A measurement of exactly the tasks the executor issues (any timings) is matched slice
  // for slice with the serialised prediction by identity (stage, phase, micro-batch, chunk,
  // layer, op), nothing left over on either side.
  for (const auto& c : kCases) {
    const Workload w = tiny_workload(c.shape);
    const WorkloadPlan plan = decompose(w);
    const auto sim = simulate_serialised(w, plan);
    Measurement m;
    m.layout = layout_of(w);
    std::vector<std::vector<TaskTiming>> step(static_cast<std::size_t>(m.layout.world_size()));
    for (std::int32_t s = 0; s < m.layout.pp; ++s) {
      m.stage_tasks.push_back(build_stage_tasks(w, plan, *sim.schedule, s));
      auto& timings = step[static_cast<std::size_t>(m.layout.global_rank(s, 0, 0))];
      for (std::size_t i = 0; i < m.stage_tasks.back().size(); ++i) {
        timings.push_back(TaskTiming{static_cast<double>(i), static_cast<double>(i) + 1, 1.0});
      }
    }
    m.steps.push_back(step);
    m.step_times_s = {1.0};
    m.complete = true;
    const ValidationReport r = compare(sim.prediction, sim.timeline, m);
    EXPECT_GT(r.matched_slices, 0) << c.name;
    EXPECT_EQ(r.unmatched_predicted, 0) << c.name;
    EXPECT_EQ(r.unmatched_measured, 0) << c.name;
  }
}

TEST(ExecutorTasks, ComputeActionsFollowTheScheduleWithTheirChunksOps) {
  for (const auto& c : kCases) {
    const Workload w = tiny_workload(c.shape);
    const WorkloadPlan plan = decompose(w);
    const auto sim = simulate_serialised(w, plan);
    for (std::int32_t s = 0; s < static_cast<std::int32_t>(c.shape.p); ++s) {
      const auto tasks = build_stage_tasks(w, plan, *sim.schedule, s);
      std::size_t i = 0;
      for (const auto& a : sim.schedule->ranks[static_cast<std::size_t>(s)].actions) {
        const auto& chunk =
            plan.stages[static_cast<std::size_t>(s)].chunks[static_cast<std::size_t>(a.chunk)];
        const auto& ops = a.type == sim::ActionType::kForward ? chunk.forward : chunk.backward;
        while (i < tasks.size() && tasks[i].kind == ExecTask::Kind::kComm) ++i;
        for (const auto& op : ops) {
          ASSERT_LT(i, tasks.size()) << c.name;
          EXPECT_EQ(tasks[i].op, op) << c.name << " stage " << s;
          EXPECT_EQ(tasks[i].microbatch, a.microbatch);
          EXPECT_EQ(tasks[i].chunk, a.chunk);
          ++i;
        }
      }
    }
  }
}

// Megatron's non-blocking calls (overlap_p2p_comm, here the interleaved schedule with p = 2):
// with a backend that runs them beside the compute, each transfer is waited for exactly once,
// after it was posted and no later than the op that needs what it received; otherwise the
// task list is the serialised one.
TEST(ExecutorTasks, NonBlockingTransfersAreWaitedForOnceBeforeTheirData) {
  const Workload w = tiny_workload(Shape{1, 2, 1, 2, 4});
  ASSERT_TRUE(w.training.overlap_p2p_comm);
  const WorkloadPlan plan = decompose(w);
  const auto sim = simulate_serialised(w, plan);
  const std::int32_t p = 2;
  for (std::int32_t s = 0; s < p; ++s) {
    const auto serial = build_stage_tasks(w, plan, *sim.schedule, s, false);
    const auto tasks = build_stage_tasks(w, plan, *sim.schedule, s, true);
    ASSERT_EQ(executed_names(tasks), executed_names(serial));
    std::map<ExecTask::Wait, std::size_t> waited_at;
    std::size_t async = 0;
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      EXPECT_FALSE(serial[i].async);
      EXPECT_TRUE(serial[i].waits.empty());
      async += tasks[i].async ? 1U : 0U;
      for (const auto& wt : tasks[i].waits) {
        ASSERT_LT(static_cast<std::size_t>(wt.task), i) << "stage " << s;
        EXPECT_TRUE(tasks[static_cast<std::size_t>(wt.task)].async);
        EXPECT_TRUE(waited_at.emplace(wt, i).second) << "waited for twice";
      }
    }
    EXPECT_GT(async, 0U) << "stage " << s;
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      if (!tasks[i].async) continue;
      for (std::size_t k = 0; k < tasks[i].transfers.size(); ++k) {
        const ExecTask::Wait wt{static_cast<std::int32_t>(i), static_cast<std::int32_t>(k)};
        ASSERT_TRUE(waited_at.contains(wt)) << "stage " << s << " task " << i << " never waited";
        const sim::Transfer& tr = tasks[i].transfers[k];
        if (tr.send) continue;
        // The first op of the action that consumes the received tensor.
        const bool act = tr.tensor == sim::TensorKind::kActivation;
        const std::int32_t vs = act ? tr.producer_virtual_stage + 1 : tr.producer_virtual_stage - 1;
        ASSERT_EQ(vs % p, s);
        std::size_t consumer = tasks.size();
        for (std::size_t j = 0; j < tasks.size(); ++j) {
          const bool forward = tasks[j].slice_kind == sim::SliceKind::kForward;
          if (tasks[j].kind == ExecTask::Kind::kOp && tasks[j].microbatch == tr.microbatch &&
              tasks[j].chunk == vs / p && forward == act) {
            consumer = j;
            break;
          }
        }
        ASSERT_LT(consumer, tasks.size());
        EXPECT_LE(waited_at.at(wt), consumer) << "stage " << s << " mb " << tr.microbatch;
      }
    }
  }
}

// The prediction for such a backend runs the non-blocking transfers beside the compute:
// pipeline slices overlap compute slices of their rank, which never happens serialised, and
// the step is no longer.
/// The validation prediction of `w` without and with a backend that runs non-blocking P2P
/// beside the compute: their step times and the overlap summed over the stages.
struct SerialAndAsync {
  double serial_step_s = 0, async_step_s = 0;
  double serial_overlap_s = 0, async_overlap_s = 0;
};
SerialAndAsync predict_serial_and_async(const Workload& w, const WorkloadPlan& plan) {
  const FixedCost cost(1e-3);
  auto serial = sim::simulate(w, plan, cost, validation_simulate_options(false));
  auto async = sim::simulate(w, plan, cost, validation_simulate_options(true));
  EXPECT_TRUE(serial.ok() && async.ok());
  SerialAndAsync out;
  if (!serial.ok() || !async.ok()) return out;
  out.serial_step_s = serial->prediction.step_time_s;
  out.async_step_s = async->prediction.step_time_s;
  for (std::int32_t s = 0; s < static_cast<std::int32_t>(w.training.pipeline_model_parallel_size);
       ++s) {
    out.serial_overlap_s += stage_figures(serial->timeline, s).overlap_s;
    out.async_overlap_s += stage_figures(async->timeline, s).overlap_s;
  }
  return out;
}

TEST(ExecutorTasks, TheAsynchronousPredictionOverlapsTransfersWithCompute) {
  const Workload w = tiny_workload(Shape{1, 2, 1, 2, 4});
  const SerialAndAsync p = predict_serial_and_async(w, decompose(w));
  EXPECT_DOUBLE_EQ(p.serial_overlap_s, 0.0);
  EXPECT_GT(p.async_overlap_s, 0.0);
  EXPECT_LE(p.async_step_s, p.serial_step_s);
}

// Transformer Engine's context-parallel ring with a backend that runs non-blocking P2P beside
// the compute: every ring step is posted (the same tasks in the same order otherwise), its two
// transfers are waited for exactly once, before the ring's next step is posted and no later
// than the first op that depends on it; and the prediction for such a backend overlaps the
// ring with the attention and is no longer than the serialised one.
TEST(ExecutorTasks, ContextParallelRingStepsArePostedAndWaitedForBeforeTheirBlock) {
  for (const Shape& shape : {Shape{1, 1, 1, 1, 2, false, false, 0, 1, 2, CpCommType::kP2p},
                             Shape{2, 2, 1, 1, 4, true, false, 0, 1, 2, CpCommType::kP2p},
                             Shape{1, 1, 1, 1, 2, false, false, 0, 1, 4, CpCommType::kA2aP2p, 2}}) {
    const Workload w = tiny_workload(shape);
    const WorkloadPlan plan = decompose(w);
    const auto sim = simulate_serialised(w, plan);
    for (std::int32_t s = 0; s < static_cast<std::int32_t>(shape.p); ++s) {
      const auto serial = build_stage_tasks(w, plan, *sim.schedule, s, false);
      const auto tasks = build_stage_tasks(w, plan, *sim.schedule, s, true);
      ASSERT_EQ(executed_names(tasks), executed_names(serial));
      std::map<ExecTask::Wait, std::size_t> waited_at;
      for (std::size_t i = 0; i < tasks.size(); ++i) {
        for (const auto& wt : tasks[i].waits) {
          ASSERT_LT(static_cast<std::size_t>(wt.task), i);
          EXPECT_TRUE(waited_at.emplace(wt, i).second) << "waited for twice";
        }
      }
      std::size_t ring_steps = 0;
      std::size_t previous = tasks.size();  // the ring step posted before, if any
      for (std::size_t i = 0; i < tasks.size(); ++i) {
        const bool ring = std::holds_alternative<P2POp>(tasks[i].op.shape) &&
                          tasks[i].kind == ExecTask::Kind::kOp;
        EXPECT_EQ(tasks[i].async, ring) << tasks[i].name;
        if (!ring) continue;
        ++ring_steps;
        for (std::int32_t k = 0; k < 2; ++k) {
          const ExecTask::Wait wt{static_cast<std::int32_t>(i), k};
          ASSERT_TRUE(waited_at.contains(wt)) << tasks[i].name << " never waited for";
          EXPECT_GT(waited_at.at(wt), i);
          if (previous < tasks.size()) {
            EXPECT_LE(waited_at.at(ExecTask::Wait{static_cast<std::int32_t>(previous), k}), i)
                << tasks[i].name << ": posted before the ring's previous step was done";
          }
        }
        previous = i;
      }
      EXPECT_GT(ring_steps, 0U);
    }
    const SerialAndAsync p = predict_serial_and_async(w, plan);
    EXPECT_NEAR(p.serial_overlap_s, 0.0, 1e-12);
    EXPECT_GT(p.async_overlap_s, 1e-4);
    EXPECT_LT(p.async_step_s, p.serial_step_s);
  }
}

TEST(Executor, PointToPointRequestsPairUpBetweenPeers) {
  for (const auto& c : kCases) {
    const Workload w = tiny_workload(c.shape);
    const WorkloadPlan plan = decompose(w);
    const auto sim = simulate_serialised(w, plan);
    const RankLayout l = layout_of(w);
    // (sender, receiver, tag) -> bytes, from the senders' and from the receivers' side.
    std::map<std::tuple<std::int32_t, std::int32_t, std::int32_t>, std::int64_t> sent, received;
    // Context-parallel ring bytes per (sender, receiver): every step's message is matched in
    // order under one tag, so only the totals must agree.
    std::map<std::pair<std::int32_t, std::int32_t>, std::int64_t> ring_sent, ring_received;
    for (std::int32_t g = 0; g < l.world_size(); ++g) {
      FakeBackend b(g, l.world_size(), split_sizes(l, g));
      ExecutorOptions o;
      o.warmup_steps = 0;
      o.steps = 1;
      auto m = execute_schedule(w, plan, *sim.schedule, b, o);
      ASSERT_TRUE(m.ok()) << c.name << ": " << format_errors(m.errors());
      for (const auto& call : b.p2p_calls()) {
        for (const auto& r : call) {
          EXPECT_EQ(l.coord_of(r.peer).tp, l.coord_of(g).tp) << c.name;
          EXPECT_EQ(l.coord_of(r.peer).dp, l.coord_of(g).dp) << c.name;
          if (r.tag == 32766) {  // the context-parallel ring: same stage, another CP rank
            EXPECT_EQ(l.coord_of(r.peer).pp, l.coord_of(g).pp) << c.name;
            EXPECT_NE(l.coord_of(r.peer).cp, l.coord_of(g).cp) << c.name;
            (r.send ? ring_sent[{g, r.peer}] : ring_received[{r.peer, g}]) += r.bytes;
            continue;
          }
          EXPECT_EQ(l.coord_of(r.peer).cp, l.coord_of(g).cp) << c.name;
          auto& side = r.send ? sent : received;
          const auto key = r.send ? std::tuple{g, r.peer, r.tag} : std::tuple{r.peer, g, r.tag};
          EXPECT_EQ(side.count(key), 0U) << c.name << ": tag " << r.tag << " used twice";
          side[key] = r.bytes;
        }
      }
    }
    EXPECT_EQ(sent, received) << c.name;
    EXPECT_EQ(sent.empty(), c.shape.p == 1) << c.name;
    EXPECT_EQ(ring_sent, ring_received) << c.name;
    const bool ring = c.shape.cp_comm == CpCommType::kP2p || c.shape.cp_comm == CpCommType::kA2aP2p;
    EXPECT_EQ(ring_sent.empty(), c.shape.cp == 1 || !ring) << c.name;
    if (c.shape.cp_comm == CpCommType::kA2aP2p) {
      // The ring of the p2p level: every cp_a2a-th CP rank, so peers share cp % cp_a2a.
      for (const auto& [peers, bytes] : ring_sent) {
        EXPECT_EQ(l.coord_of(peers.first).cp % l.cp_a2a, l.coord_of(peers.second).cp % l.cp_a2a)
            << c.name;
      }
    }
  }
}

TEST(Executor, IssuesEveryTaskEveryStepAndTimesThem) {
  const Workload w = tiny_workload(Shape{2, 1, 1, 1, 2, true});
  const WorkloadPlan plan = decompose(w);
  const auto sim = simulate_serialised(w, plan);
  FakeBackend b(0, 2, {2, 1, 1, 2, 2});
  ExecutorOptions o;
  o.warmup_steps = 2;
  o.steps = 3;
  auto m = execute_schedule(w, plan, *sim.schedule, b, o);
  ASSERT_TRUE(m.ok()) << format_errors(m.errors());
  const auto& tasks = m->stage_tasks.at(0);
  // Tensor, data, embedding, the amax-reduction group and (no distributed optimizer) the
  // model-parallel group of the gradient norm.
  const std::size_t splits = 5;
  // One backend call per task, and one per launch of a memory-bound op of several (the
  // optimizer's multi-tensor and per-tensor kernels).
  std::size_t calls = 0;
  for (const ExecTask& t : tasks) {
    const auto* memory =
        t.kind == ExecTask::Kind::kOp ? std::get_if<MemoryBoundOp>(&t.op.shape) : nullptr;
    calls += memory != nullptr ? static_cast<std::size_t>(memory->kernels) : 1;
  }
  EXPECT_GT(calls, tasks.size()) << "the optimizer's copies run a kernel per tensor";
  EXPECT_EQ(b.log().size(), splits + 5 * calls);
  EXPECT_TRUE(m->complete);
  ASSERT_EQ(m->steps.size(), 3U);
  ASSERT_EQ(m->step_times_s.size(), 3U);
  // The fake's clock is deterministic: every step takes the same time, and tasks follow
  // each other without overlap.
  EXPECT_GT(m->step_times_s[0], 0.0);
  EXPECT_NEAR(m->step_times_s[0], m->step_times_s[2], 1e-12);
  const sim::Timeline t = measured_timeline(*m, median_step(*m));
  EXPECT_EQ(t.label, "measured");
  ASSERT_EQ(t.slices.size(), tasks.size());
  EXPECT_NEAR(t.slices.front().start_s, 0.0, 1e-12);
  EXPECT_NEAR(t.slices.back().end_s, t.step_time_s, 1e-9);
  for (std::size_t i = 1; i < t.slices.size(); ++i) {
    EXPECT_GE(t.slices[i].start_s, t.slices[i - 1].end_s - 1e-12);
  }
}

TEST(Executor, InStreamModeEachTaskTakesItsKernelsTimesOnTheDevice) {
  // The CUDA backend as the validator runs it: calls return at once and the step's kernels
  // are timed on the device when it ends. The tasks then carry the device's times, which
  // are the serial run's: the host issued ahead, so the device never waited for it.
  const Workload w = tiny_workload(Shape{2, 1, 1, 1, 2, true});
  const WorkloadPlan plan = decompose(w);
  const auto sim = simulate_serialised(w, plan);
  FakeBackend serial(0, 2, {2, 1, 1, 2, 2});
  FakeBackend stream(0, 2, {2, 1, 1, 2, 2});
  stream.deferred = true;
  ExecutorOptions o;
  o.warmup_steps = 1;
  o.steps = 2;
  auto a = execute_schedule(w, plan, *sim.schedule, serial, o);
  auto b = execute_schedule(w, plan, *sim.schedule, stream, o);
  ASSERT_TRUE(a.ok()) << format_errors(a.errors());
  ASSERT_TRUE(b.ok()) << format_errors(b.errors());
  EXPECT_EQ(stream.log(), serial.log());
  ASSERT_EQ(b->steps.size(), 2U);
  ASSERT_EQ(b->step_times_s.size(), 2U);
  EXPECT_NEAR(b->step_times_s[1], a->step_times_s[1], 1e-12);
  const auto& ta = a->steps[1][0];
  const auto& tb = b->steps[1][0];
  ASSERT_EQ(ta.size(), tb.size());
  for (std::size_t i = 0; i < ta.size(); ++i) {
    EXPECT_NEAR(tb[i].op_s, ta[i].op_s, 1e-15) << i;
    EXPECT_NEAR(tb[i].end_s - tb[i].start_s, ta[i].end_s - ta[i].start_s, 1e-12) << i;
    if (i > 0) {
      EXPECT_GE(tb[i].start_s, tb[i - 1].end_s - 1e-12) << i;
    }
  }
  // A host slower than the device: the kernels wait for their launches, and the gaps
  // between them are the step's idle time, not any task's.
  FakeBackend slow(0, 2, {2, 1, 1, 2, 2});
  slow.deferred = true;
  slow.issue_s = 1e-3;
  auto c = execute_schedule(w, plan, *sim.schedule, slow, o);
  ASSERT_TRUE(c.ok()) << format_errors(c.errors());
  EXPECT_GT(c->step_times_s[1], a->step_times_s[1]);
  const auto& tc = c->steps[1][0];
  for (std::size_t i = 0; i < tc.size(); ++i) EXPECT_NEAR(tc[i].op_s, ta[i].op_s, 1e-15) << i;
}

TEST(Executor, AppendsTheStepsOfALaterRound) {
  const Workload w = tiny_workload(Shape{2, 1, 1, 1, 2, true});
  const WorkloadPlan plan = decompose(w);
  const auto sim = simulate_serialised(w, plan);
  FakeBackend b(0, 2, {2, 1, 1, 2, 2});
  FakeBackend b2(0, 2, {2, 1, 1, 2, 2});
  ExecutorOptions o;
  o.warmup_steps = 1;
  o.steps = 2;
  auto first = execute_schedule(w, plan, *sim.schedule, b, o);
  ASSERT_TRUE(first.ok()) << format_errors(first.errors());
  o.steps = 1;
  auto second = execute_schedule(w, plan, *sim.schedule, b2, o);
  ASSERT_TRUE(second.ok()) << format_errors(second.errors());
  Measurement all;
  append_steps(all, *first);
  EXPECT_EQ(all, *first);
  Measurement later = *second;
  later.complete = false;
  later.failure = "stopped";
  later.unfinished_step = {TaskTiming{1.0, 2.0, 0.5}};
  append_steps(all, later);
  ASSERT_EQ(all.steps.size(), 3u);
  ASSERT_EQ(all.step_times_s.size(), 3u);
  EXPECT_EQ(all.steps[2], second->steps[0]);
  EXPECT_EQ(all.step_times_s[2], second->step_times_s[0]);
  EXPECT_EQ(all.stage_tasks, first->stage_tasks);
  EXPECT_FALSE(all.complete);
  EXPECT_EQ(all.failure, "stopped");
  EXPECT_EQ(all.unfinished_step.size(), 1u);
}

TEST(Executor, CallsTheHookBeforeEveryTaskOfEveryStep) {
  const Workload w = tiny_workload(Shape{2, 1, 1, 1, 2, true});
  const WorkloadPlan plan = decompose(w);
  const auto sim = simulate_serialised(w, plan);
  FakeBackend b(0, 2, {2, 1, 1, 2, 2});
  ExecutorOptions o;
  o.warmup_steps = 1;
  o.steps = 2;
  std::vector<std::string> seen;
  o.before_task = [&seen](const ExecTask& t) { seen.push_back(t.name); };
  auto m = execute_schedule(w, plan, *sim.schedule, b, o);
  ASSERT_TRUE(m.ok()) << format_errors(m.errors());
  const auto& tasks = m->stage_tasks.at(0);
  ASSERT_EQ(seen.size(), 3 * tasks.size());
  for (std::size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], tasks[i % tasks.size()].name);
}

// A rank that stops making progress is reported to the caller, which decides what follows
// (validate stops the job); the library neither aborts nor exits. Here the caller lets the
// rank go on: the run then ends with the timeout as a runtime error.
TEST(Executor, ReportsATimeoutToTheCallerAndFailsTheRun) {
  const Workload w = tiny_workload(Shape{2, 1, 1, 1, 2, true});
  const WorkloadPlan plan = decompose(w);
  const auto sim = simulate_serialised(w, plan);
  FakeBackend b(0, 2, {2, 1, 1, 2, 2});
  ExecutorOptions o;
  o.warmup_steps = 0;
  o.steps = 2;
  o.timeout_s = 0.02;
  std::mutex mutex;
  std::condition_variable cv;
  bool reported = false;
  std::string message;
  Measurement partial;
  std::int64_t calls = 0;
  o.before_task = [&](const ExecTask&) {
    if (calls++ != 5) return;
    // Stuck in task 5 until the watchdog has reported it.
    std::unique_lock<std::mutex> lock(mutex);
    cv.wait(lock, [&] { return reported; });
  };
  o.on_timeout = [&](const std::string& m, const Measurement& so_far) {
    std::lock_guard<std::mutex> lock(mutex);
    message = m;
    partial = so_far;
    reported = true;
    cv.notify_all();
  };
  auto m = execute_schedule(w, plan, *sim.schedule, b, o);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.errors().front().kind, ErrorKind::kRuntime);
  EXPECT_EQ(m.errors().front().message, message);
  EXPECT_NE(message.find("rank 0 (pipeline stage 0"), std::string::npos) << message;
  EXPECT_NE(message.find("in step 0, task 5 '"), std::string::npos) << message;
  EXPECT_FALSE(partial.complete);
  EXPECT_EQ(partial.failure, message);
  EXPECT_EQ(partial.unfinished_step.size(), 5U);
  EXPECT_EQ(exit_status(m.errors()), 1);
}

// A rank that is slow, not hung: the caller's on_timeout returns instead of stopping the job.
// The callback reads only a snapshot taken under the executor's lock, so the rank's own
// thread goes on meanwhile: here it finishes step 0 and appends it while the callback still
// runs (the callback waits for step 1's barrier, which comes after the append). The snapshot
// stays what it was when the watchdog fired, and the run fails at the next task only after
// the callback has returned. Before the snapshot, the callback held the lock the append
// needs, and this test waited out its 30 s bound and failed.
TEST(Executor, ASlowRankGoesOnWhileTheCallerReadsItsSnapshot) {
  const Workload w = tiny_workload(Shape{2, 1, 1, 1, 2, true});
  const WorkloadPlan plan = decompose(w);
  const auto sim = simulate_serialised(w, plan);
  const std::size_t n = build_stage_tasks(w, plan, *sim.schedule, 0).size();
  ASSERT_GT(n, 1U);
  FakeBackend b(0, 2, {2, 1, 1, 2, 2});
  ExecutorOptions o;
  o.warmup_steps = 0;
  o.steps = 2;
  o.timeout_s = 0.2;  // far above a task of the fake backend, even on a loaded machine
  std::mutex mutex;
  std::condition_variable cv;
  bool fired = false;
  bool appended = false;
  bool returned = false;
  bool appended_while_reporting = false;
  std::string message;
  Measurement partial;
  std::size_t calls = 0;
  int barriers = 0;
  o.before_task = [&](const ExecTask&) {
    if (calls++ != n - 1) return;
    // Slow in the last task of step 0: it goes on once the watchdog has fired.
    std::unique_lock<std::mutex> lock(mutex);
    cv.wait(lock, [&] { return fired; });
  };
  b.on_barrier = [&] {
    std::lock_guard<std::mutex> lock(mutex);
    if (++barriers == 2) appended = true;  // step 1 starts: step 0 is in the measurement
    cv.notify_all();
  };
  o.on_timeout = [&](const std::string& m, const Measurement& so_far) {
    std::unique_lock<std::mutex> lock(mutex);
    fired = true;
    cv.notify_all();
    appended_while_reporting =
        cv.wait_for(lock, std::chrono::seconds(30), [&] { return appended; });
    message = m;
    partial = so_far;
    returned = true;
  };
  auto m = execute_schedule(w, plan, *sim.schedule, b, o);
  ASSERT_FALSE(m.ok());
  EXPECT_TRUE(returned);
  EXPECT_TRUE(appended_while_reporting);
  EXPECT_EQ(barriers, 2);
  EXPECT_EQ(m.errors().front().kind, ErrorKind::kRuntime);
  EXPECT_EQ(m.errors().front().message, message);
  EXPECT_NE(message.find("in step 0, task " + std::to_string(n - 1) + " '"), std::string::npos)
      << message;
  EXPECT_TRUE(partial.steps.empty());
  EXPECT_TRUE(partial.step_times_s.empty());
  EXPECT_EQ(partial.unfinished_step.size(), n - 1);
  EXPECT_FALSE(partial.complete);
  EXPECT_EQ(partial.failure, message);
  EXPECT_EQ(calls, n);  // step 1's first task is refused: the timeout ends the run there
}

// With experts the executor makes Megatron's expert groups after the dense ones (EP, expert
// TP, expert TP x EP, expert DP; each coloured by its lowest rank, keyed by the rank's place)
// and runs the dispatcher's all-to-alls on the EP group.
TEST(Executor, RunsTheMoeDispatcherOnTheExpertParallelGroup) {
  const Workload w = tiny_workload(Shape{1, 1, 2, 1, 2, false, false, 4, 2});
  const WorkloadPlan plan = decompose(w);
  const auto sim = simulate_serialised(w, plan);
  // tp, dp, embedding, then ep (2), etp (1), etp x ep (2), expert dp (1).
  FakeBackend b(1, 2, {1, 2, 1, 2, 1, 2, 1});
  ExecutorOptions o;
  o.warmup_steps = 0;
  o.steps = 1;
  auto m = execute_schedule(w, plan, *sim.schedule, b, o);
  ASSERT_TRUE(m.ok()) << format_errors(m.errors());
  EXPECT_TRUE(m->complete);
  const std::vector<std::string> splits(b.log().begin(), b.log().begin() + 7);
  EXPECT_EQ(splits[3], "split color=0 key=1");  // EP group {0, 1}: rank 1 is second
  EXPECT_EQ(splits[4], "split color=1 key=0");  // expert TP group {1}
  EXPECT_EQ(splits[5], "split color=0 key=1");  // expert TP x EP {0, 1}
  EXPECT_EQ(splits[6], "split color=1 key=0");  // expert DP {1}
  std::size_t all_to_all = 0;
  for (const std::string& entry : b.log()) {
    if (entry.starts_with("collective all_to_all group=4 ")) ++all_to_all;
    EXPECT_FALSE(entry.starts_with("collective all_to_all") &&
                 !entry.starts_with("collective all_to_all group=4 "))
        << entry;
  }
  // Per MoE layer and micro-batch: tokens and probabilities dispatched, tokens combined
  // (forward), and the gradients of all three back (backward): 4 layers x 2 micro-batches x 6.
  EXPECT_EQ(all_to_all, 4u * 2u * 6u);
}

TEST(Executor, RefusesAWorldOfTheWrongSize) {
  const Workload w = tiny_workload(Shape{1, 2, 1, 1, 4});
  const WorkloadPlan plan = decompose(w);
  const auto sim = simulate_serialised(w, plan);
  FakeBackend b(0, 3, {});
  auto m = execute_schedule(w, plan, *sim.schedule, b, ExecutorOptions{});
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.errors().front().key, "training.world_size");
}

TEST(Executor, TagsAreEqualOnBothSidesOfATransfer) {
  const sim::Transfer send{sim::TensorKind::kGradient, true, 3, 2, 1};
  sim::Transfer recv = send;
  recv.send = false;
  recv.peer = 0;
  EXPECT_EQ(p2p_tag(send, 4), p2p_tag(recv, 4));
  sim::Transfer act = send;
  act.tensor = sim::TensorKind::kActivation;
  EXPECT_NE(p2p_tag(send, 4), p2p_tag(act, 4));
}

}  // namespace
}  // namespace stepsim::calib
