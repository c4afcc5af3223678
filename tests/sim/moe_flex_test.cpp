// The flex token dispatcher with DeepEP (moe_flex.cpp, deepep_cost.cpp) against closed forms
// worked out by hand: the expected destinations of a token under uniform top-k routing (its
// distinct EP ranks and nodes), DeepEP's bytes per token (internode.cu get_num_bytes_per_token),
// its link time at DeepEP's measured fractions (docs/legacy.md), what replacing the alltoall
// dispatcher by it changes in a layer, and the SMs its kernels take from the overlapped shared
// experts. GEMMs at kRate, NCCL transfers at kLink, memory-bound kernels free.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "stepsim/graph/chunk_template.hpp"
#include "stepsim/plan/decompose.hpp"
#include "stepsim/cost/deepep_cost.hpp"
#include "stepsim/check/load.hpp"

namespace stepsim::sim {
namespace {

constexpr double kRate = 400e12;  // FLOP/s of every GEMM
constexpr double kLink = 150e9;   // bytes/s of every NCCL transfer

/// DeepEP's own pricing over the workload's system, NCCL at kLink, GEMMs at kRate.
class FlexCost final : public CostModel {
 public:
  explicit FlexCost(SystemConfig system) : system_(std::move(system)) {}
  double gemm_s(const GemmOp& op) const override { return op.flops() / kRate; }
  double attention_s(const AttentionOp&) const override { return 0.0; }
  double memory_bound_s(const MemoryBoundOp&) const override { return 0.0; }
  double collective_s(const CollectiveOp& op) const override {
    if (op.kind == CollectiveKind::kDeepEpDispatch || op.kind == CollectiveKind::kDeepEpCombine) {
      return deepep_s(system_, op);
    }
    const double n = static_cast<double>(op.group_size);
    return static_cast<double>(op.bytes) * (n - 1) / n / kLink;
  }
  double p2p_s(const P2POp& op) const override { return static_cast<double>(op.bytes) / kLink; }
  std::string describe() const override { return "flex test"; }

 private:
  SystemConfig system_;
};

Workload load(const std::string& text) {
  LoadOptions o;
  o.scenarios_dir = STEPSIM_SCENARIOS_DIR;
  auto w = load_scenario_text(text, "flex.json", ".", o);
  EXPECT_TRUE(w.ok()) << (w.ok() ? "" : format_errors(w.errors()));
  return w.ok() ? std::move(w).value() : Workload{};
}

/// 2 MoE layers of 32 experts (width 1024, top-2), hidden 1024, on 16 H100s (2 nodes), EP 16,
/// t 1, one sequence of 2048 per micro-batch; `routing` adds model keys.
Workload two_nodes(const std::string& routing = "") {
  return load(R"({"name": "flex2", "model": {"num_layers": 2, "hidden_size": 1024,
      "num_attention_heads": 16, "seq_length": 2048, "vocab_size": 32000, "swiglu": true,
      "add_bias_linear": false, "normalization": "RMSNorm", "position_embedding_type": "rope",
      "num_experts": 32, "moe_router_topk": 2, "moe_ffn_hidden_size": 1024)" +
              routing + R"(}, "training": {"world_size": 16, "expert_model_parallel_size": 16,
      "moe_token_dispatcher_type": "flex", "moe_grouped_gemm": true,
      "micro_batch_size": 1, "global_batch_size": 16, "bf16": true},
      "system": "systems/dgx-h100-80gb.json"})");
}

const Op& find(const std::vector<Op>& ops, std::string_view name) {
  const auto it = std::find_if(ops.begin(), ops.end(), [&](const Op& o) { return o.name == name; });
  EXPECT_NE(it, ops.end()) << name;
  return *it;
}

constexpr double kTokens = 2048;
// The ops carry whole bytes: a closed form of fractional bytes differs by under one byte per
// op (below 1e-11 s at these rates) over a few ops.
constexpr double kWholeBytes = 1e-10;
// DeepEP's bytes per token (bf16 hidden 1024): dispatch = hidden + SourceMeta (8) + top-k
// indices and weights (4 + 4 each, topk 2) = 2072, aligned to 16: 2080; combine = 2048.
constexpr double kDispatchToken = 2080;
constexpr double kCombineToken = 2048;

