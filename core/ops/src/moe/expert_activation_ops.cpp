// The routed experts' activation kernels (expert_activation_ops.hpp), as Megatron-Core's
// TEGroupedMLP / SequentialMLP run them (megatron/core/transformer/moe/experts.py
// bias_act_func with bias_activation_fusion).

#include "moe/expert_activation_ops.hpp"

#include <algorithm>

#include "stepsim/ops/moe_ops.hpp"

namespace stepsim::detail {

/// The experts' fused activation kernel: bias_swiglu (weighted_bias_swiglu_impl, its clamp
/// inside), weighted_bias_quick_geglu_impl's (fused_bias_geglu.py; glu_linear_offset is a
/// scalar in it) or bias_gelu. A gated one reads both halves and writes one, and its backward
/// reads the output gradient and both halves and writes their gradients; all of them also read
/// the rows' probabilities and write their gradient.
std::string_view activation_name(const Dims& x, bool backward) {
  if (x.swiglu) return backward ? "expert_swiglu_bwd" : "expert_swiglu";
  if (x.quick_geglu) return backward ? "expert_quick_geglu_bwd" : "expert_quick_geglu";
  if (x.squared_relu) return backward ? "expert_squared_relu_bwd" : "expert_squared_relu";
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

/// Squared ReLU as TEGroupedMLP.forward's bias_act_func (and MLP.forward under SequentialMLP)
/// runs it without bias_activation_fusion and without use_fused_weighted_squared_relu:
/// activation_func(x) (megatron/core/activations.py squared_relu, one jit_fuser kernel: reads
/// FC1's output, writes its square), then `intermediate * permuted_probs` (PyTorch's mul: reads
/// both, writes the promoted dtype, the wider of the two) and `.to(original_dtype)` (a copy
/// only when the probabilities are wider than the activation).
void emit_squared_relu_forward(OpList& ops, std::int32_t layer, Phase phase, std::int64_t rows) {
  const Dims& x = ops.dims();
  const std::int64_t elems = rows * x.expert_ffn_n();
  const std::int64_t pb = probs_bytes(x);
  const std::int64_t w = std::max(x.e, pb);
  ops.memory(activation_name(x, false), layer, phase, elems * 2 * x.e);
  ops.memory("expert_probs_scale", layer, phase, elems * (x.e + w) + rows * pb);
  if (w > x.e) ops.memory("expert_probs_scale_cast", layer, phase, elems * (w + x.e));
}

/// Their backward as autograd runs it: the cast's backward widens the gradient (ToCopyBackward);
/// MulBackward0 makes the activation's gradient (grad * probs, narrowed to its dtype by the
/// engine's validate_outputs) and the probabilities' (grad * activation, then sum_to over the
/// broadcast hidden dim); squared_relu's compiled backward (2 relu(x) * grad) reads the gradient
/// and the saved FC1 output and writes FC1's output gradient.
void emit_squared_relu_backward(OpList& ops, std::int32_t layer, std::int64_t rows) {
  const Dims& x = ops.dims();
  const Phase ph = Phase::kBackwardInput;
  const std::int64_t elems = rows * x.expert_ffn_n();
  const std::int64_t pb = probs_bytes(x);
  const std::int64_t w = std::max(x.e, pb);
  if (w > x.e) ops.memory("expert_probs_scale_cast_bwd", layer, ph, elems * (x.e + w));
  ops.memory("expert_probs_scale_dgrad", layer, ph, elems * 2 * w + rows * pb);
  if (w > x.e) ops.memory("expert_probs_scale_dgrad_cast", layer, ph, elems * (w + x.e));
  ops.memory("expert_probs_scale_wgrad", layer, ph, elems * (2 * w + x.e));
  ops.memory("expert_probs_scale_wgrad_sum", layer, ph, elems * w + rows * pb);
  ops.memory(activation_name(x, true), layer, ph, elems * 3 * x.e);
}

}  // namespace stepsim::detail
