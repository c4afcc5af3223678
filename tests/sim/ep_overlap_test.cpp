// overlap_moe_expert_parallel_comm (and delay_wgrad_compute) as Megatron-Core schedules it
// without pipelining (combined_1f1b_schedule_for_no_pipelining; the layer pairing of
// TransformerModelChunkSchedulePlan.run and TransformerLayerSchedulePlan.run): the merged
// op order against a pair timed by hand, the step against the pairs' savings and the
// compute-only bound, the warm-up forward and last backward left alone, Megatron's refusals.

#include <gtest/gtest.h>

#include <string>

#include "hand_cost.hpp"
#include "stepsim/check/load.hpp"
#include "stepsim/graph/chunk_template.hpp"
#include "stepsim/graph/ep_overlap.hpp"
#include "stepsim/plan/decompose.hpp"
#include "stepsim/schedule/schedule.hpp"
#include "stepsim/simulate/simulate.hpp"

namespace stepsim::sim {
namespace {

// HandCost: a GEMM takes its k seconds, a collective 1 ns per byte.
Op gemm(std::string name, std::int64_t k, Phase phase, std::vector<std::int32_t> deps = {}) {
  Op op;
  op.name = std::move(name);
  op.layer = 0;
  op.phase = phase;
  op.shape = GemmOp{.m = 1, .n = 1, .k = k};
  op.deps = std::move(deps);
  return op;
}

Op a2a(std::string name, double seconds, Phase phase, std::vector<std::int32_t> deps) {
  Op op;
  op.name = std::move(name);
  op.layer = 0;
  op.phase = phase;
  op.stream = Stream::kTensorComm;
  op.shape = CollectiveOp{.kind = CollectiveKind::kAllToAll, .group = CommGroup::kExpert,
                          .bytes = static_cast<std::int64_t>(seconds * 1e9), .group_size = 4};
  op.deps = std::move(deps);
  return op;
}

constexpr Phase kF = Phase::kForward;
constexpr Phase kDgrad = Phase::kBackwardInput;
constexpr Phase kWgrad = Phase::kBackwardWeight;

// One MoE layer, all-to-alls of 5 s: forward 3 + 5 + 4 + 5 + 1 = 18 s alone,
// backward 1 + 5 + 4 + 4 + 5 + 3 + 3 = 25 s alone.
std::vector<Op> forward_layer() {
  return {gemm("attention_and_router", 3, kF), a2a("moe_dispatch_all_to_all", 5, kF, {0}),
          a2a("moe_dispatch_probs_all_to_all", 0, kF, {0}), gemm("experts", 4, kF, {1, 2}),
          a2a("moe_combine_all_to_all", 5, kF, {3}), gemm("unpermute", 1, kF, {4})};
}
std::vector<Op> backward_layer() {
  return {gemm("unpermute_bwd", 1, kDgrad),
          a2a("moe_combine_all_to_all_bwd", 5, kDgrad, {0}),
          gemm("experts_dgrad", 4, kDgrad, {1}),
          gemm("experts_wgrad", 4, kWgrad),
          a2a("moe_dispatch_probs_all_to_all_bwd", 0, kDgrad, {3}),
          a2a("moe_dispatch_all_to_all_bwd", 5, kDgrad, {3}),
          gemm("attention_dgrad", 3, kDgrad, {4, 5}),
          gemm("attention_wgrad", 3, kWgrad)};
}

TEST(EpOverlap, PairHidesWhatTheLayerPairingAllows) {
  const HandCost cost;
  const double alone = time_ops(forward_layer(), cost, false).duration_s +
                       time_ops(backward_layer(), cost, false).duration_s;
  EXPECT_DOUBLE_EQ(alone, 18 + 25);
  // By hand, Megatron's order (comm: combine_bwd | dispatch_fwd -> dispatch_bwd |
  // combine_fwd; compute: pre_dispatch_fwd | mlp_bwd -> mlp_fwd | pre_dispatch_bwd):
  //   unpermute_bwd 0-1, combine_bwd 1-6, attention_and_router 1-4, dispatch 6-11 (after
  //   the combine_bwd on the one comm stream), experts dgrad 6-10 and wgrad 10-14,
  //   dispatch_bwd 14-19 (after the wgrad), experts 14-18, combine 19-24, attention dgrad
  //   19-22 and wgrad 22-25, unpermute 25-26: 26 s, 17 of the 20 s of all-to-all hidden.
  const PairedOps pair = pair_ops(forward_layer(), backward_layer(), false);
  const ChunkTemplate merged = time_ops(pair.ops, cost, false);
  EXPECT_DOUBLE_EQ(merged.duration_s, 26);
  EXPECT_DOUBLE_EQ(merged.compute_busy_s, 23);
  // delay_wgrad_compute: the dispatch backward waits for the dgrad only (11-16), beside the
  // experts' wgrad (10-14); experts 14-18, combine 18-23, attention dgrad 18-21 and its
  // wgrad 21-24, unpermute 24-25: 25 s.
  const PairedOps delayed = pair_ops(forward_layer(), backward_layer(), true);
  const ChunkTemplate merged_delayed = time_ops(delayed.ops, cost, false);
  EXPECT_DOUBLE_EQ(merged_delayed.duration_s, 25);
  // Never faster than the compute alone.
  EXPECT_GE(merged_delayed.duration_s, merged_delayed.compute_busy_s);
  // The split gives each action its own ops' times from the pair's start.
  const PairedTemplates parts =
      split_pair(delayed, merged_delayed, time_ops(forward_layer(), cost, false),
                 time_ops(backward_layer(), cost, false));
  // Both last the pair; the forward's last op (the unpermute) ends it, the backward's (the
  // attention wgrad) a second before.
  EXPECT_DOUBLE_EQ(parts.forward.duration_s, 25);
  EXPECT_DOUBLE_EQ(parts.backward.duration_s, 25);
  EXPECT_DOUBLE_EQ(parts.forward.ops[5].end_s, 25);
  EXPECT_DOUBLE_EQ(parts.backward.ops[7].end_s, 24);
  EXPECT_DOUBLE_EQ(parts.forward.ops[1].start_s, 6);    // dispatch
  EXPECT_DOUBLE_EQ(parts.backward.ops[5].start_s, 11);  // dispatch_bwd
}

constexpr double kRate = 400e12;
constexpr double kLink = 150e9;

class LinkCost final : public CostModel {
 public:
  explicit LinkCost(bool free_a2a = false) : free_a2a_(free_a2a) {}
  double gemm_s(const GemmOp& op) const override { return op.flops() / kRate; }
  double attention_s(const AttentionOp&) const override { return 0.0; }
  double memory_bound_s(const MemoryBoundOp&) const override { return 0.0; }
  double collective_s(const CollectiveOp& op) const override {
    if (free_a2a_ && op.kind == CollectiveKind::kAllToAll) return 0.0;
    const double n = static_cast<double>(op.group_size);
    return static_cast<double>(op.bytes) * (n - 1) / n / kLink;
  }
  double p2p_s(const P2POp& op) const override { return static_cast<double>(op.bytes) / kLink; }
  std::string describe() const override { return "link test"; }

