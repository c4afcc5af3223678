// moe_shared_expert_overlap as the chunk templates and the engine time it, against closed
// forms worked out by hand from Megatron-Core's launch order (token_dispatcher.py,
// MoEAlltoAllTokenDispatcher; shared_experts.py): on one GPU per EP rank (t 1, so the shared
// experts have no TP collectives), GEMMs at kRate, transfers at kLink, everything else free.
// Per MoE layer, forward: the tokens' (A) and probabilities' (P) dispatch all-to-alls run
// beside the shared fc1 (G1), the combine all-to-all (C) beside the shared fc2 (G2):
//   off  R + G1 + G2 + A + P + E + C      on  R + max(A + P, G1) + E + max(C, G2)
// so the overlap saves min(A + P, G1) + min(C, G2); backward likewise with fc2's dgrad and
// wgrad beside C's backward and fc1's beside the dispatch all-to-alls' backward.
// With the system's interference factors (compute kc, NCCL kn) a GEMM shorter than its
// all-to-all runs at 1/kc and the all-to-all at 1/kn while they overlap: G * kc of wall time
// moves G * kc / kn of the transfer, so a layer saves (G1 + G2) * (1 - kc + kc / kn).

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "stepsim/graph/chunk_template.hpp"
#include "stepsim/plan/decompose.hpp"
#include "stepsim/check/load.hpp"
#include "stepsim/simulate/simulate.hpp"

namespace stepsim::sim {
namespace {

constexpr double kRate = 400e12;  // FLOP/s of every GEMM
constexpr double kLink = 150e9;   // bytes/s of every transfer

class LinkCost final : public CostModel {
 public:
  double gemm_s(const GemmOp& op) const override { return op.flops() / kRate; }
  double attention_s(const AttentionOp&) const override { return 0.0; }
  double memory_bound_s(const MemoryBoundOp&) const override { return 0.0; }
  double collective_s(const CollectiveOp& op) const override {
    const double n = static_cast<double>(op.group_size);
    return static_cast<double>(op.bytes) * (n - 1) / n / kLink;
  }
  double p2p_s(const P2POp& op) const override { return static_cast<double>(op.bytes) / kLink; }
  std::string describe() const override { return "link test"; }
};

constexpr double kLayers = 4;
constexpr double kTokens = 2048 * 2;  // s * b on a rank (t 1)
constexpr double kH = 1024;
constexpr double kEp = 4;
constexpr double kMicrobatches = 2;

/// 4 MoE layers (8 experts of width 1024, top-2, shared experts of width `shared`, SwiGLU) on
/// 4 GPUs, EP 4, the alltoall dispatcher, 2 micro-batches of 2 sequences of 2048.
Workload moe(std::int64_t shared, bool overlap, const std::string& dispatcher = "alltoall") {
  const std::string text =
      R"({"name": "shared", "model": {"num_layers": 4, "hidden_size": 1024,
      "num_attention_heads": 16, "seq_length": 2048, "vocab_size": 32000, "swiglu": true,
      "add_bias_linear": false, "normalization": "RMSNorm", "position_embedding_type": "rope",
      "num_experts": 8, "moe_router_topk": 2, "moe_ffn_hidden_size": 1024,
      "moe_shared_expert_intermediate_size": )" +
      std::to_string(shared) + R"(}, "training": {"world_size": 4,
      "expert_model_parallel_size": 4, "moe_token_dispatcher_type": ")" +
      dispatcher + R"(", "moe_grouped_gemm": true, "moe_shared_expert_overlap": )" +
      (overlap ? "true" : "false") +
      R"(, "micro_batch_size": 2, "global_batch_size": 16, "bf16": true},
      "system": "systems/dgx-h100-80gb.json"})";
  LoadOptions o;
  o.scenarios_dir = STEPSIM_SCENARIOS_DIR;
  auto w = load_scenario_text(text, "shared.json", ".", o);
  EXPECT_TRUE(w.ok()) << (w.ok() ? "" : format_errors(w.errors()));
  return w.ok() ? std::move(w).value() : Workload{};
}

// The dispatcher's transfers of one layer: a2a buffers of tokens * topk rows.
constexpr double kTokensA2a = kTokens * 2 * kH * 2 * (kEp - 1) / kEp / kLink;
constexpr double kProbsA2a = kTokens * 2 * 2 * (kEp - 1) / kEp / kLink;  // bf16 probs

double fc1_s(double shared) { return 2 * kTokens * 2 * shared * kH / kRate; }  // SwiGLU: 2f
double fc2_s(double shared) { return 2 * kTokens * kH * shared / kRate; }

double forward_saving(double shared) {
  return kLayers *
         (std::min(kTokensA2a + kProbsA2a, fc1_s(shared)) + std::min(kTokensA2a, fc2_s(shared)));
}

// Backward: dgrad and wgrad of each GEMM.
double backward_saving(double shared) {
  return kLayers * (std::min(kTokensA2a, 2 * fc2_s(shared)) +
                    std::min(kTokensA2a + kProbsA2a, 2 * fc1_s(shared)));
}

ChunkTemplate timed(const Workload& w, bool backward, const Interference& k = {}) {
  const WorkloadPlan plan = decompose(w);
  const ChunkPlan& chunk = plan.stages[0].chunks[0];
  return time_ops(backward ? chunk.backward : chunk.forward, LinkCost(), false, k);
}

