// FP8 training (Transformer Engine, delayed scaling, Hopper): which GEMMs run in FP8, the bytes
// of the quantize kernels around them, the FP8 all-gathers, the amax reductions and the
// weight casts, each against a closed form written out here.

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "model_workloads.hpp"
#include "stepsim/plan/decompose.hpp"
#include "stepsim/memory/memory_model.hpp"
#include "stepsim/cost/roofline_cost_model.hpp"
#include "stepsim/check/check.hpp"

namespace stepsim {
namespace {

using testing::gpt3_175b;
using testing::llama2_70b;
using testing::make_workload;

const Op* find_op(const std::vector<Op>& ops, const std::string& name, std::int32_t layer) {
  for (const Op& op : ops) {
    if (op.name == name && op.layer == layer) return &op;
  }
  return nullptr;
}

std::int64_t bytes_of_op(const std::vector<Op>& ops, const std::string& name, std::int32_t layer) {
  const Op* op = find_op(ops, name, layer);
  EXPECT_NE(op, nullptr) << name;
  return op == nullptr ? -1 : std::get<MemoryBoundOp>(op->shape).bytes;
}

Workload fp8_workload(const ModelConfig& m, std::int64_t t, bool sp, std::int64_t dp = 1) {
  Workload w = make_workload(m, t, 2, dp, 1, 4);
  w.training.sequence_parallel = sp;
  w.training.fp8 = Fp8Format::kHybrid;
  w.system.peak_flops_fp8 = 2 * w.system.peak_flops_bf16;
  return w;
}

TEST(Fp8, LinearGemmsRunInFp8AndTheRestStaysBf16) {
  const WorkloadPlan plan = decompose(fp8_workload(gpt3_175b(), 8, true));
  const ChunkPlan& c = plan.stages[1].chunks[0];
  for (const std::string name : {"qkv_gemm", "proj_gemm", "fc1_gemm", "fc2_gemm"}) {
    const Op* op = find_op(c.forward, name, 50);
    ASSERT_NE(op, nullptr) << name;
    EXPECT_EQ(std::get<GemmOp>(op->shape).dtype, DType::kFp8) << name;
    // Delayed scaling's fprop: cuBLASLt's fast accumulation (TE's _2X_ACC_FPROP false).
    EXPECT_TRUE(std::get<GemmOp>(op->shape).fast_accum) << name;
  }
  for (const std::string name : {"qkv_dgrad", "qkv_wgrad", "proj_dgrad", "proj_wgrad",
                                 "fc1_dgrad", "fc1_wgrad", "fc2_dgrad", "fc2_wgrad"}) {
    const Op* op = find_op(c.backward, name, 50);
    ASSERT_NE(op, nullptr) << name;
    EXPECT_EQ(std::get<GemmOp>(op->shape).dtype, DType::kFp8) << name;
    EXPECT_FALSE(std::get<GemmOp>(op->shape).fast_accum) << name << ": split accumulation";
  }
  EXPECT_EQ(std::get<GemmOp>(find_op(c.forward, "attn_qk", 50)->shape).dtype, DType::kBf16);
  EXPECT_EQ(std::get<GemmOp>(find_op(c.forward, "logits_gemm", -1)->shape).dtype, DType::kBf16);
  EXPECT_EQ(std::get<GemmOp>(find_op(c.backward, "logits_wgrad", -1)->shape).dtype,
            DType::kBf16);
}

TEST(Fp8, GemmPricedAtTheFp8PeakWithOneByteOperandsAndBf16Output) {
  SystemConfig s = testing::dgx_like_system();
  s.peak_flops_fp8 = 1979e12;
  s.efficiency = {0.8, 0.0, 0.9, 1e-6, 1.0};
  const RooflineCostModel roofline(s);
  // Compute bound: 2*m*n*k FLOPs at 80% of the FP8 peak.
  const GemmOp big{8192, 4608, 12288, 1, DType::kFp8};
  EXPECT_DOUBLE_EQ(roofline.gemm_s(big),
                   1e-6 + 2.0 * 8192 * 4608 * 12288 / (1979e12 * 0.8));
  // The same GEMM in bf16 runs at the bf16 peak.
  const GemmOp big16{8192, 4608, 12288, 1, DType::kBf16};
  EXPECT_DOUBLE_EQ(roofline.gemm_s(big16), 1e-6 + 2.0 * 8192 * 4608 * 12288 / (312e12 * 0.8));
  // Memory bound (k = 16): A and B at 1 byte, C at 2 bytes, at 90% of HBM bandwidth.
  const GemmOp thin{65536, 65536, 16, 1, DType::kFp8};
  const double bytes = 65536.0 * 16 + 16.0 * 65536 + 2.0 * 65536 * 65536;
  EXPECT_DOUBLE_EQ(roofline.gemm_s(thin), 1e-6 + bytes / (2.0e12 * 0.9));
}

TEST(Fp8, CastKernelBytesPerLinearWithSequenceParallel) {
  // GPT-3 175B, t = 8, SP: tokens T = 2048, T/t = 256, h = 12288, attention width 1536,
  // FFN width 6144 per rank, bf16 (e = 2).
  const ModelConfig m = gpt3_175b();
  const WorkloadPlan plan = decompose(fp8_workload(m, 8, true));
  const ChunkPlan& c = plan.stages[0].chunks[0];
  const std::int64_t T = 2048, Ts = 256, h = 12288, attn = 1536, ffn = 6144;
  // The norms write FP8 (read 2, write 1) plus their fp32 statistics.
  EXPECT_EQ(bytes_of_op(c.forward, "ln1", 3), Ts * h * 3 + Ts * 8);
  EXPECT_EQ(bytes_of_op(c.forward, "ln2", 3), Ts * h * 3 + Ts * 8);
  // Their FP8 outputs are all-gathered in FP8: 1 byte per element on the wire.
  std::vector<std::int64_t> gathers;
  for (const Op& op : c.forward) {
    const auto* coll = std::get_if<CollectiveOp>(&op.shape);
    if (op.layer == 3 && coll != nullptr && coll->kind == CollectiveKind::kAllGather) {
      gathers.push_back(coll->bytes);
    }
  }
  EXPECT_EQ(gathers, (std::vector<std::int64_t>{T * h, T * h}));
  // Row-parallel inputs: cast-transpose, read 2 write 1 + 1.
  EXPECT_EQ(bytes_of_op(c.forward, "proj_input_cast_transpose", 3), T * attn * 4);
  EXPECT_EQ(bytes_of_op(c.forward, "fc2_input_cast_transpose", 3), T * ffn * 4);
  EXPECT_EQ(find_op(c.forward, "qkv_input_transpose", 3), nullptr);  // gathered row-wise
  // Backward: column-parallel grad outputs cast-transposed; their saved FP8 inputs
  // re-gathered and transposed (read 1, write 1).
  EXPECT_EQ(bytes_of_op(c.backward, "qkv_grad_cast_transpose", 3), T * (3 * attn) * 4);
  EXPECT_EQ(bytes_of_op(c.backward, "fc1_grad_cast_transpose", 3), T * ffn * 4);
  EXPECT_EQ(bytes_of_op(c.backward, "qkv_input_transpose_bwd", 3), T * h * 2);
  EXPECT_EQ(bytes_of_op(c.backward, "fc1_input_transpose_bwd", 3), T * h * 2);
  // Row-parallel grad outputs: the shard cast (read 2, write 1), FP8 gather, transpose; GPT-3
  // has biases, summed from the 16-bit shard.
  EXPECT_EQ(bytes_of_op(c.backward, "fc2_grad_cast", 3), Ts * h * 3);
  EXPECT_EQ(bytes_of_op(c.backward, "fc2_grad_transpose", 3), T * h * 2);
  EXPECT_EQ(bytes_of_op(c.backward, "fc2_bias_bwd", 3), Ts * h * 2);
  EXPECT_EQ(bytes_of_op(c.backward, "proj_grad_cast", 3), Ts * h * 3);
  std::int64_t fp8_gathered = 0;
  std::int64_t scattered = 0;
  for (const Op& op : c.backward) {
    const auto* coll = std::get_if<CollectiveOp>(&op.shape);
    if (op.layer != 3 || coll == nullptr) continue;
    if (coll->kind == CollectiveKind::kAllGather) fp8_gathered += coll->bytes;
    if (coll->kind == CollectiveKind::kReduceScatter) scattered += coll->bytes;
  }
  EXPECT_EQ(fp8_gathered, 4 * T * h);  // two grad outputs and two inputs, 1 byte each
  EXPECT_EQ(scattered, 2 * T * h * 2);  // the input gradients stay bf16
}

TEST(Fp8, CastKernelBytesPerLinearWithoutSequenceParallel) {
  // Llama 2 70B, t = 4, no SP: no gathers; the norm's FP8 output is transposed in forward.
  const WorkloadPlan plan = decompose(fp8_workload(llama2_70b(), 4, false));
  const ChunkPlan& c = plan.stages[0].chunks[0];
  const std::int64_t T = 4096, h = 8192, qkv = (64 + 16) * 128 / 4, ffn = 28672 / 4;
  EXPECT_EQ(bytes_of_op(c.forward, "ln1", 0), T * h * 3 + T * 4);  // RMSNorm: rstd only
  EXPECT_EQ(bytes_of_op(c.forward, "qkv_input_transpose", 0), T * h * 2);
  EXPECT_EQ(bytes_of_op(c.forward, "fc1_input_transpose", 0), T * h * 2);
  EXPECT_EQ(bytes_of_op(c.backward, "qkv_grad_cast_transpose", 0), T * qkv * 4);
  EXPECT_EQ(bytes_of_op(c.backward, "fc1_grad_cast_transpose", 0), T * 2 * ffn * 4);
  EXPECT_EQ(bytes_of_op(c.backward, "fc2_grad_cast_transpose", 0), T * h * 4);
  EXPECT_EQ(find_op(c.backward, "fc2_grad_cast", 0), nullptr);
  EXPECT_EQ(find_op(c.backward, "qkv_input_transpose_bwd", 0), nullptr);
}

TEST(Fp8, OneAmaxAllReducePerChunkForwardAndBackward) {
  Workload w = fp8_workload(gpt3_175b(), 8, true, 4);
  w.training.fp8_amax_history_len = 1024;
  const WorkloadPlan plan = decompose(w);
  const ChunkPlan& c = plan.stages[0].chunks[0];  // 48 layers
  const auto amax = [](const std::vector<Op>& ops, const std::string& name) {
    std::vector<CollectiveOp> out;
    for (const Op& op : ops) {
      if (op.name == name) out.push_back(std::get<CollectiveOp>(op.shape));
    }
    return out;
  };
  const auto fwd = amax(c.forward, "fp8_amax_all_reduce");
  ASSERT_EQ(fwd.size(), 1U);
  EXPECT_EQ(fwd[0].group, CommGroup::kTensorData);
  EXPECT_EQ(fwd[0].group_size, 32);  // t * dp
  EXPECT_EQ(fwd[0].bytes, 48 * 12 * 4);
  const auto bwd = amax(c.backward, "fp8_amax_all_reduce_bwd");
  ASSERT_EQ(bwd.size(), 1U);
  EXPECT_EQ(bwd[0].bytes, 48 * 8 * 4);
  // The update reads the amaxes, reads and writes every history, reads the scale and writes
  // scale and scale_inv.
  EXPECT_EQ(bytes_of_op(c.forward, "fp8_amax_update", -1), 48 * 12 * 4 * (1 + 2 * 1024 + 3));
}

TEST(Fp8, TpOnlyAmaxReductionStaysInsideTheTensorAndContextGroup) {
  // Megatron's --tp-only-amax-red: get_amax_reduction_group(with_context_parallel=True,
  // tp_only_amax_red=True) is the tensor x context group, not tensor x context x data.
  Workload w = fp8_workload(gpt3_175b(), 8, true, 4);
  w.training.tp_only_amax_red = true;
  const auto amax_of = [](const Workload& wl) {
    const WorkloadPlan plan = decompose(wl);
    std::vector<CollectiveOp> out;
    for (const auto* list :
         {&plan.stages[0].chunks[0].forward, &plan.stages[0].chunks[0].backward}) {
      for (const Op& op : *list) {
        if (op.name.rfind("fp8_amax_all_reduce", 0) == 0)
          out.push_back(std::get<CollectiveOp>(op.shape));
      }
    }
    return out;
  };
  auto reduced = amax_of(w);
  ASSERT_EQ(reduced.size(), 2U);  // forward and backward
  for (const CollectiveOp& c : reduced) {
    EXPECT_EQ(c.group, CommGroup::kTensorContext);
    EXPECT_EQ(c.group_size, 8);  // t
    EXPECT_EQ(c.nodes_spanned, 1);
  }
  // With context parallelism 2 the group is t * cp = 16 ranks, two nodes of 8.
  w.training.context_parallel_size = 2;
  w.training.world_size = 8 * 2 * 2 * 4;
  reduced = amax_of(w);
  ASSERT_EQ(reduced.size(), 2U);
  EXPECT_EQ(reduced[0].group_size, 16);
  EXPECT_EQ(reduced[0].nodes_spanned, 2);
  // Without the flag: every data-parallel rank too (t * cp * dp).
  w.training.tp_only_amax_red = false;
  reduced = amax_of(w);
  ASSERT_EQ(reduced.size(), 2U);
  EXPECT_EQ(reduced[0].group, CommGroup::kTensorData);
  EXPECT_EQ(reduced[0].group_size, 64);
  // Current scaling reduces its amaxes over TP whatever the flag (TE's own tp_group).
  w.training.tp_only_amax_red = true;
  w.training.fp8_recipe = Fp8Recipe::kTensorwise;
  for (const CollectiveOp& c : amax_of(w)) EXPECT_EQ(c.group, CommGroup::kTensor);
}

TEST(Fp8, WeightCastsOncePerStepPerLinear) {
  const WorkloadPlan plan = decompose(fp8_workload(gpt3_175b(), 8, true));
  const StagePlan& s = plan.stages[0];
  std::int64_t casts = 0;
  std::int64_t bytes = 0;
  for (const Op& op : s.step_ops) {
    if (op.name != "fp8_weight_cast") continue;
    ++casts;
    bytes += std::get<MemoryBoundOp>(op.shape).bytes;
    EXPECT_EQ(op.stream, Stream::kCompute);
  }
  EXPECT_EQ(casts, 48 * 4);
  // Per layer and rank: 12 h^2 / t weights of the four linears, read 2 bytes, write 1 + 1.
  EXPECT_EQ(bytes, 48 * 12 * 12288LL * 12288 / 8 * 4);
  // No FP8 anywhere without fp8.
  Workload bf16 = fp8_workload(gpt3_175b(), 8, true);
  bf16.training.fp8 = Fp8Format::kNone;
  // (the plan held by name: a range-for over a temporary's member would dangle in C++20)
  const WorkloadPlan bf16_plan = decompose(bf16);
  for (const Op& op : bf16_plan.stages[0].step_ops) EXPECT_NE(op.name, "fp8_weight_cast");
}

TEST(Fp8, MemoryHoldsFp8WeightCopiesAndFp8LinearInputs) {
  // GPT-3 175B, t = 8, SP, no recompute, unfused attention: the reference's
  // s*b*h/t*(34 + 5as/h) per layer in bf16. In FP8 the inputs of QKV and FC1 (2 x 2 -> 2 x 1
  // byte of s*b*h/t), of the projection (2 -> 1 of s*b*h/t) and of FC2 (2 -> 1 of 4*s*b*h/t)
  // are saved in FP8: s*b*h/t*(27 + 5as/h).
  const double s = 2048, h = 12288, a = 96, t = 8;
  Workload w = fp8_workload(gpt3_175b(), 8, true);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(w), s * h / t * (27 + 5 * a * s / h));
  w.training.fp8 = Fp8Format::kNone;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(w), s * h / t * (34 + 5 * a * s / h));
  // Weights: bf16 parameters plus an FP8 copy and an FP8 transpose of every linear weight of
  // the stage's 48 layers (12 h^2 / t elements per layer).
  w.training.fp8 = Fp8Format::kHybrid;
  const std::int64_t elements = 48 * 12 * 12288LL * 12288 / 8;
  EXPECT_EQ(fp8_weight_elements(w, 0), elements);
  const WorkloadPlan plan = decompose(w);
  const StagePlan& stage = plan.stages[0];
  EXPECT_EQ(stage.static_bytes, static_memory(w.training, stage.parameters, elements).total());
  EXPECT_EQ(static_memory(w.training, 1000, 600).weights_bytes, 1000 * 2 + 600 * 2);
}

