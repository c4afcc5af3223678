#pragma once
// Multi-token prediction on the last pipeline stage (Megatron-Core's MultiTokenPredictionBlock
// and MultiTokenPredictionLayer, megatron/core/transformer/multi_token_prediction.py), per TP
// rank. Internal to stepsim_core.

#include <cstdint>

#include "stepsim/ops/op_list.hpp"

namespace stepsim::detail {

/// Depth k's module before its output head (global layer index layers + k): the rolled
/// token ids' embedding, enorm and hnorm, their concatenation, eh_proj (column-parallel
/// 2h -> h) with the gather over TP and the sequence-parallel scatter, one transformer layer
/// of the last decoder layer's kind, the module's final norm.
void emit_mtp_layer_forward(OpList& ops, std::int64_t depth);
/// Its backward, in reverse, down to the embedding's weight gradient and the hidden-state
/// gradient's accumulation into the main model's (or the previous depth's).
void emit_mtp_layer_backward(OpList& ops, std::int64_t depth, bool selective_recompute);

/// Bytes one depth stores for backward beyond its transformer layer's: both norms' inputs,
/// the concatenation eh_proj keeps, the final norm's and the logits GEMM's inputs (16-bit,
/// sequence-sharded with SP) and its cross entropy's fp32 softmax.
std::int64_t mtp_extra_activation_bytes(const Dims& x);

}  // namespace stepsim::detail
