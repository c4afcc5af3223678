#include "stepsim/ops/flops.hpp"

#include "stepsim/layout/hybrid_layout.hpp"
#include "stepsim/layout/moe_layout.hpp"

namespace stepsim {

namespace {

/// num_floating_point_operations()'s hybrid_flops (megatron/training/training.py) for a
/// hybrid model without MTP or gated delta layers: per layer kind, forward FLOPs times 3,
///   attention 4 T h p (h + h g / a) + 2 B s^2 h p   (p = kv_channels a / h)
///   MLP       4 T f h (x 3/2 with swiglu)
///   MoE       4 T h (moe_ffn topk + shared) (x 3/2 with swiglu)
///   Mamba     2 T h (2 d + 2 G N + H) + 7 T d N + 2 T d h   (d = 2 h, as Megatron writes it)
///   logits    2 T h V
/// with T = global batch x s tokens.
double hybrid_logged_flops(const Workload& w) {
  const ModelConfig& m = w.model;
  const auto d = [](std::int64_t v) { return static_cast<double>(v); };
  const double h = d(m.hidden_size);
  const double s = d(m.seq_length);
  const double batch = d(w.training.global_batch_size);
  const double tokens = batch * s;
  const double heads = d(m.num_attention_heads);
  const double p = d(m.kv_channels) * heads / h;
  const double attn = 4.0 * tokens * h * p * (h + h * d(m.num_query_groups) / heads) +
                      2.0 * batch * s * s * h * p;
  const double scale = m.swiglu ? 1.5 : 1.0;
  const double mlp = 4.0 * d(m.ffn_hidden_size) * h * tokens * scale;
  const double moe = 4.0 * tokens * h *
                     (d(m.moe_ffn()) * d(m.moe_router_topk) +
                      d(m.moe_shared_expert_intermediate_size)) * scale;
  const double inner = 2.0 * h;
  const double mamba =
      2.0 * tokens * h * (2.0 * inner + 2.0 * d(m.mamba_num_groups * m.mamba_state_dim) +
                          d(m.mamba_heads())) +
      7.0 * tokens * inner * d(m.mamba_state_dim) + 2.0 * tokens * inner * h;
  double forward = 2.0 * tokens * h * d(m.padded_vocab_size);
  for (const HybridLayer k : hybrid_layer_kinds(m)) {
    switch (k) {
      case HybridLayer::kMamba: forward += mamba; break;
      case HybridLayer::kAttention: forward += attn; break;
      case HybridLayer::kMlp: forward += mlp; break;
      case HybridLayer::kMoe: forward += moe; break;
    }
  }
  return 3.0 * forward;
}

}  // namespace

double megatron_logged_flops_per_step(const Workload& w) {
  if (w.model.hybrid()) return hybrid_logged_flops(w);
  // Megatron-LM, megatron/training/training.py, num_floating_point_operations() and its
  // transformer_flops() (https://github.com/NVIDIA/Megatron-LM), no linear attention, no
  // attention output gate (multi-latent attention: its own branch below):
  //   tokens * (6 h ffn (3 if swiglu else 2) L + 6 (h (q + 2 kv) + q h) L
  //             + 6 D (3 h + 2 h^2) + 6 h V (D + 1))
  //   + batch * s^2 * L * 6 q / 2 * 2
  // with q = kv_channels * heads, kv = kv_channels * query groups, batch = global batch,
  // D = mtp_num_layers and L = num_layers + D (each MTP depth counted as one more layer of the
  // last layer's kind, plus its norms, its 2h -> h projection and its logits).
  const ModelConfig& m = w.model;
  const double fwd_bwd_fma = 3.0 * 2.0;
  const double h = static_cast<double>(m.hidden_size);
  const double mtp = static_cast<double>(m.mtp_num_layers);
  const double layers = static_cast<double>(m.num_layers) + mtp;
  const double q = static_cast<double>(m.kv_channels * m.num_attention_heads);
  const double kv = static_cast<double>(m.kv_channels * m.num_query_groups);
  // Megatron reads args.swiglu alone: --quick-geglu's gated FC1 is logged as an ungated one.
  const double ffn_factor = m.swiglu ? 3.0 : 2.0;
  const double s = static_cast<double>(m.seq_length);
  const double batch = static_cast<double>(w.training.global_batch_size);
  const double tokens = batch * s;
  // MoE: num_experts_routed_to = topk experts of moe_ffn_hidden_size plus the shared experts
  // on the layers moe_layer_freq marks, the dense MLP on the others (the router GEMM is not
  // counted, as Megatron does not count it).
  double moe_layers = 0.0;
  const std::vector<bool> pattern = moe_layer_pattern(m);
  for (const bool is_moe : pattern) moe_layers += is_moe ? 1.0 : 0.0;
  if (!pattern.empty() && pattern.back()) moe_layers += mtp;
  const double dense_layers = layers - moe_layers;
  const double moe_width =
      static_cast<double>(m.moe_ffn() * m.moe_router_topk + m.moe_shared_expert_intermediate_size);
  const double mlp =
      m.moe() ? fwd_bwd_fma * h * ffn_factor *
                    (static_cast<double>(m.ffn_hidden_size) * dense_layers + moe_width * moe_layers)
              : fwd_bwd_fma * h * static_cast<double>(m.ffn_hidden_size) * ffn_factor * layers;
  double attn_linear = fwd_bwd_fma * (h * (q + 2.0 * kv) + q * h) * layers;
  const double logits = fwd_bwd_fma * h * static_cast<double>(m.padded_vocab_size) * (mtp + 1.0) +
                        fwd_bwd_fma * mtp * (3.0 * h + 2.0 * h * h);
  double attn_core = fwd_bwd_fma * q / 2.0 * 2.0 * layers;
  if (m.multi_latent_attention) {
    // Its MLA branch: the low-rank projections with their norms (the + 1), the RoPE key's
    // projection, the output projection; the core term with query/key and value head dims.
    const double heads = static_cast<double>(m.num_attention_heads);
    const double q_head = static_cast<double>(m.qk_head_dim + m.qk_pos_emb_head_dim);
    const double q_lora = static_cast<double>(m.q_lora_rank);
    const double kv_lora = static_cast<double>(m.kv_lora_rank);
    const double v_head = static_cast<double>(m.v_head_dim);
    const double q_term =
        m.q_lora_rank > 0 ? q_lora * (h + heads * q_head + 1.0) : h * heads * q_head;
    attn_linear = fwd_bwd_fma *
                  (q_term +
                   kv_lora * (h + heads * static_cast<double>(m.qk_head_dim + m.v_head_dim) + 1.0) +
                   h * static_cast<double>(m.qk_pos_emb_head_dim) + heads * v_head * h) *
                  layers;
    attn_core = fwd_bwd_fma * (heads * q_head / 2.0 + heads * v_head / 2.0) * layers;
  }
  return tokens * (mlp + attn_linear + logits) + batch * s * s * attn_core;
}

double utilisation(double flops_per_step, double step_time_s, std::int64_t gpus,
                   double peak_flops_per_gpu) {
  const double capacity = step_time_s * static_cast<double>(gpus) * peak_flops_per_gpu;
  return capacity > 0.0 ? flops_per_step / capacity : 0.0;
}

}  // namespace stepsim
