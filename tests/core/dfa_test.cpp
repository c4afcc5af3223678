// training.optimizer_impl "apex_distributed_fused_adam": Apex's DistributedFusedAdam as NeMo
// drives it in NVIDIA's MLPerf Training v4.1 GPT-3 175B job (core/ops/include/stepsim/ops/dfa.hpp). Its buckets,
// where each collective runs, the step's order and its memory, worked by hand for that job
// (t4 p8 v6, dp16, 200 MiB buckets: 2 layers of 452,984,832 FP8 weight elements per chunk).

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "shipped_scenario.hpp"
#include "stepsim/plan/decompose.hpp"
#include "stepsim/config/parse.hpp"
#include "stepsim/memory/memory_model.hpp"

namespace stepsim {
namespace {

constexpr std::int64_t kShard = 6'553'600;     // floor(200 MiB / 2 B / 16), a multiple of 64
constexpr std::int64_t kBucket = kShard * 16;  // 104,857,600 elements
constexpr std::int64_t kH = 12288;
constexpr std::int64_t kLayerFp8 = 12 * kH * kH / 4;  // qkv, proj, fc1, fc2 per TP rank

Workload mlperf() {
  auto w = testing::shipped_with("gpt3-175b-h100-512-mlperf41.json", "");
  EXPECT_TRUE(w.ok()) << (w.ok() ? "" : format_errors(w.errors()));
  return std::move(w).value();
}

std::vector<std::int64_t> bytes_of(const std::vector<Op>& ops, const std::string& name) {
  std::vector<std::int64_t> out;
  for (const Op& op : ops) {
    if (op.name == name) out.push_back(std::get<CollectiveOp>(op.shape).bytes);
  }
  return out;
}

TEST(Dfa, AChunksFp8WeightsAreReducedAndGatheredAsOneGroupOfPaddedBuckets) {
  const WorkloadPlan plan = decompose(mlperf());
  const StagePlan& middle = plan.stages[3];
  // ceil(2 x 452,984,832 / 104,857,600) = 9 buckets a chunk, each whole on the wire: bf16
  // gradients reduce-scattered, uint8 weights gathered.
  for (std::size_t c = 1; c < middle.chunks.size(); ++c) {
    const ChunkPlan& chunk = middle.chunks[c];
    EXPECT_EQ(bytes_of(chunk.grad_sync, "dfa_grad_reduce_scatter"),
              std::vector<std::int64_t>(9, kBucket * 2));
    EXPECT_EQ(bytes_of(chunk.param_gather, "dfa_param_all_gather"),
              std::vector<std::int64_t>(9, kBucket));
    EXPECT_EQ(chunk.grad_sync.size(), 9u);
    const auto& rs = std::get<CollectiveOp>(chunk.grad_sync.front().shape);
    EXPECT_EQ(rs.kind, CollectiveKind::kReduceScatter);
    EXPECT_EQ(rs.group, CommGroup::kData);
    EXPECT_EQ(rs.group_size, 16);
  }
  // The first chunk's group holds the sequence-parallel parameters: reduced in the step.
  EXPECT_TRUE(middle.chunks[0].grad_sync.empty());
  EXPECT_TRUE(middle.chunks[0].param_gather.empty());
}

TEST(Dfa, TheFirstChunksGroupIsReducedAfterThePipelineAndGatheredInTheStep) {
  const WorkloadPlan plan = decompose(mlperf());
  const std::vector<Op>& ops = plan.stages[3].step_ops;
  const auto at = [&](const std::string& name) {
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (ops[i].name == name) return static_cast<std::int32_t>(i);
    }
    return -1;
  };
  // The sequence-parallel gradients (2 LayerNorms of 2h and 2 row-parallel biases of h per
  // layer, 12 layers) all-reduced over TP in bf16, first.
  const std::int32_t sp = at("dfa_sp_grad_all_reduce");
  ASSERT_EQ(sp, 0);
  EXPECT_EQ(std::get<CollectiveOp>(ops[0].shape).bytes, 12 * 6 * kH * 2);
  EXPECT_EQ(std::get<CollectiveOp>(ops[0].shape).group, CommGroup::kTensor);
  // Then the first chunk's 9 FP8 buckets and the one bf16 bucket of every other parameter.
  EXPECT_EQ(bytes_of(ops, "dfa_grad_reduce_scatter_first"),
            (std::vector<std::int64_t>{9 * kBucket * 2, kBucket * 2}));
  const std::int32_t rs = at("dfa_grad_reduce_scatter_first");
  EXPECT_EQ(ops[static_cast<std::size_t>(rs)].deps, std::vector<std::int32_t>{sp});
  // Grad norm, its world all-reduce, Adam on the first group, its casts, its gather (uint8
  // FP8 weights, bf16 others) while Adam runs on the rest; the amax all-reduce waits for it.
  EXPECT_EQ(bytes_of(ops, "dfa_param_all_gather_first"),
            (std::vector<std::int64_t>{9 * kBucket, kBucket * 2}));
  const std::int32_t norm = at("grad_norm_all_reduce");
  EXPECT_EQ(std::get<CollectiveOp>(ops[static_cast<std::size_t>(norm)].shape).group_size, 512);
  const std::int32_t gather = at("dfa_param_all_gather_first");
  const std::int32_t amax = at("fp8_param_amax_all_reduce");
  ASSERT_GT(amax, gather);
  const auto& deps = ops[static_cast<std::size_t>(amax)].deps;
  EXPECT_NE(std::find(deps.begin(), deps.end(), gather), deps.end());
  EXPECT_GT(at("fp8_weight_transpose"), amax);
  // The first stage also reduces the tied embeddings' fp32 gradient, then its two fp32
  // buckets (word and position embeddings, 400 MiB each).
  const std::vector<Op>& first = plan.stages[0].step_ops;
  std::int64_t fp32 = 0;
  for (const Op& op : first) {
    if (op.name == "embedding_grad_all_reduce") {
      EXPECT_EQ(std::get<CollectiveOp>(op.shape).bytes, 50688 / 4 * kH * 4);
    }
    if (op.name == "dfa_grad_reduce_scatter_first" &&
        std::get<CollectiveOp>(op.shape).bytes == 2 * kBucket * 4) {
      ++fp32;
    }
  }
  EXPECT_EQ(fp32, 1);
}

TEST(Dfa, MemoryIsApexsBuffersPerPaddedBucket) {
  const std::vector<StageMemory> memory = analytic_memory(mlperf());
  const StageMemory& m = memory[3];
  // 54 FP8 buckets; the bf16 group's one bucket after a hole of one (last_bucket_id).
  const std::int64_t fp8 = 54 * kBucket;
  const std::int64_t normal = 2 * kBucket;
  // uint8 weights per bucket element, bf16 others, TE's FP8 transposes per weight element.
  EXPECT_EQ(m.weights_bytes, fp8 + 2 * normal + 12 * kLayerFp8);
  EXPECT_EQ(m.gradients_bytes, 2 * fp8 + 2 * normal);
  // fp32 master, exp_avg, exp_avg_sq and the bf16 reduce-scatter output, per shard element of
  // each of the 55 buckets.
  EXPECT_EQ(m.optimizer_bytes, 55 * kShard * 14);
}

TEST(Dfa, OnlyTheJobNemoRunsItInIsModelled) {
  const auto errors = [](const std::string& training,
                         const std::vector<std::pair<std::string, std::string>>& replace) {
    auto w = testing::shipped_with("gpt3-175b-h100-512-mlperf41.json", training, replace);
    return w.ok() ? std::string() : format_errors(w.errors());
  };
  const std::string no_vp = errors("", {{"\"virtual_pipeline_model_parallel_size\": 6",
                                         "\"virtual_pipeline_model_parallel_size\": 1"}});
  EXPECT_NE(no_vp.find("training.optimizer_impl=\"apex_distributed_fused_adam\" needs "
                       "interleaving"),
            std::string::npos)
      << no_vp;
  const std::string no_fp8_params =
      errors("", {{"\"fp8_param_gather\": true", "\"fp8_param_gather\": false"}});
  EXPECT_NE(no_fp8_params.find("is modelled with FP8 parameters"), std::string::npos)
      << no_fp8_params;
  const std::string stray =
      errors("", {{"\"optimizer_impl\": \"apex_distributed_fused_adam\",", ""}});
  EXPECT_NE(stray.find("training.apex_bucket_cap_mb=200 has no effect without optimizer_impl"),
            std::string::npos)
      << stray;
  const std::string no_overlap =
      errors("", {{"\"overlap_param_gather\": true", "\"overlap_param_gather\": false"}});
  EXPECT_NE(no_overlap.find("without overlap_grad_reduce and overlap_param_gather"),
            std::string::npos)
      << no_overlap;
}

}  // namespace
}  // namespace stepsim
