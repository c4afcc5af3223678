// The routed experts under Transformer Engine's FP8 recipes (moe_fp8_ops.hpp), as
// Megatron-Core's TEGroupedMLP runs them (megatron/core/transformer/moe/experts.py
// TEGroupedMLP.forward) over TE's GroupedLinear (transformer_engine/pytorch/module/
// grouped_linear.py: tex.split_quantize of the input and the output gradient,
// general_grouped_gemm for fprop, dgrad and wgrad).

#include "stepsim/ops/moe_fp8_ops.hpp"

#include "moe/expert_activation_ops.hpp"
#include "stepsim/ops/fp8_ops.hpp"

namespace stepsim::detail {

std::int64_t expert_quantize_align(const Dims& x) {
  if (!x.fp8) return 1;
  // NVFP4: 128 (TE's Fp8Padding with no align_size: get_align_size_for_quantization's NVFP4
  // value, as Megatron-Core's get_fp4_align_size).
  if (x.fp4) return 128;
  return x.fp8_mx ? 32 : 16;
}

std::int64_t padded_expert_rows(const Dims& x, std::int64_t per_expert) {
  const std::int64_t a = expert_quantize_align(x);
  return ceil_div(per_expert, a) * a;
}

std::int64_t expert_fp8_quantize_bytes(const Dims& x, std::int64_t elements) {
  if (x.fp8_block) return fp8_block_quantize_bytes(x, elements);
  return elements * (x.e + 2) + (x.fp8_current ? elements * x.e : 0);
}

std::int64_t fp8_layer_weight_elements(const Dims& x, std::int32_t layer) {
  const std::int64_t attention = x.qkv_n() * x.h + x.h * x.attn_n();
  if (!x.is_moe(layer)) return attention + x.fc1_n() * x.h + x.h * x.ffn_n();
  return attention + x.local_experts() * (x.h * x.expert_fc1_n() + x.expert_ffn_n() * x.h);
}

namespace {

/// One grouped FP8 GEMM over the local experts (general_grouped_gemm): m rows each.
void grouped(OpList& ops, std::string_view name, std::int32_t layer, Phase phase, std::int64_t m,
             std::int64_t n, std::int64_t k) {
  ops.linear_gemm(name, layer, phase, m, n, k, ops.dims().local_experts());
}

}  // namespace

void emit_fp8_experts_forward(OpList& ops, std::int32_t layer, Phase phase, const MoeTokens& n) {
  const Dims& x = ops.dims();
  const std::int64_t rows = n.expert_rows();
  const std::int64_t m = padded_expert_rows(x, n.per_expert);
  const std::int64_t padded = m * n.local_experts;
  const std::int64_t pb = probs_bytes(x);
  if (m != n.per_expert) {
    // Fp8Padding (transformer_engine/pytorch/module/fp8_padding.py): when a slice is not
    // aligned, fused_multi_row_padding copies the rows and the probabilities into a padded
    // buffer (read the rows, write the padded ones), one kernel each.
    ops.memory("expert_fp8_padding", layer, phase, (rows + padded) * x.h * x.e);
    ops.memory("expert_fp8_probs_padding", layer, phase, (rows + padded) * pb);
  }
  ops.memory("expert_fc1_input_quantize", layer, phase, expert_fp8_quantize_bytes(x, padded * x.h));
  grouped(ops, "expert_fc1_gemm", layer, phase, m, x.expert_fc1_n(), x.h);
  if (x.clamp_glu) emit_glu_clamp_forward(ops, layer, phase, padded);
  if (x.squared_relu) {
    emit_squared_relu_forward(ops, layer, phase, padded);
  } else {
    ops.memory(activation_name(x, false), layer, phase,
               padded * x.expert_ffn_n() * (x.gated() ? 3 : 2) * x.e + padded * pb);
  }
  ops.memory("expert_fc2_input_quantize", layer, phase,
             expert_fp8_quantize_bytes(x, padded * x.expert_ffn_n()));
  grouped(ops, "expert_fc2_gemm", layer, phase, m, x.h, x.expert_ffn_n());
  if (m != n.per_expert) {
    // Fp8Unpadding: fused_multi_row_unpadding of the output.
    ops.memory("expert_fp8_unpadding", layer, phase, (rows + padded) * x.h * x.e);
  }
}

void emit_fp8_experts_backward(OpList& ops, std::int32_t layer, const MoeTokens& n) {
  const Dims& x = ops.dims();
  const std::int64_t rows = n.expert_rows();
  const std::int64_t m = padded_expert_rows(x, n.per_expert);
  const std::int64_t padded = m * n.local_experts;
  const std::int64_t pb = probs_bytes(x);
  const Phase ph = Phase::kBackwardInput;
  const Phase wg = Phase::kBackwardWeight;
  // Fp8Unpadding's backward pads the output gradient (fused_multi_row_padding).
  if (m != n.per_expert) ops.memory("expert_fp8_unpadding_bwd", layer, ph, (rows + padded) * x.h * x.e);
  // GroupedLinear's backward quantizes the output gradient into both copies (dgrad reads the
  // row-wise one, wgrad the column-wise one), then dgrad and wgrad grouped GEMMs.
  ops.memory("expert_fc2_grad_quantize", layer, ph, expert_fp8_quantize_bytes(x, padded * x.h));
  grouped(ops, "expert_fc2_dgrad", layer, ph, m, x.expert_ffn_n(), x.h);
  grouped(ops, "expert_fc2_wgrad", layer, wg, x.h, x.expert_ffn_n(), m);
  if (x.squared_relu) {
    emit_squared_relu_backward(ops, layer, padded);
  } else {
    ops.memory(activation_name(x, true), layer, ph,
               padded * x.expert_ffn_n() * (x.gated() ? 5 : 3) * x.e + padded * 2 * pb);
  }
  if (x.clamp_glu) emit_glu_clamp_backward(ops, layer, padded);
  ops.memory("expert_fc1_grad_quantize", layer, ph,
             expert_fp8_quantize_bytes(x, padded * x.expert_fc1_n()));
  grouped(ops, "expert_fc1_dgrad", layer, ph, m, x.h, x.expert_fc1_n());
  grouped(ops, "expert_fc1_wgrad", layer, wg, x.expert_fc1_n(), x.h, m);
  if (m != n.per_expert) {
    // Fp8Padding's backward unpads the input's and the probabilities' gradients.
    ops.memory("expert_fp8_padding_bwd", layer, ph, (rows + padded) * x.h * x.e);
    ops.memory("expert_fp8_probs_padding_bwd", layer, ph, (rows + padded) * pb);
  }
}

double fp8_expert_stored_bytes(const Dims& x, const MoeTokens& n) {
  const auto d = [](std::int64_t v) { return static_cast<double>(v); };
  const double padded = d(padded_expert_rows(x, n.per_expert) * n.local_experts);
  // GroupedLinear saves the column-wise FP8 copies of FC1's and FC2's inputs (with block
  // scaling their fp32 scales, one per 128; MXFP8 its E8M0 ones, one byte per 32: the same
  // 1/32 byte per element as the dense linears in layer_stored_bytes); the activation keeps
  // FC1's 16-bit output, and the padded rows' probabilities are kept.
  const double linear_in = x.fp4 ? 0.5 + 1.0 / 16.0 : x.fp8_block ? 1.0 + 4.0 / 128.0 : 1.0;
  // Squared ReLU's probability scaling also keeps the activation's 16-bit output.
  const double scaled = x.squared_relu ? d(x.expert_ffn_n() * x.e) : 0.0;
  return padded * (d(x.h + x.expert_ffn_n()) * linear_in + d(x.expert_fc1_n() * x.e) +
                   d(probs_bytes(x)) + scaled);
}

}  // namespace stepsim::detail
