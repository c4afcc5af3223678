// The shared experts of Megatron-Core's MoE layer (megatron/core/transformer/moe/
// shared_experts.py, SharedExpertMLP): a tensor-parallel MLP (the attention's TP group,
// sequence parallel) of width moe_shared_expert_intermediate_size on every token.
//
// Without moe_shared_expert_overlap, MoELayer.shared_experts_compute runs it whole on the
// current stream before the router (emit_shared_forward / emit_shared_backward).
//
// With it, SharedExpertMLP splits its forward into pre_forward_comm (the sequence-parallel
// all-gather), linear_fc1_forward_and_act, linear_fc2_forward and post_forward_comm (the
// reduce-scatter), all on its own stream (SharedExpertMLP.stream), and the token dispatcher
// calls them between its own steps (token_dispatcher.py, MoEAlltoAllTokenDispatcher):
// dispatch_preprocess issues the all-gather before the permutation; token_dispatch launches
// the tokens' all-to-all, then fc1 and the activation, then the probabilities' all-to-all
// ("Forward launch order: tokens A2A -> shared experts fc1 -> probs A2A"); token_combine
// launches the combine all-to-all, then fc2 and the reduce-scatter; combine_postprocess adds
// get_output() after the current stream waited for the side stream.
// Backward: autograd runs each node on the stream of its forward. linear_fc2_forward gives
// the combine all-to-all's output, and post_forward_comm the reduce-scatter's, the largest
// sequence number, so the output gradient's all-gather and the combine all-to-all's backward
// are launched first and fc2's dgrad and wgrad run beside the latter;
// linear_fc1_forward_and_act gives the activation the sequence number just below the tokens'
// all-to-all ("Backward launch order: probs A2A -> tokens A2A -> shared experts fc1"), so the
// activation's backward and fc1's dgrad and wgrad (and its input gradient's reduce-scatter)
// run beside the dispatch all-to-alls' backward.

#include "stepsim/ops/layer_ops.hpp"
#include "stepsim/ops/moe_ops.hpp"

namespace stepsim::detail {

namespace {

const char* act_name(const Dims& x, bool backward) {
  if (x.swiglu) return backward ? "shared_swiglu_bwd" : "shared_swiglu";
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
