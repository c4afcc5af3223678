// The routed experts' activation kernels (expert_activation_ops.hpp), as Megatron-Core's
// TEGroupedMLP / SequentialMLP run them (megatron/core/transformer/moe/experts.py
// bias_act_func with bias_activation_fusion).

#include "moe/expert_activation_ops.hpp"

namespace stepsim::detail {

/// The experts' fused activation kernel: bias_swiglu (weighted_bias_swiglu_impl, its clamp
/// inside), weighted_bias_quick_geglu_impl's (fused_bias_geglu.py; glu_linear_offset is a
/// scalar in it) or bias_gelu. A gated one reads both halves and writes one, and its backward
/// reads the output gradient and both halves and writes their gradients; all of them also read
/// the rows' probabilities and write their gradient.
std::string_view activation_name(const Dims& x, bool backward) {
  if (x.swiglu) return backward ? "expert_swiglu_bwd" : "expert_swiglu";
  if (x.quick_geglu) return backward ? "expert_quick_geglu_bwd" : "expert_quick_geglu";
  return backward ? "expert_gelu_bwd" : "expert_gelu";
}

/// weighted_bias_quick_geglu_impl with a clamp value (megatron/core/fusions/
/// fused_bias_geglu.py): before the fused kernel, x_glu.clamp(max=v) and x_linear.clamp(-v, v)
/// on the two halves of FC1's output (each reads and writes one half) and torch.cat of the two
/// (reads and writes both halves).
void emit_glu_clamp_forward(OpList& ops, std::int32_t layer, Phase phase, std::int64_t rows) {
  const Dims& x = ops.dims();
  const std::int64_t half = rows * x.expert_ffn_n() * x.e;
  ops.memory("expert_glu_clamp", layer, phase, 2 * half);
  ops.memory("expert_linear_clamp", layer, phase, 2 * half);
  ops.memory("expert_glu_clamp_cat", layer, phase, 4 * half);
}

/// Their backward as autograd runs it: torch.cat's backward is two views; PyTorch's
/// clamp_backward (torch/csrc/autograd/FunctionsManual.cpp) is where(mask, grad, 0) with the
/// mask self <= max (one comparison) for x_glu and (self >= min).logical_and_(self <= max) (two
/// comparisons and the in-place and) for x_linear, each comparison reading its half and writing
/// a 1-byte mask; torch.chunk's backward (split_backward) concatenates the halves' gradients.
void emit_glu_clamp_backward(OpList& ops, std::int32_t layer, std::int64_t rows) {
  const Dims& x = ops.dims();
  const Phase ph = Phase::kBackwardInput;
  const std::int64_t elems = rows * x.expert_ffn_n();
  const std::int64_t half = elems * x.e;
  const std::int64_t compare = half + elems;
  const std::int64_t where = elems + 2 * half;
  ops.memory("expert_glu_clamp_mask", layer, ph, compare);
  ops.memory("expert_glu_clamp_where", layer, ph, where);
  ops.memory("expert_linear_clamp_mask_min", layer, ph, compare);
  ops.memory("expert_linear_clamp_mask_max", layer, ph, compare);
  ops.memory("expert_linear_clamp_mask_and", layer, ph, 3 * elems);
  ops.memory("expert_linear_clamp_where", layer, ph, where);
  ops.memory("expert_glu_clamp_cat_bwd", layer, ph, 4 * half);
}

}  // namespace stepsim::detail
