// Megatron-Core's Mamba layer (mamba_ops.hpp) and a hybrid model's layers.
//
// Kernels of mamba_split_conv1d_scan_combined (mamba_ssm/ops/triton/ssd_combined.py) per TP
// rank, with T tokens (s * b: context parallelism is refused with Mamba layers), chunks of
// Q = chunk_size tokens (b * ceil(s / Q) of them, bc below), H heads of head dim P, G groups of
// state N, d_inner = H P, the convolution's channels x, B, C (d_inner + 2 G N) and e bytes per
// activation:
// - forward: causal_conv1d_fwd with SiLU over x, B, C (reads and writes them); the SSD scan
//   (_mamba_chunk_scan_combined_fwd): _chunk_cumsum_fwd (dt with softplus, the cumulative dA,
//   both fp32), _chunk_state_fwd (each chunk's state B^T x: a batched product Q x P x N per
//   head), _state_passing_fwd (the recurrence over chunks: reads fp32 states, writes them in
//   the states dtype, Megatron's mamba_training_ssm_states_dtype defaulting to params_dtype),
//   _bmm_chunk_fwd (C B^T per chunk and group, fp32), _chunk_scan_fwd (the output from the
//   intra-chunk C B^T x and the inter-chunk C states in one accumulator: a product of inner
//   size Q + N per head; with z it writes out_x and out = out_x * silu(z));
// - backward: causal_conv1d_fwd again and the scan's forward kernels again (the combined
//   function saves only zxBCdt and out_x), then _chunk_scan_bwd_dz, _chunk_scan_bwd_dstates,
//   _state_passing_bwd, _chunk_scan_chunk_state_bwd_dx, _chunk_state_bwd_db,
//   _chunk_scan_bwd_dC, _chunk_scan_bwd_dcb, two _bmm_chunk_bwd, _chunk_scan_bwd_ddAcs_stable,
//   _chunk_cumsum_bwd, and causal_conv1d_bwd.
// The Triton matmuls are priced as the batched GEMMs they are (attention_gemm: no linear
// layer's layout); chunk_scan's causal intra-chunk part is priced as its whole Q x Q block,
// as the kernel's K loop runs to the diagonal block. The per-head parameters' gradients (dt_bias,
// A_log, D, conv1d's) are reductions inside these kernels, not priced apart.

#include "stepsim/ops/mamba_ops.hpp"

#include "stepsim/ops/layer_ops.hpp"