TEST(Fp8, ParamGatherSendsOneByteWeightsAndKeepsNo16BitCopy) {
  // GPT-3 175B, t = 8, p = 2, dp = 4, distributed optimizer: 48 layers per stage.
  Workload w = fp8_workload(gpt3_175b(), 8, true, 4);
  w.training.use_distributed_optimizer = true;
  const std::int64_t fp8 = 48 * 12 * 12288LL * 12288 / 8;
  const auto step_op = [](const StagePlan& s, const std::string& name) -> const Op* {
    for (const Op& op : s.step_ops) {
      if (op.name == name) return &op;
    }
    return nullptr;
  };
  const WorkloadPlan bf16_gather = decompose(w);
  w.training.fp8_param_gather = true;
  const WorkloadPlan plan = decompose(w);
  const StagePlan& s = plan.stages[0];
  ASSERT_EQ(s.parameters, bf16_gather.stages[0].parameters);
  // The all-gather: the linears' weights in 1 byte, everything else in 2.
  const Op* gather = step_op(s, "dp_param_all_gather");
  ASSERT_NE(gather, nullptr);
  EXPECT_EQ(std::get<CollectiveOp>(gather->shape).bytes, (s.parameters - fp8) * 2 + fp8);
  EXPECT_EQ(std::get<CollectiveOp>(step_op(bf16_gather.stages[0], "dp_param_all_gather")->shape)
                .bytes,
            s.parameters * 2);
  // The weight amaxes reduced over DP, one per weight.
  const Op* amax = step_op(s, "fp8_param_amax_all_reduce");
  ASSERT_NE(amax, nullptr);
  EXPECT_EQ(std::get<CollectiveOp>(amax->shape).bytes, 48 * 4 * 4);
  EXPECT_EQ(std::get<CollectiveOp>(amax->shape).group_size, 4);
  // quantize_param_shard (TE 2.2+, delayed scaling): the FP8 shard is cast straight from the
  // fp32 master (read 4, write 1) instead of being copied into 16 bits (read 4, write 2); the
  // casts' amaxes are packed, MAX-reduced over DP, and the scales updated; the all-gather
  // waits for that.
  const std::int64_t shard = (fp8 + 3) / 4;
  EXPECT_EQ(
      std::get<MemoryBoundOp>(step_op(bf16_gather.stages[0], "main_param_copy")->shape).bytes -
          std::get<MemoryBoundOp>(step_op(s, "main_param_copy")->shape).bytes,
      shard * 6);
  const Op* cast = step_op(s, "fp8_param_cast");
  ASSERT_NE(cast, nullptr);
  EXPECT_EQ(std::get<MemoryBoundOp>(cast->shape).bytes, shard * 5);
  EXPECT_EQ(std::get<MemoryBoundOp>(cast->shape).kernels, 192 / 4 + 1) << "one per shard";
  std::vector<std::string> names;
  for (const Op& op : s.step_ops) {
    if (op.name.starts_with("fp8_param") || op.name == "main_param_copy" ||
        op.name == "dp_param_all_gather")
      names.push_back(op.name);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"main_param_copy", "fp8_param_cast",
                                             "fp8_param_amax_pack", "fp8_param_amax_all_reduce",
                                             "fp8_param_scale_update", "dp_param_all_gather"}));
  const auto index_of = [&](const std::string& name) {
    return static_cast<std::int32_t>(step_op(s, name) - s.step_ops.data());
  };
  EXPECT_EQ(amax->deps, std::vector<std::int32_t>{index_of("fp8_param_amax_pack")});
  EXPECT_EQ(step_op(s, "fp8_param_scale_update")->deps,
            std::vector<std::int32_t>{index_of("fp8_param_amax_all_reduce")});
  EXPECT_EQ(gather->deps, std::vector<std::int32_t>{index_of("fp8_param_scale_update")});
  // Only transposes of the gathered FP8 weights (read 1, write 1), no casts.
  std::int64_t transposed = 0;
  for (const Op& op : s.step_ops) {
    EXPECT_NE(op.name, "fp8_weight_cast");
    if (op.name == "fp8_weight_transpose") transposed += std::get<MemoryBoundOp>(op.shape).bytes;
  }
  EXPECT_EQ(transposed, fp8 * 2);
  // Forward amaxes: input and output per linear (weights are reduced by the optimizer).
  for (const Op& op : s.chunks[0].forward) {
    if (op.name == "fp8_amax_all_reduce") {
      EXPECT_EQ(std::get<CollectiveOp>(op.shape).bytes, 48 * 8 * 4);
    }
  }
  // Memory: FP8 data + transpose of the linears, 16-bit for the rest.
  EXPECT_EQ(static_memory(w.training, 1000, 600).weights_bytes, 400 * 2 + 600 * 2);
}

