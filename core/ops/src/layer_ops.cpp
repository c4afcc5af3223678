#include "stepsim/ops/layer_ops.hpp"

#include "stepsim/ops/fp8_ops.hpp"
#include "stepsim/ops/moe_ops.hpp"

namespace stepsim::detail {

// Byte counts follow the kernels Megatron runs (read + write, no cache reuse):
// - norms read x and write y, plus fp32 statistics per token (mean and rstd for LayerNorm,
//   rstd for RMSNorm); backward reads dy and x and writes dx.
// - fused bias-dropout-add reads x and the residual, writes the output and a 1-byte mask;
//   its backward reads dy and the mask and writes dx (the residual gradient is dy itself).
//   With hidden_dropout 0, PyTorch's dropout returns its input: the forward is the add
//   alone (no mask), and its backward is only the bias gradient's reduction of dy, if the
//   linears have biases (no kernel at all without).
// - autograd adds the residual branch's gradient to the norm's input gradient: one more
//   read of two tensors and a write, charged to the norm backward of the layer.
// - scale-mask-softmax reads and writes the scores; dropout also writes its mask (no dropout
//   kernel with attention_dropout 0).

std::int64_t norm_forward_bytes(const Dims& x, std::int64_t tokens) {
  return tokens * x.h * 2 * x.e + tokens * (x.layernorm ? 8 : 4);
}

std::int64_t norm_backward_bytes(const Dims& x, std::int64_t tokens) {
  return tokens * x.h * 3 * x.e + tokens * (x.layernorm ? 8 : 4);
}

namespace {

std::int64_t residual_grad_add_bytes(const Dims& x) { return x.sp_tokens * x.h * 3 * x.e; }
std::int64_t bda_forward_bytes(const Dims& x) {
  return x.sp_tokens * x.h * (3 * x.e + (x.hidden_dropout ? 1 : 0));
}
std::int64_t bda_backward_bytes(const Dims& x) {
  if (x.hidden_dropout) return x.sp_tokens * x.h * (2 * x.e + 1);
  return x.bias ? x.sp_tokens * x.h * x.e : 0;
}
/// The bias-dropout-add's backward, when it runs a kernel at all.
void emit_bda_backward(OpList& ops, std::string_view name, std::int32_t layer) {
  const Dims& x = ops.dims();
  if (const std::int64_t bytes = bda_backward_bytes(x); bytes > 0) {
    ops.memory(name, layer, Phase::kBackwardInput, bytes);
  }
}
std::int64_t hidden_bytes(const Dims& x) { return x.tokens * x.h * x.e; }
/// Transformer Engine's fused RoPE (apply_rope_fusion, Megatron's default) on Q and K, forward
/// or backward: it reads and writes every dim of every head. With rotary_percent < 1 it rotates
/// the first int(d * rotary_percent) dims and copies the rest to its output (fused_rope.cu,
/// "copy the rest"), so the bytes do not depend on rotary_percent; the fp32 frequency table it
/// reads (s x rotated dims) is not priced, at any rotary_percent.
std::int64_t rope_bytes(const Dims& x) { return x.tokens * (x.a + x.g) * x.d / x.t * 2 * x.e; }

bool has_tp(const Dims& x) { return x.t > 1; }

/// Before a column-parallel GEMM with SP: all-gather of the sequence-sharded input.
void gather_input(OpList& ops, std::int32_t layer, Phase phase) {
  const Dims& x = ops.dims();
  if (!x.sp) return;
  ops.wait(ops.tp_collective(CollectiveKind::kAllGather, layer, phase, hidden_bytes(x)));
}

/// After a row-parallel GEMM: all-reduce of the partial sums, or reduce-scatter with SP.
void reduce_output(OpList& ops, std::int32_t layer, Phase phase) {
  const Dims& x = ops.dims();
  if (!has_tp(x)) return;
  const CollectiveKind kind = x.sp ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce;
  ops.wait(ops.tp_collective(kind, layer, phase, hidden_bytes(x)));
}

/// Learnable attention sinks (softmax_type "learnable"): Transformer Engine's
/// DotProductAttention.forward hands cuDNN softmax_offset.reshape(1, -1, 1, 1).to(float32),
/// a cast kernel of the rank's heads / t logits (a 16-bit parameter under Megatron's
/// Float16Module); cuDNN computes the sink inside the fused kernel (sdpa set_sink_token) and
/// its fp32 gradient inside the backward one (set_dsink_token, fused_attn_f16_arbitrary_seqlen
/// .cu), which autograd's ToCopyBackward casts back. Off-by-one's zero offset is an fp32 buffer
/// already: no kernel. (Accumulating the gradient into main_grad is, as for the norms' and
/// biases' parameters, not priced.)
std::int64_t sink_cast_bytes(const Dims& x) { return x.heads() * (x.e + 4); }

void emit_core_attention_forward(OpList& ops, std::int32_t layer, Phase phase) {
  const Dims& x = ops.dims();
  if (x.learnable_sink) ops.memory("attn_sink_cast", layer, phase, sink_cast_bytes(x));
  if (x.cp > 1) {
    emit_cp_attention_forward(ops, layer, phase);
    return;
  }
  if (x.flash) {
    ops.compute("attn_flash", layer, phase,
                AttentionOp{.batch = x.b,
                            .heads = x.heads(),
                            .kv_heads = x.groups(),
                            .seq = x.s,
                            .head_dim = x.d,
                            .causal = true,
                            .backward = false,
                            .dtype = x.dtype,
                            .window = x.window_of(layer)});
    return;
  }
  // DotProductAttention expands the key/value groups to one per query head (a copy).
  if (x.g < x.a) {
    ops.memory("attn_kv_expand", layer, phase, x.tokens * 2 * (x.a + x.g) * x.d / x.t * x.e);
  }
  ops.attention_gemm("attn_qk", layer, phase, x.s, x.s, x.d, x.attn_batch());
  ops.memory("attn_softmax", layer, phase, x.score_elems() * 2 * x.e);
  if (x.attention_dropout) ops.memory("attn_dropout", layer, phase, x.score_elems() * (2 * x.e + 1));
  ops.attention_gemm("attn_av", layer, phase, x.s, x.d, x.s, x.attn_batch());
  // context.permute(2, 0, 1, 3).contiguous(): [b, np, s, hn] back to [s, b, np*hn].
  ops.memory("attn_merge_heads", layer, phase, x.tokens * x.attn_n() * 2 * x.e);
}

void emit_core_attention_backward_kernels(OpList& ops, std::int32_t layer) {
  const Dims& x = ops.dims();
  const Phase ph = Phase::kBackwardInput;
  if (x.cp > 1) {
    emit_cp_attention_backward(ops, layer);
    return;
  }
  if (x.flash) {
    ops.compute("attn_flash_bwd", layer, ph,
                AttentionOp{.batch = x.b,
                            .heads = x.heads(),
                            .kv_heads = x.groups(),
                            .seq = x.s,
                            .head_dim = x.d,
                            .causal = true,
                            .backward = true,
                            .dtype = x.dtype,
                            .window = x.window_of(layer)});
    return;
  }
  ops.memory("attn_merge_heads_bwd", layer, ph, x.tokens * x.attn_n() * 2 * x.e);
  // O = P V: dP = dO V^T [s,d]x[d,s], dV = P^T dO [s,s]x[s,d].
  ops.attention_gemm("attn_av_dgrad_p", layer, ph, x.s, x.s, x.d, x.attn_batch());
  ops.attention_gemm("attn_av_dgrad_v", layer, ph, x.s, x.d, x.s, x.attn_batch());
  if (x.attention_dropout) ops.memory("attn_dropout_bwd", layer, ph, x.score_elems() * (2 * x.e + 1));
  ops.memory("attn_softmax_bwd", layer, ph, x.score_elems() * 3 * x.e);
  // S = Q K^T: dQ = dS K [s,s]x[s,d], dK = dS^T Q [s,s]x[s,d].
  ops.attention_gemm("attn_qk_dgrad_q", layer, ph, x.s, x.d, x.s, x.attn_batch());
  ops.attention_gemm("attn_qk_dgrad_k", layer, ph, x.s, x.d, x.s, x.attn_batch());
  if (x.g < x.a) {
    ops.memory("attn_kv_expand_bwd", layer, ph, x.tokens * 2 * (x.a + x.g) * x.d / x.t * x.e);
  }
}

void emit_core_attention_backward(OpList& ops, std::int32_t layer) {
  emit_core_attention_backward_kernels(ops, layer);
  const Dims& x = ops.dims();
  if (x.learnable_sink) {
    ops.memory("attn_sink_cast_bwd", layer, Phase::kBackwardWeight, sink_cast_bytes(x));
  }
}

/// Backward of a row-parallel linear (projection, FC2): its input is not sequence-sharded,
/// so no communication inside; with SP the output gradient arrives by an all-gather (the
/// backward of the forward reduce-scatter).
void emit_row_parallel_backward(OpList& ops, std::string_view prefix, std::string_view dgrad_name,
                                std::string_view wgrad_name, std::int32_t layer,
                                std::int64_t in_k) {
  const Dims& x = ops.dims();
  if (x.ub_ag) {
    emit_ub_row_parallel_backward(ops, prefix, dgrad_name, wgrad_name, layer, in_k);
    return;
  }
  if (x.fp8) {
    emit_fp8_row_parallel_backward(ops, prefix, dgrad_name, wgrad_name, layer, in_k);
    return;
  }
  gather_input(ops, layer, Phase::kBackwardInput);
  ops.gemm(dgrad_name, layer, Phase::kBackwardInput, x.tokens, in_k, x.h);
  ops.gemm(wgrad_name, layer, Phase::kBackwardWeight, x.h, in_k, x.tokens);
}

}  // namespace

void emit_column_parallel_backward(OpList& ops, std::string_view dgrad_name,
                                   std::string_view wgrad_name, std::int32_t layer,
                                   std::int64_t out_n, std::int64_t in_k, bool bias,
                                   bool wgrad) {
  const Dims& x = ops.dims();
  std::int32_t gathered = -1;
  if (x.sp && wgrad) {
    // Re-gather the sequence-sharded input for the weight gradient, overlapped with dgrad.
    gathered = ops.tp_collective(CollectiveKind::kAllGather, layer, Phase::kBackwardWeight,
                                 x.tokens * in_k * x.e);
  }
  ops.gemm(dgrad_name, layer, Phase::kBackwardInput, x.tokens, in_k, out_n);
  std::int32_t reduce = -1;
  if (x.sp) {
    if (gathered >= 0) ops.wait(gathered);
    reduce = ops.tp_collective(CollectiveKind::kReduceScatter, layer, Phase::kBackwardInput,
                               x.tokens * in_k * x.e);
  } else if (has_tp(x)) {
    reduce = ops.tp_collective(CollectiveKind::kAllReduce, layer, Phase::kBackwardInput,
                               x.tokens * in_k * x.e);
  }
  if (wgrad) ops.gemm(wgrad_name, layer, Phase::kBackwardWeight, out_n, in_k, x.tokens);
  if (bias && wgrad) {
    // grad_bias = grad_output.sum(dim=0)
    ops.memory("qkv_bias_bwd", layer, Phase::kBackwardWeight, x.tokens * out_n * x.e);
  }
  if (reduce >= 0) ops.wait(reduce);
}

namespace {

/// The input side of a LayerNormColumnParallelLinear (QKV, FC1): the norm, then the
/// sequence-parallel all-gather (FP8: the FP8 gather or the FP8 transpose).
void emit_norm_linear_input(OpList& ops, std::string_view norm_name, std::string_view prefix,
                            std::int32_t layer, Phase phase) {
  const Dims& x = ops.dims();
  if (x.fp8) {
    ops.norm(norm_name, layer, phase, fp8_norm_forward_bytes(x, x.sp_tokens));
    emit_fp8_norm_linear_input(ops, prefix, layer, phase);
    return;
  }
  ops.norm(norm_name, layer, phase, norm_forward_bytes(x, x.sp_tokens));
  if (!x.ub_ag) gather_input(ops, layer, phase);  // else the ring exchange of the GEMM
}

/// The GEMM of a LayerNormColumnParallelLinear (QKV, FC1) after its input side: one GEMM, or
/// Transformer Engine's AG+GEMM ring exchange.
void emit_norm_linear_gemm(OpList& ops, std::string_view prefix, std::string_view gemm_name,
                           std::int32_t layer, Phase phase, std::int64_t out_n) {
  const Dims& x = ops.dims();
  if (x.ub_ag) {
    emit_ub_ag_fprop(ops, prefix, gemm_name, layer, phase, out_n, x.h);
    return;
  }
  ops.linear_gemm(gemm_name, layer, phase, x.tokens, out_n, x.h);
}

/// A RowParallelLinear's forward (projection, FC2): the GEMM and the all-reduce (reduce-scatter
/// with SP), or Transformer Engine's pipelined GEMM+RS.
void emit_row_linear_forward(OpList& ops, std::string_view gemm_name, std::int32_t layer,
                             Phase phase, std::int64_t in_k) {
  const Dims& x = ops.dims();
  if (x.ub_rs) {
    emit_ub_rs_fprop(ops, gemm_name, layer, phase, in_k);
    return;
  }
  ops.linear_gemm(gemm_name, layer, phase, x.tokens, x.h, in_k);
  reduce_output(ops, layer, phase);
}

/// Backward of a layer's LayerNormColumnParallelLinear (QKV, FC1).
void emit_norm_linear_backward(OpList& ops, std::string_view prefix, std::string_view dgrad_name,
                               std::string_view wgrad_name, std::int32_t layer,
                               std::int64_t out_n, bool bias) {
  const Dims& x = ops.dims();
  if (x.ub_bulk_dgrad || x.ub_bulk_wgrad || x.ub_rs_dgrad) {
    emit_ub_column_parallel_backward(ops, prefix, dgrad_name, wgrad_name, layer, out_n, x.h, bias);
    return;
  }
  if (x.fp8) {
    emit_fp8_column_parallel_backward(ops, prefix, dgrad_name, wgrad_name, layer, out_n, x.h);
    return;
  }
  emit_column_parallel_backward(ops, dgrad_name, wgrad_name, layer, out_n, x.h, bias);
}

void emit_attention_forward(OpList& ops, std::int32_t layer, Phase phase) {
  const Dims& x = ops.dims();
  if (x.mla) {
    emit_mla_forward(ops, layer, phase);
    return;
  }
  emit_norm_linear_input(ops, "ln1", "qkv", layer, phase);
  emit_norm_linear_gemm(ops, "qkv", "qkv_gemm", layer, phase, x.qkv_n());
  if (x.bias) ops.memory("qkv_bias", layer, phase, x.tokens * x.qkv_n() * 2 * x.e);
  if (x.rope) ops.memory("rope", layer, phase, rope_bytes(x));
  emit_core_attention_forward(ops, layer, phase);
  if (x.fp8) emit_fp8_row_linear_input(ops, "proj", layer, phase, x.attn_n());
  emit_row_linear_forward(ops, "proj_gemm", layer, phase, x.attn_n());
}

void emit_attention_backward(OpList& ops, std::int32_t layer, bool selective_recompute) {
  const Dims& x = ops.dims();
  if (x.mla) {
    emit_mla_backward(ops, layer, selective_recompute);
    return;
  }
  const Phase ph = Phase::kBackwardInput;
  emit_row_parallel_backward(ops, "proj", "proj_dgrad", "proj_wgrad", layer, x.attn_n());
  if (selective_recompute) emit_core_attention_forward(ops, layer, Phase::kRecompute);
  emit_core_attention_backward(ops, layer);
  if (x.rope) ops.memory("rope_bwd", layer, ph, rope_bytes(x));
  emit_norm_linear_backward(ops, "qkv", "qkv_dgrad", "qkv_wgrad", layer, x.qkv_n(), x.bias);
  ops.norm("ln1_bwd", layer, ph, norm_backward_bytes(x, x.sp_tokens), residual_grad_add_bytes(x));
}

}  // namespace

void emit_attention_block_forward(OpList& ops, std::int32_t layer, Phase phase) {
  const Dims& x = ops.dims();
  emit_attention_forward(ops, layer, phase);
  ops.memory("attn_bda", layer, phase, bda_forward_bytes(x));
}

void emit_mlp_block_forward(OpList& ops, std::int32_t layer, Phase phase) {
  const Dims& x = ops.dims();
  // An MoE layer's MLP: moe_ops.cpp.
  if (x.is_moe(layer)) {
    emit_moe_forward(ops, layer, phase);
    ops.memory("mlp_bda", layer, phase, bda_forward_bytes(x));
    return;
  }
  emit_norm_linear_input(ops, "ln2", "fc1", layer, phase);
  emit_norm_linear_gemm(ops, "fc1", "fc1_gemm", layer, phase, x.fc1_n());
  if (x.swiglu) {
    ops.memory("swiglu", layer, phase, x.tokens * x.ffn_n() * 3 * x.e);
  } else if (x.squared_relu) {
    // megatron/core/activations.py: squared_relu = pow(relu(x), 2) under jit_fuser
    // (torch.compile), one elementwise kernel: reads FC1's output, writes the activation. No
    // bias to fuse (validate: squared_relu needs add_bias_linear=false).
    ops.memory("squared_relu", layer, phase, x.tokens * x.ffn_n() * 2 * x.e);
  } else {
    ops.memory("bias_gelu", layer, phase, x.tokens * x.ffn_n() * 2 * x.e);
  }
  if (x.fp8) emit_fp8_row_linear_input(ops, "fc2", layer, phase, x.ffn_n());
  emit_row_linear_forward(ops, "fc2_gemm", layer, phase, x.ffn_n());
  ops.memory("mlp_bda", layer, phase, bda_forward_bytes(x));
}

void emit_layer_forward(OpList& ops, std::int32_t layer, Phase phase) {
  if (ops.dims().is_hybrid()) {
    emit_hybrid_layer_forward(ops, layer, phase);
    return;
  }
  emit_attention_block_forward(ops, layer, phase);
  emit_mlp_block_forward(ops, layer, phase);
}

void emit_mlp_block_backward(OpList& ops, std::int32_t layer) {
  const Dims& x = ops.dims();
  const Phase ph = Phase::kBackwardInput;
  emit_bda_backward(ops, "mlp_bda_bwd", layer);
  if (x.is_moe(layer)) {
    emit_moe_backward(ops, layer);
    return;
  }
  emit_row_parallel_backward(ops, "fc2", "fc2_dgrad", "fc2_wgrad", layer, x.ffn_n());
  if (x.swiglu) {
    ops.memory("swiglu_bwd", layer, ph, x.tokens * x.ffn_n() * 5 * x.e);
  } else if (x.squared_relu) {
    // d/dx relu(x)^2 = 2 relu(x): reads the saved FC1 output and the gradient, writes dx.
    ops.memory("squared_relu_bwd", layer, ph, x.tokens * x.ffn_n() * 3 * x.e);
  } else {
    // dGeLU, plus the bias gradient's reduction over tokens when there is a bias.
    ops.memory("bias_gelu_bwd", layer, ph, x.tokens * x.ffn_n() * (x.bias ? 4 : 3) * x.e);
  }
  emit_norm_linear_backward(ops, "fc1", "fc1_dgrad", "fc1_wgrad", layer, x.fc1_n(), false);
  ops.norm("ln2_bwd", layer, ph, norm_backward_bytes(x, x.sp_tokens), residual_grad_add_bytes(x));
}

void emit_attention_block_backward(OpList& ops, std::int32_t layer, bool selective_recompute) {
  emit_bda_backward(ops, "attn_bda_bwd", layer);
  emit_attention_backward(ops, layer, selective_recompute);
}

void emit_layer_backward(OpList& ops, std::int32_t layer, bool selective_recompute) {
  if (ops.dims().is_hybrid()) {
    emit_hybrid_layer_backward(ops, layer, selective_recompute);
    return;
  }
  emit_mlp_block_backward(ops, layer);
  emit_attention_block_backward(ops, layer, selective_recompute);
}

// The pieces of a Mamba layer that are a transformer layer's too (mamba_ops.cpp).

void emit_in_proj_forward(OpList& ops, std::string_view norm_name, std::string_view prefix,
                          std::string_view gemm_name, std::int32_t layer, Phase phase,
                          std::int64_t out_n) {
  emit_norm_linear_input(ops, norm_name, prefix, layer, phase);
  emit_norm_linear_gemm(ops, prefix, gemm_name, layer, phase, out_n);
}

void emit_out_proj_forward(OpList& ops, std::string_view gemm_name, std::int32_t layer,
                           Phase phase, std::int64_t in_k) {
  emit_row_linear_forward(ops, gemm_name, layer, phase, in_k);
}

void emit_block_bda_forward(OpList& ops, std::string_view name, std::int32_t layer, Phase phase) {
  ops.memory(name, layer, phase, bda_forward_bytes(ops.dims()));
}

void emit_block_bda_backward(OpList& ops, std::string_view name, std::int32_t layer) {
  emit_bda_backward(ops, name, layer);
}

void emit_out_proj_backward(OpList& ops, std::string_view prefix, std::string_view dgrad_name,
                            std::string_view wgrad_name, std::int32_t layer, std::int64_t in_k) {
  emit_row_parallel_backward(ops, prefix, dgrad_name, wgrad_name, layer, in_k);
}

void emit_in_proj_backward(OpList& ops, std::string_view norm_name, std::string_view prefix,
                           std::string_view dgrad_name, std::string_view wgrad_name,
                           std::int32_t layer, std::int64_t out_n) {
  const Dims& x = ops.dims();
  emit_norm_linear_backward(ops, prefix, dgrad_name, wgrad_name, layer, out_n, false);
  ops.norm(norm_name, layer, Phase::kBackwardInput, norm_backward_bytes(x, x.sp_tokens),
           residual_grad_add_bytes(x));
}

}  // namespace stepsim::detail
