// The optimizer step as Megatron-Core's kernels (core/ops/src/optimizer_ops.cpp): bytes and
// launches against closed forms from TE's multi-tensor apply (chunks of 65,536 elements, at
// most 320 per launch, at most 110/64/48/36 tensors per launch for 1..4 tensor lists).

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "model_workloads.hpp"
#include "stepsim/plan/decompose.hpp"
#include "stepsim/cost/roofline_cost_model.hpp"

namespace stepsim {
namespace {

using testing::gpt3_175b;
using testing::llama2_70b;
using testing::make_workload;

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

/// Launches of a multi-tensor kernel with `depth` tensor lists.
std::int64_t mta_launches(std::int64_t elements, std::int64_t tensors, std::int64_t max_tensors) {
  return std::max(ceil_div(ceil_div(elements, 65536), 320), ceil_div(tensors, max_tensors));
}

const MemoryBoundOp* step_kernel(const StagePlan& s, const std::string& name) {
  for (const Op& op : s.step_ops) {
    if (op.name == name) return &std::get<MemoryBoundOp>(op.shape);
  }
  return nullptr;
}

std::vector<std::string> compute_step_names(const StagePlan& s) {
  std::vector<std::string> out;
  for (const Op& op : s.step_ops) {
    if (op.stream == Stream::kCompute && op.name.find("fp8") == std::string::npos &&
        op.name != "zero_grad_buffer") {  // the next step's, GradBuffersAreZeroedEveryStep
      out.push_back(op.name);
    }
  }
  return out;
}

// GPT-3 175B's middle stage (4 layers, LayerNorm and biases: 12 tensors a layer), t 8, dp 2,
// bf16 with the distributed optimizer and Megatron's default clip_grad 1.0.
TEST(OptimizerOps, MixedPrecisionDistributedStepIsMegatronsKernels) {
  Workload w = make_workload(gpt3_175b(), 8, 4, 2, 1, 8);
  w.model.num_layers = 16;
  w.training.use_distributed_optimizer = true;
  const WorkloadPlan plan = decompose(w);
  const StagePlan& s = plan.stages[1];
  EXPECT_EQ(compute_step_names(s),
            (std::vector<std::string>{"grad_norm", "grad_clip", "adam_step", "main_param_copy"}));
  const std::int64_t shard = ceil_div(s.parameters, 2);
  const std::int64_t tensors = ceil_div(4 * 12, 2) + 1;  // the shard's pieces of 48 tensors
  EXPECT_EQ(step_kernel(s, "grad_norm")->bytes, shard * 4);
  EXPECT_EQ(step_kernel(s, "grad_norm")->kernels, mta_launches(shard, tensors, 110) + 1);
  EXPECT_EQ(step_kernel(s, "grad_clip")->bytes, shard * 8);
  EXPECT_EQ(step_kernel(s, "grad_clip")->kernels, mta_launches(shard, tensors, 64));
  EXPECT_EQ(step_kernel(s, "adam_step")->bytes, shard * 28);
  EXPECT_EQ(step_kernel(s, "adam_step")->kernels, mta_launches(shard, tensors, 36));
  EXPECT_GT(step_kernel(s, "adam_step")->kernels, 1) << "a 2.7 GB shard needs many launches";
  EXPECT_EQ(step_kernel(s, "main_param_copy")->bytes, shard * 6);
  EXPECT_EQ(step_kernel(s, "main_param_copy")->kernels, tensors) << "one copy_ per tensor";
  // The parameter all-gather waits for the last kernel.
  for (std::size_t i = 0; i < s.step_ops.size(); ++i) {
    if (s.step_ops[i].name != "dp_param_all_gather") continue;
    ASSERT_EQ(s.step_ops[i].deps.size(), 1u);
    EXPECT_EQ(s.step_ops[static_cast<std::size_t>(s.step_ops[i].deps[0])].name, "main_param_copy");
  }
}

// Megatron's train_step zeroes every chunk's gradient buffer (zero_grad_buffer ->
// _ParamAndGradBuffer.reset: grad_data.zero_()): the stage's parameters in the buffer's dtype
// (fp32 by default with bf16, bf16 with grad_reduce_in_bf16), one kernel per chunk's buffer,
// after the optimizer has read the gradients.
TEST(OptimizerOps, GradBuffersAreZeroedEveryStep) {
  Workload w = make_workload(gpt3_175b(), 8, 4, 2, 1, 8);
  w.model.num_layers = 16;
  w.training.use_distributed_optimizer = true;
  const WorkloadPlan plan = decompose(w);
  const StagePlan& s = plan.stages[1];
  const MemoryBoundOp* zero = step_kernel(s, "zero_grad_buffer");
  ASSERT_NE(zero, nullptr);
  // 4 layers of GPT-3 175B over t 8: 4 x 12 x 12288^2 / 8 weights plus biases and norms.
  EXPECT_GT(s.parameters, 4 * 12 * 12288LL * 12288 / 8);
  EXPECT_EQ(zero->bytes, s.parameters * 4);  // 7.25 GB: the whole fp32 buffer, not a shard
  EXPECT_EQ(zero->kernels, 1);
  for (const Op& op : s.step_ops) {
    if (op.name != "zero_grad_buffer") continue;
    EXPECT_EQ(op.stream, Stream::kCompute);
    ASSERT_EQ(op.deps.size(), 1u);
    EXPECT_EQ(s.step_ops[static_cast<std::size_t>(op.deps[0])].name, "main_param_copy");
  }
  // bf16 buffers (grad_reduce_in_bf16) halve it; two virtual chunks zero two buffers.
  Workload bf16 = w;
  bf16.training.grad_reduce_in_bf16 = true;
  const WorkloadPlan bf16_plan = decompose(bf16);
  const StagePlan& b = bf16_plan.stages[1];
  EXPECT_EQ(step_kernel(b, "zero_grad_buffer")->bytes, b.parameters * 2);
  Workload v2 = make_workload(gpt3_175b(), 8, 4, 2, 1, 8, 2);
  v2.model.num_layers = 16;
  v2.training.num_layers_per_virtual_pipeline_stage = 2;
  const WorkloadPlan v2_plan = decompose(v2);
  const StagePlan& c = v2_plan.stages[1];
  EXPECT_EQ(step_kernel(c, "zero_grad_buffer")->kernels, 2);
  EXPECT_EQ(step_kernel(c, "zero_grad_buffer")->bytes, c.parameters * 4);
}

TEST(OptimizerOps, ClipGradZeroSkipsNormAndClip) {
  Workload w = make_workload(llama2_70b(), 8, 4, 1, 1, 8);
  w.training.clip_grad = 0;
  const StagePlan s = decompose(w).stages[1];
  EXPECT_EQ(compute_step_names(s), (std::vector<std::string>{"adam_step", "main_param_copy"}));
  // Without the distributed optimizer the copy is one multi_tensor_scale over every tensor
  // (RMSNorm, no biases: 6 tensors a layer, 20 layers).
  EXPECT_EQ(step_kernel(s, "main_param_copy")->kernels, mta_launches(s.parameters, 120, 64));
}

TEST(OptimizerOps, PrecisionDecidesCopiesAndUnscale) {
  Workload fp32 = make_workload(llama2_70b(), 8, 4, 1, 1, 8);
  fp32.training.params_dtype = DType::kFp32;
  EXPECT_EQ(compute_step_names(decompose(fp32).stages[1]),
            (std::vector<std::string>{"grad_norm", "grad_clip", "adam_step"}));
  Workload fp16 = fp32;
  fp16.training.params_dtype = DType::kFp16;
  const StagePlan s = decompose(fp16).stages[1];
  EXPECT_EQ(compute_step_names(s),
            (std::vector<std::string>{"grad_unscale", "grad_norm", "grad_clip", "adam_step",
                                      "main_param_copy"}));
  EXPECT_EQ(step_kernel(s, "grad_unscale")->bytes, s.parameters * 8);
  // bf16 gradient buffers: the distributed optimizer's fp32 copy of its shard, per tensor.
  Workload bf16 = make_workload(llama2_70b(), 8, 4, 4, 1, 8);
  bf16.training.use_distributed_optimizer = true;
  bf16.training.grad_reduce_in_bf16 = true;
  const StagePlan b = decompose(bf16).stages[1];
  const MemoryBoundOp* copy = step_kernel(b, "optimizer_grad_copy");
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(copy->bytes, ceil_div(b.parameters, 4) * 6);
  EXPECT_EQ(copy->kernels, ceil_div(120, 4) + 1);
}

const CollectiveOp* grad_stats_op(const StagePlan& s, const std::string& name) {
  for (const Op& op : s.step_ops) {
    if (op.name == name) return &std::get<CollectiveOp>(op.shape);
  }
  return nullptr;
}

// clip_grads.py get_grad_norm_fp32: the squared norm (one fp32) summed over the optimizer's
// grad_stats_parallel_group between the norm kernel and the clip; fp16's found-inf flag
// likewise after the unscale. The group: the world with the distributed optimizer, the
// model-parallel group (tp-pp) otherwise; one rank: no all-reduce.
TEST(OptimizerOps, GradStatsAllReduceOverTheOptimizersGroup) {
  // t 8, p 4, dp 2 on 8-GPU nodes: 64 ranks on 8 nodes.
  Workload w = make_workload(gpt3_175b(), 8, 4, 2, 1, 8);
  w.model.num_layers = 16;
  w.training.use_distributed_optimizer = true;
  for (const StagePlan& s : decompose(w).stages) {
    const CollectiveOp* norm = grad_stats_op(s, "grad_norm_all_reduce");
    ASSERT_NE(norm, nullptr) << "stage " << s.stage;
    EXPECT_EQ(norm->group, CommGroup::kGradStats);
    EXPECT_EQ(norm->kind, CollectiveKind::kAllReduce);
    EXPECT_EQ(norm->bytes, 4);
    EXPECT_EQ(norm->group_size, 64);
    EXPECT_EQ(norm->nodes_spanned, 8);
    // grad_norm -> all-reduce -> grad_clip.
    for (std::size_t i = 0; i < s.step_ops.size(); ++i) {
      const Op& op = s.step_ops[i];
      if (op.name == "grad_norm_all_reduce") {
        ASSERT_EQ(op.deps.size(), 1u);
        EXPECT_EQ(s.step_ops[static_cast<std::size_t>(op.deps[0])].name, "grad_norm");
      }
      if (op.name == "grad_clip") {
        ASSERT_EQ(op.deps.size(), 1u);
        EXPECT_EQ(s.step_ops[static_cast<std::size_t>(op.deps[0])].name, "grad_norm_all_reduce");
      }
    }
  }
  // Without it: tp-pp, tp fastest then pp at a stride of t * dp = 16: ranks 0-7, 16-23,
  // 32-39, 48-55: one node per stage, 4 nodes.
  w.training.use_distributed_optimizer = false;
  const StagePlan s = decompose(w).stages[2];
  ASSERT_NE(grad_stats_op(s, "grad_norm_all_reduce"), nullptr);
  EXPECT_EQ(grad_stats_op(s, "grad_norm_all_reduce")->group_size, 32);
  EXPECT_EQ(grad_stats_op(s, "grad_norm_all_reduce")->nodes_spanned, 4);
  EXPECT_EQ(grad_stats_op(s, "found_inf_all_reduce"), nullptr) << "bf16 has no grad scaler";
  w.training.params_dtype = DType::kFp16;
  const StagePlan h = decompose(w).stages[2];
  ASSERT_NE(grad_stats_op(h, "found_inf_all_reduce"), nullptr);
  EXPECT_EQ(grad_stats_op(h, "found_inf_all_reduce")->group_size, 32);
  // One rank in the group: nothing to reduce.
  Workload one = make_workload(llama2_70b(), 1, 1, 4, 1, 8);
  one.model.num_layers = 2;
  EXPECT_EQ(grad_stats_op(decompose(one).stages[0], "grad_norm_all_reduce"), nullptr);
  one.training.use_distributed_optimizer = true;
  EXPECT_EQ(grad_stats_op(decompose(one).stages[0], "grad_norm_all_reduce")->group_size, 4);
}

// The cost models price an op of several launches as that many launches of its share: each
// pays the kernel's fixed cost.
TEST(OptimizerOps, LaunchesArePricedOneByOne) {
  SystemConfig sys = testing::dgx_like_system();
  sys.efficiency.kernel_launch_s = 5e-6;
  const RooflineCostModel model(sys);
  const double one = model.shape_s(MemoryBoundOp{.bytes = 4'000'000});
  const double four = model.shape_s(MemoryBoundOp{.bytes = 4'000'000, .kernels = 4});
  EXPECT_DOUBLE_EQ(four, 4 * model.memory_bound_s(MemoryBoundOp{.bytes = 1'000'000}));
  EXPECT_NEAR(four - one, 3 * 5e-6, 1e-12);
}

}  // namespace
}  // namespace stepsim