TEST(MoeFlex, TwoNodeBytesPerRankAreTheClosedForms) {
  const Workload w = two_nodes();
  const WorkloadPlan plan = decompose(w);
  const std::vector<Op>& fwd = plan.stages[0].chunks[0].forward;
  const auto& d = std::get<CollectiveOp>(find(fwd, "moe_deepep_dispatch").shape);
  // 16 EP ranks of 2 experts: a rank is missed by both of a token's experts with chance
  // C(30,2)/C(32,2) = 435/496, so a token reaches 16 * 61/496 ranks; a node (16 experts) is
  // missed with C(16,2)/C(32,2) = 120/496: 2 * 376/496 nodes, its own included.
  const double ranks = 16.0 * 61.0 / 496.0;
  const double nodes = 2.0 * 376.0 / 496.0;
  EXPECT_EQ(d.bytes, std::llround(kTokens * ranks * kDispatchToken));
  EXPECT_EQ(d.rdma_bytes, std::llround(kTokens * nodes * kDispatchToken));
  EXPECT_EQ(d.group_size, 16);
  EXPECT_EQ(d.nodes_spanned, 2);
  EXPECT_FALSE(d.nccl);
  EXPECT_DOUBLE_EQ(d.compute_share, (132.0 - 20.0) / 132.0);  // Buffer.num_sms 20 of 132
  const auto& c = std::get<CollectiveOp>(find(fwd, "moe_deepep_combine").shape);
  EXPECT_EQ(c.bytes, std::llround(kTokens * ranks * kCombineToken));
  EXPECT_EQ(c.rdma_bytes, std::llround(kTokens * nodes * kCombineToken));
  // Priced: the RDMA leg (the NIC: 50 GB/s at 43/50, the 2-node row) outlasts NVLink (450
  // GB/s at 153/200).
  const double rdma = kTokens * nodes * kDispatchToken / (50e9 * 43.0 / 50.0);
  const double nvl = kTokens * ranks * kDispatchToken / (450e9 * 153.0 / 200.0);
  EXPECT_GT(rdma, nvl);
  EXPECT_NEAR(deepep_s(w.system, d), 1e-6 + 4e-6 + rdma, kWholeBytes);
}

TEST(MoeFlex, NodeLimitedRoutingBoundsTheNodes) {
  // Two groups of 16 experts (one per node), a token in one group: it reaches exactly one
  // node, and an EP rank with chance 1/2 * (1 - C(14,2)/C(16,2)) = 29/240.
  const Workload w = two_nodes(R"(, "moe_router_num_groups": 2, "moe_router_group_topk": 1)");
  const WorkloadPlan plan = decompose(w);
  const auto& d =
      std::get<CollectiveOp>(find(plan.stages[0].chunks[0].forward, "moe_deepep_dispatch").shape);
  EXPECT_EQ(d.rdma_bytes, std::llround(kTokens * 1.0 * kDispatchToken));
  EXPECT_EQ(d.bytes, std::llround(kTokens * 16.0 * 29.0 / 240.0 * kDispatchToken));
}

/// 4 MoE layers (8 experts of width 1024, top-2) on 4 GPUs of one node, EP 4, 2 sequences of
/// 2048 per micro-batch; shared experts of width `shared` (0: none), overlapped or not.
Workload one_node(const std::string& dispatcher, std::int64_t shared = 0, bool overlap = false) {
  const std::string shared_keys =
      shared > 0 ? R"(, "moe_shared_expert_intermediate_size": )" + std::to_string(shared) : "";
  return load(R"({"name": "flex1", "model": {"num_layers": 4, "hidden_size": 1024,
      "num_attention_heads": 16, "seq_length": 2048, "vocab_size": 32000, "swiglu": true,
      "add_bias_linear": false, "normalization": "RMSNorm", "position_embedding_type": "rope",
      "num_experts": 8, "moe_router_topk": 2, "moe_ffn_hidden_size": 1024)" +
              shared_keys + R"(}, "training": {"world_size": 4, "expert_model_parallel_size": 4,
      "moe_token_dispatcher_type": ")" +
              dispatcher + R"(", "moe_grouped_gemm": true, "moe_shared_expert_overlap": )" +
              (overlap ? "true" : "false") +
              R"(, "micro_batch_size": 2, "global_batch_size": 16, "bf16": true},
      "system": "systems/dgx-h100-80gb.json"})");
}

ChunkTemplate timed(const Workload& w, bool backward) {
  const WorkloadPlan plan = decompose(w);
  const ChunkPlan& chunk = plan.stages[0].chunks[0];
  return time_ops(backward ? chunk.backward : chunk.forward, FlexCost(w.system), false, {});
}