namespace stepsim::detail {

namespace {

std::int64_t chunks(const Dims& x) { return x.b * ceil_div(x.s, x.mamba_chunk); }
/// The SSD states of a micro-batch: chunks x heads x P x N.
std::int64_t state_elems(const Dims& x) {
  return chunks(x) * x.mamba_heads_n() * x.mamba_p * x.mamba_n;
}
std::int64_t conv_bytes(const Dims& x) { return x.tokens * x.mamba_conv_n() * x.e; }
std::int64_t inner_bytes(const Dims& x) { return x.tokens * x.mamba_inner_n() * x.e; }
/// RMSNormGated's rstd: one fp32 per token and group.
std::int64_t norm_rstd_bytes(const Dims& x) { return x.tokens * x.mamba_groups_n() * 4; }

/// The scan's forward kernels (forward, or re-run at the start of backward as kRecompute).
void emit_ssd_forward_kernels(OpList& ops, std::int32_t layer, Phase phase, bool scan) {
  const Dims& x = ops.dims();
  const std::int64_t bc = chunks(x);
  const std::int64_t q = x.mamba_chunk;
  const std::int64_t heads = x.mamba_heads_n();
  ops.memory("ssd_chunk_cumsum", layer, phase, x.tokens * heads * (x.e + 8));
  ops.attention_gemm("ssd_chunk_state", layer, phase, x.mamba_n, x.mamba_p, q, bc * heads);
  ops.memory("ssd_state_passing", layer, phase, state_elems(x) * (4 + x.e));
  ops.attention_gemm("ssd_bmm_chunk", layer, phase, q, q, x.mamba_n, bc * x.mamba_groups_n());
  if (scan) {
    ops.attention_gemm("ssd_chunk_scan", layer, phase, q, x.mamba_p, q + x.mamba_n, bc * heads);
  }
}

void emit_mamba_mixer_forward(OpList& ops, std::int32_t layer, Phase phase) {
  const Dims& x = ops.dims();
  emit_in_proj_forward(ops, "mamba_ln", "in_proj", "in_proj_gemm", layer, phase, x.mamba_in_n());
  // rearrange "l b d -> b l d" .contiguous(): a copy unless b = 1 (a size-1 dim's stride).
  if (x.b > 1) {
    ops.memory("mamba_zxbcdt_copy", layer, phase, 2 * x.tokens * x.mamba_in_n() * x.e);
  }
  ops.memory("mamba_conv1d", layer, phase, 2 * conv_bytes(x));
  emit_ssd_forward_kernels(ops, layer, phase, true);
  if (x.b > 1) ops.memory("mamba_y_copy", layer, phase, 2 * inner_bytes(x));
  ops.memory("mamba_gated_norm", layer, phase, 2 * inner_bytes(x) + norm_rstd_bytes(x));
  emit_out_proj_forward(ops, "out_proj_gemm", layer, phase, x.mamba_inner_n());
}

void emit_ssd_backward_kernels(OpList& ops, std::int32_t layer) {
  const Dims& x = ops.dims();
  const Phase ph = Phase::kBackwardInput;
  const std::int64_t bc = chunks(x);
  const std::int64_t q = x.mamba_chunk;
  const std::int64_t p = x.mamba_p;
  const std::int64_t n = x.mamba_n;
  const std::int64_t heads = x.mamba_heads_n();
  const std::int64_t groups = x.mamba_groups_n();
  // dz and the gated output's gradient: reads out_x, z and dout, writes dz and dout.
  ops.memory("ssd_chunk_scan_bwd_dz", layer, ph, 5 * inner_bytes(x));
  ops.attention_gemm("ssd_chunk_scan_bwd_dstates", layer, ph, p, n, q, bc * heads);
  ops.memory("ssd_state_passing_bwd", layer, ph, state_elems(x) * 3 * 4);
  ops.attention_gemm("ssd_chunk_scan_chunk_state_bwd_dx", layer, ph, q, p, q + n, bc * heads);
  ops.attention_gemm("ssd_chunk_state_bwd_db", layer, ph, q, n, p, bc * heads);
  ops.attention_gemm("ssd_chunk_scan_bwd_dc", layer, ph, q, n, p, bc * heads);
  ops.attention_gemm("ssd_chunk_scan_bwd_dcb", layer, ph, q, q, p, bc * heads);
  ops.attention_gemm("ssd_bmm_chunk_bwd_db", layer, ph, q, n, q, bc * groups);
  ops.attention_gemm("ssd_bmm_chunk_bwd_dc", layer, ph, q, n, q, bc * groups);
  ops.attention_gemm("ssd_chunk_scan_bwd_ddacs", layer, ph, q, q, p, bc * heads);
  ops.memory("ssd_chunk_cumsum_bwd", layer, ph, x.tokens * heads * 4 * 4);
}

void emit_mamba_mixer_backward(OpList& ops, std::int32_t layer) {
  const Dims& x = ops.dims();
  const Phase ph = Phase::kBackwardInput;
  emit_out_proj_backward(ops, "out_proj", "out_proj_dgrad", "out_proj_wgrad", layer,
                         x.mamba_inner_n());
  ops.memory("mamba_gated_norm_bwd", layer, ph, 3 * inner_bytes(x) + norm_rstd_bytes(x));
  if (x.b > 1) ops.memory("mamba_y_copy_bwd", layer, ph, 2 * inner_bytes(x));
  ops.memory("mamba_conv1d_recompute", layer, Phase::kRecompute, 2 * conv_bytes(x));
  emit_ssd_forward_kernels(ops, layer, Phase::kRecompute, false);
  emit_ssd_backward_kernels(ops, layer);
  // causal_conv1d_bwd: reads x, B, C and their gradient, writes the input gradient.
  ops.memory("mamba_conv1d_bwd", layer, ph, 3 * conv_bytes(x));
  if (x.b > 1) {
    ops.memory("mamba_zxbcdt_copy_bwd", layer, ph, 2 * x.tokens * x.mamba_in_n() * x.e);
  }
  emit_in_proj_backward(ops, "mamba_ln_bwd", "in_proj", "in_proj_dgrad", "in_proj_wgrad", layer,
                        x.mamba_in_n());
}

}  // namespace

std::int64_t mamba_parameters(const Dims& x) {
  const std::int64_t norm = x.layernorm ? 2 * x.h : x.h;
  const std::int64_t in_proj = x.h * x.mamba_in_n();
  const std::int64_t conv = x.mamba_conv_n() * (x.mamba_conv + 1);
  const std::int64_t per_head = 3 * x.mamba_heads_n();  // dt_bias, A_log, D
  const std::int64_t gated_norm = x.mamba_inner_n();
  const std::int64_t out_proj = x.mamba_inner_n() * x.h;
  return norm + in_proj + conv + per_head + gated_norm + out_proj;
}

double mamba_stored_bytes(const Dims& x) {
  const auto d = [](std::int64_t v) { return static_cast<double>(v); };
  const double outside =
      d(x.sp_tokens * x.h) * (2.0 * d(x.e) + (x.hidden_dropout ? 1.0 : 0.0));
  const double mixer = d(x.tokens * x.mamba_in_n() * x.e) + 3.0 * d(inner_bytes(x)) +
                       d(norm_rstd_bytes(x));
  return outside + mixer;
}

double ssd_forward_flops(const Dims& x) {
  const auto d = [](std::int64_t v) { return static_cast<double>(v); };
  const double t = d(chunks(x) * x.mamba_chunk);
  const double heads = d(x.mamba_heads_n());
  const double p = d(x.mamba_p);
  const double n = d(x.mamba_n);
  return 2.0 * t * heads * p * n + 2.0 * t * d(x.mamba_chunk) * n * d(x.mamba_groups_n()) +
         2.0 * t * heads * p * d(x.mamba_chunk + x.mamba_n);
}

void emit_hybrid_layer_forward(OpList& ops, std::int32_t layer, Phase phase) {
  switch (ops.dims().kind_of(layer)) {
    case HybridLayer::kMamba:
      emit_mamba_mixer_forward(ops, layer, phase);
      emit_block_bda_forward(ops, "mamba_bda", layer, phase);
      return;
    case HybridLayer::kAttention:
      emit_attention_block_forward(ops, layer, phase);
      return;
    case HybridLayer::kMlp:
    case HybridLayer::kMoe:
      emit_mlp_block_forward(ops, layer, phase);
      return;
  }
}

void emit_hybrid_layer_backward(OpList& ops, std::int32_t layer, bool selective_recompute) {
  switch (ops.dims().kind_of(layer)) {
    case HybridLayer::kMamba:
      emit_block_bda_backward(ops, "mamba_bda_bwd", layer);
      emit_mamba_mixer_backward(ops, layer);
      return;
    case HybridLayer::kAttention:
      emit_attention_block_backward(ops, layer, selective_recompute);
      return;
    case HybridLayer::kMlp:
    case HybridLayer::kMoe:
      emit_mlp_block_backward(ops, layer);
      return;
  }
}

}  // namespace stepsim::detail