TEST(MoeSharedOverlap, ChunksSaveWhatTheClosedFormsSay) {
  // Width 512: the GEMMs are shorter than the all-to-alls, which hide all of them; width
  // 4096: fc1 (0.168 ms) outlasts the dispatch (0.084 ms), which it hides instead.
  for (const std::int64_t shared : {512, 4096}) {
    const double f = static_cast<double>(shared);
    const double fwd =
        timed(moe(shared, false), false).duration_s - timed(moe(shared, true), false).duration_s;
    const double bwd =
        timed(moe(shared, false), true).duration_s - timed(moe(shared, true), true).duration_s;
    EXPECT_NEAR(fwd, forward_saving(f), 1e-12) << shared;
    EXPECT_NEAR(bwd, backward_saving(f), 1e-12) << shared;
  }
  EXPECT_NEAR(forward_saving(512), kLayers * (fc1_s(512) + fc2_s(512)), 1e-15);
  EXPECT_NEAR(forward_saving(4096), kLayers * (kTokensA2a + kProbsA2a + kTokensA2a), 1e-15);
  // The same work either way: only its order and overlap differ.
  EXPECT_DOUBLE_EQ(timed(moe(4096, false), false).compute_busy_s,
                   timed(moe(4096, true), false).compute_busy_s);
}

TEST(MoeSharedOverlap, InterferenceSlowsBothSides) {
  const Interference k{.compute_slowdown = 1.189, .collective_slowdown = 1.25};
  const double f = 512;
  const double off = timed(moe(512, false), false, k).duration_s;
  const double on = timed(moe(512, true), false, k).duration_s;
  // G * kc < the all-to-all's time * kn for both GEMMs here (0.0215 and 0.043 ms against
  // 0.084 ms): each GEMM ends first, then the rest of its all-to-all runs alone.
  ASSERT_LT(fc1_s(f) * k.compute_slowdown, kTokensA2a * k.collective_slowdown);
  const double factor = 1 - k.compute_slowdown + k.compute_slowdown / k.collective_slowdown;
  EXPECT_NEAR(off - on, kLayers * (fc1_s(f) + fc2_s(f)) * factor, 1e-12);
  EXPECT_LT(off - on, forward_saving(f));
}

TEST(MoeSharedOverlap, StepMovesByTheMicroBatchesSavings) {
  // One pipeline stage: the step is the micro-batches' forwards and backwards, then the
  // gradient reduction and the optimizer, the same with and without the overlap.
  const auto step = [](std::int64_t shared, bool overlap) {
    Workload w = moe(shared, overlap);
    w.system.interference = {};
    const WorkloadPlan plan = decompose(w);
    auto r = simulate(w, plan, LinkCost());
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : format_errors(r.errors()));
    return r.ok() ? r.value().prediction.step_time_s : 0.0;
  };
  for (const std::int64_t shared : {512, 4096}) {
    const double f = static_cast<double>(shared);
    EXPECT_NEAR(step(shared, false) - step(shared, true),
                kMicrobatches * (forward_saving(f) + backward_saving(f)), 1e-9)
        << shared;
  }
}

TEST(MoeSharedOverlap, RefusedWithTheAllgatherDispatcherIgnoredWithoutSharedExperts) {
  LoadOptions o;
  o.scenarios_dir = STEPSIM_SCENARIOS_DIR;
  const Workload base = moe(512, true);
  // Megatron's ValueError, with shared experts only.
  const std::string allgather =
      R"({"name": "s", "model": {"num_layers": 4, "hidden_size": 1024,
      "num_attention_heads": 16, "seq_length": 2048, "vocab_size": 32000, "swiglu": true,
      "add_bias_linear": false, "num_experts": 8, "moe_ffn_hidden_size": 1024,
      "moe_shared_expert_intermediate_size": 512}, "training": {"world_size": 4,
      "expert_model_parallel_size": 4, "moe_token_dispatcher_type": "allgather",
      "moe_shared_expert_overlap": true, "micro_batch_size": 2, "global_batch_size": 16},
      "system": "systems/dgx-h100-80gb.json"})";
  const auto refused = load_scenario_text(allgather, "s.json", ".", o);
  ASSERT_FALSE(refused.ok());
  const std::string message = format_errors(refused.errors());
  EXPECT_NE(message.find("s.json"), std::string::npos) << message;
  EXPECT_NE(message.find("training.moe_shared_expert_overlap"), std::string::npos) << message;
  EXPECT_NE(message.find("only works with alltoall or flex"), std::string::npos) << message;
  // Without shared experts there is nothing to overlap: the same plan as without the flag.
  std::string no_shared = allgather;
  no_shared.replace(no_shared.find(R"(,
      "moe_shared_expert_intermediate_size": 512)"),
                    std::string(R"(,
      "moe_shared_expert_intermediate_size": 512)")
                        .size(),
                    "");
  auto ignored = load_scenario_text(no_shared, "s.json", ".", o);
  ASSERT_TRUE(ignored.ok()) << format_errors(ignored.errors());
  // ... and the report says so.
  const std::vector<std::string>& notes = ignored.value().notes;
  EXPECT_TRUE(std::any_of(notes.begin(), notes.end(), [](const std::string& n) {
    return n.find("moe_shared_expert_overlap=true has no effect") != std::string::npos;
  }));
  Workload without = ignored.value();
  without.training.moe_shared_expert_overlap = false;
  EXPECT_EQ(decompose(ignored.value()).stages[0].chunks[0].forward,
            decompose(without).stages[0].chunks[0].forward);
  EXPECT_TRUE(base.training.moe_shared_expert_overlap);
}

}  // namespace
}  // namespace stepsim::sim
