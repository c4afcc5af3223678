// Multi-token prediction (see mtp_ops.hpp): MultiTokenPredictionLayer.forward ->
// _get_embeddings (roll_tensor of the ids, the shared LanguageModelEmbedding),
// _proj_and_transformer_layer -> _concat_embeddings (enorm, hnorm, torch.cat, eh_proj,
// gather_from_tensor_model_parallel_region, scatter_to_sequence_parallel_region), the
// transformer layer, _postprocess (final_layernorm). The output head and loss of each depth
// are GPTModel._postprocess's (process_mtp_loss: the shared output_layer and
// compute_language_model_loss), emitted by the caller with emit_output_head_forward.

#include "stepsim/ops/mtp_ops.hpp"

#include "stepsim/ops/embedding_ops.hpp"
#include "stepsim/ops/layer_ops.hpp"

namespace stepsim::detail {

namespace {

std::int32_t mtp_layer(const Dims& x, std::int64_t depth) {
  return static_cast<std::int32_t>(x.layers + depth);
}

/// roll_tensor (cp = 1) of input_ids and position_ids, [b, s] int64 each: torch.roll reads and
/// writes every element, the fill of the last position is a single column.
std::int64_t roll_bytes(const Dims& x) { return 2 * x.tokens * 8 * 2; }

}  // namespace

void emit_mtp_layer_forward(OpList& ops, std::int64_t depth) {
  const Dims& x = ops.dims();
  const std::int32_t l = mtp_layer(x, depth);
  const Phase ph = Phase::kForward;
  ops.memory("mtp_roll_ids", l, ph, roll_bytes(x));
  emit_embedding_forward(ops);  // the shared embedding on the rolled ids (SP: scattered)
  ops.norm("mtp_enorm", l, ph, norm_forward_bytes(x, x.sp_tokens));
  ops.norm("mtp_hnorm", l, ph, norm_forward_bytes(x, x.sp_tokens));
  // torch.cat((decoder_input, hidden_states), -1): reads both halves, writes [s/t, b, 2h].
  ops.memory("mtp_concat", l, ph, x.sp_tokens * 2 * x.h * 2 * x.e);
  // eh_proj: TE's column-parallel linear (gather_output False); with SP it all-gathers its
  // [s/t, b, 2h] input along the sequence first.
  if (x.sp) {
    ops.wait(ops.tp_collective(CollectiveKind::kAllGather, l, ph, x.tokens * 2 * x.h * x.e));
  }
  ops.gemm("mtp_eh_proj_gemm", l, ph, x.tokens, x.h / x.t, 2 * x.h);
  if (x.t > 1) {
    // gather_from_tensor_model_parallel_region: all-gather of the h/t slices into [t, s*b,
    // h/t], then torch.cat along the hidden dim (read and write s*b*h).
    ops.wait(ops.tp_collective(CollectiveKind::kAllGather, l, ph, x.tokens * x.h * x.e));
    ops.memory("mtp_gather_cat", l, ph, x.tokens * x.h * 2 * x.e);
    // scatter_to_sequence_parallel_region: this rank's s/t rows, made contiguous.
    if (x.sp) ops.memory("mtp_sp_split", l, ph, x.sp_tokens * x.h * 2 * x.e);
  }
  emit_layer_forward(ops, l, ph);
  ops.norm("mtp_final_norm", l, ph, norm_forward_bytes(x, x.sp_tokens));
}

void emit_mtp_layer_backward(OpList& ops, std::int64_t depth, bool selective_recompute) {
  const Dims& x = ops.dims();
  const std::int32_t l = mtp_layer(x, depth);
  const Phase ph = Phase::kBackwardInput;
  ops.norm("mtp_final_norm_bwd", l, ph, norm_backward_bytes(x, x.sp_tokens));
  emit_layer_backward(ops, l, selective_recompute);
  if (x.t > 1) {
    // The scatter's backward all-gathers the sequence (SP); the gather's backward splits the
    // hidden dim and makes this rank's h/t columns contiguous.
    if (x.sp) {
      ops.wait(ops.tp_collective(CollectiveKind::kAllGather, l, ph, x.tokens * x.h * x.e));
    }
    ops.memory("mtp_gather_split_bwd", l, ph, x.tokens * x.h / x.t * 2 * x.e);
  }
  emit_column_parallel_backward(ops, "mtp_eh_proj_dgrad", "mtp_eh_proj_wgrad", l, x.h / x.t,
                                2 * x.h, false, true);
  // CatBackward hands each norm a strided half of the [s/t, b, 2h] gradient, which TE's norm
  // backward makes contiguous.
  ops.memory("mtp_concat_bwd", l, ph, x.sp_tokens * 2 * x.h * 2 * x.e);
  // hnorm's input gradient is added to the gradient the main head (or the next depth) gave
  // the same hidden states.
  ops.norm("mtp_hnorm_bwd", l, ph, norm_backward_bytes(x, x.sp_tokens), x.sp_tokens * x.h * 3 * x.e);
  ops.norm("mtp_enorm_bwd", l, ph, norm_backward_bytes(x, x.sp_tokens));
  emit_embedding_backward(ops);
}

std::int64_t mtp_extra_activation_bytes(const Dims& x) {
  const std::int64_t hidden = x.sp_tokens * x.h * x.e;
  // The norms' inputs (the embedding output and the hidden states), the concatenation that
  // eh_proj keeps (its local [s/t, b, 2h] shard with SP, re-gathered for wgrad), the final
  // norm's and the logits GEMM's inputs, and the fp32 softmax of the depth's cross entropy.
  return 2 * hidden + 2 * hidden + 2 * hidden + x.tokens * x.vocab_n() * 4;
}

}  // namespace stepsim::detail