constexpr double kLayers = 4;
constexpr double kTokens1 = 4096;
constexpr double kH = 1024;
// A token reaches 4 * (1 - C(6,2)/C(8,2)) = 4 * 13/28 of the 4 EP ranks (2 experts each).
constexpr double kRanks1 = 4.0 * 13.0 / 28.0;
constexpr double kHop = 1e-6 + 1.9e-6;  // kernel launch + NVLink latency (dgx-h100-80gb)
constexpr double kDispatch = kHop + kTokens1 * kRanks1 * 2080 / (450e9 * 153.0 / 200.0);
constexpr double kCombine = kHop + kTokens1 * kRanks1 * 2048 / (450e9 * 158.0 / 200.0);
// Backward: the combine's gradient goes out as a dispatch (hidden + SourceMeta: 2056 -> 2064
// bytes), the dispatch's as a combine with the weights' gradient (2048 + 8 = 2056 -> 2064).
constexpr double kCombineBwd = kHop + kTokens1 * kRanks1 * 2064 / (450e9 * 153.0 / 200.0);
constexpr double kDispatchBwd = kHop + kTokens1 * kRanks1 * 2064 / (450e9 * 158.0 / 200.0);
// The alltoall dispatcher's NCCL all-to-alls of tokens * topk rows: tokens (bf16) and probs.
constexpr double kTokensA2a = kTokens1 * 2 * kH * 2 * 3.0 / 4.0 / kLink;
constexpr double kProbsA2a = kTokens1 * 2 * 2 * 3.0 / 4.0 / kLink;

TEST(MoeFlex, ReplacingTheAlltoallDispatcherMovesTheLayerByTheClosedForm) {
  const double fwd =
      timed(one_node("flex"), false).duration_s - timed(one_node("alltoall"), false).duration_s;
  const double bwd =
      timed(one_node("flex"), true).duration_s - timed(one_node("alltoall"), true).duration_s;
  EXPECT_NEAR(fwd, kLayers * (kDispatch + kCombine - (kTokensA2a + kProbsA2a + kTokensA2a)),
              kWholeBytes);
  EXPECT_NEAR(bwd, kLayers * (kCombineBwd + kDispatchBwd - (kTokensA2a + kTokensA2a + kProbsA2a)),
              kWholeBytes);
  // DeepEP moves each token once per destination GPU (13/7 of them) where the all-to-all
  // moves it once per expert (2), at 0.765-0.79 of 450 GB/s instead of 150: faster here.
  EXPECT_LT(fwd, 0);
}

TEST(MoeFlex, OverlappedSharedExpertsRunOnTheSmsDeepEpLeaves) {
  // Shared experts of 4096: fc1 (0.17 ms) and fc2 (0.086 ms) outlast the dispatch and combine
  // even on 112 of 132 SMs, so each runs at 112/132 while its DeepEP kernel runs and at full
  // speed after: a layer's forward saves share * (dispatch + combine) over running them apart.
  const double share = 112.0 / 132.0;
  const double saved = timed(one_node("flex", 4096, false), false).duration_s -
                       timed(one_node("flex", 4096, true), false).duration_s;
  EXPECT_NEAR(saved, kLayers * share * (kDispatch + kCombine), kWholeBytes);
  // The same work, but the GEMMs beside DeepEP's kernels are busy (1 - share) of their time
  // longer than their work.
  EXPECT_NEAR(timed(one_node("flex", 4096, true), false).compute_busy_s -
                  timed(one_node("flex", 4096, false), false).compute_busy_s,
              kLayers * (1 - share) * (kDispatch + kCombine), kWholeBytes);
}

TEST(MoeFlex, DeepEpBuffersAreHeldBesideTheWeights) {
  // EP 4 on one node, Buffer.num_sms 20 (10 channels), get_dispatch_config(4)'s 256 NVLink
  // receive tokens per channel and peer; per token the bf16 hidden (2048 bytes), SourceMeta (8)
  // and room for 128 int64 indices, 128 fp32 weights and 128 fp32 scales (2056):
  // get_nvl_buffer_size_hint = 10 * 4 * (2 * 1 + 3) * 4 + 10 * 4 * 256 * (2048 + 2056), no RDMA
  // buffer inside a node.
  const std::int64_t nvl = 10 * 4 * 5 * 4 + 10 * 4 * 256 * (2048 + 2056);
  const std::int64_t buffers = (nvl + 127) / 128 * 128;
  EXPECT_EQ(decompose(one_node("flex")).stages[0].static_bytes -
                decompose(one_node("alltoall")).stages[0].static_bytes,
            buffers);
}

}  // namespace
}  // namespace stepsim::sim
