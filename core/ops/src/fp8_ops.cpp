#include "stepsim/ops/fp8_ops.hpp"

#include <string>

namespace stepsim::detail {

// Byte counts of Transformer Engine's quantize kernels per FP8 recipe (delayed, tensorwise,
// blockwise, MXFP8).
// Details: docs/models.md, "FP8 quantize kernels".

namespace {

std::string named(std::string_view prefix, std::string_view what) {
  std::string s(prefix);
  s += what;
  return s;
}

/// Current scaling: the amax kernel over `elements` 16-bit values, then, where TE reduces
/// the amax over the TP group, that blocking all-reduce.
void current_amax(OpList& ops, std::string_view prefix, std::int32_t layer, Phase phase,
                  std::int64_t elements, bool tp_reduced) {
  const Dims& x = ops.dims();
  if (!x.fp8_current) return;
  ops.memory(named(prefix, "_amax"), layer, phase, elements * x.e);
  if (tp_reduced && x.t > 1) {
    ops.wait(ops.collective("fp8_amax_all_reduce", layer, phase, Stream::kTensorComm,
                            CollectiveOp{CollectiveKind::kAllReduce, CommGroup::kTensor, 4, x.t,
                                         x.tp_nodes}));
  }
}

/// NVFP4 under SP: the shard's quantize (NVFP4Quantizer::quantize_impl, csrc/quantizer.cpp)
/// with its amax reduction. TE reduces the amaxes over TP where the quantizer has an amax
/// reduction group (set_quantizer_amax_reduction_group: the column-parallel input, the
/// row-parallel output gradient under sequence parallelism): after the amax kernel and before
/// the cast, reduce_amaxes all-reduces (MAX, allreduce_coalesced, waited) one fp32 amax per
/// copy quantized, the row- and the column-wise one. The two kernels' bytes sum to
/// nvfp4_quantize_bytes.
void nvfp4_shard_quantize(OpList& ops, std::string_view prefix, std::int32_t layer, Phase phase,
                          std::int64_t elements) {
  const Dims& x = ops.dims();
  ops.memory(named(prefix, "_amax"), layer, phase, elements * x.e);
  ops.wait(ops.collective("nvfp4_amax_all_reduce", layer, phase, Stream::kTensorComm,
                          CollectiveOp{CollectiveKind::kAllReduce, CommGroup::kTensor, 2 * 4, x.t,
                                       x.tp_nodes}));
  ops.memory(named(prefix, "_quantize"), layer, phase,
             nvfp4_quantize_bytes(x, elements) - elements * x.e);
}

/// One gathered copy of `elements`: block scaling's FP8 with 1x128 scales, MXFP8's with 1x32
/// (the same bytes), NVFP4's half a byte with an E4M3 scale per 16 (nvfp4_copy_bytes).
std::int64_t gathered_copy_bytes(const Dims& x, std::int64_t elements) {
  return x.fp4 ? nvfp4_copy_bytes(elements) : fp8_block_copy_bytes(elements);
}

}  // namespace

std::int64_t nvfp4_copy_bytes(std::int64_t elements) { return elements / 2 + elements / 16; }

std::int64_t fp8_block_quantize_bytes(const Dims& x, std::int64_t elements) {
  if (x.fp4) return nvfp4_quantize_bytes(x, elements);
  return elements * (x.e + 2) + elements / 16;
}

std::int64_t nvfp4_quantize_bytes(const Dims& x, std::int64_t elements) {
  // NVFP4Quantizer::quantize_impl (transformer_engine/pytorch/csrc/quantizer.cpp): an amax
  // pass over the 16-bit input (nvte_hadamard_transform_amax: the input's amax and that of
  // its Hadamard transform in one read; weights, without the transform,
  // nvte_compute_amax_with_config), then one kernel (nvte_quantize_with_hadamard_transform;
  // nvte_quantize_v2 for weights) that reads the input again and writes both copies: E2M1
  // values, half a byte each, and an E4M3 scale per 16 (get_scale_shape: one per 1x16 block
  // of each copy, a 16x16 weight block's scale repeated).
  return 2 * elements * x.e + 2 * (elements / 2 + elements / 16);
}

std::int64_t fp8_block_copy_bytes(std::int64_t elements) { return elements + elements / 32; }

bool fp8_block_gathers_fp8(const Dims& x, std::int64_t width) {
  // NVFP4: NVFP4Quantizer.is_quantizable (tensor/nvfp4_tensor.py), rows and columns multiples
  // of 16; _all_gather_nvfp4 gathers in high precision otherwise.
  const std::int64_t block = x.fp4 ? 16 : x.fp8_mx ? 32 : 128;
  return x.sp && x.sp_tokens % block == 0 && width % block == 0;
}

std::int64_t fp8_mx_scale_bytes(std::int64_t elements) { return elements / 32; }

std::int64_t fp8_norm_forward_bytes(const Dims& x, std::int64_t tokens) {
  // Current and block scaling: the norm writes 16 bits (current scaling with the amax);
  // delayed: FP8 directly.
  return tokens * x.h * (x.fp8_current || x.fp8_block ? 2 * x.e : x.e + 1) +
         tokens * (x.layernorm ? 8 : 4);
}

void emit_fp8_norm_linear_input(OpList& ops, std::string_view prefix, std::int32_t layer,
                                Phase phase) {
  const Dims& x = ops.dims();
  if (x.fp8_block) {
    if (fp8_block_gathers_fp8(x, x.h)) {
      if (x.fp4) {
        // layernorm_linear.py: the norm's shard quantized into both copies (NVFP4 supports
        // column-wise all-gathers), the row-wise one gathered by _all_gather_nvfp4 (its data
        // and its unpadded scales, two coalesced all_gather_into_tensor), whose scales fprop's
        // GEMM swizzles (no optimize_for_gemm for a column-parallel SP input): read and
        // written, one per 16 elements.
        nvfp4_shard_quantize(ops, named(prefix, "_input"), layer, phase, x.sp_tokens * x.h);
        ops.wait(ops.tp_collective(CollectiveKind::kAllGather, layer, phase,
                                   nvfp4_copy_bytes(x.tokens * x.h)));
        ops.memory(named(prefix, "_input_scale_swizzle"), layer, phase, 2 * (x.tokens * x.h / 16));
        return;
      }
      ops.memory(named(prefix, "_input_quantize"), layer, phase,
                 fp8_block_quantize_bytes(x, x.sp_tokens * x.h));
      ops.wait(ops.tp_collective(CollectiveKind::kAllGather, layer, phase,
                                 fp8_block_copy_bytes(x.tokens * x.h)));
      // Block scaling reorders the gathered scales (swap_first_dims); MXFP8 swizzles them for
      // fprop. The same bytes: the row-wise scales read and written.
      ops.memory(named(prefix, x.fp8_mx ? "_input_scale_swizzle" : "_input_scale_swap"), layer,
                 phase, 2 * (x.tokens * x.h / 32));
      return;
    }
    if (x.sp) {
      ops.wait(ops.tp_collective(CollectiveKind::kAllGather, layer, phase, x.tokens * x.h * x.e));
    }
    ops.memory(named(prefix, "_input_quantize"), layer, phase,
               fp8_block_quantize_bytes(x, x.tokens * x.h));
    return;
  }
  if (x.fp8_current) {
    // The norm's amax (computed by the norm) is reduced over TP with SP, then one cast
    // kernel: row-wise only before the gather, with the transpose without SP.
    if (x.sp && x.t > 1) {
      ops.wait(ops.collective("fp8_amax_all_reduce", layer, phase, Stream::kTensorComm,
                              CollectiveOp{CollectiveKind::kAllReduce, CommGroup::kTensor, 4,
                                           x.t, x.tp_nodes}));
      ops.memory(named(prefix, "_input_cast"), layer, phase, x.sp_tokens * x.h * (x.e + 1));
      if (!x.ub_ag) {
        ops.wait(ops.tp_collective(CollectiveKind::kAllGather, layer, phase, x.tokens * x.h));
      }
      return;
    }
    ops.memory(named(prefix, "_input_cast_transpose"), layer, phase, x.tokens * x.h * (x.e + 2));
    return;
  }
  if (x.sp) {
    // The norm quantized row-wise only ("All-gather is not supported with FP8 column-wise
    // data"); the shards are gathered in FP8: 1 byte per element on the wire (with the
    // userbuffers ring exchange, by the GEMM's exchanges: layernorm_linear.py passes the FP8
    // norm output to fill_userbuffers_buffer_for_all_gather).
    if (!x.ub_ag) {
      ops.wait(ops.tp_collective(CollectiveKind::kAllGather, layer, phase, x.tokens * x.h));
    }
    return;
  }
  // The norm kernel writes the FP8 output; the FP8 transpose for wgrad is a second kernel
  // (nvte_transpose inside TE's norm API).
  ops.memory(named(prefix, "_input_transpose"), layer, phase, x.tokens * x.h * 2);
}

void emit_fp8_row_linear_input(OpList& ops, std::string_view prefix, std::int32_t layer,
                               Phase phase, std::int64_t in_k) {
  const Dims& x = ops.dims();
  if (x.fp8_block) {
    ops.memory(named(prefix, "_input_quantize"), layer, phase,
               fp8_block_quantize_bytes(x, x.tokens * in_k));
    return;
  }
  current_amax(ops, prefix, layer, phase, x.tokens * in_k, false);
  ops.memory(named(prefix, "_input_cast_transpose"), layer, phase, x.tokens * in_k * (x.e + 2));
}

void emit_fp8_row_grad_cast(OpList& ops, std::string_view prefix, std::int32_t layer) {
  const Dims& x = ops.dims();
  // grad_output_preprocess (base.py), "FP8 with all-gather: unfused bgrad": the bias gradient
  // summed from the 16-bit shard, the shard quantized row-wise only (the amax reduced over TP
  // under current scaling: set_quantizer_amax_reduction_group for row-parallel SP).
  if (x.bias) {
    ops.memory(named(prefix, "_bias_bwd"), layer, Phase::kBackwardWeight, x.sp_tokens * x.h * x.e);
  }
  if (x.fp4) {
    // Both copies of the shard, their amaxes reduced over TP (nvfp4_shard_quantize).
    nvfp4_shard_quantize(ops, named(prefix, "_grad"), layer, Phase::kBackwardInput,
                         x.sp_tokens * x.h);
    return;
  }
  if (x.fp8_block) {
    // Both copies of the shard (the gather moves both: emit_fp8_row_parallel_backward).
    ops.memory(named(prefix, "_grad_quantize"), layer, Phase::kBackwardInput,
               fp8_block_quantize_bytes(x, x.sp_tokens * x.h));
    return;
  }
  current_amax(ops, named(prefix, "_grad"), layer, Phase::kBackwardInput, x.sp_tokens * x.h, true);
  ops.memory(named(prefix, "_grad_cast"), layer, Phase::kBackwardInput,
             x.sp_tokens * x.h * (x.e + 1));
}

void emit_fp8_column_grad_cast(OpList& ops, std::string_view prefix, std::int32_t layer,
                               std::int64_t out_n) {
  const Dims& x = ops.dims();
  if (x.fp8_block) {
    // Row- and column-wise copies of the output gradient; the bias gradient unfused under
    // block scaling, fused into MXFP8's quantize (bgrad_quantize).
    if (x.bias && !x.fp8_mx) {
      ops.memory(named(prefix, "_bias_bwd"), layer, Phase::kBackwardWeight, x.tokens * out_n * x.e);
    }
    ops.memory(named(prefix, "_grad_quantize"), layer, Phase::kBackwardInput,
               fp8_block_quantize_bytes(x, x.tokens * out_n));
    return;
  }
  // The output gradient [tokens, out_n] in FP8 (dgrad) and transposed (wgrad), bias
  // gradient fused (bgrad_quantize).
  current_amax(ops, named(prefix, "_grad"), layer, Phase::kBackwardInput, x.tokens * out_n, false);
  ops.memory(named(prefix, "_grad_cast_transpose"), layer, Phase::kBackwardInput,
             x.tokens * out_n * (x.e + 2));
}

void emit_fp8_column_parallel_backward(OpList& ops, std::string_view prefix,
                                       std::string_view dgrad_name, std::string_view wgrad_name,
                                       std::int32_t layer, std::int64_t out_n, std::int64_t in_k) {
  const Dims& x = ops.dims();
  emit_fp8_column_grad_cast(ops, prefix, layer, out_n);
  std::int32_t gathered = -1;
  if (x.fp8_block && fp8_block_gathers_fp8(x, in_k)) {
    // The saved column-wise shard and its scales, gathered beside dgrad (linear.py: the
    // backward's async all-gather), then reordered (swap_first_dims) for wgrad.
    // NVFP4: the saved shard's column-wise copy (set_quantizer_usage_for_wgrad_all_gather),
    // its transposed data and scales gathered by _all_gather_nvfp4.
    gathered = ops.tp_collective(CollectiveKind::kAllGather, layer, Phase::kBackwardWeight,
                                 gathered_copy_bytes(x, x.tokens * in_k));
  } else if (x.sp && !x.fp8_block) {
    // The saved FP8 input shard is re-gathered for wgrad. On Hopper the gathered input must
    // be transposed, so _all_gather_fp8 waits for the gather at once (no overlap with
    // dgrad) and transposes it.
    ops.wait(ops.tp_collective(CollectiveKind::kAllGather, layer, Phase::kBackwardWeight,
                               x.tokens * in_k));
    ops.memory(named(prefix, "_input_transpose_bwd"), layer, Phase::kBackwardWeight,
               x.tokens * in_k * 2);
  }
  ops.linear_gemm(dgrad_name, layer, Phase::kBackwardInput, x.tokens, in_k, out_n);
  // The input gradient leaves the GEMM 16-bit and is reduced as without FP8, asynchronously
  // beside wgrad.
  std::int32_t reduce = -1;
  if (x.sp) {
    reduce = ops.tp_collective(CollectiveKind::kReduceScatter, layer, Phase::kBackwardInput,
                               x.tokens * in_k * x.e);
  } else if (x.t > 1) {
    reduce = ops.tp_collective(CollectiveKind::kAllReduce, layer, Phase::kBackwardInput,
                               x.tokens * in_k * x.e);
  }
  if (gathered >= 0) {
    ops.wait(gathered);
    if (x.fp4) {
      // _post_process_nvfp4_gather: swap_first_dims of the interleaved column-wise data and
      // scales (read and written), then wgrad's GEMM swizzles the gathered scales.
      ops.memory(named(prefix, "_input_swap_bwd"), layer, Phase::kBackwardWeight,
                 2 * nvfp4_copy_bytes(x.tokens * in_k));
      ops.memory(named(prefix, "_input_scale_swizzle_bwd"), layer, Phase::kBackwardWeight,
                 2 * (x.tokens * in_k / 16));
    } else if (x.fp8_mx) {
      // The gathered column-wise copy keeps its layout: only its scales swizzled for wgrad.
      ops.memory(named(prefix, "_input_scale_swizzle_bwd"), layer, Phase::kBackwardWeight,
                 2 * fp8_mx_scale_bytes(x.tokens * in_k));
    } else {
      ops.memory(named(prefix, "_input_swap_bwd"), layer, Phase::kBackwardWeight,
                 2 * fp8_block_copy_bytes(x.tokens * in_k));
    }
  }
  ops.linear_gemm(wgrad_name, layer, Phase::kBackwardWeight, out_n, in_k, x.tokens);
  if (reduce >= 0) ops.wait(reduce);
}

void emit_fp8_row_parallel_backward(OpList& ops, std::string_view prefix,
                                    std::string_view dgrad_name, std::string_view wgrad_name,
                                    std::int32_t layer, std::int64_t in_k) {
  const Dims& x = ops.dims();
  if (x.fp8_block && fp8_block_gathers_fp8(x, x.h)) {
    // Both copies of the gradient shard and their scales gathered, the column-wise one
    // reordered (swap_first_dims) for wgrad.
    emit_fp8_row_grad_cast(ops, prefix, layer);
    ops.wait(ops.tp_collective(CollectiveKind::kAllGather, layer, Phase::kBackwardInput,
                               2 * gathered_copy_bytes(x, x.tokens * x.h)));
    if (x.fp4) {
      // _post_process_nvfp4_gather swaps the column-wise copy's data and scales; dgrad's and
      // wgrad's GEMMs swizzle each copy's scales (grad_output_quantizer without
      // optimize_for_gemm under row-parallel SP).
      ops.memory(named(prefix, "_grad_swap"), layer, Phase::kBackwardInput,
                 2 * nvfp4_copy_bytes(x.tokens * x.h));
      for (const char* copy : {"_grad_scale_swizzle", "_grad_scale_swizzle_t"}) {
        ops.memory(named(prefix, copy), layer, Phase::kBackwardInput, 2 * (x.tokens * x.h / 16));
      }
    } else if (x.fp8_mx) {
      // Both gathered copies' scales swizzled (dgrad reads the row-wise, wgrad the
      // column-wise one), a kernel each.
      for (const char* copy : {"_grad_scale_swizzle", "_grad_scale_swizzle_t"}) {
        ops.memory(named(prefix, copy), layer, Phase::kBackwardInput,
                   2 * fp8_mx_scale_bytes(x.tokens * x.h));
      }
    } else {
      ops.memory(named(prefix, "_grad_swap"), layer, Phase::kBackwardInput,
                 2 * fp8_block_copy_bytes(x.tokens * x.h));
    }
  } else if (x.fp8_block) {
    // Gathered in 16 bits (a shard not of 128-multiples), then both copies of the whole
    // gradient quantized; the bias gradient unfused.
    if (x.sp) {
      ops.wait(ops.tp_collective(CollectiveKind::kAllGather, layer, Phase::kBackwardInput,
                                 x.tokens * x.h * x.e));
    }
    if (x.bias) {
      ops.memory(named(prefix, "_bias_bwd"), layer, Phase::kBackwardWeight, x.tokens * x.h * x.e);
    }
    ops.memory(named(prefix, "_grad_quantize"), layer, Phase::kBackwardInput,
               fp8_block_quantize_bytes(x, x.tokens * x.h));
  } else if (x.sp) {
    // The gradient shard is cast row-wise, all-gathered in FP8, then transposed for wgrad
    // once the gather is done.
    emit_fp8_row_grad_cast(ops, prefix, layer);
    ops.wait(ops.tp_collective(CollectiveKind::kAllGather, layer, Phase::kBackwardInput,
                               x.tokens * x.h));
    ops.memory(named(prefix, "_grad_transpose"), layer, Phase::kBackwardInput, x.tokens * x.h * 2);
  } else {
    current_amax(ops, named(prefix, "_grad"), layer, Phase::kBackwardInput, x.tokens * x.h,
                 false);
    ops.memory(named(prefix, "_grad_cast_transpose"), layer, Phase::kBackwardInput,
               x.tokens * x.h * (x.e + 2));
  }
  ops.linear_gemm(dgrad_name, layer, Phase::kBackwardInput, x.tokens, in_k, x.h);
  ops.linear_gemm(wgrad_name, layer, Phase::kBackwardWeight, x.h, in_k, x.tokens);
}

void emit_fp8_amax_reduction(OpList& ops, std::int64_t layers, bool forward, bool fp8_params,
                             std::int64_t amax_history_len, CommGroup group,
                             std::int64_t group_size, std::int64_t nodes) {
  const std::int64_t per_layer =
      forward ? kFp8ForwardTensorsPerLayer - (fp8_params ? kFp8LinearsPerLayer : 0)
              : kFp8BackwardTensorsPerLayer;
  const std::int64_t tensors = layers * per_layer;
  const Phase phase = forward ? Phase::kForward : Phase::kBackwardInput;
  constexpr std::int32_t kNoLayer = -1;
  if (group_size > 1) {
    // torch.distributed.all_reduce(..., async_op=False) on the concatenated amaxes.
    ops.wait(ops.collective(
        forward ? "fp8_amax_all_reduce" : "fp8_amax_all_reduce_bwd", kNoLayer, phase,
        Stream::kTensorComm,
        CollectiveOp{CollectiveKind::kAllReduce, group, tensors * 4, group_size, nodes}));
  }
  // fused_amax_and_scale_update_after_reduction: reads the reduced amaxes, reads and rolls
  // each amax history (read + write), reads the scale and writes scale and its inverse.
  ops.memory(forward ? "fp8_amax_update" : "fp8_amax_update_bwd", kNoLayer, phase,
             tensors * 4 * (1 + 2 * amax_history_len + 3));
}

std::int64_t fp8_weight_cast_bytes(const Dims& x, std::int64_t elements) {
  if (x.fp4) return nvfp4_quantize_bytes(x, elements);
  // Current scaling reads the weight once more for its amax; MXFP8 writes both copies'
  // scales (block scaling's one per 128x128 block is left out: 1/16384 byte per element).
  return elements * (x.e + 2 + (x.fp8_current ? x.e : 0)) +
         (x.fp8_mx ? 2 * fp8_mx_scale_bytes(elements) : 0);
}

std::int64_t fp8_weight_transpose_bytes(const Dims& x, std::int64_t elements) {
  if (x.fp4) return 2 * (elements / 2 + elements / 16);
  return elements * 2;
}

}  // namespace stepsim::detail