 private:
  bool free_a2a_;
};

std::string moe_text(const std::string& extra) {
  return R"({"name": "ep", "model": {"num_layers": 4, "hidden_size": 1024,
      "num_attention_heads": 16, "seq_length": 2048, "vocab_size": 32000, "swiglu": true,
      "add_bias_linear": false, "normalization": "RMSNorm", "position_embedding_type": "rope",
      "num_experts": 8, "moe_router_topk": 2, "moe_ffn_hidden_size": 1024},
      "training": {"world_size": 4, "expert_model_parallel_size": 4,
      "moe_token_dispatcher_type": "alltoall", "moe_grouped_gemm": true,
      "micro_batch_size": 2, "global_batch_size": 32, "bf16": true)" +
         extra + R"(}, "system": "systems/dgx-h100-80gb.json"})";
}

Result<Workload> load(const std::string& extra) {
  LoadOptions o;
  o.scenarios_dir = STEPSIM_SCENARIOS_DIR;
  return load_scenario_text(moe_text(extra), "ep.json", ".", o);
}

Prediction predicted(const std::string& extra, const CostModel& cost) {
  auto w = load(extra);
  EXPECT_TRUE(w.ok()) << (w.ok() ? "" : format_errors(w.errors()));
  if (!w.ok()) return {};
  w.value().system.interference = {};
  const WorkloadPlan plan = decompose(w.value());
  auto r = simulate(w.value(), plan, cost);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : format_errors(r.errors()));
  return r.ok() ? r.value().prediction : Prediction{};
}

