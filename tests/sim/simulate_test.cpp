// simulate() on synthetic plans whose costs are known exactly: bubble identities, a
// hand-checked two-stage step, memory in flight under 1F1B and GPipe, determinism.

#include "stepsim/simulate/simulate.hpp"

#include <gtest/gtest.h>

#include <sstream>

#include "stepsim/report/report.hpp"

namespace stepsim::sim {
namespace {

/// Memory-bound ops cost bytes * 1 ns; communication costs what the test says.
class UnitCost final : public CostModel {
 public:
  explicit UnitCost(double p2p_s = 0.0) : p2p_s_(p2p_s) {}
  double gemm_s(const GemmOp&) const override { return 0.0; }
  double attention_s(const AttentionOp&) const override { return 0.0; }
  double memory_bound_s(const MemoryBoundOp& op) const override {
    return static_cast<double>(op.bytes) * 1e-9;
  }
  double collective_s(const CollectiveOp& op) const override {
    return static_cast<double>(op.bytes) * 1e-9;
  }
  /// Constant per transfer, or (with a negative constant) priced by its bytes at 1 ns each.
  double p2p_s(const P2POp& op) const override {
    return p2p_s_ >= 0 ? p2p_s_ : static_cast<double>(op.bytes) * 1e-9;
  }
  std::string describe() const override { return "unit"; }