TEST(Fp8, TensorwiseScalingReadsEachTensorForItsAmaxAndReducesItOverTp) {
  // GPT-3 175B, t = 8, SP, per-tensor current scaling.
  Workload w = fp8_workload(gpt3_175b(), 8, true, 4);
  w.training.fp8_recipe = Fp8Recipe::kTensorwise;
  const WorkloadPlan plan = decompose(w);
  const ChunkPlan& c = plan.stages[0].chunks[0];
  const std::int64_t T = 2048, Ts = 256, h = 12288, attn = 1536;
  // The norm writes bf16 (and the amax); the shard is cast, then gathered in FP8.
  EXPECT_EQ(bytes_of_op(c.forward, "ln1", 3), Ts * h * 4 + Ts * 8);
  EXPECT_EQ(bytes_of_op(c.forward, "qkv_input_cast", 3), Ts * h * 3);
  // Row inputs: an amax read, then the cast-transpose.
  EXPECT_EQ(bytes_of_op(c.forward, "proj_amax", 3), T * attn * 2);
  EXPECT_EQ(bytes_of_op(c.forward, "proj_input_cast_transpose", 3), T * attn * 4);
  EXPECT_EQ(bytes_of_op(c.backward, "qkv_grad_amax", 3), T * 3 * attn * 2);
  EXPECT_EQ(bytes_of_op(c.backward, "fc2_grad_amax", 3), Ts * h * 2);
  // 4-byte amax all-reduces over TP for the two SP column inputs (forward) and the two SP
  // row grad outputs (backward); no per-chunk reduction, no amax history.
  std::int64_t tp_amax = 0;
  for (const std::vector<Op>* list : {&c.forward, &c.backward}) {
    for (const Op& op : *list) {
      EXPECT_NE(op.name, "fp8_amax_update");
      EXPECT_NE(op.name, "fp8_amax_update_bwd");
      if (op.name == "fp8_amax_all_reduce" && op.layer == 3) {
        const auto& coll = std::get<CollectiveOp>(op.shape);
        EXPECT_EQ(coll.group, CommGroup::kTensor);
        EXPECT_EQ(coll.group_size, 8);
        EXPECT_EQ(coll.bytes, 4);
        ++tp_amax;
      }
    }
  }
  EXPECT_EQ(tp_amax, 4);
  // Weight casts read the weight once more for the amax.
  std::int64_t bytes = 0;
  for (const Op& op : plan.stages[0].step_ops) {
    if (op.name == "fp8_weight_cast") bytes += std::get<MemoryBoundOp>(op.shape).bytes;
  }
  EXPECT_EQ(bytes, 48 * 12 * 12288LL * 12288 / 8 * 6);
}