double step_s(const std::string& extra, const CostModel& cost) {
  return predicted(extra, cost).step_time_s;
}

TEST(EpOverlap, StepSavesThePairsOnlyAndStaysAboveTheComputeBound) {
  const LinkCost cost;
  const double off = step_s("", cost);
  const double on = step_s(R"(, "overlap_moe_expert_parallel_comm": true)", cost);
  const double delayed = step_s(
      R"(, "overlap_moe_expert_parallel_comm": true, "delay_wgrad_compute": true)", cost);
  // All-to-alls free, no overlap: what the compute alone takes.
  const double bound = step_s("", LinkCost(true));
  EXPECT_LT(on, off);
  EXPECT_LE(delayed, on);
  EXPECT_GE(delayed, bound - 1e-12);
  // 4 micro-batches: F0 alone, 3 pairs (F1,B0) (F2,B1) (F3,B2), B3 alone. The step saves
  // 3 pairs' savings, nothing on the warm-up forward or the last backward.
  auto w = load("");
  ASSERT_TRUE(w.ok());
  const WorkloadPlan plan = decompose(w.value());
  const ChunkPlan& chunk = plan.stages[0].chunks[0];
  const double f = time_ops(chunk.forward, cost, false).duration_s;
  const double b = time_ops(chunk.backward, cost, false).duration_s;
  const double pair = time_ops(pair_ops(chunk.forward, chunk.backward, false).ops, cost, false)
                          .duration_s;
  ASSERT_LT(pair, f + b);
  EXPECT_NEAR(off - on, 3 * (f + b - pair), 1e-9);
  // Megatron frees the backward's activations layer by layer as the forward stores its own:
  // a combined step never holds two micro-batches' stored activations.
  const std::int64_t peak_off = predicted("", cost).peak_memory_bytes;
  const std::int64_t peak_on =
      predicted(R"(, "overlap_moe_expert_parallel_comm": true)", cost).peak_memory_bytes;
  EXPECT_GE(peak_on, peak_off);
  EXPECT_LT(peak_on, peak_off + chunk.stored_activation_bytes);
}

TEST(EpOverlap, WarmupForwardAndLastBackwardRunAlone) {
  ScheduleParams p{.pipeline_size = 1, .microbatches = 4, .combined_1f1b = true};
  auto s = make_schedule(p);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(format_actions(s.value().ranks[0]), "F0c0 F1c0 B0c0 F2c0 B1c0 F3c0 B2c0 B3c0");
  p.combined_1f1b = false;
  EXPECT_EQ(format_actions(make_schedule(p).value().ranks[0]),
            "F0c0 B0c0 F1c0 B1c0 F2c0 B2c0 F3c0 B3c0");
}

TEST(EpOverlap, RefusesWhatMegatronRefuses) {
  const auto refused = [](const std::string& extra, const std::string& key,
                          const std::string& says) {
    auto w = load(extra);
    ASSERT_FALSE(w.ok()) << extra;
    const std::string m = format_errors(w.errors());
    EXPECT_NE(m.find(key), std::string::npos) << m;
    EXPECT_NE(m.find(says), std::string::npos) << m;
  };
  refused(R"(, "delay_wgrad_compute": true)", "training.delay_wgrad_compute",
          "overlap_moe_expert_parallel_comm must be enabled when enabling delay_wgrad_compute");
  refused(R"(, "overlap_moe_expert_parallel_comm": true, "recompute_granularity": "full",
          "recompute_method": "uniform", "recompute_num_layers": 1)",
          "training.overlap_moe_expert_parallel_comm", "disable full recomputation");
  refused(R"(, "overlap_moe_expert_parallel_comm": true, "moe_shared_expert_overlap": true)",
          "training.overlap_moe_expert_parallel_comm", "disable moe_shared_expert_overlap");
  refused(R"(, "overlap_moe_expert_parallel_comm": true, "pipeline_model_parallel_size": 2)",
          "training.overlap_moe_expert_parallel_comm",
          "virtual_pipeline_model_parallel_size must be specified");
}

}  // namespace
}  // namespace stepsim::sim
