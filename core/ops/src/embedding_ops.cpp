#include "stepsim/ops/embedding_ops.hpp"

#include "stepsim/ops/layer_ops.hpp"

namespace stepsim::detail {

namespace {

constexpr std::int32_t kNoLayer = -1;

// LanguageModelEmbedding reduce-scatters the lookup straight into the sequence-parallel
// layout only when nothing is added to it (no learned position embedding); otherwise it
// all-reduces, adds positions, transposes to [s, b, h] and scatters (a split and a clone).
bool reduce_scatter_embeddings(const Dims& x) { return x.sp && !x.learned_pos; }

// Transformer Engine's parallel cross entropy (transformer_engine/pytorch/cross_entropy.py
// CrossEntropyFunction; its Triton kernels in transformer_engine/pytorch/triton/
// cross_entropy.py cross_entropy_forward/backward and common/triton/cross_entropy.py), as
// Megatron calls it (language_module.py compute_language_model_loss ->
// te_parallel_cross_entropy: label_smoothing 0, reduce_loss False, the TP group). Per token
// row of V/t 16-bit logits:
// - three torch.zeros buffers: the unreduced fp32 loss, this rank's fp32 (max, sum, X_y)
//   triple and, with t > 1, the gathered triples (4 + 12 + 12 t bytes written per row);
// - online_softmax_kernel: reads the logits once (and the int64 target), writes the triple;
// - with t > 1 all_gather_into_tensor of the triples over the TP group (12 t bytes per row,
//   nccl-tests size), blocking;
// - cross_entropy_kernel: reads the gathered triples and the logits again, writes the fp32
//   gradient (softmax - one_hot, kept for backward) and the loss.
// Backward: element_mul_kernel scales the fp32 gradient in place by the per-token loss
// gradient (reduce_loss False: grad_output is no scalar 1.0, so the multiply runs), then
// autograd casts it to the logits' dtype (torch/csrc/autograd/engine.cpp validate_outputs
// casts a gradient to its input's dtype): read 4, write e bytes per element.
void emit_te_cross_entropy_forward(OpList& ops, std::int64_t logits) {
  const Dims& x = ops.dims();
  const Phase ph = Phase::kForward;
  constexpr std::int64_t kTriple = 3 * 4;  // fp32 max, sum of exps, the target's logit
  const std::int64_t gathered = x.t > 1 ? kTriple * x.t : 0;
  ops.memory("ce_te_zero_fill", kNoLayer, ph, x.tokens * (4 + kTriple + gathered));
  ops.memory("ce_te_online_softmax", kNoLayer, ph, logits * x.e + x.tokens * (8 + kTriple));
  if (x.t > 1) {
    ops.wait(ops.tp_collective(CollectiveKind::kAllGather, kNoLayer, ph, x.tokens * kTriple * x.t));
  }
  ops.memory("ce_te_loss_grad", kNoLayer, ph,
             logits * (x.e + 4) + x.tokens * ((gathered > 0 ? gathered : kTriple) + 8 + 4));
}

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
  ops.norm("final_norm", kNoLayer, Phase::kForward, norm_forward_bytes(x, x.sp_tokens));
  emit_output_head_forward(ops);
}

void emit_output_head_forward(OpList& ops) {
  const Dims& x = ops.dims();
  const Phase ph = Phase::kForward;
  const std::int64_t logits = x.tokens * x.vocab_n();
  if (x.sp) {
    ops.wait(ops.tp_collective(CollectiveKind::kAllGather, kNoLayer, ph, x.tokens * x.h * x.e));
  }
  ops.gemm("logits_gemm", kNoLayer, ph, x.tokens, x.vocab_n(), x.h, 1, logits_workspace_bytes(x));
  if (x.ce_te) {
    emit_te_cross_entropy_forward(ops, logits);
    return;
  }
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
  emit_output_head_backward(ops, defer_wgrad);
  const Dims& x = ops.dims();
  ops.norm("final_norm_bwd", kNoLayer, Phase::kBackwardInput, norm_backward_bytes(x, x.sp_tokens));
}

void emit_output_head_backward(OpList& ops, bool defer_wgrad) {
  const Dims& x = ops.dims();
  const std::int64_t logits = x.tokens * x.vocab_n();
  if (x.ce_te) {
    // element_mul_kernel in place (and the per-token grad_output), then autograd's cast.
    ops.memory("ce_te_grad_scale", kNoLayer, Phase::kBackwardInput, logits * 8 + x.tokens * 4);
    ops.memory("ce_te_grad_cast", kNoLayer, Phase::kBackwardInput, logits * (4 + x.e));
  } else {
    // grad = (softmax - one_hot) * grad_output in place, then the cast back to params dtype.
    ops.memory("cross_entropy_bwd", kNoLayer, Phase::kBackwardInput, logits * (8 + 4 + x.e));
  }
  emit_column_parallel_backward(ops, "logits_dgrad", "logits_wgrad", kNoLayer, x.vocab_n(), x.h,
                                false, !defer_wgrad);
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
