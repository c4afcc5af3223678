// Sharded data parallelism against closed forms: Megatron-FSDP's optim_grads_params gathers
// every unit's parameters before its forward and again before its backward and reduce-scatters
// its gradients in every micro-batch (megatron/core/distributed/fsdp/src/megatron_fsdp/
// megatron_fsdp.py), so one micro-batch moves 2 gathers + 1 reduce-scatter of the sharded
// layer parameters (the root module's once each); the memory each strategy leaves per GPU.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "stepsim/check/load.hpp"
#include "stepsim/ops/flops.hpp"
#include "stepsim/plan/decompose.hpp"

namespace stepsim {
namespace {

constexpr std::int64_t kH = 1024, kQ = 1024, kKv = 256, kF = 2816, kV = 32000, kLayers = 4;
constexpr std::int64_t kDp = 8;

std::string scenario(const std::string& fsdp, const std::string& extra = "") {
  return R"({"name": "fsdp", "model": {"num_layers": 4, "hidden_size": 1024,
      "num_attention_heads": 16, "num_query_groups": 4, "ffn_hidden_size": 2816,
      "seq_length": 512, "padded_vocab_size": 32000, "swiglu": true, "add_bias_linear": false,
      "normalization": "RMSNorm", "position_embedding_type": "rope", "attention_backend": "auto",
      "attention_dropout": 0, "hidden_dropout": 0, "untie_embeddings_and_output_weights": true},
      "training": {"world_size": 8, "micro_batch_size": 1, "global_batch_size": 16,
      "bf16": true, "grad_reduce_in_bf16": true, )" +
         fsdp + extra + R"(}, "system": "systems/dgx-h100-80gb.json"})";
}

Workload load_text(const std::string& text) {
  LoadOptions o;
  o.scenarios_dir = STEPSIM_SCENARIOS_DIR;
  auto w = load_scenario_text(text, "fsdp.json", ".", o);
  EXPECT_TRUE(w.ok()) << (w.ok() ? "" : format_errors(w.errors()));
  return w.ok() ? std::move(w).value() : Workload{};
}

std::int64_t padded(std::int64_t n) { return (n + kDp - 1) / kDp * kDp; }

// One layer: ln1, ln2 (RMSNorm), QKV, projection, FC1 (SwiGLU: 2f), FC2; the root: the word
// embedding, the final norm, the output layer.
constexpr std::int64_t kUnit = 2 * kH + kH * (kQ + 2 * kKv) + kQ * kH + kH * 2 * kF + kF * kH;
constexpr std::int64_t kRoot = kV * kH + kH + kV * kH;

struct Traffic {
  std::int64_t gathered = 0, reduced = 0, gathers = 0, reduces = 0;
};

Traffic traffic(const ChunkPlan& c) {
  Traffic t;
  for (const auto* list : {&c.forward, &c.backward}) {
    for (const Op& op : *list) {
      const auto* col = std::get_if<CollectiveOp>(&op.shape);
      if (col == nullptr || col->group != CommGroup::kData) continue;
      EXPECT_EQ(col->group_size, kDp);
      if (col->kind == CollectiveKind::kAllGather) {
        t.gathered += col->bytes;
        ++t.gathers;
      } else if (col->kind == CollectiveKind::kReduceScatter) {
        t.reduced += col->bytes;
        ++t.reduces;
      }
    }
  }
  return t;
}

const std::string kMegatronFsdp =
    R"("use_megatron_fsdp": true, "use_distributed_optimizer": true,
       "overlap_grad_reduce": true, "overlap_param_gather": true)";

TEST(Fsdp, UnitAndRootParameters) {
  const Workload w = load_text(scenario(kMegatronFsdp));
  EXPECT_EQ(chunk_parameters(w, 0, 0), kLayers * kUnit + kRoot);
}

