// defer_embedding_wgrad_compute and wgrad_deferral_limit as the step builder runs them: the
// last stage's backwards leave the output layer's wgrad out, and finish_embedding_wgrad_compute
// runs the deferred wgrads after the stage's program (Megatron's schedules.py and
// drain_embedding_wgrad_compute), on synthetic plans whose step times are worked out by hand.

#include <gtest/gtest.h>

#include <algorithm>

#include "../core/model_workloads.hpp"
#include "stepsim/plan/decompose.hpp"
#include "stepsim/memory/memory_model.hpp"
#include "stepsim/report/report.hpp"
#include "stepsim/simulate/simulate.hpp"

namespace stepsim::sim {
namespace {

/// Memory-bound kernels cost bytes * 1 ns; everything else is free.
class UnitCost final : public CostModel {
 public:
  double gemm_s(const GemmOp&) const override { return 0.0; }
  double attention_s(const AttentionOp&) const override { return 0.0; }
  double memory_bound_s(const MemoryBoundOp& op) const override {
    return static_cast<double>(op.bytes) * 1e-9;
  }
  double collective_s(const CollectiveOp&) const override { return 0.0; }
  double p2p_s(const P2POp&) const override { return 0.0; }
  std::string describe() const override { return "unit"; }
};

Op kernel(const char* name, Phase phase, double seconds) {
  Op op;
  op.name = name;
  op.phase = phase;
  op.shape = MemoryBoundOp{static_cast<std::int64_t>(seconds * 1e9)};
  return op;
}

Workload two_stages(std::int64_t m, bool defer, std::int64_t limit) {
  Workload w;
  w.name = "defer";
  w.model.num_layers = 2;
  w.model.seq_length = 1;
  TrainingConfig& t = w.training;
  t.world_size = 2;
  t.pipeline_model_parallel_size = 2;
  t.virtual_pipeline_model_parallel_size = 1;
  t.data_parallel_size = 1;
  t.micro_batch_size = 1;
  t.global_batch_size = m;
  t.num_microbatches = m;
  t.defer_embedding_wgrad_compute = defer;
  t.wgrad_deferral_limit = limit;
  w.system.gpus_per_node = 8;
  w.system.memory_bytes = 1 << 30;
  w.system.peak_flops_fp32 = 1;
  return w;
}

/// Forward 1 s, backward 2 s everywhere; the last stage's backward holds a 0.5 s output-layer
/// wgrad, which a deferred backward leaves to the drain; a deferred micro-batch holds 50
/// bytes until its drained wgrad ends.
WorkloadPlan plan_of(bool defer) {
  WorkloadPlan plan;
  for (std::int32_t r = 0; r < 2; ++r) {
    StagePlan stage;
    stage.stage = r;
    stage.static_bytes = 1000;
    ChunkPlan chunk;
    chunk.stage = r;
    chunk.forward.push_back(kernel("fwd", Phase::kForward, 1.0));
    if (r == 1) {
      chunk.has_loss = true;
      chunk.backward.push_back(kernel("bwd", Phase::kBackwardInput, 1.5));
      chunk.backward.push_back(kernel("logits_wgrad", Phase::kBackwardWeight, 0.5));
      if (defer) {
        chunk.backward_wgrad_deferred.push_back(kernel("bwd", Phase::kBackwardInput, 1.5));
        chunk.deferred_wgrad.push_back(kernel("logits_wgrad", Phase::kBackwardWeight, 0.5));
        chunk.deferred_wgrad_bytes = 50;
      }
    } else {
      chunk.backward.push_back(kernel("bwd", Phase::kBackwardInput, 2.0));
    }
    chunk.p2p_bytes = 1;
    chunk.stored_activation_bytes = 100;
    stage.chunks.push_back(chunk);
    plan.stages.push_back(stage);
  }
  return plan;
}

SimulationResult run(const Workload& w, const WorkloadPlan& plan) {
  SimulateOptions keep;
  keep.keep_timeline = true;
  Result<SimulationResult> r = simulate(w, plan, UnitCost(), keep);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : format_errors(r.errors()));
  return std::move(r).value();
}

TEST(DeferEmbeddingWgrad, HandCheckedTwoStageStep) {
  // Without deferral (p = 2, m = 2, free transfers): rank 1 runs F0 [1, 2], B0 [2, 4],
  // F1 [4, 5], B1 [5, 7]; rank 0's B1 waits for grad1 at 7: [7, 9].
  EXPECT_NEAR(run(two_stages(2, false, 0), plan_of(false)).prediction.step_time_s, 9.0, 1e-12);
  // Deferring both: B0 [2, 3.5], F1 [3.5, 4.5], B1 [4.5, 6], the drain's two wgrads [6, 7];
  // rank 0's B1 [6, 8].
  const SimulationResult all = run(two_stages(2, true, 0), plan_of(true));
  EXPECT_NEAR(all.prediction.step_time_s, 8.0, 1e-12);
  int drained = 0;
  double drain_end = 0;
  for (const Slice& s : all.timeline.slices) {
    if (s.rank == 1 && s.op == "logits_wgrad" && s.end_s > s.start_s) {
      ++drained;
      drain_end = std::max(drain_end, s.end_s);
    }
  }
  EXPECT_EQ(drained, 2);
  EXPECT_NEAR(drain_end, 7.0, 1e-12);
  // wgrad_deferral_limit 1: only B0 is short; B1 [4.5, 6.5], the drain [6.5, 7]; rank 0's B1
  // [6.5, 8.5].
  EXPECT_NEAR(run(two_stages(2, true, 1), plan_of(true)).prediction.step_time_s, 8.5, 1e-12);
}

TEST(DeferEmbeddingWgrad, DeferredBuffersHeldUntilTheDrain) {
  // Rank 1 holds 100 bytes per micro-batch in flight (one at a time under 1F1B); each
  // deferred micro-batch adds 50 from its backward's end to its drained wgrad's end: with 4
  // micro-batches all deferred, 150 are still held when the fourth forward ends.
  const SimulationResult off = run(two_stages(4, false, 0), plan_of(false));
  const SimulationResult on = run(two_stages(4, true, 0), plan_of(true));
  EXPECT_EQ(off.prediction.stages[1].peak_memory_bytes, 1000 + 100);
  EXPECT_EQ(on.prediction.stages[1].peak_memory_bytes, 1000 + 100 + 3 * 50);
  const SimulationResult two = run(two_stages(4, true, 2), plan_of(true));
  EXPECT_EQ(two.prediction.stages[1].peak_memory_bytes, 1000 + 100 + 2 * 50);
}

TEST(DeferEmbeddingWgrad, DecompositionLeavesTheOutputWgradToTheDrain) {
  Workload w = testing::make_workload(testing::llama3(4, 4096, 32, 14336), 4, 2, 1, 1, 8);
  w.training.sequence_parallel = true;
  w.training.defer_embedding_wgrad_compute = true;
  const WorkloadPlan plan = decompose(w);
  const ChunkPlan& last = plan.stages[1].chunks[0];
  EXPECT_TRUE(plan.stages[0].chunks[0].backward_wgrad_deferred.empty());
  ASSERT_EQ(last.backward_wgrad_deferred.size() + 2, last.backward.size());
  double deferred_flops = 0, full_flops = 0;
  for (const Op& op : last.backward_wgrad_deferred) {
    EXPECT_NE(op.name, "logits_wgrad");
    deferred_flops += op.flops();
  }
  for (const Op& op : last.backward) full_flops += op.flops();
  // The drain: the input all-gather (tokens x h, bf16) and the wgrad GEMM (vocab/t x h x tokens).
  ASSERT_EQ(last.deferred_wgrad.size(), 2u);
  const auto& gather = std::get<CollectiveOp>(last.deferred_wgrad[0].shape);
  EXPECT_EQ(gather.kind, CollectiveKind::kAllGather);
  EXPECT_EQ(gather.bytes, 8192 * 4096 * 2);
  EXPECT_EQ(std::get<GemmOp>(last.deferred_wgrad[1].shape),
            (GemmOp{128256 / 4, 4096, 8192, 1, DType::kBf16, GemmLayout::kNT}));
  EXPECT_DOUBLE_EQ(deferred_flops + last.deferred_wgrad[1].flops(), full_flops);
  // Held per deferred micro-batch: the sequence-parallel input (2048 x 4096) and the logits
  // gradient (8192 x 32064), bf16.
  EXPECT_EQ(last.deferred_wgrad_bytes, 2048 * 4096 * 2 + std::int64_t{8192} * 32064 * 2);
}

TEST(DeferEmbeddingWgrad, AnalyticAndSimulatedMemoryAgree) {
  Workload w = testing::make_workload(testing::llama3(4, 4096, 32, 14336), 4, 2, 1, 1, 8);
  w.training.sequence_parallel = true;
  Workload d = w;
  d.training.defer_embedding_wgrad_compute = true;
  d.training.wgrad_deferral_limit = 3;
  const std::vector<StageMemory> before = analytic_memory(w);
  const std::vector<StageMemory> after = analytic_memory(d);
  const std::int64_t held = decompose(d).stages[1].chunks[0].deferred_wgrad_bytes;
  EXPECT_EQ(after[0].peak_bytes, before[0].peak_bytes);
  // The last stage runs 1F1B with one micro-batch in flight: after the third deferred
  // backward the next forward's activations sit beside 3 deferred buffers.
  EXPECT_EQ(after[1].peak_bytes, before[1].peak_bytes + 3 * held);
}

}  // namespace
}  // namespace stepsim::sim
