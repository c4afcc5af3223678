#include "stepsim/check/check.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "stepsim/check/load.hpp"

namespace stepsim {
namespace {

const std::string kScenarios = STEPSIM_SCENARIOS_DIR;

SystemConfig a100() {
  auto s = load_system_file(kScenarios + "/systems/dgx-a100-80gb.json");
  EXPECT_TRUE(s.ok());
  return s.ok() ? s.value() : SystemConfig{};
}

// A valid Workload built in code, the way a sweep builds one: only the given fields are set.
Workload tiny() {
  Workload w;
  w.name = "tiny";
  w.model.num_layers = 16;
  w.model.hidden_size = 1024;
  w.model.num_attention_heads = 16;
  w.model.seq_length = 512;
  w.model.vocab_size = 50257;
  w.training.world_size = 32;
  w.training.tensor_model_parallel_size = 2;
  w.training.pipeline_model_parallel_size = 4;
  w.training.micro_batch_size = 2;
  w.training.global_batch_size = 64;
  w.training.params_dtype = DType::kBf16;
  w.system = a100();
  return w;
}

bool names(const Errors& errors, const std::string& key, const std::string& phrase = "") {
  return std::any_of(errors.begin(), errors.end(), [&](const Error& e) {
    return e.key == key && e.to_string().find(phrase) != std::string::npos;
  });
}

// Megatron's SwiGLU default as arguments.py computes it, in floating point.
std::int64_t megatron_swiglu_ffn(std::int64_t h) {
  return static_cast<std::int64_t>((4.0 * static_cast<double>(h) * 2.0 / 3.0) / 64.0) * 64;
}

TEST(Finalize, DerivesMegatronDefaults) {
  Workload w = tiny();
  const Errors errors = finalize_workload(w, "w.json");
  ASSERT_TRUE(errors.empty()) << format_errors(errors);
  EXPECT_EQ(w.model.num_query_groups, 16);
  EXPECT_EQ(w.model.kv_channels, 64);
  EXPECT_EQ(w.model.ffn_hidden_size, 4096);
  EXPECT_EQ(w.model.max_position_embeddings, 512);
  EXPECT_EQ(w.model.padded_vocab_size, 50432);  // multiple of 128 * t = 256
  EXPECT_EQ(w.training.data_parallel_size, 4);
  EXPECT_EQ(w.training.num_microbatches, 8);
  EXPECT_EQ(w.training.microbatch_group_size_per_vp_stage, 4);
  EXPECT_EQ(w.training.virtual_pipeline_model_parallel_size, 1);
  EXPECT_EQ(w.training.num_layers_per_virtual_pipeline_stage, 0);
  EXPECT_EQ(w.training.recompute_num_layers, 0);
}

TEST(Finalize, SwigluFfnMatchesMegatronFormula) {
  for (const std::int64_t h : {512, 1000, 4096, 5120, 8192, 12288}) {
    Workload w = tiny();
    w.model.hidden_size = h;
    w.model.num_attention_heads = 8;
    w.model.swiglu = true;
    finalize_workload(w, "w.json");
    EXPECT_EQ(w.model.ffn_hidden_size, megatron_swiglu_ffn(h)) << "h=" << h;
  }
}

TEST(Finalize, VocabPaddingFollowsTensorParallelSize) {
  for (const std::int64_t t : {1, 2, 4, 8}) {
    Workload w = tiny();
    w.training.tensor_model_parallel_size = t;
    w.training.world_size = 4 * t;
    w.training.global_batch_size = 2;
    finalize_workload(w, "w.json");
    const std::int64_t multiple = 128 * t;
    EXPECT_EQ(w.model.padded_vocab_size, (50257 + multiple - 1) / multiple * multiple);
    EXPECT_EQ(w.model.padded_vocab_size % multiple, 0);
  }
}

TEST(Finalize, FullRecomputeDefaultsToOneLayer) {
  Workload w = tiny();
  w.training.recompute_granularity = RecomputeGranularity::kFull;
  w.training.recompute_method = RecomputeMethod::kUniform;
  EXPECT_TRUE(finalize_workload(w, "w.json").empty());
  EXPECT_EQ(w.training.recompute_num_layers, 1);
}

TEST(Finalize, VirtualStagesFromEitherForm) {
  Workload by_layers = tiny();
  by_layers.training.num_layers_per_virtual_pipeline_stage = 2;  // 4 layers per stage
  EXPECT_TRUE(finalize_workload(by_layers, "w.json").empty());
  EXPECT_EQ(by_layers.training.virtual_pipeline_model_parallel_size, 2);

  Workload by_count = tiny();
  by_count.training.virtual_pipeline_model_parallel_size = 4;
  EXPECT_TRUE(finalize_workload(by_count, "w.json").empty());
  EXPECT_EQ(by_count.training.num_layers_per_virtual_pipeline_stage, 1);

  // Megatron sets v = None when the virtual stage holds the whole pipeline stage.
  Workload whole = tiny();
  whole.training.num_layers_per_virtual_pipeline_stage = 4;
  EXPECT_TRUE(finalize_workload(whole, "w.json").empty());
  EXPECT_FALSE(whole.training.interleaved());
  EXPECT_EQ(whole.training.num_layers_per_virtual_pipeline_stage, 0);
}

TEST(Finalize, IsIdempotent) {
  Workload once = tiny();
  once.training.num_layers_per_virtual_pipeline_stage = 2;
  once.training.recompute_granularity = RecomputeGranularity::kFull;
  once.training.recompute_method = RecomputeMethod::kBlock;
  ASSERT_TRUE(finalize_workload(once, "w.json").empty());
  Workload twice = once;
  EXPECT_TRUE(finalize_workload(twice, "w.json").empty());
  EXPECT_EQ(once, twice);
}

TEST(Validate, TensorParallelMustDivideEveryShardedDimension) {
  Workload w = tiny();
  w.training.tensor_model_parallel_size = 3;
  w.training.world_size = 24;
  w.model.ffn_hidden_size = 4000;
  const Errors e = finalize_workload(w, "w.json");
  EXPECT_TRUE(
      names(e, "training.tensor_model_parallel_size", "does not divide num_attention_heads=16"));
  EXPECT_TRUE(
      names(e, "training.tensor_model_parallel_size", "does not divide ffn_hidden_size=4000"));
  // The padded vocabulary is a multiple of 128 * 3, so it is divisible.
  EXPECT_FALSE(names(e, "training.tensor_model_parallel_size", "padded_vocab_size"));
}

TEST(Validate, InterleavedGroupRulesFromSchedulesPy) {
  struct Case {
    std::int64_t p, m, n;
    bool ok;
  };
  // p <= N <= m, and m mod N is 0 or >= p (the reference's p=2, N=3, m=5 table is valid).
  const Case cases[] = {{2, 5, 3, true},  {4, 8, 4, true},   {4, 12, 8, true}, {4, 10, 4, false},
                        {4, 8, 3, false}, {4, 8, 16, false}, {4, 2, 4, false}, {3, 7, 3, false}};
  for (const Case& c : cases) {
    Workload w = tiny();
    w.model.num_layers = 8 * c.p;
    w.training.pipeline_model_parallel_size = c.p;
    w.training.world_size = 2 * c.p;  // dp 1
    w.training.micro_batch_size = 1;
    w.training.global_batch_size = c.m;
    w.training.num_layers_per_virtual_pipeline_stage = 4;  // v = 2
    w.training.overlap_p2p_comm = true;
    w.training.microbatch_group_size_per_vp_stage = c.n;
    const Errors e = finalize_workload(w, "w.json");
    EXPECT_EQ(e.empty(), c.ok) << "p=" << c.p << " m=" << c.m << " N=" << c.n << "\n"
                               << format_errors(e);
  }
}

TEST(Validate, InterleavingNeedsMoreThanTwoStagesWithoutP2pOverlap) {
  Workload w = tiny();
  w.training.pipeline_model_parallel_size = 2;
  w.training.world_size = 16;
  w.training.num_layers_per_virtual_pipeline_stage = 4;
  w.training.global_batch_size = 64;
  const Errors without = finalize_workload(w, "w.json");
  EXPECT_TRUE(names(without, "training.pipeline_model_parallel_size", "> 2"));
  w.training.overlap_p2p_comm = true;
  EXPECT_TRUE(finalize_workload(w, "w.json").empty());
}

TEST(Validate, RecomputeRules) {
  Workload block = tiny();  // 4 layers per stage, no interleaving
  block.training.recompute_granularity = RecomputeGranularity::kFull;
  block.training.recompute_method = RecomputeMethod::kBlock;
  block.training.recompute_num_layers = 4;
  EXPECT_TRUE(finalize_workload(block, "w.json").empty());
  block.training.recompute_num_layers = 5;
  EXPECT_TRUE(names(finalize_workload(block, "w.json"), "training.recompute_num_layers",
                    "between 1 and the layers per model chunk (4)"));

  Workload distributed = tiny();
  distributed.training.distribute_saved_activations = true;
  distributed.training.tensor_model_parallel_size = 1;
  distributed.training.world_size = 16;
  const Errors e = finalize_workload(distributed, "w.json");
  EXPECT_TRUE(names(e, "training.distribute_saved_activations", "tensor_model_parallel_size > 1"));
  EXPECT_TRUE(names(e, "training.distribute_saved_activations", "recompute_granularity \"full\""));
}

TEST(Validate, DtypeMustBeSupportedBySystem) {
  Workload w = tiny();
  auto ascend = load_system_file(kScenarios + "/systems/atlas800-ascend910.json");
  ASSERT_TRUE(ascend.ok());
  w.system = ascend.value();
  EXPECT_TRUE(names(finalize_workload(w, "w.json"), "training.bf16", "no bf16 peak"));
  w.training.params_dtype = DType::kFp16;
  EXPECT_TRUE(finalize_workload(w, "w.json").empty());
}

TEST(Validate, OverflowingProductsAreErrorsNotUndefinedBehaviour) {
  Workload w = tiny();
  w.model.seq_length = std::int64_t{1} << 40;
  w.model.max_position_embeddings = w.model.seq_length;
  const Errors e = finalize_workload(w, "w.json");
  EXPECT_TRUE(names(e, "model.seq_length", "overflow a 64-bit integer")) << format_errors(e);
  // Blamed once, on the largest factor.
  EXPECT_EQ(
      std::count_if(e.begin(), e.end(), [](const Error& x) { return x.key == "model.seq_length"; }),
      1);

  Workload huge = tiny();
  huge.training.tensor_model_parallel_size = std::int64_t{1} << 62;
  huge.training.pipeline_model_parallel_size = 8;
  EXPECT_TRUE(names(finalize_workload(huge, "w.json"), "training.world_size", "is not divisible"));
}

TEST(Validate, UnsetSizesSkipTheirRules) {
  Workload w = tiny();
  w.training.tensor_model_parallel_size = 0;  // invalid input, already reported by the loader
  w.training.sequence_parallel = true;
  const Errors e = finalize_workload(w, "w.json");
  EXPECT_TRUE(e.empty()) << format_errors(e);
}

TEST(Validate, OptimizerOverlapNeedsDistributedOptimizer) {
  Workload w = tiny();
  w.training.overlap_param_gather = true;
  const Errors e = finalize_workload(w, "w.json");
  EXPECT_TRUE(names(e, "training.overlap_param_gather", "use_distributed_optimizer"));
  EXPECT_TRUE(names(e, "training.overlap_param_gather", "overlap_grad_reduce"));
  w.training.use_distributed_optimizer = true;
  w.training.overlap_grad_reduce = true;
  EXPECT_TRUE(finalize_workload(w, "w.json").empty());
}

}  // namespace
}  // namespace stepsim
