// The context-parallel ring's overlap as the chunk templates time it: step i's attention
// waits for the KV block of step i-1's transfer, and the transfer of step i waits for step
// i-1's attention and transfer (Transformer Engine's AttnFuncWithCPAndKVP2P.forward), so each
// step takes max(attention, transfer) and the last attention ends at
// (cp - 1) * max(A, T) + A with A the attention step and T the transfer.

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "stepsim/graph/chunk_template.hpp"
#include "../core/model_workloads.hpp"
#include "stepsim/plan/decompose.hpp"

namespace stepsim::sim {
namespace {

/// Attention kernels take `attention_s`, ring transfers `transfer_s`, everything else nothing.
class RingCost final : public CostModel {
 public:
  RingCost(double attention_s, double transfer_s)
      : attention_s_(attention_s), transfer_s_(transfer_s) {}
  double gemm_s(const GemmOp&) const override { return 0.0; }
  double attention_s(const AttentionOp&) const override { return attention_s_; }
  double memory_bound_s(const MemoryBoundOp&) const override { return 0.0; }
  double collective_s(const CollectiveOp&) const override { return 0.0; }
  double p2p_s(const P2POp&) const override { return transfer_s_; }
  std::string describe() const override { return "ring test"; }

 private:
  double attention_s_;
  double transfer_s_;
};

/// One layer, TP 1, cp GPUs of context parallelism with the p2p ring, one stage.
ChunkPlan one_layer_ring(std::int64_t cp) {
  ModelConfig m = testing::llama3(1, 4096, 32, 14336);
  m.attention_backend = AttentionBackend::kAuto;
  Workload w = testing::make_workload(m, 1, 1, 1, 1, 1);
  w.training.context_parallel_size = cp;
  w.training.world_size = cp;
  return decompose(w).stages[0].chunks[0];
}

TEST(ContextParallelOverlap, EachRingStepTakesTheLongerOfAttentionAndTransfer) {
  for (const std::int64_t cp : {2, 4, 8}) {
    const ChunkPlan chunk = one_layer_ring(cp);
    const double steps = static_cast<double>(cp - 1);
    for (const auto& [a, t] : {std::pair{1.0, 0.25}, std::pair{1.0, 3.0}}) {
      const ChunkTemplate fwd = time_ops(chunk.forward, RingCost(a, t), false);
      EXPECT_DOUBLE_EQ(fwd.duration_s, steps * std::max(a, t) + a) << "cp=" << cp << " T=" << t;
      // Serialised (the validator's single host thread): nothing overlaps.
      const ChunkTemplate serial = time_ops(chunk.forward, RingCost(a, t), true);
      EXPECT_DOUBLE_EQ(serial.duration_s, static_cast<double>(cp) * a + steps * t);
    }
  }
}

TEST(ContextParallelOverlap, BackwardWaitsForTheLastGradientBlock) {
  // Backward: cp transfers (KV; KV and dKV; ...; dKV), each step ends when both its attention
  // and its transfer have: cp * max(A, T) (the dKV adds take no time here).
  const std::int64_t cp = 4;
  const ChunkPlan chunk = one_layer_ring(cp);
  for (const auto& [a, t] : {std::pair{2.0, 0.5}, std::pair{1.0, 3.0}}) {
    const ChunkTemplate bwd = time_ops(chunk.backward, RingCost(a, t), false);
    EXPECT_DOUBLE_EQ(bwd.duration_s, static_cast<double>(cp) * std::max(a, t)) << "T=" << t;
  }
}

// The validator's single host thread with a progress thread for non-blocking P2P (async_ring):
// it waits for the ring's previous step, posts the next and computes beside it, so the ring
// overlaps as on the GPU's streams: the same closed forms, forward and backward.
TEST(ContextParallelOverlap, ASerialHostPostingTheRingKeepsItsOverlap) {
  for (const std::int64_t cp : {2, 3, 4}) {
    const ChunkPlan chunk = one_layer_ring(cp);
    const double steps = static_cast<double>(cp - 1);
    for (const auto& [a, t] : {std::pair{1.0, 0.25}, std::pair{1.0, 3.0}}) {
      const RingCost cost(a, t);
      EXPECT_DOUBLE_EQ(time_ops(chunk.forward, cost, true, {}, true).duration_s,
                       steps * std::max(a, t) + a)
          << "cp=" << cp << " T=" << t;
      EXPECT_DOUBLE_EQ(time_ops(chunk.backward, cost, true, {}, true).duration_s,
                       static_cast<double>(cp) * std::max(a, t))
          << "cp=" << cp << " T=" << t;
      // Without the flag, or with concurrent streams, it is as before.
      EXPECT_DOUBLE_EQ(time_ops(chunk.forward, cost, true, {}, false).duration_s,
                       static_cast<double>(cp) * a + steps * t);
      EXPECT_DOUBLE_EQ(time_ops(chunk.forward, cost, false, {}, true).duration_s,
                       steps * std::max(a, t) + a);
    }
  }
}

// The serial host with posted ring steps slows compute beside a transfer as the GPU's streams
// do (the profile's interference factors): cp 2, attention 1, transfer 0.5, compute 1.5x and
// the transfer 2x slower while together. The transfer ends at 1.0, the diagonal step 2/3
// done; its last third runs alone to 4/3; the second step then runs alone: 7/3.
TEST(ContextParallelOverlap, APostedRingStepInterferesWithTheComputeBesideIt) {
  const ChunkPlan chunk = one_layer_ring(2);
  Interference k;
  k.compute_slowdown = 1.5;
  k.collective_slowdown = 2;
  const RingCost cost(1.0, 0.5);
  EXPECT_NEAR(time_ops(chunk.forward, cost, true, k, true).duration_s, 7.0 / 3, 1e-12);
  EXPECT_NEAR(time_ops(chunk.forward, cost, false, k).duration_s, 7.0 / 3, 1e-12);
  // Without interference: max(A, T) + A; serialised without posting: 2 A + T.
  EXPECT_DOUBLE_EQ(time_ops(chunk.forward, cost, true, {}, true).duration_s, 2.0);
  EXPECT_DOUBLE_EQ(time_ops(chunk.forward, cost, true, k, false).duration_s, 2.5);
}

// Each ring step is posted to the progress thread once the previous one is done, so the thread
// is idle at every post and each transfer waits for it first (the profile's
// p2p_post_latency_s; the collectives' latency does not apply): forward (cp - 1) * max(A, L +
// T) + A.
TEST(ContextParallelOverlap, EachPostedRingStepWaitsForItsThread) {
  for (const std::int64_t cp : {2, 4}) {
    const ChunkPlan chunk = one_layer_ring(cp);
    const double steps = static_cast<double>(cp - 1);
    const RingCost cost(1.0, 0.25);
    for (const double l : {0.5, 1.0}) {
      Interference k;
      k.p2p_post_latency_s = l;
      k.collective_post_latency_s = 10;
      EXPECT_NEAR(time_ops(chunk.forward, cost, true, k, true).duration_s,
                  steps * std::max(1.0, l + 0.25) + 1.0, 1e-12)
          << "cp=" << cp << " L=" << l;
    }
  }
}

}  // namespace
}  // namespace stepsim::sim
