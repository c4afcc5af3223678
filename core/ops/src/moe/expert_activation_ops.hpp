#pragma once
// The routed experts' activation kernels between FC1 and FC2 (moe_ops.cpp): the fused bias
// activation and, for quick-GEGLU with a clamp value, the clamp and concatenation kernels
// around it; squared ReLU and its probability scaling. Internal to stepsim_core.

#include <cstdint>
#include <string_view>

#include "stepsim/ops/op_list.hpp"

namespace stepsim::detail {

/// The fused activation kernel's op name, forward or backward.
std::string_view activation_name(const Dims& x, bool backward);

/// Quick-GEGLU's clamps before its fused kernel (x.clamp_glu), over `rows` expert rows.
void emit_glu_clamp_forward(OpList& ops, std::int32_t layer, Phase phase, std::int64_t rows);

/// Their backward, after the fused kernel's.
void emit_glu_clamp_backward(OpList& ops, std::int32_t layer, std::int64_t rows);

/// Squared ReLU (x.squared_relu, not gated) and the probabilities' scaling after it, as PyTorch
/// kernels, over `rows` expert rows; their backward.
void emit_squared_relu_forward(OpList& ops, std::int32_t layer, Phase phase, std::int64_t rows);
void emit_squared_relu_backward(OpList& ops, std::int32_t layer, std::int64_t rows);

}  // namespace stepsim::detail
