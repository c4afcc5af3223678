// Sliding-window attention rules (--window-size, --window-attn-skip-freq): Megatron-LM's and
// Transformer Engine's, and the combinations stepsim does not model yet.

#include <string>

#include "stepsim/layout/window_attention.hpp"
#include "check_internal.hpp"

namespace stepsim::detail {

namespace {

std::string window_text(const ModelConfig& m) {
  std::string out = "=[";
  for (std::size_t i = 0; i < m.window_size.size(); ++i) {
    out += (i > 0 ? ", " : "") + str(m.window_size[i]);
  }
  return out + "]";
}

}  // namespace

void check_window(const Workload& w, Checker& check) {
  const ModelConfig& m = w.model;
  const TrainingConfig& t = w.training;
  if (m.window_size.empty()) {
    if (!m.window_attn_skip_freq.empty()) {
      // is_layer_window_attention returns False for every layer without a window.
      check.fail("model.window_attn_skip_freq",
                 "=\"" + m.window_attn_skip_freq +
                     "\" needs window_size: without a window every layer attends fully");
    }
    return;
  }
  const std::string key = "model.window_size";
  const std::int64_t left = m.window_size[0];
  const std::int64_t right = m.window_size[1];
  // GPT's core attention is causal; Transformer Engine's check_set_window_size
  // (transformer_engine/pytorch/attention/dot_product_attention/utils.py) takes (-1, 0) or
  // (>= 0, 0) for a causal mask and replaces any other right size by 0: the job would not be
  // the one asked for.
  const bool full = left == -1 && (right == -1 || right == 0);
  if (!full && !(left >= 0 && right == 0)) {
    check.fail(key, window_text(m) +
                        ": a causal mask takes (left >= 0, 0), or (-1, -1) / (-1, 0) for full "
                        "attention (Transformer Engine's check_set_window_size replaces any "
                        "other right size by 0)");
    return;
  }
  if (!m.window_attn_skip_freq.empty() && m.num_layers > 0) {
    if (auto parsed = parse_window_attn_skip_freq(m.window_attn_skip_freq, m.num_layers); !parsed) {
      for (const Error& e : parsed.errors()) check.fail(e.key, e.message);
    }
  }
  if (full) return;
  if (!m.fused_attention()) {
    // Megatron's local DotProductAttention runs its fused upper-triangular softmax kernel,
    // which ignores the window, whenever that kernel fits (FusedScaleMaskSoftmax.forward), and
    // the PyTorch softmax with a sliding-window mask otherwise; Transformer Engine's unfused
    // backend turns the window into an arbitrary mask. Both compute every score.
    check.fail(key, window_text(m) +
                        " with an unfused attention backend is not modelled yet (the scores "
                        "are computed whole and masked); give attention_backend \"auto\", "
                        "\"flash\" or \"fused\"");
  }
  if (t.context_parallel_size > 1) {
    // Transformer Engine's get_attention_backend disables FusedAttention for sliding windows
    // with cp_comm_type p2p and a2a+p2p; stepsim's context-parallel kernels carry no window.
    check.fail(key, window_text(m) + " with context_parallel_size=" + str(t.context_parallel_size) +
                        " is not modelled yet (Transformer Engine's fused attention refuses "
                        "windows with the p2p ring)");
  }
  if (m.multi_latent_attention) {
    check.fail(key, window_text(m) + " with multi_latent_attention is not modelled yet");
  }
  if (m.attention_dropout > 0 && m.attention_backend != AttentionBackend::kFlash) {
    // get_attention_backend: "Disabling FusedAttention as it only supports sliding window
    // attention without dropout"; flash-attn 2.3+ runs both.
    check.fail(key, window_text(m) +
                        " with attention_dropout=" + std::to_string(m.attention_dropout) +
                        ": Transformer Engine's fused (cuDNN) attention runs sliding windows "
                        "only without dropout; give attention_dropout 0 or attention_backend "
                        "\"flash\"");
  }
}

}  // namespace stepsim::detail
