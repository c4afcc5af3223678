// Context parallelism against closed forms derived here from Transformer Engine's algorithms
// (transformer_engine/pytorch/attention/dot_product_attention/context_parallel.py): the
// attention FLOPs of the CP ring, all-gather and Ulysses steps, the bytes each CP rank sends,
// and Megatron's gradient reduction and optimizer sharding over dp * cp.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model_workloads.hpp"
#include "stepsim/plan/decompose.hpp"
#include "stepsim/ops/flops.hpp"
#include "stepsim/plan/plan_flops.hpp"
#include "stepsim/memory/memory_model.hpp"

namespace stepsim {
namespace {

using testing::llama3;
using testing::make_workload;

/// Llama 3 8B's shape (32 heads, 8 KV groups, head dim 128, s 8192) with TE's fused attention.
ModelConfig llama3_8b() {
  ModelConfig m = llama3(32, 4096, 32, 14336);
  m.attention_backend = AttentionBackend::kAuto;
  return m;
}

/// t x cp x dp GPUs, one pipeline stage, `microbatches` micro-batches of one sequence.
Workload cp_workload(std::int64_t t, std::int64_t cp, std::int64_t dp, CpCommType comm,
                     std::int64_t microbatches = 4) {
  Workload w = make_workload(llama3_8b(), t, 1, dp, 1, microbatches);
  w.training.context_parallel_size = cp;
  w.training.cp_comm_type = comm;
  w.training.world_size = t * cp * dp;
  w.training.use_distributed_optimizer = true;
  return w;
}

std::vector<const Op*> ops_of_layer(const std::vector<Op>& ops, std::int32_t layer) {
  std::vector<const Op*> out;
  for (const Op& op : ops) {
    if (op.layer == layer) out.push_back(&op);
  }
  return out;
}

/// The attention kernels of layer 0 in a chunk's forward or backward.
std::vector<AttentionOp> attention_ops(const std::vector<Op>& ops) {
  std::vector<AttentionOp> out;
  for (const Op* op : ops_of_layer(ops, 0)) {
    if (const auto* a = std::get_if<AttentionOp>(&op->shape)) out.push_back(*a);
  }
  return out;
}

std::vector<const Op*> cp_comm_ops(const std::vector<Op>& ops) {
  std::vector<const Op*> out;
  for (const Op* op : ops_of_layer(ops, 0)) {
    if (op->stream == Stream::kContextComm) out.push_back(op);
  }
  return out;
}

double executed_flops(const std::vector<AttentionOp>& ops) {
  double f = 0;
  for (const AttentionOp& a : ops) f += a.flops();
  return f;
}

double counted_flops(const std::vector<AttentionOp>& ops) {
  double f = 0;
  for (const AttentionOp& a : ops) f += a.counted_flops();
  return f;
}

// Sizes of the shape above on one TP rank.
constexpr double kS = 8192, kD = 128, kB = 1;
constexpr std::int64_t kE = 2;  // bf16

/// Forward attention FLOPs of `heads` heads over an sq x skv score rectangle.
double rect(double heads, double sq, double skv) { return 4.0 * kB * heads * sq * skv * kD; }

TEST(ContextParallel, RingAttentionFlopsFollowTransformerEnginesSections) {
  for (const std::int64_t cp : {2, 4, 8}) {
    const Workload w = cp_workload(1, cp, 8 / cp, CpCommType::kP2p);
    const WorkloadPlan plan = decompose(w);
    const ChunkPlan& c = plan.stages[0].chunks[0];
    const std::vector<AttentionOp> fwd = attention_ops(c.forward);
    ASSERT_EQ(fwd.size(), static_cast<std::size_t>(cp)) << "one attention step per ring step";
    // Rank 0: step 0 is the causal diagonal block (s/cp x s/cp); every later step attends the
    // second half-chunk of Q (s/2cp) to the whole received block (s/cp).
    const double sc = kS / static_cast<double>(cp);
    const double heads = 32;
    EXPECT_TRUE(fwd[0].causal);
    for (std::size_t i = 1; i < fwd.size(); ++i) EXPECT_FALSE(fwd[i].causal) << i;
    const double executed = rect(heads, sc, sc) + static_cast<double>(cp - 1) * rect(heads, sc / 2, sc);
    EXPECT_DOUBLE_EQ(executed_flops(fwd), executed);
    // Megatron's count: the rank's s/cp rows of the full s x s score matrix.
    EXPECT_DOUBLE_EQ(counted_flops(fwd), rect(heads, sc, kS));
    // Backward: twice the forward's matmuls, same sections (the diagonal last).
    const std::vector<AttentionOp> bwd = attention_ops(c.backward);
    ASSERT_EQ(bwd.size(), static_cast<std::size_t>(cp));
    EXPECT_TRUE(bwd.back().causal);
    EXPECT_DOUBLE_EQ(executed_flops(bwd), 2.0 * executed);
    EXPECT_DOUBLE_EQ(counted_flops(bwd), 2.0 * rect(heads, sc, kS));
  }
}

TEST(ContextParallel, RingSendsKeyValueBlocksAndGradientsAroundTheRing) {
  const std::int64_t cp = 4;
  const Workload w = cp_workload(2, cp, 1, CpCommType::kP2p);
  const WorkloadPlan plan = decompose(w);
  const ChunkPlan& c = plan.stages[0].chunks[0];
  // One TP rank's K and V of s/cp tokens: 2 * b * (s/cp) * (g/t) * d * e bytes.
  const std::int64_t kv = 2 * 1 * (8192 / cp) * (8 / 2) * 128 * kE;
  const std::vector<const Op*> fwd = cp_comm_ops(c.forward);
  ASSERT_EQ(fwd.size(), static_cast<std::size_t>(cp - 1)) << "the last step sends nothing";
  for (const Op* op : fwd) {
    const auto* p = std::get_if<P2POp>(&op->shape);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->bytes, kv);
    EXPECT_FALSE(p->inter_node) << "t*cp = 8 GPUs: the ring stays in the node";
  }
  // Backward: KV, then KV and dKV, ..., then dKV alone: 2 (cp - 1) blocks in cp steps.
  const std::vector<const Op*> bwd = cp_comm_ops(c.backward);
  ASSERT_EQ(bwd.size(), static_cast<std::size_t>(cp));
  std::int64_t sent = 0;
  for (const Op* op : bwd) sent += std::get<P2POp>(op->shape).bytes;
  EXPECT_EQ(sent, 2 * (cp - 1) * kv);
  // Each attention step waits for the block the previous ring step brought.
  std::int32_t steps_waiting = 0;
  for (std::size_t i = 0; i < c.forward.size(); ++i) {
    const Op& op = c.forward[i];
    if (op.layer != 0 || !std::holds_alternative<AttentionOp>(op.shape)) continue;
    for (const std::int32_t d : op.deps) {
      if (c.forward[static_cast<std::size_t>(d)].stream == Stream::kContextComm) ++steps_waiting;
    }
  }
  EXPECT_EQ(steps_waiting, cp - 1);
}

TEST(ContextParallel, RingAcrossNodesWhenTheCpGroupSpansThem) {
  // t = 8 fills a node: CP rank 1 of rank 0 is global rank 8, on the next node.
  const WorkloadPlan plan = decompose(cp_workload(8, 2, 1, CpCommType::kP2p));
  const ChunkPlan& c = plan.stages[0].chunks[0];
  const std::vector<const Op*> fwd = cp_comm_ops(c.forward);
  ASSERT_EQ(fwd.size(), 1u);
  EXPECT_TRUE(std::get<P2POp>(fwd[0]->shape).inter_node);
}

TEST(ContextParallel, UlyssesAllToAllMovesHeadsAndSequence) {
  const std::int64_t cp = 4, t = 2;
  const WorkloadPlan plan = decompose(cp_workload(t, cp, 1, CpCommType::kA2a));
  const ChunkPlan& c = plan.stages[0].chunks[0];
  const std::int64_t sc = 8192 / cp;
  const std::int64_t q = 1 * sc * (32 / t) * 128 * kE;       // local Q or O
  const std::int64_t kv = 2 * 1 * sc * (8 / t) * 128 * kE;  // local K and V
  const std::vector<const Op*> fwd = cp_comm_ops(c.forward);
  ASSERT_EQ(fwd.size(), 2u);
  EXPECT_EQ(std::get<CollectiveOp>(fwd[0]->shape).kind, CollectiveKind::kAllToAll);
  EXPECT_EQ(std::get<CollectiveOp>(fwd[0]->shape).bytes, q + kv);
  EXPECT_EQ(std::get<CollectiveOp>(fwd[0]->shape).group_size, cp);
  EXPECT_EQ(std::get<CollectiveOp>(fwd[1]->shape).bytes, q);
  const std::vector<const Op*> bwd = cp_comm_ops(c.backward);
  ASSERT_EQ(bwd.size(), 2u);
  EXPECT_EQ(std::get<CollectiveOp>(bwd[0]->shape).bytes, q);
  EXPECT_EQ(std::get<CollectiveOp>(bwd[1]->shape).bytes, q + kv);
  // After the exchange a rank attends its a/(t*cp) heads over the whole sequence.
  const std::vector<AttentionOp> a = attention_ops(c.forward);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].heads, 32 / (t * cp));
  EXPECT_EQ(a[0].kv_heads, 8 / (t * cp));
  EXPECT_EQ(a[0].seq, 8192);
  EXPECT_DOUBLE_EQ(a[0].counted_flops(), rect(32.0 / t, static_cast<double>(sc), kS));
}

