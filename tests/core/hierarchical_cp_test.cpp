// Hierarchical context parallelism (cp_comm_type "a2a+p2p") against closed forms derived from
// Transformer Engine's AttnFuncWithCPAndKVP2P with cp_group = [a2a group, p2p group]
// (attention/dot_product_attention/context_parallel.py) and Megatron's hierarchical CP groups
// (parallel_state.py create_hierarchical_groups): the all-to-all's bytes and group, the ring's
// bytes, steps and links, the attention FLOPs per rank, and every rule as an error naming its
// key.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model_workloads.hpp"
#include "stepsim/plan/decompose.hpp"
#include "stepsim/layout/rank_layout.hpp"
#include "stepsim/check/check.hpp"

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

/// t x (a2a * p2p) GPUs of one data-parallel replica and pipeline stage.
Workload hcp_workload(std::int64_t t, std::int64_t a2a, std::int64_t p2p) {
  Workload w = make_workload(llama3_8b(), t, 1, 1, 1, 4);
  w.training.context_parallel_size = a2a * p2p;
  w.training.cp_comm_type = CpCommType::kA2aP2p;
  w.training.hierarchical_context_parallel_sizes = {a2a, p2p};
  w.training.world_size = t * a2a * p2p;
  return w;
}

std::vector<const Op*> layer0(const std::vector<Op>& ops, Stream stream) {
  std::vector<const Op*> out;
  for (const Op& op : ops) {
    if (op.layer == 0 && op.stream == stream) out.push_back(&op);
  }
  return out;
}

std::vector<AttentionOp> attention_ops(const std::vector<Op>& ops) {
  std::vector<AttentionOp> out;
  for (const Op* op : layer0(ops, Stream::kCompute)) {
    if (const auto* a = std::get_if<AttentionOp>(&op->shape)) out.push_back(*a);
  }
  return out;
}

constexpr double kS = 8192, kD = 128;
constexpr std::int64_t kE = 2;  // bf16

/// Forward attention FLOPs of `heads` heads over an sq x skv score rectangle (b = 1).
double rect(double heads, double sq, double skv) { return 4.0 * heads * sq * skv * kD; }

TEST(HierarchicalCp, RingStepsRunTheA2aLevelsHeadsOnTheRingsShareOfTheSequence) {
  struct Levels {
    std::int64_t a2a, p2p;
  };
  for (const Levels l : {Levels{2, 2}, Levels{2, 4}, Levels{4, 2}}) {
    const Workload w = hcp_workload(1, l.a2a, l.p2p);
    const WorkloadPlan plan = decompose(w);
    const ChunkPlan& c = plan.stages[0].chunks[0];
    const std::vector<AttentionOp> fwd = attention_ops(c.forward);
    ASSERT_EQ(fwd.size(), static_cast<std::size_t>(l.p2p)) << "one step per ring rank";
    // After the all-to-all: 32/a2a heads (8/a2a KV heads) of s/p2p tokens; step 0 the causal
    // diagonal block, every later step the second half-chunk against the whole block.
    const double heads = 32.0 / static_cast<double>(l.a2a);
    const double sr = kS / static_cast<double>(l.p2p);
    for (const AttentionOp& a : fwd) {
      EXPECT_EQ(a.heads, 32 / l.a2a);
      EXPECT_EQ(a.kv_heads, 8 / l.a2a);
    }
    EXPECT_TRUE(fwd[0].causal);
    const double executed =
        rect(heads, sr, sr) + static_cast<double>(l.p2p - 1) * rect(heads, sr / 2, sr);
    double got = 0, counted = 0;
    for (const AttentionOp& a : fwd) {
      got += a.flops();
      counted += a.counted_flops();
    }
    EXPECT_DOUBLE_EQ(got, executed) << l.a2a << "x" << l.p2p;
    // Megatron's count: the rank's s/cp rows of the s x s matrix, all 32 heads, as with p2p.
    const double cp = static_cast<double>(l.a2a * l.p2p);
    EXPECT_DOUBLE_EQ(counted, rect(32, kS / cp, kS)) << l.a2a << "x" << l.p2p;
    double bwd = 0;
    for (const AttentionOp& a : attention_ops(c.backward)) bwd += a.flops();
    EXPECT_DOUBLE_EQ(bwd, 2.0 * executed);
  }
}