TEST(Fp8, TensorwiseParamGatherTakesTheShardsAmaxBeforeCastingIt) {
  // GPT-3 175B, t = 8, p = 2, dp = 4, distributed optimizer, per-tensor current scaling with
  // FP8 parameters: Transformer Engine's _cast_master_weights_to_fp8_current_scaling.
  Workload w = fp8_workload(gpt3_175b(), 8, true, 4);
  w.training.use_distributed_optimizer = true;
  w.training.fp8_recipe = Fp8Recipe::kTensorwise;
  w.training.fp8_param_gather = true;
  EXPECT_TRUE(validate_workload(w, "s.json").empty());
  const WorkloadPlan plan = decompose(w);
  const StagePlan& s = plan.stages[0];
  const std::int64_t fp8 = 48 * 12 * 12288LL * 12288 / 8;
  const std::int64_t shard = (fp8 + 3) / 4;
  const std::int64_t tensors = 48 * 4;  // qkv, proj, fc1, fc2 of each layer
  std::vector<std::string> names;
  std::vector<const Op*> ops;
  for (const Op& op : s.step_ops) {
    if (op.name.starts_with("fp8_param") || op.name == "dp_param_all_gather") {
      names.push_back(op.name);
      ops.push_back(&op);
    }
  }
  ASSERT_EQ(names,
            (std::vector<std::string>{"fp8_param_amax", "fp8_param_amax_all_reduce",
                                      "fp8_param_scale", "fp8_param_cast", "dp_param_all_gather"}));
  const auto index = [&](std::size_t i) {
    return static_cast<std::int32_t>(ops[i] - s.step_ops.data());
  };
  // tex.compute_amax reads the fp32 shard (and the zeroed packed amaxes are one more kernel).
  EXPECT_EQ(std::get<MemoryBoundOp>(ops[0]->shape).bytes, shard * 4 + tensors * 4);
  EXPECT_EQ(std::get<MemoryBoundOp>(ops[0]->shape).kernels, tensors / 4 + 1 + 1);
  // One float per weight, MAX-reduced over the 4 data-parallel ranks, after the amaxes.
  const auto& reduce = std::get<CollectiveOp>(ops[1]->shape);
  EXPECT_EQ(reduce.bytes, tensors * 4);
  EXPECT_EQ(reduce.group_size, 4);
  EXPECT_EQ(ops[1]->deps, std::vector<std::int32_t>{index(0)});
  // The scales from the reduced amaxes (amax, scale, scale_inv per weight), then the cast.
  EXPECT_EQ(std::get<MemoryBoundOp>(ops[2]->shape).bytes, tensors * 12);
  EXPECT_EQ(ops[2]->deps, std::vector<std::int32_t>{index(1)});
  EXPECT_EQ(std::get<MemoryBoundOp>(ops[3]->shape).bytes, shard * 5);
  EXPECT_EQ(ops[4]->deps, std::vector<std::int32_t>{index(3)});
  // The all-gather carries the FP8 weights in 1 byte, as with delayed scaling.
  EXPECT_EQ(std::get<CollectiveOp>(ops[4]->shape).bytes, (s.parameters - fp8) * 2 + fp8);
  // Weights arrive FP8: transposes only, no per-step casts with their amax reads.
  for (const Op& op : s.step_ops) EXPECT_NE(op.name, "fp8_weight_cast");
}