TEST(ContextParallel, AllGatherStepsAttendTheirHalfChunksToTheGatheredPrefix) {
  const std::int64_t cp = 4;
  const WorkloadPlan plan = decompose(cp_workload(1, cp, 2, CpCommType::kAllGather));
  const ChunkPlan& c = plan.stages[0].chunks[0];
  const double half = kS / (2.0 * cp);
  // Rank 0 holds chunks 0 and 2cp-1: its queries see half, then 2cp halves of keys.
  const std::vector<AttentionOp> fwd = attention_ops(c.forward);
  ASSERT_EQ(fwd.size(), 2u);
  EXPECT_DOUBLE_EQ(executed_flops(fwd), rect(32, half, half) + rect(32, half, 2 * cp * half));
  EXPECT_DOUBLE_EQ(counted_flops(fwd), rect(32, 2 * half, kS));
  // K and V gathered over the CP group (nccl-tests size: the gathered output), and dK, dV
  // reduce-scattered back in backward.
  const std::int64_t gathered = 2 * 1 * 8192 * 8 * 128 * kE;
  const std::vector<const Op*> fwd_comm = cp_comm_ops(c.forward);
  ASSERT_EQ(fwd_comm.size(), 1u);
  EXPECT_EQ(std::get<CollectiveOp>(fwd_comm[0]->shape).kind, CollectiveKind::kAllGather);
  EXPECT_EQ(std::get<CollectiveOp>(fwd_comm[0]->shape).bytes, gathered);
  const std::vector<const Op*> bwd_comm = cp_comm_ops(c.backward);
  ASSERT_EQ(bwd_comm.size(), 2u);
  EXPECT_EQ(std::get<CollectiveOp>(bwd_comm[0]->shape).kind, CollectiveKind::kAllGather);
  EXPECT_EQ(std::get<CollectiveOp>(bwd_comm[1]->shape).kind, CollectiveKind::kReduceScatter);
  EXPECT_EQ(std::get<CollectiveOp>(bwd_comm[1]->shape).bytes, gathered);
}

