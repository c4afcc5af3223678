// training.moe_load (routing imbalance) as the representative rank prices it: the most loaded
// EP rank's experts, and every all-to-all waiting for it. The oracle is a two-rank case worked
// out by hand under a linear cost model.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "stepsim/plan/decompose.hpp"
#include "stepsim/check/load.hpp"
#include "stepsim/layout/moe_layout.hpp"
#include "stepsim/simulate/simulate.hpp"

namespace stepsim::sim {
namespace {

// Seconds per FLOP, per byte of a memory-bound kernel, per byte of a collective.
constexpr double kFlop = 1e-15;
constexpr double kMemoryByte = 1e-12;
constexpr double kCommByte = 1e-11;

/// Every cost linear in the op's size, so a step's excess is a sum worked out by hand.
class LinearCost final : public CostModel {
 public:
  double gemm_s(const GemmOp& op) const override { return op.flops() * kFlop; }
  double attention_s(const AttentionOp&) const override { return 1e-6; }
  double memory_bound_s(const MemoryBoundOp& op) const override {
    return static_cast<double>(op.bytes) * kMemoryByte;
  }
  double collective_s(const CollectiveOp& op) const override {
    return static_cast<double>(op.bytes) * kCommByte;
  }
  double p2p_s(const P2POp&) const override { return 0.0; }
  std::string describe() const override { return "linear"; }
};

/// Two GPUs (dp 2), EP 2, two experts (one per EP rank), top-1, the alltoall dispatcher; 4
/// MoE layers, s*b = 2048 tokens per rank, 2 micro-batches. `load`: training.moe_load's JSON.
std::string two_rank_text(const std::string& load, const std::string& extra = "") {
  return R"({"name": "moe-load", "model": {"num_layers": 4, "hidden_size": 1024,
      "num_attention_heads": 16, "seq_length": 2048, "vocab_size": 32000, "swiglu": true,
      "add_bias_linear": false, "normalization": "RMSNorm", "position_embedding_type": "rope",
      "attention_backend": "auto", "num_experts": 2, "moe_router_topk": 1,
      "moe_ffn_hidden_size": 1024}, "training": {"world_size": 2,
      "expert_model_parallel_size": 2, "moe_token_dispatcher_type": "alltoall",
      "moe_grouped_gemm": true, "micro_batch_size": 1, "global_batch_size": 4,
      "bf16": true)" +
         (load.empty() ? "" : R"(, "moe_load": )" + load) + extra +
         R"(}, "system": "systems/dgx-h100-80gb.json"})";
}

Workload load(const std::string& text) {
  LoadOptions o;
  o.scenarios_dir = STEPSIM_SCENARIOS_DIR;
  auto w = load_scenario_text(text, "moe-load.json", ".", o);
  EXPECT_TRUE(w.ok()) << (w.ok() ? "" : format_errors(w.errors()));
  return w.ok() ? std::move(w).value() : Workload{};
}

double step_s(const Workload& w) {
  const LinearCost cost;
  SimulateOptions options;
  options.contention = false;
  auto r = simulate(w, decompose(w), cost, options);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : format_errors(r.errors()));
  return r.ok() ? r->prediction.step_time_s : 0.0;
}

const CollectiveOp* collective(const std::vector<Op>& ops, const std::string& name) {
  for (const Op& op : ops) {
    if (op.name == name && op.layer == 0) return &std::get<CollectiveOp>(op.shape);
  }
  return nullptr;
}

// Shares 3:1 over two EP ranks: EP rank 0 receives 2 sources x 2048 x 0.75 = 3072 rows
// instead of 2048. Per MoE layer and micro-batch the extra 1024 rows cost:
//   all-to-alls: dispatch, combine and their two backwards carry 1024 more rows of h = 1024
//     bf16 values (2 MiB each); the probs' all-to-all and its backward 1024 bf16 more;
//   expert GEMMs: forward 2 x 1024 x (2048 x 1024 + 1024 x 1024) FLOPs (fc1 with SwiGLU's
//     doubled width, fc2), backward twice that (dgrad and wgrad);
//   SwiGLU: forward 1024 x (1024 x 3 x 2 + 2) bytes, backward 1024 x (1024 x 5 x 2 + 2 x 2).
// Everything else (attention, the router, the permutes on the sending side, the gradient
// all-reduce) is the same; a single stage runs it all in sequence.
TEST(MoeLoad, SkewSlowsTheStepByTheSlowestRanksExcess) {
  const Workload balanced = load(two_rank_text(""));
  const Workload skewed = load(two_rank_text("[3, 1]"));
  const double rows = 1024;
  const double comm_bytes = 4 * rows * 1024 * 2 + 2 * rows * 2;
  const double flops = 3 * 2 * rows * (2048.0 * 1024 + 1024.0 * 1024);
  const double memory_bytes = rows * (1024 * 3 * 2 + 2) + rows * (1024 * 5 * 2 + 2 * 2);
  const double per_layer = comm_bytes * kCommByte + flops * kFlop + memory_bytes * kMemoryByte;
  const double layers = 4;
  const double micro_batches = 2;
  EXPECT_NEAR(step_s(skewed) - step_s(balanced), per_layer * layers * micro_batches, 1e-12);

  // The ops: the dispatch's buffer is the most loaded rank's 3072 rows; its experts run them.
  const WorkloadPlan plan = decompose(skewed);
  const auto& forward = plan.stages[0].chunks[0].forward;
  const CollectiveOp* dispatch = collective(forward, "moe_dispatch_all_to_all");
  ASSERT_NE(dispatch, nullptr);
  EXPECT_EQ(dispatch->bytes, 3072 * 1024 * 2);
  for (const Op& op : forward) {
    if (op.name == "expert_fc1_gemm" && op.layer == 0) {
      EXPECT_EQ(std::get<GemmOp>(op.shape).m, 3072);
    }
  }
}