TEST(HierarchicalCp, AllToAllsOverTheA2aLevelAndTheRingOverTheP2pLevel) {
  const std::int64_t t = 2, a2a = 2, p2p = 4, cp = a2a * p2p;
  const WorkloadPlan plan = decompose(hcp_workload(t, a2a, p2p));
  const ChunkPlan& c = plan.stages[0].chunks[0];
  // The local tensors of s/cp tokens and a/t heads (g/t KV heads), as a2a sends them.
  const std::int64_t sc = 8192 / cp;
  const std::int64_t q = sc * (32 / t) * 128 * kE;
  const std::int64_t kv = 2 * sc * (8 / t) * 128 * kE;
  const std::vector<const Op*> fwd = layer0(c.forward, Stream::kContextComm);
  // a2a of Q, K, V; p2p - 1 ring sends of K and V; a2a of the output.
  ASSERT_EQ(fwd.size(), static_cast<std::size_t>(2 + p2p - 1));
  const auto& qkv = std::get<CollectiveOp>(fwd.front()->shape);
  EXPECT_EQ(qkv.kind, CollectiveKind::kAllToAll);
  EXPECT_EQ(qkv.group, CommGroup::kContextA2a);
  EXPECT_EQ(qkv.group_size, a2a);
  EXPECT_EQ(qkv.bytes, q + kv);
  EXPECT_EQ(std::get<CollectiveOp>(fwd.back()->shape).bytes, q);
  // The ring's block after the all-to-all: 8/(t*a2a) KV heads of s/p2p tokens, the same bytes.
  const std::int64_t ring_kv = 2 * (8192 / p2p) * (8 / t / a2a) * 128 * kE;
  EXPECT_EQ(ring_kv, kv);
  for (std::size_t i = 1; i + 1 < fwd.size(); ++i) {
    EXPECT_EQ(std::get<P2POp>(fwd[i]->shape).bytes, ring_kv);
  }
  const std::vector<const Op*> bwd = layer0(c.backward, Stream::kContextComm);
  ASSERT_EQ(bwd.size(), static_cast<std::size_t>(2 + p2p));
  EXPECT_EQ(std::get<CollectiveOp>(bwd.front()->shape).bytes, q);
  EXPECT_EQ(std::get<CollectiveOp>(bwd.back()->shape).bytes, q + kv);
  std::int64_t ring = 0;
  for (std::size_t i = 1; i + 1 < bwd.size(); ++i) ring += std::get<P2POp>(bwd[i]->shape).bytes;
  EXPECT_EQ(ring, 2 * (p2p - 1) * ring_kv) << "KV, KV + dKV ..., dKV";
}

TEST(HierarchicalCp, LinksFollowTheLevelsGroupsOnTheNodes) {
  // t 2, cp 8 = [4, 2] on 8-GPU nodes: the CP group of rank 0 is 0, 2, ..., 14; its a2a group
  // 0, 2, 4, 6 (node 0), its ring 0, 8 (nodes 0 and 1).
  {
    const WorkloadPlan plan = decompose(hcp_workload(2, 4, 2));
    const auto fwd = layer0(plan.stages[0].chunks[0].forward, Stream::kContextComm);
    EXPECT_EQ(std::get<CollectiveOp>(fwd.front()->shape).nodes_spanned, 1);
    EXPECT_TRUE(std::get<P2POp>(fwd[1]->shape).inter_node);
  }
  // t 2, cp 8 = [2, 4]: a2a 0, 2 (one node); ring 0, 4, 8, 12 (two nodes).
  {
    const WorkloadPlan plan = decompose(hcp_workload(2, 2, 4));
    const auto fwd = layer0(plan.stages[0].chunks[0].forward, Stream::kContextComm);
    EXPECT_EQ(std::get<CollectiveOp>(fwd.front()->shape).nodes_spanned, 1);
    EXPECT_TRUE(std::get<P2POp>(fwd[1]->shape).inter_node);
  }
  // t 4, cp 4 = [2, 2]: a2a 0, 4 (node 0); ring 0, 8 (two nodes).
  // t 1, cp 4 = [2, 2]: everything on node 0.
  {
    const WorkloadPlan plan = decompose(hcp_workload(1, 2, 2));
    const auto fwd = layer0(plan.stages[0].chunks[0].forward, Stream::kContextComm);
    EXPECT_EQ(std::get<CollectiveOp>(fwd.front()->shape).nodes_spanned, 1);
    EXPECT_FALSE(std::get<P2POp>(fwd[1]->shape).inter_node);
  }
  // t 8, cp 4 = [2, 2]: CP ranks 0, 8, 16, 24; a2a 0, 8 spans two nodes.
  {
    const WorkloadPlan plan = decompose(hcp_workload(8, 2, 2));
    const auto fwd = layer0(plan.stages[0].chunks[0].forward, Stream::kContextComm);
    EXPECT_EQ(std::get<CollectiveOp>(fwd.front()->shape).nodes_spanned, 2);
  }
}