TEST(ContextParallel, PerTokenWorkRunsOnTheRanksShareOfTheSequence) {
  const WorkloadPlan plan = decompose(cp_workload(1, 2, 4, CpCommType::kP2p));
  const ChunkPlan& c = plan.stages[0].chunks[0];
  for (const Op* op : ops_of_layer(c.forward, 0)) {
    if (op->name == "qkv_gemm" || op->name == "fc1_gemm") {
      EXPECT_EQ(std::get<GemmOp>(op->shape).m, 8192 / 2) << op->name;
    }
  }
  EXPECT_EQ(c.p2p_bytes, (8192 / 2) * 4096 * kE);
}

TEST(ContextParallel, ModelFlopsDoNotDependOnTheContextParallelSize) {
  // Same model, global batch and GPUs: cp only moves work between GPUs.
  for (const CpCommType comm : {CpCommType::kP2p, CpCommType::kA2a, CpCommType::kAllGather}) {
    const FlopsSummary one = count_flops(cp_workload(1, 1, 8, comm, 4));
    const FlopsSummary four = count_flops(cp_workload(1, 4, 2, comm, 16));
    EXPECT_NEAR(four.model_flops_per_step / one.model_flops_per_step, 1.0, 1e-12);
    EXPECT_NEAR(four.hardware_flops_per_step / one.hardware_flops_per_step, 1.0, 1e-12);
  }
}

TEST(ContextParallel, GradientsAndOptimizerStatesOverDataAndContextParallelRanks) {
  const Workload w = cp_workload(1, 2, 4, CpCommType::kP2p);
  const WorkloadPlan plan = decompose(w);
  const ChunkPlan& c = plan.stages[0].chunks[0];
  ASSERT_EQ(c.grad_sync.size(), 1u);
  const auto& reduce = std::get<CollectiveOp>(c.grad_sync[0].shape);
  EXPECT_EQ(reduce.kind, CollectiveKind::kReduceScatter);
  EXPECT_EQ(reduce.group_size, 8) << "Megatron's data-parallel group with context parallelism";
  EXPECT_EQ(reduce.bytes, c.parameters * 4);
  const StaticMemory s = static_memory(w.training, plan.stages[0].parameters);
  EXPECT_EQ(s.optimizer_bytes, (plan.stages[0].parameters + 7) / 8 * 12);
}

TEST(ContextParallel, ActivationsPerRankShrinkByTheContextParallelSize) {
  Workload one = cp_workload(1, 1, 8, CpCommType::kP2p);
  Workload two = cp_workload(1, 2, 4, CpCommType::kP2p);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(two), layer_activation_bytes(one) / 2.0);
}

}  // namespace
}  // namespace stepsim
