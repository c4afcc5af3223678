#include "embedding_ops.hpp"

#include "layer_ops.hpp"

namespace stepsim::detail {

namespace {

constexpr std::int32_t kNoLayer = -1;

// LanguageModelEmbedding reduce-scatters the lookup straight into the sequence-parallel
// layout only when nothing is added to it (no learned position embedding); otherwise it
// all-reduces, adds positions, transposes to [s, b, h] and scatters (a split and a clone).
bool reduce_scatter_embeddings(const Dims& x) { return x.sp && !x.learned_pos; }

}  // namespace

std::int64_t logits_workspace_bytes(const Dims& x) { return x.tokens * x.vocab_n() * 4; }

void emit_embedding_forward(OpList& ops) {
  const Dims& x = ops.dims();
  const Phase ph = Phase::kForward;
  const std::int64_t elems = x.tokens * x.h;
  // Gather of V/t rows, then zeroing the rows of tokens outside this rank's vocab range.
  ops.memory("embedding_lookup", kNoLayer, ph, elems * 4 * x.e);
  if (x.t > 1) {
    const CollectiveKind kind = reduce_scatter_embeddings(x) ? CollectiveKind::kReduceScatter
                                                             : CollectiveKind::kAllReduce;
    ops.wait(ops.tp_collective(kind, kNoLayer, ph, elems * x.e));
  }
  if (x.learned_pos) ops.memory("pos_embedding_add", kNoLayer, ph, elems * 3 * x.e);
  if (!reduce_scatter_embeddings(x)) {
    ops.memory("embedding_transpose", kNoLayer, ph,
               elems * 2 * x.e + (x.sp ? elems / x.t * 2 * x.e : 0));
  }
  // nn.Dropout with p = 0 returns its input: no kernel, no mask (hidden_dropout 0).
  if (x.hidden_dropout) {
    ops.memory("embedding_dropout", kNoLayer, ph, x.sp_tokens * x.h * (2 * x.e + 1));
  }
}

void emit_embedding_backward(OpList& ops) {
  const Dims& x = ops.dims();
  const std::int64_t elems = x.tokens * x.h;
  if (x.hidden_dropout) {
    ops.memory("embedding_dropout_bwd", kNoLayer, Phase::kBackwardInput,
               x.sp_tokens * x.h * (2 * x.e + 1));
  }
  if (x.sp) {
    // Backward of the scatter (or of the reduce-scatter): all-gather of the gradient.
    ops.wait(ops.tp_collective(CollectiveKind::kAllGather, kNoLayer, Phase::kBackwardInput,
                               elems * x.e));
  }
  if (!reduce_scatter_embeddings(x)) {
    ops.memory("embedding_transpose_bwd", kNoLayer, Phase::kBackwardInput, elems * 2 * x.e);
  }
  // Embedding gradients: read the output gradient, accumulate into the fp32 main grad.
  if (x.learned_pos) {
    ops.memory("pos_embedding_bwd", kNoLayer, Phase::kBackwardWeight, elems * (x.e + 8));
  }
  ops.memory("embedding_bwd", kNoLayer, Phase::kBackwardWeight, elems * (x.e + 8));
}

void emit_output_forward(OpList& ops) {
  const Dims& x = ops.dims();
  const Phase ph = Phase::kForward;
  const std::int64_t logits = x.tokens * x.vocab_n();
  ops.memory("final_norm", kNoLayer, ph, norm_forward_bytes(x, x.sp_tokens));
  if (x.sp) {
    ops.wait(ops.tp_collective(CollectiveKind::kAllGather, kNoLayer, ph, x.tokens * x.h * x.e));
  }
  ops.gemm("logits_gemm", kNoLayer, ph, x.tokens, x.vocab_n(), x.h, 1, logits_workspace_bytes(x));
  // VocabParallelCrossEntropy on logits.float(): the cast, then the local max.
  ops.memory("ce_logits_max", kNoLayer, ph, logits * (x.e + 4 + 4));
  if (x.t > 1) {
    ops.wait(ops.tp_collective(CollectiveKind::kAllReduce, kNoLayer, ph, x.tokens * 4));
  }
  // Subtract the max in place, exp in place, sum over the vocabulary slice.
  ops.memory("cross_entropy", kNoLayer, ph, logits * 20);
  if (x.t > 1 && x.ce_fusion) {
    // Megatron's fused cross entropy (fusions/fused_cross_entropy.py) concatenates the
    // predicted logits and the exp sums into one all-reduce. Its jit-fused functions run the
    // same element-wise work; how many passes torch's fuser merges is not measured, so the
    // kernels above are priced as the unfused passes.
    ops.wait(ops.tp_collective(CollectiveKind::kAllReduce, kNoLayer, ph, 2 * x.tokens * 4));
  } else if (x.t > 1) {
    ops.tp_collective(CollectiveKind::kAllReduce, kNoLayer, ph, x.tokens * 4);  // predicted
    ops.wait(ops.tp_collective(CollectiveKind::kAllReduce, kNoLayer, ph, x.tokens * 4));  // sum exp
  }
  // exp_logits.div_(sum_exp_logits): the softmax kept for backward.
  ops.memory("ce_softmax", kNoLayer, ph, logits * 8);
}

void emit_output_backward(OpList& ops, bool defer_wgrad) {
  const Dims& x = ops.dims();
  const std::int64_t logits = x.tokens * x.vocab_n();
  // grad = (softmax - one_hot) * grad_output in place, then the cast back to params dtype.
  ops.memory("cross_entropy_bwd", kNoLayer, Phase::kBackwardInput, logits * (8 + 4 + x.e));
  emit_column_parallel_backward(ops, "logits_dgrad", "logits_wgrad", kNoLayer, x.vocab_n(), x.h,
                                false, !defer_wgrad);
  ops.memory("final_norm_bwd", kNoLayer, Phase::kBackwardInput,
             norm_backward_bytes(x, x.sp_tokens));
}

void emit_output_deferred_wgrad(OpList& ops) {
  const Dims& x = ops.dims();
  if (x.sp) {
    ops.wait(ops.tp_collective(CollectiveKind::kAllGather, kNoLayer, Phase::kBackwardWeight,
                               x.tokens * x.h * x.e));
  }
  ops.gemm("logits_wgrad", kNoLayer, Phase::kBackwardWeight, x.vocab_n(), x.h, x.tokens);
}

}  // namespace stepsim::detail