TEST(HierarchicalCp, ALevelOfOneRunsThePlainFormOverTheCpGroup) {
  // attn_forward_func_with_cp: a2a size 1 -> "p2p" over the p2p group, p2p size 1 -> "a2a".
  Workload ring = hcp_workload(1, 1, 4);
  Workload plain_ring = ring;
  plain_ring.training.cp_comm_type = CpCommType::kP2p;
  plain_ring.training.hierarchical_context_parallel_sizes.clear();
  EXPECT_EQ(decompose(ring).stages[0].chunks[0].forward,
            decompose(plain_ring).stages[0].chunks[0].forward);
  Workload ulysses = hcp_workload(1, 4, 1);
  Workload plain_a2a = ulysses;
  plain_a2a.training.cp_comm_type = CpCommType::kA2a;
  plain_a2a.training.hierarchical_context_parallel_sizes.clear();
  EXPECT_EQ(decompose(ulysses).stages[0].chunks[0].forward,
            decompose(plain_a2a).stages[0].chunks[0].forward);
}

TEST(HierarchicalCp, MegatronsHierarchicalGroups) {
  // parallel_state.py's docstring: 16 GPUs, sizes [2, 2, 4].
  std::vector<std::int64_t> ranks(16);
  for (std::int64_t i = 0; i < 16; ++i) ranks[static_cast<std::size_t>(i)] = i;
  const std::vector<std::int64_t> sizes = {2, 2, 4};
  using Groups = std::vector<std::vector<std::int64_t>>;
  EXPECT_EQ(hierarchical_groups(ranks, sizes, 0),
            (Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}, {8, 9}, {10, 11}, {12, 13}, {14, 15}}));
  EXPECT_EQ(hierarchical_groups(ranks, sizes, 1),
            (Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}, {8, 10}, {9, 11}, {12, 14}, {13, 15}}));
  EXPECT_EQ(hierarchical_groups(ranks, sizes, 2),
            (Groups{{0, 4, 8, 12}, {1, 5, 9, 13}, {2, 6, 10, 14}, {3, 7, 11, 15}}));
  EXPECT_EQ(hierarchical_group_of(ranks, sizes, 1, 7), (std::vector<std::int64_t>{5, 7}));
  EXPECT_EQ(nodes_of(std::vector<std::int64_t>{0, 4, 8, 12}, 8), 2);
}

std::string errors_of(const Workload& w) { return format_errors(validate_workload(w, "s.json")); }

TEST(HierarchicalCp, MegatronAndTransformerEngineRulesNameTheKey) {
  const std::string key = "training.hierarchical_context_parallel_sizes";
  EXPECT_EQ(errors_of(hcp_workload(2, 2, 2)), "");
  Workload missing = hcp_workload(2, 2, 2);
  missing.training.hierarchical_context_parallel_sizes.clear();
  EXPECT_NE(errors_of(missing).find("training.cp_comm_type=\"a2a+p2p\" needs "
                                    "hierarchical_context_parallel_sizes"),
            std::string::npos)
      << errors_of(missing);
  Workload product = hcp_workload(2, 2, 2);
  product.training.hierarchical_context_parallel_sizes = {2, 4};
  EXPECT_NE(errors_of(product).find(key + "=[2, 4] must multiply to context_parallel_size=4"),
            std::string::npos)
      << errors_of(product);
  Workload three = hcp_workload(2, 2, 2);
  three.training.hierarchical_context_parallel_sizes = {2, 2, 1};
  EXPECT_NE(errors_of(three).find(key + "=[2, 2, 1] must have two levels"), std::string::npos)
      << errors_of(three);
  // Megatron accepts the sizes with another cp_comm_type (asserting only their product) and
  // never reads them: the plain job, as stepsim runs it too.
  Workload plain = hcp_workload(2, 2, 2);
  plain.training.cp_comm_type = CpCommType::kP2p;
  EXPECT_EQ(errors_of(plain), "");
  plain.training.hierarchical_context_parallel_sizes = {2, 1, 4};
  EXPECT_NE(errors_of(plain).find(key + "=[2, 1, 4] must multiply to context_parallel_size=4"),
            std::string::npos)
      << errors_of(plain);
  // 8 KV groups over t 4: 2 per TP rank, which an a2a level of 4 cannot scatter.
  Workload heads = hcp_workload(4, 4, 2);
  EXPECT_NE(errors_of(heads).find(key + "=[4, 2]: its a2a size 4 does not divide the key/value "
                                        "heads per tensor-parallel rank"),
            std::string::npos)
      << errors_of(heads);
}

}  // namespace
}  // namespace stepsim
