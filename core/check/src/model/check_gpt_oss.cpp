// GPT-OSS's two departures from a plain MoE decoder: attention sinks (--softmax-type) and the
// clamped quick-GEGLU activation (--quick-geglu, --glu-linear-offset,
// --activation-func-clamp-value). The rules are Megatron-LM's (megatron/training/
// argument_utils.py core_transformer_config_from_args, megatron/core/transformer/
// transformer_config.py __post_init__, megatron/core/transformer/mlp.py MLP.forward) and
// Transformer Engine's backend choice (transformer_engine/pytorch/attention/
// dot_product_attention/utils.py get_attention_backend), and what stepsim does not model yet.

#include <algorithm>
#include <cmath>
#include <string>

#include "stepsim/layout/moe_layout.hpp"
#include "check_internal.hpp"

namespace stepsim::detail {

namespace {

std::string softmax_text(SoftmaxType s) {
  return s == SoftmaxType::kLearnable ? "=\"learnable\"" : "=\"off-by-one\"";
}

void check_softmax_type(const Workload& w, Checker& check) {
  const ModelConfig& m = w.model;
  const TrainingConfig& t = w.training;
  if (m.softmax_type == SoftmaxType::kVanilla) return;
  const std::string key = "model.softmax_type";
  const std::string value = softmax_text(m.softmax_type);
  // get_attention_backend, "Filter: Softmax type": FlashAttention is disabled for any
  // softmax_type but vanilla; FusedAttention (cuDNN >= 9.13.1, fused_attn.cpp
  // nvte_get_fused_attn_backend) and UnfusedDotProductAttention run it.
  if (m.use_flash_attn && m.attention_backend == AttentionBackend::kUnfused) {
    check.fail(key, value +
                        " with use_flash_attn=true: FlashAttention does not run attention sinks "
                        "(Transformer Engine disables it for any softmax_type but vanilla); give "
                        "attention_backend \"auto\" or \"fused\"");
  } else {
    switch (m.attention_backend) {
      case AttentionBackend::kAuto:
      case AttentionBackend::kFused:
        break;
      case AttentionBackend::kFlash:
        check.fail(key, value +
                            " with attention_backend=\"flash\": FlashAttention does not run "
                            "attention sinks (Transformer Engine disables it for any softmax_type "
                            "but vanilla); give attention_backend \"auto\" or \"fused\"");
        break;
      case AttentionBackend::kUnfused:
      case AttentionBackend::kLocal:
        check.fail(key, value +
                            " with an unfused attention backend is not modelled yet (the sink's "
                            "column in the materialised softmax); give attention_backend "
                            "\"auto\" or \"fused\"");
        break;
    }
  }
  // get_attention_backend: with context parallelism FusedAttention runs sinks only with
  // cp_comm_type a2a, and FlashAttention none: no backend is left for the others.
  if (t.context_parallel_size > 1 && t.cp_comm_type != CpCommType::kA2a) {
    check.fail(key, value +
                        " with context_parallel_size > 1 needs cp_comm_type \"a2a\": "
                        "Transformer Engine's fused attention runs sinks with context "
                        "parallelism only over the a2a exchange, and no other backend is left");
  }
  if (m.multi_latent_attention) {
    check.fail(key, value + " with multi_latent_attention is not modelled yet");
  }
}

void check_gated_activation(const Workload& w, Checker& check) {
  const ModelConfig& m = w.model;
  if (m.quick_geglu) {
    const std::string key = "model.quick_geglu";
    // core_transformer_config_from_args: `elif args.quick_geglu: assert not args.swiglu`.
    if (m.swiglu) {
      check.fail(key,
                 "=true with swiglu=true: Megatron-LM asserts not swiglu with --quick-geglu "
                 "(one activation per MLP)");
    }
    if (m.squared_relu) {
      check.fail(key,
                 "=true with squared_relu=true: one activation per MLP (Megatron-LM "
                 "reads --squared-relu first and ignores --quick-geglu)");
    }
    // validate_args turns bias_gelu_fusion off without linear biases; quick-GEGLU then runs
    // as the unfused glu() of mlp.py / experts.py (chunk, clamps, quick_gelu, product).
    if (!m.add_bias_linear) {
      check.fail(key,
                 "=true with add_bias_linear=false is not modelled yet: without linear "
                 "biases Megatron-LM turns bias_activation_fusion off and runs the unfused "
                 "GLU's separate kernels");
    }
    // MLP.forward with bias_activation_fusion and no per-token scale fuses only gelu and
    // swiglu ("Only support fusion of gelu and swiglu"): a dense layer (or a shared expert
    // block, SharedExpertMLP) with quick_geglu raises.
    const std::vector<bool> moe = moe_layer_pattern(m);
    if (!m.moe() || std::find(moe.begin(), moe.end(), false) != moe.end()) {
      check.fail(key,
                 "=true needs num_experts with every layer an MoE layer (moe_layer_freq): "
                 "Megatron-LM's dense MLP fuses only gelu and swiglu with its bias and "
                 "raises for quick_gelu");
    }
    if (m.moe_shared_expert_intermediate_size > 0) {
      check.fail(key,
                 "=true with shared experts is not modelled yet (their quick-GEGLU "
                 "kernels)");
    }
  }
  if (m.glu_linear_offset != 0.0 && !m.quick_geglu) {
    // TransformerConfig.__post_init__: "When bias_activation_fusion is True and
    // glu_linear_offset is non-zero, activation function must be quick_gelu".
    check.fail("model.glu_linear_offset",
               "=" + std::to_string(m.glu_linear_offset) +
                   " needs quick_geglu: Megatron-LM refuses a non-zero offset with its fused "
                   "bias activation of any other function");
  }
  const double clamp = m.activation_func_clamp_value;
  if (clamp == 0.0) return;
  const std::string key = "model.activation_func_clamp_value";
  if (!(std::isfinite(clamp) && clamp > 0.0)) {
    check.fail(key, "=" + std::to_string(clamp) + " must be finite and > 0 (Megatron-LM's rule)");
    return;
  }
  if (m.swiglu) {
    // __post_init__ for SwiGLU: MoE only, glu_linear_offset zero.
    if (!m.moe()) {
      check.fail(key,
                 " with swiglu needs num_experts: Megatron-LM supports SwiGLU's clamp only "
                 "with MoE");
    }
    if (m.glu_linear_offset != 0.0) {
      check.fail(key, " with swiglu needs glu_linear_offset 0 (Megatron-LM's rule)");
    }
  } else if (!m.quick_geglu) {
    check.fail(key,
               " needs quick_geglu or swiglu: Megatron-LM clamps only the gated "
               "activations' input");
  }
}

}  // namespace

void check_gpt_oss(const Workload& w, Checker& check) {
  check_softmax_type(w, check);
  check_gated_activation(w, check);
}

}  // namespace stepsim::detail
