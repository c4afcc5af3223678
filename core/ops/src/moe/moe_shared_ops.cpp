// The shared experts of Megatron-Core's MoE layer (SharedExpertMLP), before the router or
// overlapped with the dispatcher.
// Details: docs/models.md, "MoE shared experts".

#include "stepsim/ops/layer_ops.hpp"
#include "stepsim/ops/moe_ops.hpp"

namespace stepsim::detail {

namespace {

const char* act_name(const Dims& x, bool backward) {
  if (x.swiglu) return backward ? "shared_swiglu_bwd" : "shared_swiglu";
  // MLP.forward's activation_func(x) without bias_activation_fusion: one kernel, as the dense
  // MLP's squared_relu (layer_ops.cpp), the same bytes as bias_gelu without a bias.
  if (x.squared_relu) return backward ? "shared_squared_relu_bwd" : "shared_squared_relu";
  return backward ? "shared_gelu_bwd" : "shared_gelu";
}

void fc1_and_act_forward(OpList& ops, std::int32_t layer, Phase phase) {
  const Dims& x = ops.dims();
  ops.gemm("shared_fc1_gemm", layer, phase, x.tokens, x.shared_fc1_n(), x.h);
  ops.memory(act_name(x, false), layer, phase,
             x.tokens * x.shared_ffn_n() * (x.swiglu ? 3 : 2) * x.e);
}

/// fc2 and its row-parallel reduction (reduce-scatter with SP, all-reduce without); returns
/// the reduction's index, -1 without TP.
std::int32_t fc2_forward(OpList& ops, std::int32_t layer, Phase phase) {
  const Dims& x = ops.dims();
  ops.gemm("shared_fc2_gemm", layer, phase, x.tokens, x.h, x.shared_ffn_n());
  if (x.t == 1) return -1;
  return ops.tp_collective(x.sp ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce,
                           layer, phase, x.tokens * x.h * x.e);
}

/// The output gradient's all-gather (the reduce-scatter's backward, with SP); -1 without.
std::int32_t output_grad_gather(OpList& ops, std::int32_t layer) {
  const Dims& x = ops.dims();
  if (!x.sp) return -1;
  return ops.tp_collective(CollectiveKind::kAllGather, layer, Phase::kBackwardInput,
                           x.tokens * x.h * x.e);
}

void fc2_backward(OpList& ops, std::int32_t layer) {
  const Dims& x = ops.dims();
  ops.gemm("shared_fc2_dgrad", layer, Phase::kBackwardInput, x.tokens, x.shared_ffn_n(), x.h);
  ops.gemm("shared_fc2_wgrad", layer, Phase::kBackwardWeight, x.h, x.shared_ffn_n(), x.tokens);
}

void act_and_fc1_backward(OpList& ops, std::int32_t layer) {
  const Dims& x = ops.dims();
  ops.memory(act_name(x, true), layer, Phase::kBackwardInput,
             x.tokens * x.shared_ffn_n() * (x.swiglu ? 5 : 3) * x.e);
  emit_column_parallel_backward(ops, "shared_fc1_dgrad", "shared_fc1_wgrad", layer,
                                x.shared_fc1_n(), x.h, false);
}

}  // namespace

void emit_shared_forward(OpList& ops, std::int32_t layer, Phase phase) {
  const Dims& x = ops.dims();
  if (x.shared_f == 0) return;
  if (x.sp) {
    ops.wait(ops.tp_collective(CollectiveKind::kAllGather, layer, phase, x.tokens * x.h * x.e));
  }
  fc1_and_act_forward(ops, layer, phase);
  const std::int32_t reduce = fc2_forward(ops, layer, phase);
  if (reduce >= 0) ops.wait(reduce);
}

void emit_shared_backward(OpList& ops, std::int32_t layer) {
  const Dims& x = ops.dims();
  if (x.shared_f == 0) return;
  const std::int32_t gathered = output_grad_gather(ops, layer);
  if (gathered >= 0) ops.wait(gathered);
  fc2_backward(ops, layer);
  act_and_fc1_backward(ops, layer);
}

std::int32_t emit_shared_pre_forward_comm(OpList& ops, std::int32_t layer, Phase phase) {
  const Dims& x = ops.dims();
  if (!x.sp) return -1;  // copy_to_tensor_model_parallel_region: nothing to run forward
  return ops.tp_collective(CollectiveKind::kAllGather, layer, phase, x.tokens * x.h * x.e);
}

void emit_shared_fc1_side(OpList& ops, std::int32_t layer, Phase phase, std::int32_t gathered) {
  ops.begin_side_stream();
  if (gathered >= 0) ops.wait(gathered);
  fc1_and_act_forward(ops, layer, phase);
  ops.end_side_stream();
}

OpList::Waits emit_shared_fc2_side(OpList& ops, std::int32_t layer, Phase phase) {
  ops.begin_side_stream();
  const std::int32_t reduce = fc2_forward(ops, layer, phase);
  if (reduce >= 0) ops.wait(reduce);
  return ops.end_side_stream();
}

std::int32_t emit_shared_output_grad_comm(OpList& ops, std::int32_t layer) {
  return output_grad_gather(ops, layer);
}

void emit_shared_fc2_backward_side(OpList& ops, std::int32_t layer, std::int32_t gathered) {
  ops.begin_side_stream();
  if (gathered >= 0) ops.wait(gathered);
  fc2_backward(ops, layer);
  ops.end_side_stream();
}

OpList::Waits emit_shared_fc1_backward_side(OpList& ops, std::int32_t layer) {
  ops.begin_side_stream();
  act_and_fc1_backward(ops, layer);
  return ops.end_side_stream();
}

}  // namespace stepsim::detail
