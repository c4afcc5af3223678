// Muon (optimizer "muon", core/ops/src/muon_ops.cpp): the Newton-Schulz GEMMs of every weight
// matrix per muon_tp_mode against the closed form of emerging_optimizers' newton_schulz_step
// (per iteration, m = min(rows, cols), n = max: X X^T 2 m^2 n, b A + c A A 2 m^3, a X + B X
// 2 m^2 n), the TP collectives each mode implies, Adam for the rest, and the optimizer's
// memory (one fp32 momentum per Muon element instead of two Adam moments). Also the
// optimizer's and CUDA graphs' checks.

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "model_workloads.hpp"
#include "stepsim/check/load.hpp"
#include "stepsim/memory/memory_model.hpp"
#include "stepsim/ops/muon_ops.hpp"
#include "stepsim/plan/decompose.hpp"

namespace stepsim {
namespace {

using testing::llama2_70b;
using testing::make_workload;

/// Llama 2 70B, TP 8, PP 4 (20 layers a stage), bf16, Muon with `mode`.
Workload muon_workload(MuonTpMode mode) {
  Workload w = make_workload(llama2_70b(), 8, 4, 2, 1, 8);
  w.training.optimizer = OptimizerKind::kMuon;
  w.training.muon_tp_mode = mode;
  return w;
}

/// 5 Newton-Schulz iterations on an r x c matrix, by hand.
double ns(double r, double c) {
  const double m = std::min(r, c);
  const double n = std::max(r, c);
  return 5 * (4 * m * m * n + 2 * m * m * m);
}

struct StepCounts {
  double ns_flops = 0;
  std::int64_t gathers = 0, gather_bytes = 0;
  std::int64_t reduces = 0, reduce_bytes = 0;
  std::int64_t adam_bytes = 0;
};

StepCounts count(const StagePlan& s) {
  StepCounts out;
  for (const Op& op : s.step_ops) {
    if (const auto* g = std::get_if<GemmOp>(&op.shape); g && op.name.starts_with("muon_ns_")) {
      out.ns_flops += g->flops();
    }
    if (const auto* c = std::get_if<CollectiveOp>(&op.shape); c && op.name.starts_with("muon_")) {
      (c->kind == CollectiveKind::kAllGather ? out.gathers : out.reduces) += 1;
      (c->kind == CollectiveKind::kAllGather ? out.gather_bytes : out.reduce_bytes) += c->bytes;
      EXPECT_EQ(c->group_size, 8);
    }
    if (op.name == "adam_step") out.adam_bytes = std::get<MemoryBoundOp>(op.shape).bytes;
  }
  return out;
}

TEST(Muon, NewtonSchulzFlopsClosedForm) {
  EXPECT_DOUBLE_EQ(detail::newton_schulz_flops(8192, 8192, 5), 5 * 6 * 8192.0 * 8192 * 8192);
  // Transposed to whiten the smaller side: 1024 x 8192 and 8192 x 1024 cost the same.
  EXPECT_DOUBLE_EQ(detail::newton_schulz_flops(1024, 8192, 1),
                   4.0 * 1024 * 1024 * 8192 + 2.0 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(detail::newton_schulz_flops(8192, 1024, 1),
                   detail::newton_schulz_flops(1024, 8192, 1));
}

TEST(Muon, DuplicatedGathersEachMatrixAndOrthogonalizesItWhole) {
  const WorkloadPlan plan = decompose(muon_workload(MuonTpMode::kDuplicated));
  const StagePlan& s = plan.stages[1];
  const StepCounts c = count(s);
  // Per layer, whole: q 8192 x 8192, k and v 1024 x 8192 (split_qkv), proj 8192 x 8192, fc1
  // 57344 x 8192, fc2 8192 x 28672.
  const double layer = 2 * ns(8192, 8192) + 2 * ns(1024, 8192) + ns(57344, 8192) +
                       ns(8192, 28672);
  EXPECT_NEAR(c.ns_flops, 20 * layer, 20 * layer * 1e-12);
  // One fp32 all-gather of each of the 6 matrices a layer (the whole matrix's bytes), no
  // all-reduce.
  EXPECT_EQ(c.gathers, 20 * 6);
  const std::int64_t layer_elements = 8192LL * 8192 * 2 + 1024LL * 8192 * 2 +
                                      57344LL * 8192 + 8192LL * 28672;
  EXPECT_EQ(c.gather_bytes, 20 * layer_elements * 4);
  EXPECT_EQ(c.reduces, 0);
  // Adam steps only the two RMSNorm weights a layer (28 bytes each).
  EXPECT_EQ(c.adam_bytes, 20 * 2 * 8192 * 28);
}

TEST(Muon, BlockwiseOrthogonalizesEachShardAlone) {
  const WorkloadPlan plan = decompose(muon_workload(MuonTpMode::kBlockwise));
  const StepCounts c = count(plan.stages[1]);
  // Local shards: q 1024 x 8192, k and v 128 x 8192, proj 8192 x 1024, fc1 7168 x 8192, fc2
  // 8192 x 3584.
  const double layer = 2 * ns(1024, 8192) + 2 * ns(128, 8192) + ns(7168, 8192) + ns(8192, 3584);
  EXPECT_NEAR(c.ns_flops, 20 * layer, 20 * layer * 1e-12);
  EXPECT_EQ(c.gathers + c.reduces, 0);
}

TEST(Muon, DistributedAllReducesTheGramMatrixEveryIteration) {
  const WorkloadPlan plan = decompose(muon_workload(MuonTpMode::kDistributed));
  const StepCounts c = count(plan.stages[1]);
  // The Gram matrix spans the unsplit dimension (8192 for every matrix here: the columns of
  // the column-parallel ones, the rows of the row-parallel ones), the shard's other side.
  const auto dist = [](double whole, double local) {
    return 5 * (2 * whole * whole * local * 2 + 2 * whole * whole * whole);
  };
  const double layer = dist(8192, 1024) * 2 + dist(8192, 128) * 2 + dist(8192, 7168) +
                       dist(8192, 3584);
  EXPECT_NEAR(c.ns_flops, 20 * layer, 20 * layer * 1e-12);
  // Per matrix: the norm's fp32 scalar and 5 Gram matrices in bf16 (8192^2 x 2 bytes).
  EXPECT_EQ(c.reduces, 20 * 6 * 6);
  EXPECT_EQ(c.reduce_bytes, 20 * 6 * (4 + 5 * 8192LL * 8192 * 2));
  EXPECT_EQ(c.gathers, 0);
}

TEST(Muon, MomentumReplacesAdamsMomentsInMemory) {
  Workload adam = make_workload(llama2_70b(), 8, 4, 2, 1, 8);
  const Workload muon = muon_workload(MuonTpMode::kDuplicated);
  const std::int64_t muon_elements =
      20 * (1024LL * 8192 + 128LL * 8192 * 2 + 8192LL * 1024 + 7168LL * 8192 + 8192LL * 3584);
  EXPECT_EQ(detail::muon_stage_states(muon, 1).elements, muon_elements);
  EXPECT_EQ(analytic_memory(adam)[1].optimizer_bytes - analytic_memory(muon)[1].optimizer_bytes,
            muon_elements * 4);
}

Result<Workload> load(const std::string& training_extra, bool moe = false) {
  const std::string text =
      R"({"name": "m", "model": {"num_layers": 4, "hidden_size": 1024,
      "num_attention_heads": 16, "seq_length": 2048, "vocab_size": 32000,
      "attention_backend": "auto")" +
      std::string(moe ? R"(, "num_experts": 8, "moe_router_topk": 2)" : "") +
      R"(}, "training": {"world_size": 2, "tensor_model_parallel_size": 2,
      "sequence_parallel": true, "micro_batch_size": 1, "global_batch_size": 8)" +
      std::string(training_extra.find("\"bf16\"") == std::string::npos ? R"(, "bf16": true)" : "") +
      training_extra + R"(}, "system": "systems/dgx-h100-80gb.json"})";
  LoadOptions o;
  o.scenarios_dir = STEPSIM_SCENARIOS_DIR;
  return load_scenario_text(text, "m.json", ".", o);
}

bool fails_on(const Result<Workload>& r, const std::string& key, const std::string& words) {
  if (r.ok()) return false;
  for (const Error& e : r.errors()) {
    if (e.key == key && e.message.find(words) != std::string::npos) return true;
  }
  ADD_FAILURE() << format_errors(r.errors());
  return false;
}

TEST(Muon, MegatronsRulesAndWhatIsNotModelled) {
  EXPECT_TRUE(load(R"(, "optimizer": "muon", "muon_tp_mode": "distributed")").ok());
  EXPECT_TRUE(fails_on(load(R"(, "optimizer": "muon", "use_distributed_optimizer": true)"),
                       "training.optimizer", "LayerWiseDistributedOptimizer"));
  EXPECT_TRUE(fails_on(load(R"(, "optimizer": "muon", "bf16": false, "fp16": true)"),
                       "training.optimizer", "fp16"));
}

TEST(CudaGraphs, MegatronsRulesAndWhatIsNotModelled) {
  EXPECT_TRUE(load(R"(, "cuda_graph_impl": "transformer_engine")").ok());
  EXPECT_TRUE(load(R"(, "cuda_graph_impl": "local", "cuda_graph_modules": ["attn", "mlp"])").ok());
  EXPECT_TRUE(fails_on(load(R"(, "cuda_graph_impl": "full_iteration",
                               "cuda_graph_modules": ["attn"])"),
                       "training.cuda_graph_modules", "must be empty"));
  EXPECT_TRUE(fails_on(load(R"(, "cuda_graph_impl": "local", "cuda_graph_modules": ["moe"])"),
                       "training.cuda_graph_modules", "only supported for MoE"));
  EXPECT_TRUE(fails_on(load(R"(, "cuda_graph_impl": "local", "recompute_granularity": "full",
                               "recompute_method": "uniform")"),
                       "training.cuda_graph_impl", "full iteration"));
  EXPECT_TRUE(fails_on(load(R"(, "cuda_graph_impl": "transformer_engine",
                               "cuda_graph_modules": ["attn", "moe"])",
                            true),
                       "training.cuda_graph_modules", "drop-padding"));
  EXPECT_TRUE(fails_on(load(R"(, "cuda_graph_modules": ["bogus"])"),
                       "training.cuda_graph_modules", "must be a list"));
}

}  // namespace
}  // namespace stepsim