 private:
  double p2p_s_;
};

Op kernel(const char* name, Phase phase, double seconds) {
  Op op;
  op.name = name;
  op.phase = phase;
  op.shape = MemoryBoundOp{static_cast<std::int64_t>(seconds * 1e9)};
  return op;
}

Workload uniform_workload(std::int32_t p, std::int32_t v, std::int32_t m) {
  Workload w;
  w.name = "uniform";
  w.model.num_layers = p * v;
  w.model.seq_length = 1;
  TrainingConfig& t = w.training;
  t.world_size = p;
  t.pipeline_model_parallel_size = p;
  t.virtual_pipeline_model_parallel_size = v;
  t.data_parallel_size = 1;
  t.micro_batch_size = 1;
  t.global_batch_size = m;
  t.num_microbatches = m;
  t.microbatch_group_size_per_vp_stage = v > 1 ? p : 0;
  t.overlap_p2p_comm = v > 1;
  w.system.gpus_per_node = 8;
  w.system.memory_bytes = 1 << 30;
  w.system.peak_flops_fp32 = 1;
  return w;
}

WorkloadPlan uniform_plan(std::int32_t p, std::int32_t v, double fwd_s, double bwd_s) {
  WorkloadPlan plan;
  for (std::int32_t r = 0; r < p; ++r) {
    StagePlan stage;
    stage.stage = r;
    stage.static_bytes = 1000;
    for (std::int32_t c = 0; c < v; ++c) {
      ChunkPlan chunk;
      chunk.stage = r;
      chunk.chunk = c;
      chunk.forward.push_back(kernel("fwd", Phase::kForward, fwd_s));
      chunk.backward.push_back(kernel("bwd", Phase::kBackwardInput, bwd_s));
      chunk.p2p_bytes = 1;
      chunk.stored_activation_bytes = 100;
      stage.chunks.push_back(chunk);
    }
    plan.stages.push_back(stage);
  }
  return plan;
}

SimulationResult run(const Workload& w, const WorkloadPlan& plan, const CostModel& cost,
                     SimulateOptions options = {}) {
  Result<SimulationResult> r = simulate(w, plan, cost, options);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : format_errors(r.errors()));
  return std::move(r).value();
}

TEST(Simulate, OneFOneBBubbleIsPMinusOneOverM) {
  const UnitCost cost;
  for (std::int32_t p : {1, 2, 3, 4, 8}) {
    for (std::int32_t m : {1, 2, 4, 7, 16, 64}) {
      const Workload w = uniform_workload(p, 1, m);
      const SimulationResult r = run(w, uniform_plan(p, 1, 1.0, 2.0), cost);
      EXPECT_NEAR(r.prediction.step_time_s, (m + p - 1) * 3.0, 1e-9) << "p=" << p << " m=" << m;
      EXPECT_NEAR(r.prediction.bubble_fraction, (p - 1.0) / m, 1e-12) << "p=" << p << " m=" << m;
    }
  }
}

TEST(Simulate, InterleavedBubbleIsPMinusOneOverVM) {
  const UnitCost cost;
  for (std::int32_t p : {2, 4, 8}) {
    for (std::int32_t v : {2, 3, 4}) {
      for (std::int32_t m : {p, 2 * p, 4 * p}) {
        const Workload w = uniform_workload(p, v, m);
        const SimulationResult r = run(w, uniform_plan(p, v, 1.0, 2.0), cost);
        EXPECT_NEAR(r.prediction.bubble_fraction, (p - 1.0) / (v * m), 1e-12)
            << "p=" << p << " v=" << v << " m=" << m;
      }
    }
  }
}

TEST(Simulate, HandCheckedTwoStageStepWithTransfers) {
  // p=2, m=2, forward 1 s, backward 2 s, every transfer 0.5 s. Rank 1 receives act0 over
  // [1, 1.5], runs F0 [1.5, 2.5] and B0 [2.5, 4.5]; rank 0's blocking
  // send_forward_recv_backward (posted at 2.5) completes with rank 1's
  // send_backward_recv_forward at 5; B0 on rank 0 [5, 7]; rank 1 runs F1 [5, 6], B1 [6, 8];
  // grad1 arrives at 8.5 and rank 0's B1 ends at 10.5.
  const UnitCost cost(0.5);
  const Workload w = uniform_workload(2, 1, 2);
  const SimulationResult r = run(w, uniform_plan(2, 1, 1.0, 2.0), cost);
  EXPECT_NEAR(r.prediction.step_time_s, 10.5, 1e-12);
  // The same step with transfers priced by their size (the chunks' p2p_bytes reach the cost
  // model): 5e8 bytes at 1 ns each is again 0.5 s per transfer.
  WorkloadPlan sized = uniform_plan(2, 1, 1.0, 2.0);
  for (StagePlan& stage : sized.stages) stage.chunks[0].p2p_bytes = 500'000'000;
  SimulateOptions keep;
  keep.keep_timeline = true;
  const SimulationResult r2 = run(w, sized, UnitCost(-1.0), keep);
  EXPECT_NEAR(r2.prediction.step_time_s, 10.5, 1e-9);
  std::size_t transfers = 0;
  for (const Slice& s : r2.timeline.slices) {
    if (s.stream != Stream::kPipelineComm) continue;
    ++transfers;
    EXPECT_EQ(s.detail, "476.8 MiB intra-node") << s.name;  // the trace shows the real size
  }
  EXPECT_EQ(transfers, 2u * 2u * 2u);
  EXPECT_NEAR(r.prediction.stages[0].busy_s, 6.0, 1e-12);
  EXPECT_NEAR(r.prediction.stages[1].busy_s, 6.0, 1e-12);
  // The engine's critical chain: rank 0 F0 [0,1], act0 [1,1.5], rank 1 F0 [1.5,2.5] and
  // B0 [2.5,4.5], act1 [4.5,5] (released by rank 1's post after B0), rank 1 F1 [5,6] and
  // B1 [6,8], grad1 [8,8.5], rank 0 B1 [8.5,10.5]: 9 s of compute and 1.5 s of P2P.
  const CriticalChain& chain = r.prediction.critical_chain;
  EXPECT_NEAR(chain.compute_s, 9.0, 1e-12);
  EXPECT_NEAR(chain.p2p_s, 1.5, 1e-12);
  EXPECT_NEAR(chain.tp_comm_s + chain.dp_comm_s + chain.optimizer_s + chain.wait_s, 0.0, 1e-12);
  ASSERT_FALSE(chain.longest.empty());
  // Rank 1's F1 and B1 follow each other on the chain: one 3 s segment, the longest.
  EXPECT_EQ(chain.longest[0].rank, 1);
  EXPECT_EQ(chain.longest[0].kind, "compute");
  EXPECT_EQ(chain.longest[0].what, "F mb0 c0 .. B mb0 c0");
  EXPECT_NEAR(chain.longest[0].end_s - chain.longest[0].start_s, 3.0, 1e-12);
}

TEST(Simulate, AStragglerSlowsItsWholeStage) {
  // p 2, m 2, forward 1 s, backward 2 s, free transfers; global rank 1 (stage 1) runs its
  // kernels twice as long: stage 0 F0 [0,1] F1 [1,2]; stage 1 F0 [1,3] B0 [3,7]; stage 0 B0
  // [7,9]; stage 1 F1 [7,9] B1 [9,13]; stage 0 B1 [13,15]. Without the straggler: 9 s.
  const Workload w = uniform_workload(2, 1, 2);
  const WorkloadPlan plan = uniform_plan(2, 1, 1.0, 2.0);
  SimulateOptions slow;
  slow.stragglers = {Straggler{.rank = 1, .factor = 2.0}};
  EXPECT_NEAR(run(w, plan, UnitCost(0.0)).prediction.step_time_s, 9.0, 1e-12);
  EXPECT_NEAR(run(w, plan, UnitCost(0.0), slow).prediction.step_time_s, 15.0, 1e-12);
  // A faster GPU changes nothing: its stage's other GPUs and replicas hold it back.
  slow.stragglers = {Straggler{.rank = 1, .factor = 0.5}};
  EXPECT_NEAR(run(w, plan, UnitCost(0.0), slow).prediction.step_time_s, 9.0, 1e-12);
}

TEST(Simulate, StragglersMustBeInOneReplicaAndExist) {
  Workload w = uniform_workload(2, 1, 2);
  w.training.world_size = 4;  // dp 2: ranks 0, 1 on stage 0 (replicas 0, 1), 2, 3 on stage 1
  w.training.data_parallel_size = 2;
  const WorkloadPlan plan = uniform_plan(2, 1, 1.0, 2.0);
  SimulateOptions o;
  o.stragglers = {Straggler{.rank = 0, .factor = 1.5}, Straggler{.rank = 3, .factor = 1.5}};
  Result<SimulationResult> two = simulate(w, plan, UnitCost(0.0), o);
  ASSERT_FALSE(two.ok());
  EXPECT_EQ(two.errors().front().key, "--straggler");
  EXPECT_NE(two.errors().front().message.find("--full-rank"), std::string::npos);
  o.stragglers = {Straggler{.rank = 0, .factor = 1.5}, Straggler{.rank = 2, .factor = 1.5}};
  EXPECT_TRUE(simulate(w, plan, UnitCost(0.0), o).ok());  // both in replica 0
  o.stragglers = {Straggler{.rank = 4, .factor = 1.5}};
  EXPECT_FALSE(simulate(w, plan, UnitCost(0.0), o).ok());
  o.stragglers = {Straggler{.rank = 1, .factor = 0.0}};
  EXPECT_FALSE(simulate(w, plan, UnitCost(0.0), o).ok());
}

// Errors have kinds (issue 15): the caller maps them to exit statuses without guessing from
// the key. A request the job cannot honour is bad input; a plan that does not match the
// schedule is a bug.
TEST(Simulate, RefusalsAreInputErrorsAndBrokenPlansInternalOnes) {
  const Workload w = uniform_workload(2, 2, 4);
  const WorkloadPlan plan = uniform_plan(2, 2, 1.0, 2.0);
  SimulateOptions gpipe;
  gpipe.gpipe = true;
  const Result<SimulationResult> no_virtual = simulate(w, plan, UnitCost(0.0), gpipe);
  ASSERT_FALSE(no_virtual.ok());
  EXPECT_EQ(no_virtual.errors().front().key, "training.virtual_pipeline_model_parallel_size");
  EXPECT_EQ(exit_status(no_virtual.errors()), 2);
  SimulateOptions straggler;
  straggler.stragglers = {Straggler{.rank = 7, .factor = 1.5}};
  const Result<SimulationResult> absent = simulate(w, plan, UnitCost(0.0), straggler);
  ASSERT_FALSE(absent.ok());
  EXPECT_EQ(exit_status(absent.errors()), 2);
  const Result<SimulationResult> short_plan =
      simulate(w, uniform_plan(1, 2, 1.0, 2.0), UnitCost(0.0));
  ASSERT_FALSE(short_plan.ok());
  EXPECT_EQ(short_plan.errors().front().kind, ErrorKind::kInternal);
  EXPECT_EQ(exit_status(short_plan.errors()), 1);
}

TEST(Simulate, CriticalChainPartsAddUpToTheStepTime) {
  for (const std::int32_t v : {1, 2}) {
    const Workload w = uniform_workload(4, v, 8);
    const SimulationResult r = run(w, uniform_plan(4, v, 1.0, 2.0), UnitCost(0.25));
    const CriticalChain& c = r.prediction.critical_chain;
    EXPECT_NEAR(c.compute_s + c.tp_comm_s + c.p2p_s + c.dp_comm_s + c.optimizer_s + c.wait_s,
                r.prediction.step_time_s, 1e-9)
        << "v=" << v;
    EXPECT_GT(c.tasks, 0);
    EXPECT_LT(c.tasks, r.prediction.engine_tasks);
  }
}

TEST(Simulate, ActivationsInFlightFollowTheSchedule) {
  const UnitCost cost;
  const std::int32_t p = 4, m = 8;
  const Workload w = uniform_workload(p, 1, m);
  const WorkloadPlan plan = uniform_plan(p, 1, 1.0, 2.0);
  const SimulationResult one_f_one_b = run(w, plan, cost);
  SimulateOptions gpipe_options;
  gpipe_options.gpipe = true;
  const SimulationResult gpipe = run(w, plan, cost, gpipe_options);
  for (std::int32_t r = 0; r < p; ++r) {
    // 1F1B: stage r holds min(p - r, m) micro-batches; GPipe holds all m.
    EXPECT_EQ(one_f_one_b.prediction.stages[static_cast<std::size_t>(r)].peak_memory_bytes,
              1000 + 100 * std::min(p - r, m));
    EXPECT_EQ(gpipe.prediction.stages[static_cast<std::size_t>(r)].peak_memory_bytes, 1000 + 100 * m);
  }
}

TEST(Simulate, SameInputsGiveIdenticalReportsAndTraces) {
  const UnitCost cost(0.25);
  const Workload w = uniform_workload(4, 2, 8);
  const WorkloadPlan plan = uniform_plan(4, 2, 1.0, 2.0);
  SimulateOptions options;
  options.keep_timeline = true;
  std::string outputs[2];
  for (std::string& text : outputs) {
    const SimulationResult r = run(w, plan, cost, options);
    std::ostringstream out;
    write_prediction_json(w, r, cost.describe(), out);
    write_chrome_trace(r.timeline, r.prediction.stages, out);
    text = out.str();
  }
  EXPECT_EQ(outputs[0], outputs[1]);
  EXPECT_NE(outputs[0].find("\"traceEvents\""), std::string::npos);
}

TEST(Simulate, TimelineHasOneSlicePerOpAndTransfer) {
  const UnitCost cost(0.5);
  const Workload w = uniform_workload(2, 1, 3);
  SimulateOptions options;
  options.keep_timeline = true;
  const SimulationResult r = run(w, uniform_plan(2, 1, 1.0, 2.0), cost, options);
  std::size_t compute = 0, transfers = 0;
  for (const Slice& s : r.timeline.slices) {
    (s.stream == Stream::kCompute ? compute : transfers) += 1;
    EXPECT_LE(s.end_s, r.prediction.step_time_s + 1e-12);
  }
  EXPECT_EQ(compute, 2u * 2u * 3u);        // 2 ranks x (F + B) x 3 micro-batches
  EXPECT_EQ(transfers, 2u * 2u * 3u);      // act + grad per micro-batch, on both ranks
  // A transfer is one simulated task drawn on both ranks' lanes.
  EXPECT_EQ(r.prediction.simulated_tasks, static_cast<std::int64_t>(compute + transfers / 2));
  // The engine schedules one task per action and per transfer, plus per rank the end of its
  // program and the gate of its step work (zero-time joins).
  EXPECT_EQ(r.prediction.engine_tasks,
            static_cast<std::int64_t>(compute + transfers / 2 + 2 * 2));
}

}  // namespace
}  // namespace stepsim::sim
