#pragma once
// FP8 training as Transformer Engine runs it (transformer_engine/pytorch/module/
// linear.py, layernorm_linear.py, distributed.py, quantization.py, csrc/quantizer.cpp),
// on Hopper with delayed, per-tensor current ("tensorwise") or block ("blockwise") scaling,
// on Blackwell with MXFP8 ("mxfp8"): the
// quantize kernels around each FP8 linear of a transformer layer, the FP8 tensor-parallel
// all-gathers, and the amax reductions. Megatron's TE spec builds QKV and FC1 as
// LayerNormColumnParallelLinear (the norm writes FP8 itself) and the projection and FC2 as
// RowParallelLinear; the embedding, core attention and output layer stay 16-bit.
// Internal to stepsim_core.

#include <cstdint>
#include <string_view>

#include "stepsim/ops/op_list.hpp"

namespace stepsim::detail {

/// Block scaling: bytes of one 1x128 quantize of `elements` 16-bit values into their row-wise
/// and column-wise FP8 copies with fp32 scales (one per 128 elements of each copy).
std::int64_t fp8_block_quantize_bytes(const Dims& x, std::int64_t elements);
/// Block scaling: bytes of one FP8 copy of `elements` with its 1x128 scales.
std::int64_t fp8_block_copy_bytes(std::int64_t elements);

/// NVFP4 (Dims::fp4): bytes of quantizing `elements` 16-bit values into both copies, the amax
/// pass included: 2 x 2 bytes read, 2 x (1/2 + 1/16) written per element.
std::int64_t nvfp4_quantize_bytes(const Dims& x, std::int64_t elements);
/// NVFP4: bytes of one copy of `elements` (the row- or the column-wise one): half a byte per
/// E2M1 value and an E4M3 scale per 16, as _all_gather_nvfp4 gathers it.
std::int64_t nvfp4_copy_bytes(std::int64_t elements);
/// Block scaling: whether a sequence-parallel shard [sp_tokens, width] is all-gathered in FP8
/// (both dims multiples of 128, of 32 under MXFP8, of 16 under NVFP4), else in 16 bits and quantized whole after
/// the gather.
bool fp8_block_gathers_fp8(const Dims& x, std::int64_t width);
/// MXFP8: bytes of one copy's E8M0 scales for `elements` values (one per 32).
std::int64_t fp8_mx_scale_bytes(std::int64_t elements);

/// Bytes of a norm that writes its output in FP8 (1 byte) instead of the params dtype.
std::int64_t fp8_norm_forward_bytes(const Dims& x, std::int64_t tokens);

/// Forward, after the norm of a LayerNormLinear (QKV, FC1; input width h): with SP the FP8
/// all-gather of the norm's FP8 output, else the transpose of it that wgrad reads. With the
/// userbuffers ring exchange (Dims::ub_ag) only what precedes the gather (current scaling's
/// amax reduction and cast): the exchange itself is the GEMM's (tp_overlap_ops.cpp).
void emit_fp8_norm_linear_input(OpList& ops, std::string_view prefix, std::int32_t layer,
                                Phase phase);

/// Backward of a sequence-parallel RowParallelLinear (projection, FC2) in FP8, before its
/// output gradient is gathered: current scaling's amax and its TP reduction, the row-wise cast
/// of the gradient shard, and the unfused bias gradient.
void emit_fp8_row_grad_cast(OpList& ops, std::string_view prefix, std::int32_t layer);

/// Backward of a LayerNormColumnParallelLinear (QKV, FC1) in FP8: the output gradient
/// [tokens, out_n] cast to FP8 and transposed in one kernel (bias gradient fused), after
/// current scaling's amax.
void emit_fp8_column_grad_cast(OpList& ops, std::string_view prefix, std::int32_t layer,
                               std::int64_t out_n);

/// Forward, before the GEMM of a row-parallel Linear (projection, FC2) with input width
/// `in_k`: one cast-transpose kernel writes the FP8 input and its FP8 transpose.
void emit_fp8_row_linear_input(OpList& ops, std::string_view prefix, std::int32_t layer,
                               Phase phase, std::int64_t in_k);

/// Backward of a LayerNormColumnParallelLinear in FP8 (see emit_column_parallel_backward).
void emit_fp8_column_parallel_backward(OpList& ops, std::string_view prefix,
                                       std::string_view dgrad_name, std::string_view wgrad_name,
                                       std::int32_t layer, std::int64_t out_n, std::int64_t in_k);

/// Backward of a RowParallelLinear in FP8 with input width `in_k`.
void emit_fp8_row_parallel_backward(OpList& ops, std::string_view prefix,
                                    std::string_view dgrad_name, std::string_view wgrad_name,
                                    std::int32_t layer, std::int64_t in_k);

/// FP8 tensors with delayed-scaling state per transformer layer: 3 in forward (input,
/// weight, output) and 2 in backward (grad output, grad input) for each of its 4 linears
/// (TE's fp8_meta "scaling_fwd" / "scaling_bwd"). FP8 parameters (fp8_param_gather) have
/// their weight amaxes reduced after the optimizer step instead: 2 per linear in forward.
constexpr std::int64_t kFp8LinearsPerLayer = 4;
constexpr std::int64_t kFp8ForwardTensorsPerLayer = kFp8LinearsPerLayer * 3;
constexpr std::int64_t kFp8BackwardTensorsPerLayer = kFp8LinearsPerLayer * 2;

/// Delayed scaling at the end of a model chunk's forward (the exit of the FP8 autocast that
/// wraps Megatron's TransformerBlock) or backward (after its first FP8 module's backward):
/// one blocking MAX all-reduce of the chunk's amaxes (4 bytes each) over the amax reduction
/// group (`group`: kTensorData, the tensor x context x data parallel ranks of the stage, or
/// kTensorContext with tp_only_amax_red; `group_size` ranks on `nodes` nodes), then TE's
/// fused amax-and-scale update over the amax histories.
void emit_fp8_amax_reduction(OpList& ops, std::int64_t layers, bool forward, bool fp8_params,
                             std::int64_t amax_history_len, CommGroup group,
                             std::int64_t group_size, std::int64_t nodes);

/// Bytes of casting one weight of `elements` from the params dtype to FP8 and its FP8
/// transpose (one cast-transpose kernel); TE does it on a step's first micro-batch only
/// (is_first_microbatch) and caches both for the others and for backward.
std::int64_t fp8_weight_cast_bytes(const Dims& x, std::int64_t elements);

/// With fp8_param_gather the weights arrive FP8 from the all-gather and TE's
/// post_all_gather_processing makes their FP8 transposes: read 1, write 1 byte per element.
/// NVFP4 parameters (fp4_param_gather, Dims::fp4): the column-wise copy made from the gathered
/// row-wise one (nvfp4_2d_multi_tensor_transpose): half a byte and a scale per 16 elements
/// read, the same written.
std::int64_t fp8_weight_transpose_bytes(const Dims& x, std::int64_t elements);

}  // namespace stepsim::detail
