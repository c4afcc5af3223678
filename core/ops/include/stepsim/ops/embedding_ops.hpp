#pragma once
// Ops of the first and last virtual pipeline stage outside the transformer layers: the
// vocab-parallel input embedding (megatron/core/models/common/embeddings/
// language_model_embedding.py) and the output layer with the vocab-parallel cross-entropy
// (megatron/core/tensor_parallel/cross_entropy.py). Per TP rank. Internal to stepsim_core.

#include <cstdint>

#include "stepsim/ops/op_list.hpp"

namespace stepsim::detail {

void emit_embedding_forward(OpList& ops);
void emit_embedding_backward(OpList& ops);

/// Final norm, logits GEMM (its fp32 logits as workspace), cross-entropy forward.
void emit_output_forward(OpList& ops);
/// Cross-entropy backward, logits GEMM backward, final norm backward.
/// `defer_wgrad`: the output layer's wgrad (and its input all-gather) deferred to the drain.
void emit_output_backward(OpList& ops, bool defer_wgrad = false);

/// The output layer after its input norm (the SP all-gather, logits GEMM, cross entropy), as
/// the main head and every multi-token prediction depth run it on the shared output weight.
void emit_output_head_forward(OpList& ops);
/// Cross-entropy backward and the logits GEMM's backward, without the norm's.
void emit_output_head_backward(OpList& ops, bool defer_wgrad = false);

/// One deferred micro-batch's share of drain_embedding_wgrad_compute: the all-gather of the
/// output layer's input (with SP) and its wgrad GEMM, in that order.
void emit_output_deferred_wgrad(OpList& ops);

/// Transient bytes of the output layer: fp32 logits of one micro-batch, s*b*V/t*4.
std::int64_t logits_workspace_bytes(const Dims& x);

}  // namespace stepsim::detail