TEST(Fp8, ValidationNamesTheSystemAndUnmodelledRecipes) {
  Workload w = fp8_workload(gpt3_175b(), 8, true);
  w.system.peak_flops_fp8 = 0;
  w.system.name = "dgx-a100";
  Errors errors = validate_workload(w, "s.json");
  ASSERT_EQ(errors.size(), 1U);
  EXPECT_EQ(errors[0].key, "training.fp8");
  EXPECT_NE(errors[0].message.find("dgx-a100"), std::string::npos);
  w.system.peak_flops_fp8 = 1979e12;
  // Block scaling is modelled (fp8_blockwise_test.cpp), except with userbuffers, which
  // Transformer Engine refuses for a block quantizer.
  w.training.fp8_recipe = Fp8Recipe::kBlockwise;
  EXPECT_TRUE(validate_workload(w, "s.json").empty());
  // MXFP8 names Transformer Engine's rule: Blackwell (compute capability 10.0+) only.
  w.training.fp8_recipe = Fp8Recipe::kMxfp8;
  errors = validate_workload(w, "s.json");
  ASSERT_EQ(errors.size(), 1U);
  EXPECT_EQ(errors[0].key, "training.fp8_recipe");
  EXPECT_NE(errors[0].message.find("Device compute capability 10.0 or higher required for MXFP8"),
            std::string::npos)
      << errors[0].message;
  w.training.fp8_recipe = Fp8Recipe::kDelayed;
  w.training.fp8_param_gather = true;
  errors = validate_workload(w, "s.json");
  ASSERT_EQ(errors.size(), 1U);
  EXPECT_EQ(errors[0].key, "training.fp8_param_gather");
  w.training.use_distributed_optimizer = true;
  EXPECT_TRUE(validate_workload(w, "s.json").empty());
  w.training.fp8 = Fp8Format::kNone;
  errors = validate_workload(w, "s.json");
  ASSERT_EQ(errors.size(), 1U);
  EXPECT_EQ(errors[0].key, "training.fp8_param_gather");
}

}  // namespace
}  // namespace stepsim