// A skew factor k gives EP rank 0 k times the mean: 1.5 over two EP ranks is 3:1 shares.
TEST(MoeLoad, SkewFactorIsSharesOfTheMostLoadedRank) {
  const Workload factor = load(two_rank_text("1.5"));
  const Workload shares = load(two_rank_text("[0.75, 0.25]"));
  EXPECT_EQ(moe_expert_shares(factor.model, factor.training), (std::vector<double>{0.75, 0.25}));
  EXPECT_EQ(decompose(factor).stages, decompose(shares).stages);
  // The per-EP-rank rows: 2 sources x 2048 rows x the rank's share.
  EXPECT_EQ(moe_ep_rank_rows(2048, 2, 2, {0.75, 0.25}, 0, false),
            (std::vector<std::int64_t>{3072, 1024}));
  EXPECT_EQ(moe_ep_rank_rows(2048, 2, 2, {}, 0, false), (std::vector<std::int64_t>{2048, 2048}));
  // Eight experts over four EP ranks, k = 2: rank 0's two experts take 2/8 each, the other
  // six share 1 - 2/4 evenly.
  Workload eight = factor;
  eight.model.num_experts = 8;
  eight.training.expert_model_parallel_size = 4;
  eight.training.moe_load_skew = 2;
  const auto s = moe_expert_shares(eight.model, eight.training);
  ASSERT_EQ(s.size(), 8u);
  EXPECT_DOUBLE_EQ(s[0] + s[1], 0.5);
  EXPECT_DOUBLE_EQ(s[7], 0.5 / 6);
  EXPECT_EQ(moe_ep_rank_rows(1000, 8, 4, s, 0, false),
            (std::vector<std::int64_t>{2000, 667, 667, 667}));
}

// The balanced default and an explicit k = 1 are the same plan; capacity clips the hot
// expert's rows per source (capacity 1024 here), so dropping removes the imbalance.
TEST(MoeLoad, BalancedAndCapacity) {
  const Workload balanced = load(two_rank_text(""));
  EXPECT_EQ(decompose(load(two_rank_text("1"))).stages, decompose(balanced).stages);
  const std::string capacity = R"(, "moe_expert_capacity_factor": 1.0)";
  const Workload dropped = load(two_rank_text("[3, 1]", capacity));
  // The plan must outlive the pointer into it.
  const auto dropped_plan = decompose(dropped);
  const CollectiveOp* dispatch =
      collective(dropped_plan.stages[0].chunks[0].forward, "moe_dispatch_all_to_all");
  ASSERT_NE(dispatch, nullptr);
  // Sent: min(1536, 1024) + 512 = 1536 rows; EP rank 0 receives 2 x 1024.
  EXPECT_EQ(dispatch->bytes, 2048 * 1024 * 2);
  EXPECT_NEAR(step_s(dropped), step_s(load(two_rank_text("", capacity))), 1e-3);
  EXPECT_LT(step_s(dropped), step_s(load(two_rank_text("[3, 1]"))));
}

// Invalid loads name training.moe_load and the rule.
TEST(MoeLoad, InvalidValuesNameTheKey) {
  for (const std::string bad : {"0.5", "3", "[1, 2, 3]", "[1, -1]", "[0, 0]", "\"hot\"", "[]"}) {
    LoadOptions o;
    o.scenarios_dir = STEPSIM_SCENARIOS_DIR;
    auto w = load_scenario_text(two_rank_text(bad), "moe-load.json", ".", o);
    ASSERT_FALSE(w.ok()) << bad;
    EXPECT_NE(format_errors(w.errors()).find("training.moe_load"), std::string::npos)
        << bad << ": " << format_errors(w.errors());
  }
}

}  // namespace
}  // namespace stepsim::sim