TEST(Fsdp, TwoGathersAndOneReduceScatterPerMicroBatch) {
  for (const std::string extra : {"", R"(, "recompute_granularity": "full",
        "recompute_method": "uniform", "recompute_num_layers": 1)"}) {
    const WorkloadPlan plan = decompose(load_text(scenario(kMegatronFsdp, extra)));
    const ChunkPlan& c = plan.stages[0].chunks[0];
    const Traffic t = traffic(c);
    EXPECT_EQ(t.gathered, (2 * kLayers * padded(kUnit) + padded(kRoot)) * 2) << extra;
    EXPECT_EQ(t.reduced, (kLayers * padded(kUnit) + padded(kRoot)) * 2) << extra;
    EXPECT_EQ(t.gathers, 2 * kLayers + 1);
    EXPECT_EQ(t.reduces, kLayers + 1);
    EXPECT_TRUE(c.grad_sync.empty()) << "reduced in every backward, nothing left for the step";
    for (const Op& op : plan.stages[0].step_ops) EXPECT_NE(op.name, "dp_param_all_gather");
  }
}

TEST(Fsdp, TorchFsdp2WithoutReshardGathersOnce) {
  const WorkloadPlan plan = decompose(load_text(scenario(
      R"("use_torch_fsdp2": true, "torch_fsdp2_reshard_after_forward": false)")));
  const Traffic t = traffic(plan.stages[0].chunks[0]);
  EXPECT_EQ(t.gathered, (kLayers * padded(kUnit) + padded(kRoot)) * 2);
  EXPECT_EQ(t.reduced, (kLayers * padded(kUnit) + padded(kRoot)) * 2);
}

TEST(Fsdp, OptimGradsReducesEveryBackwardAndGathersAfterTheStep) {
  const WorkloadPlan plan = decompose(load_text(
      scenario(kMegatronFsdp, R"(, "data_parallel_sharding_strategy": "optim_grads")")));
  const Traffic t = traffic(plan.stages[0].chunks[0]);
  EXPECT_EQ(t.gathered, 0);
  EXPECT_EQ(t.reduced, (kLayers * padded(kUnit) + padded(kRoot)) * 2);
  bool gathered = false;
  for (const Op& op : plan.stages[0].step_ops) gathered |= op.name == "dp_param_all_gather";
  EXPECT_TRUE(gathered);
}

TEST(Fsdp, MemoryPerGpuAsMegatronFsdpShards) {
  const std::int64_t p = kLayers * kUnit + kRoot;
  const std::int64_t shard = (p + kDp - 1) / kDp;
  // optim_grads_params: bf16 parameters, bf16 gradients and 12 bytes of fp32 master weights
  // and Adam moments per parameter, all sharded; two gathered units (the double buffer) and
  // one unit's full gradients as communication buffers.
  const WorkloadPlan full = decompose(load_text(scenario(kMegatronFsdp)));
  EXPECT_EQ(full.stages[0].static_bytes, shard * (2 + 2 + 12) + 2 * kUnit * 2 + kUnit * 2);
  // optim_grads: the parameters whole, one unit's full gradients.
  const WorkloadPlan grads = decompose(load_text(
      scenario(kMegatronFsdp, R"(, "data_parallel_sharding_strategy": "optim_grads")")));
  EXPECT_EQ(grads.stages[0].static_bytes, p * 2 + shard * (2 + 12) + kUnit * 2);
  // optim: Megatron's distributed optimizer.
  const WorkloadPlan optim = decompose(
      load_text(scenario(kMegatronFsdp, R"(, "data_parallel_sharding_strategy": "optim")")));
  EXPECT_EQ(optim.stages[0].static_bytes, p * (2 + 2) + shard * 12);
}

TEST(Fsdp, MegatronsRules) {
  LoadOptions o;
  o.scenarios_dir = STEPSIM_SCENARIOS_DIR;
  const auto both = load_scenario_text(
      scenario(kMegatronFsdp, R"(, "use_torch_fsdp2": true)"), "fsdp.json", ".", o);
  ASSERT_FALSE(both.ok());
  const std::string errors = format_errors(both.errors());
  EXPECT_NE(errors.find("choose one FSDP implementation"), std::string::npos) << errors;
  EXPECT_NE(errors.find("distributed optimizer"), std::string::npos) << errors;
  const auto pp = load_scenario_text(
      scenario(R"("use_torch_fsdp2": true, "pipeline_model_parallel_size": 2)"), "fsdp.json",
      ".", o);
  ASSERT_FALSE(pp.ok());
  EXPECT_NE(format_errors(pp.errors()).find("pipeline parallelism"), std::string::npos);
}

}  // namespace
}  // namespace stepsim
