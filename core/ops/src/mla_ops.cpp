// Multi-latent attention as Megatron-Core's MLASelfAttention runs it.
// Details: docs/models.md, "Multi-latent attention".

#include "stepsim/ops/layer_ops.hpp"

namespace stepsim::detail {

namespace {

/// A norm over `width` features of `tokens` tokens (the q / kv latents' norms).
std::int64_t latent_norm_forward_bytes(const Dims& x, std::int64_t tokens, std::int64_t width) {
  return tokens * width * 2 * x.e + tokens * (x.layernorm ? 8 : 4);
}
std::int64_t latent_norm_backward_bytes(const Dims& x, std::int64_t tokens, std::int64_t width) {
  return tokens * width * 3 * x.e + tokens * (x.layernorm ? 8 : 4);
}

/// With SP: the all-gather of a sequence-sharded input of `width` features, waited for.
void gather(OpList& ops, std::int32_t layer, Phase phase, std::int64_t width) {
  const Dims& x = ops.dims();
  if (!x.sp) return;
  ops.wait(ops.tp_collective(CollectiveKind::kAllGather, layer, phase, x.tokens * width * x.e));
}

/// The fused RoPE kernels: q read and the query written; kv and k_pos_emb read, key (k_pos_emb
/// broadcast to every head) and value written. Their backward moves as many bytes.
std::int64_t rope_q_bytes(const Dims& x) { return x.tokens * x.mla_q_n() * 2 * x.e; }
std::int64_t rope_kv_bytes(const Dims& x) {
  return x.tokens * (x.mla_kv_n() + x.dr + x.mla_q_n() + x.attn_n()) * x.e;
}

AttentionOp mla_attention(const Dims& x, bool backward) {
  return AttentionOp{.batch = x.b,
                     .heads = x.heads(),
                     .kv_heads = x.heads(),
                     .seq = x.s,
                     .head_dim = x.mla_q_dim(),
                     .causal = true,
                     .backward = backward,
                     .dtype = x.dtype,
                     .v_head_dim = x.dv};
}

void emit_mla_core_attention_forward(OpList& ops, std::int32_t layer, Phase phase) {
  ops.compute("attn_flash", layer, phase, mla_attention(ops.dims(), false));
}

}  // namespace

void emit_mla_forward(OpList& ops, std::int32_t layer, Phase phase) {
  const Dims& x = ops.dims();
  ops.norm("ln1", layer, phase, norm_forward_bytes(x, x.sp_tokens));
  // _qkv_down_projection: the duplicated down projections on the rank's own tokens.
  if (x.q_lora > 0) ops.linear_gemm("q_down_gemm", layer, phase, x.sp_tokens, x.q_lora, x.h);
  ops.linear_gemm("kv_down_gemm", layer, phase, x.sp_tokens, x.kv_lora + x.dr, x.h);
  gather(ops, layer, phase, x.dr);  // k_pos_emb
  // qkv_up_proj_and_rope_apply.
  if (x.q_lora > 0) {
    if (x.qk_norm) {
      ops.norm("q_norm", layer, phase, latent_norm_forward_bytes(x, x.sp_tokens, x.q_lora));
    }
    gather(ops, layer, phase, x.q_lora);
    ops.linear_gemm("q_up_gemm", layer, phase, x.tokens, x.mla_q_n(), x.q_lora);
  } else {
    gather(ops, layer, phase, x.h);
    ops.linear_gemm("q_gemm", layer, phase, x.tokens, x.mla_q_n(), x.h);
  }
  if (x.qk_norm) {
    ops.norm("kv_norm", layer, phase, latent_norm_forward_bytes(x, x.sp_tokens, x.kv_lora));
  }
  gather(ops, layer, phase, x.kv_lora);
  ops.linear_gemm("kv_up_gemm", layer, phase, x.tokens, x.mla_kv_n(), x.kv_lora);
  ops.memory("mla_rope_q", layer, phase, rope_q_bytes(x));
  ops.memory("mla_rope_kv", layer, phase, rope_kv_bytes(x));
  emit_mla_core_attention_forward(ops, layer, phase);
  // linear_proj: RowParallelLinear.
  ops.linear_gemm("proj_gemm", layer, phase, x.tokens, x.h, x.attn_n());
  if (x.t > 1) {
    const CollectiveKind kind = x.sp ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce;
    ops.wait(ops.tp_collective(kind, layer, phase, x.tokens * x.h * x.e));
  }
}

void emit_mla_backward(OpList& ops, std::int32_t layer, bool selective_recompute) {
  const Dims& x = ops.dims();
  const Phase ph = Phase::kBackwardInput;
  // linear_proj's backward: with SP its output gradient arrives by an all-gather.
  gather(ops, layer, ph, x.h);
  ops.gemm("proj_dgrad", layer, ph, x.tokens, x.attn_n(), x.h);
  ops.gemm("proj_wgrad", layer, Phase::kBackwardWeight, x.h, x.attn_n(), x.tokens);
  if (selective_recompute) emit_mla_core_attention_forward(ops, layer, Phase::kRecompute);
  ops.compute("attn_flash_bwd", layer, ph, mla_attention(x, true));
  ops.memory("mla_rope_kv_bwd", layer, ph, rope_kv_bytes(x));
  ops.memory("mla_rope_q_bwd", layer, ph, rope_q_bytes(x));
  emit_column_parallel_backward(ops, "kv_up_dgrad", "kv_up_wgrad", layer, x.mla_kv_n(), x.kv_lora,
                                false);
  if (x.qk_norm) {
    ops.norm("kv_norm_bwd", layer, ph, latent_norm_backward_bytes(x, x.sp_tokens, x.kv_lora));
  }
  if (x.q_lora > 0) {
    emit_column_parallel_backward(ops, "q_up_dgrad", "q_up_wgrad", layer, x.mla_q_n(), x.q_lora,
                                  false);
    if (x.qk_norm) {
      ops.norm("q_norm_bwd", layer, ph, latent_norm_backward_bytes(x, x.sp_tokens, x.q_lora));
    }
  } else {
    emit_column_parallel_backward(ops, "q_dgrad", "q_wgrad", layer, x.mla_q_n(), x.h, false);
  }
  if (x.sp) {
    // k_pos_emb's gradient back to the sequence shard.
    ops.wait(ops.tp_collective(CollectiveKind::kReduceScatter, layer, ph, x.tokens * x.dr * x.e));
  }
  const std::int64_t kv_down = x.kv_lora + x.dr;
  ops.gemm("kv_down_dgrad", layer, ph, x.sp_tokens, x.h, kv_down);
  ops.gemm("kv_down_wgrad", layer, Phase::kBackwardWeight, kv_down, x.h, x.sp_tokens);
  if (x.q_lora > 0) {
    ops.gemm("q_down_dgrad", layer, ph, x.sp_tokens, x.h, x.q_lora);
    ops.gemm("q_down_wgrad", layer, Phase::kBackwardWeight, x.q_lora, x.h, x.sp_tokens);
  }
  // Autograd sums the q and kv branches' gradients of the norm output, then the norm's
  // backward and the residual branch's gradient (as for the other attention).
  ops.memory("mla_input_grad_add", layer, ph, x.sp_tokens * x.h * 3 * x.e);
  ops.norm("ln1_bwd", layer, ph, norm_backward_bytes(x, x.sp_tokens), x.sp_tokens * x.h * 3 * x.e);
}

}  // namespace stepsim::detail
