#pragma once
// The routed experts under Transformer Engine's FP8 recipes (delayed, tensorwise, blockwise,
// MXFP8): Megatron-Core's TEGroupedMLP over TE's GroupedLinear (megatron/core/transformer/moe/
// experts.py; transformer_engine/pytorch/module/grouped_linear.py). Internal to stepsim_core.
// Details: docs/models.md, "MoE in FP8".

#include <cstdint>

#include "stepsim/ops/moe_ops.hpp"
#include "stepsim/ops/op_list.hpp"

namespace stepsim::detail {

/// The row alignment of each local expert's slice for quantized grouped GEMMs: TE's Fp8Padding
/// with no align_size (experts.py TEGroupedMLP) takes get_align_size_for_quantization of the
/// recipe: 32 for MXFP8 (MXFP8_BLOCK_SCALING_SIZE), 16 for the other FP8 recipes; 1 without FP8.
std::int64_t expert_quantize_align(const Dims& x);

/// One local expert's rows as its FP8 GEMMs run them: per_expert rounded up to the alignment
/// (Fp8Padding's padded_m_splits).
std::int64_t padded_expert_rows(const Dims& x, std::int64_t per_expert);

/// Bytes of quantizing `elements` 16-bit values into both copies GroupedLinear keeps (row-wise
/// for fprop/dgrad, column-wise for wgrad): tex.split_quantize over the local experts' slices.
/// Delayed scaling: one cast-transpose, read 2 bytes, write 1 + 1; current scaling adds its
/// amax pass (2 bytes read); block scaling and MXFP8: fp8_block_quantize_bytes.
std::int64_t expert_fp8_quantize_bytes(const Dims& x, std::int64_t elements);

/// FP8 linear-weight elements of global layer `layer` on one rank: the attention's QKV and
/// projection, and the dense MLP's FC1 and FC2, or on an MoE layer the local experts' FC1 and
/// FC2 (the router stays 16-bit: Megatron's TopKRouter is no TE module).
std::int64_t fp8_layer_weight_elements(const Dims& x, std::int32_t layer);

/// The local experts' forward and backward under FP8 (in place of emit_experts_forward and
/// emit_experts_backward's 16-bit GEMMs).
void emit_fp8_experts_forward(OpList& ops, std::int32_t layer, Phase phase, const MoeTokens& n);
void emit_fp8_experts_backward(OpList& ops, std::int32_t layer, const MoeTokens& n);

/// Activation bytes the FP8 experts keep for backward (in place of the 16-bit inputs of FC1
/// and FC2 in moe_mlp_stored_bytes): their column-wise FP8 copies with scales.
double fp8_expert_stored_bytes(const Dims& x, const MoeTokens& n);

}  // namespace stepsim::detail
