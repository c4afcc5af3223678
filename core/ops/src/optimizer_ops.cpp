// The optimizer step as its kernels (see optimizer_ops.hpp for the sources).

#include "stepsim/ops/optimizer_ops.hpp"

#include <algorithm>
#include <array>

#include "stepsim/base/assert.hpp"
#include "stepsim/ops/muon_ops.hpp"

namespace stepsim::detail {

std::int64_t multi_tensor_max_tensors(std::int32_t depth) {
  constexpr std::array<std::int64_t, 6> kMaxTensors = {110, 64, 48, 36, 30, 24};
  STEPSIM_ASSERT(depth >= 1 && depth <= 6);
  return kMaxTensors[static_cast<std::size_t>(depth - 1)];
}

std::int64_t multi_tensor_launches(std::int64_t elements, std::int64_t tensors,
                                   std::int32_t depth) {
  if (elements <= 0) return 0;
  const std::int64_t chunks = ceil_div(elements, kMultiTensorChunk);
  return std::max(ceil_div(chunks, kMultiTensorMaxBlocks),
                  ceil_div(std::max<std::int64_t>(tensors, 1), multi_tensor_max_tensors(depth)));
}

Op step_compute_op(const char* name, std::int64_t bytes, std::int64_t kernels) {
  Op op;
  op.name = name;
  op.phase = Phase::kStep;
  op.stream = Stream::kCompute;
  op.shape = MemoryBoundOp{.bytes = bytes, .kernels = std::max<std::int64_t>(kernels, 1)};
  return op;
}

namespace {

/// A norm's parameters: weight, and bias for LayerNorm (not RMSNorm).
std::int64_t norm_tensors(const Dims& x) { return x.layernorm ? 2 : 1; }
/// A linear's parameters: weight, and bias with add_bias_linear.
std::int64_t linear_tensors(const Dims& x) { return x.bias ? 2 : 1; }

/// Self-attention with its input norm: TELayerNormColumnParallelLinear (norm + QKV) and the
/// output projection; q/k layernorms with qk_layernorm. Multi-latent attention (MLASelfAttention):
/// the input norm, the Q down projection, its fused norm and the Q up projection (or one Q
/// projection without q_lora_rank), the KV down projection, its fused norm and the KV up
/// projection, the output projection.
std::int64_t attention_tensors(const Dims& x) {
  const std::int64_t lin = linear_tensors(x);
  const std::int64_t norm = norm_tensors(x);
  if (x.mla) {
    const std::int64_t q = x.q_lora > 0 ? 2 * lin + norm : lin;
    return norm + q + 2 * lin + norm + lin;
  }
  return norm + 2 * lin + (x.qk_norm ? 2 * norm : 0);
}

}  // namespace

ParameterTensors chunk_parameter_tensors(const Dims& x, const ChunkPlan& chunk, bool last_stage) {
  ParameterTensors out;
  const std::int64_t lin = linear_tensors(x);
  const std::int64_t norm = norm_tensors(x);
  const auto add_layer = [&](std::int32_t l) {
    out.dense += attention_tensors(x);
    if (x.is_moe(l)) {
      // pre_mlp_layernorm, the router's weight, the shared experts' fc1 and fc2; each local
      // expert's fc1 and fc2 (TE's GroupedLinear holds weight0..weightN-1, SequentialMLP one
      // MLP per expert: the same tensors).
      out.dense += norm + 1 + (x.shared_f > 0 ? 2 * lin : 0);
      out.expert += x.local_experts() * 2 * lin;
    } else {
      out.dense += norm + 2 * lin;  // TELayerNormColumnParallelLinear (norm + fc1), fc2
    }
  };
  for (std::int32_t l = chunk.first_layer; l < chunk.first_layer + chunk.num_layers; ++l) {
    add_layer(l);
  }
  if (chunk.has_loss && x.mtp > 0) {
    // Each multi-token prediction depth: enorm, hnorm, eh_proj's weight, its layer,
    // final_layernorm; the word embedding the stage builds for them when it holds none.
    for (std::int64_t k = 0; k < x.mtp; ++k) {
      out.dense += 3 * norm + 1;
      add_layer(static_cast<std::int32_t>(x.layers + k));
    }
    if (!x.tied && x.p > 1) out.dense += 1;
  }
  // The word embeddings (and learned position embeddings); the final norm and the output
  // layer (untied, or the last stage's copy of the tied embeddings when p > 1).
  if (chunk.has_embedding) out.dense += 1 + (x.learned_pos ? 1 : 0);
  if (chunk.has_loss) {
    out.dense += norm;
    if (!x.tied || (x.p > 1 && last_stage && !chunk.has_embedding)) out.dense += 1;
  }
  return out;
}

namespace {

/// An all-reduce of `bytes` over `group` (with the size and span of `members`) on the
/// data-parallel communication stream, after the kernel before it. Returns its index (-1: a
/// group of one rank, nothing to reduce); the caller makes the next kernel wait for it.
std::int32_t append_step_all_reduce(std::vector<Op>& ops, const char* name, CommGroup group,
                                    std::int64_t bytes, const CollectiveOp& members) {
  if (members.group_size <= 1) return -1;
  const auto before = static_cast<std::int32_t>(ops.size()) - 1;
  Op& op = ops.emplace_back();
  op.name = name;
  op.phase = Phase::kStep;
  op.stream = Stream::kDataComm;
  op.shape = CollectiveOp{.kind = CollectiveKind::kAllReduce,
                          .group = group,
                          .bytes = bytes,
                          .group_size = members.group_size,
                          .nodes_spanned = members.nodes_spanned};
  if (before >= 0) op.deps.push_back(before);
  return static_cast<std::int32_t>(ops.size()) - 1;
}

/// One fp32 scalar summed or MAX-reduced over the grad-stats group (every rank of it waits).
std::int32_t append_grad_stats_all_reduce(std::vector<Op>& ops, const char* name,
                                          const CollectiveOp& group) {
  return append_step_all_reduce(ops, name, CommGroup::kGradStats, 4, group);
}

}  // namespace

std::int32_t append_optimizer_ops(std::vector<Op>& ops, const Workload& w,
                                  const std::vector<OptimizerShard>& optimizers,
                                  const OptimizerShard& fp8_params,
                                  const std::vector<std::int32_t>& deps,
                                  const CollectiveOp& grad_stats,
                                  const std::vector<MuonMatrix>* muon,
                                  const MuonGroups* muon_groups) {
  const TrainingConfig& tc = w.training;
  std::int64_t elements = 0;
  std::int64_t tensors = 0;
  for (const OptimizerShard& o : optimizers) {
    elements += o.elements;
    tensors += o.tensors;
  }
  // Launches of a multi-tensor kernel run by each optimizer over its own tensors (a
  // ChainedOptimizer steps the dense and the expert optimizers one after the other).
  const auto launches = [&](std::int32_t depth) {
    std::int64_t n = 0;
    for (const OptimizerShard& o : optimizers)
      n += multi_tensor_launches(o.elements, o.tensors, depth);
    return n;
  };
  const bool mixed = tc.params_dtype != DType::kFp32;
  STEPSIM_ASSERT(mixed || fp8_params.elements == 0);  // FP8 parameters are 16-bit models'
  STEPSIM_ASSERT(fp8_params.elements <= elements && fp8_params.tensors <= tensors);
  const auto first = static_cast<std::int32_t>(ops.size());
  // The kernel after a grad-stats all-reduce waits for it (on the compute stream, after the
  // kernel before the all-reduce).
  std::int32_t reduced = -1;
  const auto push = [&](Op op) {
    if (reduced >= 0) op.deps.push_back(reduced);
    reduced = -1;
    ops.push_back(std::move(op));
  };
  // prepare_grads: _copy_model_grads_to_main_grads. With bf16 gradient buffers
  // (grad_reduce_in_bf16) the distributed optimizer makes an fp32 copy of each parameter's
  // gradient shard (`.float()`, one kernel per tensor): read 2, write 4 bytes; the copy is
  // held to the end of the step.
  if (mixed && tc.grad_bytes() == 2) {
    Op& op = ops.emplace_back(step_compute_op("optimizer_grad_copy", elements * (2 + 4), tensors));
    op.held_bytes = elements * 4;
  }
  // fp16: _unscale_main_grads_and_check_for_nan (torch._amp_foreach_non_finite_check_and_unscale_,
  // one multi-tensor kernel over the fp32 main grads: read and write 4 bytes).
  if (tc.params_dtype == DType::kFp16) {
    ops.push_back(step_compute_op("grad_unscale", elements * 8, launches(1)));
    // ... then the found-inf flag MAX-reduced over the grad-stats group (optimizer.py).
    reduced = append_grad_stats_all_reduce(ops, "found_inf_all_reduce", grad_stats);
  }
  if (tc.clip_grad > 0) {
    // clip_grad_norm -> get_grad_norm_fp32: multi_tensor_l2norm over the main grads (read 4
    // bytes each; its cleanup kernel adds one launch), then clip_grad_by_total_norm_fp32:
    // multi_tensor_scale_tensor (TE's, whose clip coefficient stays on the device, so it
    // always runs: read and write 4 bytes). Between them get_grad_norm_fp32 sums the squared
    // norm (one float) over the grad-stats group: the clip of every rank waits for every
    // rank's norm, so the stages of a pipeline meet there.
    push(step_compute_op("grad_norm", elements * 4, launches(1) + 1));
    reduced = append_grad_stats_all_reduce(ops, "grad_norm_all_reduce", grad_stats);
    push(step_compute_op("grad_clip", elements * 8, launches(2)));
  }
  // FusedAdam over the fp32 (main) parameters: multi_tensor_adam with tensor lists (g, p, m, v):
  // read 16, write 12 bytes per parameter. With Muon, over the parameters it does not step
  // (a ChainedOptimizer: Adam's, then Muon's).
  std::int64_t adam_elements = 0;
  std::int64_t adam_launches = 0;
  for (const OptimizerShard& o : optimizers) {
    adam_elements += o.elements - o.muon_elements;
    adam_launches += multi_tensor_launches(o.elements - o.muon_elements,
                                           o.tensors - o.muon_tensors, 4);
  }
  push(step_compute_op("adam_step", adam_elements * 28, adam_launches));
  if (muon != nullptr && !muon->empty()) {
    STEPSIM_ASSERT(muon_groups != nullptr);
    append_muon_ops(ops, tc, *muon, *muon_groups, -1);
  }
  if (mixed && fp8_params.elements < elements) {
    // _copy_main_params_to_model_params: fp32 main parameters into the 16-bit model
    // parameters (read 4, write 2 bytes): one copy_ per parameter shard with the distributed
    // optimizer, a multi_tensor_scale (scale 1) otherwise (_multi_tensor_copy_this_to_that).
    // FP8 parameters are skipped there (quantize_param_shard writes them).
    const std::int64_t copied = elements - fp8_params.elements;
    const std::int64_t kernels =
        tc.use_distributed_optimizer ? tensors - fp8_params.tensors : launches(2);
    ops.push_back(step_compute_op("main_param_copy", copied * (4 + 2), kernels));
  }
  ops[static_cast<std::size_t>(first)].deps = deps;
  return static_cast<std::int32_t>(ops.size()) - 1;
}

std::int32_t append_fp8_param_quantization(std::vector<Op>& ops, Fp8Recipe recipe,
                                           const OptimizerShard& shard, std::int64_t tensors,
                                           std::int64_t param_elements,
                                           const CollectiveOp& amax_group, std::int32_t after) {
  STEPSIM_ASSERT(recipe == Fp8Recipe::kDelayed || recipe == Fp8Recipe::kTensorwise ||
                 recipe == Fp8Recipe::kBlockwise);
  STEPSIM_ASSERT(tensors > 0 && shard.tensors <= tensors);
  const auto last = [&] { return static_cast<std::int32_t>(ops.size()) - 1; };
  // One fp32 value per FP8 parameter: its amax, scale or scale_inv.
  const std::int64_t values = tensors * 4;
  // multi_tensor_applier over one list pair of single values per parameter (depth 2).
  const std::int64_t value_copy = multi_tensor_launches(tensors, tensors, 2);
  const auto cast = [&] {
    // quantizer.update_quantized(master_weight, fp8 shard): one cast kernel per shard.
    ops.push_back(step_compute_op("fp8_param_cast", shard.elements * (4 + 1), shard.tensors));
  };
  // The packed amaxes (`bytes`) MAX-reduced over `amax_group`, then `next`, which waits for
  // them.
  const auto reduce_then = [&](std::int64_t bytes, Op next) {
    const std::int32_t reduced = append_step_all_reduce(ops, "fp8_param_amax_all_reduce",
                                                        CommGroup::kData, bytes, amax_group);
    if (reduced >= 0) next.deps.push_back(reduced);
    ops.push_back(std::move(next));
  };
  const auto first = static_cast<std::int32_t>(ops.size());
  if (recipe == Fp8Recipe::kDelayed) {
    cast();
    // The amaxes the casts recorded, packed for one all-reduce (multi_tensor_scale).
    ops.push_back(step_compute_op("fp8_param_amax_pack", values * 2, value_copy));
    // Unpacked into the amaxes, the scales packed, torch.reciprocal, copied into the
    // scale_invs: three multi_tensor_scale copies and one elementwise kernel.
    reduce_then(values,
                step_compute_op("fp8_param_scale_update", values * 2 * 4, 3 * value_copy + 1));
  } else if (recipe == Fp8Recipe::kBlockwise) {
    // One fp32 amax per 128x128 block of every FP8 parameter, packed.
    const std::int64_t blocks = ceil_div(param_elements, std::int64_t{128} * 128) * 4;
    // fp8_block_scaling_compute_partial_amax of each master shard into the packed amaxes.
    ops.push_back(
        step_compute_op("fp8_param_amax", shard.elements * 4 + blocks, shard.tensors + 1));
    // multi_tensor_compute_scale_and_scale_inv over the blocks (depth 3).
    reduce_then(blocks, step_compute_op("fp8_param_scale", blocks * 3,
                                        multi_tensor_launches(tensors, tensors, 3)));
    cast();  // fp8_block_scaling_partial_cast
  } else {
    // tex.compute_amax of each master shard into the zeroed packed buffer.
    ops.push_back(
        step_compute_op("fp8_param_amax", shard.elements * 4 + values, shard.tensors + 1));
    // multi_tensor_compute_scale_and_scale_inv: amaxes, scales and scale_invs (depth 3).
    reduce_then(values, step_compute_op("fp8_param_scale", values * 3,
                                        multi_tensor_launches(tensors, tensors, 3)));
    cast();
  }
  if (after >= 0) ops[static_cast<std::size_t>(first)].deps.push_back(after);
  return last();
}

std::int32_t append_nvfp4_param_quantization(std::vector<Op>& ops, const OptimizerShard& shard,
                                             std::int64_t tensors, std::int64_t param_elements,
                                             const CollectiveOp& amax_group, std::int32_t after) {
  STEPSIM_ASSERT(tensors > 0 && shard.tensors <= tensors);
  const auto first = static_cast<std::int32_t>(ops.size());
  // One fp32 amax per 16x16 tile (NVFP4_BLOCK_SCALING_SIZE) of every parameter, one per tensor.
  const std::int64_t tiles = ceil_div(param_elements, std::int64_t{16} * 16) * 4;
  const std::int64_t globals = tensors * 4;
  ops.push_back(step_compute_op("nvfp4_param_amax", shard.elements * 4 + tiles + globals, 1));
  const std::int32_t tile_reduce = append_step_all_reduce(ops, "nvfp4_param_amax_all_reduce",
                                                          CommGroup::kData, tiles, amax_group);
  const std::int32_t global_reduce = append_step_all_reduce(
      ops, "nvfp4_param_global_amax_all_reduce", CommGroup::kData, globals, amax_group);
  Op global_scale = step_compute_op("nvfp4_param_global_scale", globals * 2, 1);
  for (const std::int32_t r : {tile_reduce, global_reduce}) {
    if (r >= 0) global_scale.deps.push_back(r);
  }
  ops.push_back(std::move(global_scale));
  ops.push_back(step_compute_op("nvfp4_param_scale", tiles * 2 + globals + param_elements / 16, 1));
  ops.push_back(step_compute_op("nvfp4_param_cast", shard.elements * 4 + shard.elements / 2, 1));
  if (after >= 0) ops[static_cast<std::size_t>(first)].deps.push_back(after);
  return static_cast<std::int32_t>(ops.size()) - 1;
}

}  // namespace stepsim::detail
