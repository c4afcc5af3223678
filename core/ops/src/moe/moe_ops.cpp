// The MLP half of Megatron-Core's MoE layer per rank: router, dispatcher, experts.
// Details: docs/models.md, "MoE layer".

#include "stepsim/ops/moe_ops.hpp"

#include <algorithm>
#include <cmath>

#include "moe/expert_activation_ops.hpp"
#include "stepsim/ops/layer_ops.hpp"
#include "stepsim/ops/moe_flex.hpp"
#include "stepsim/ops/moe_fp8_ops.hpp"

namespace stepsim::detail {

std::int64_t MoeTokens::expert_rows() const { return per_expert * local_experts; }

MoeTokens moe_tokens(const Dims& x, std::int64_t ep_rank) {
  MoeTokens n;
  n.tokens = x.sp_tokens;
  n.local_experts = x.local_experts();
  const std::int64_t raw = n.tokens * x.topk;
  n.routed = raw;
  std::int64_t capacity = 0;
  if (x.capacity_factor > 0) {
    // moe_utils.get_capacity(num_tokens = tokens * topk, num_experts, capacity_factor).
    capacity = static_cast<std::int64_t>(std::ceil(
        static_cast<double>(raw) / static_cast<double>(x.experts) * x.capacity_factor));
    n.routed = x.pad_to_capacity ? capacity * x.experts : std::min(raw, capacity * x.experts);
  }
  n.gathered = n.tokens * x.etp * x.ep;
  n.received = n.routed;
  if (!x.expert_shares.empty()) {
    // Every source rank of the EP group routes alike: expert i gets raw * share[i] rows of
    // it (at most its capacity); an EP rank receives its local experts' rows from ep sources.
    double sent = 0;
    for (const double share : x.expert_shares) {
      const double rows = static_cast<double>(raw) * share;
      sent += capacity == 0 ? rows
                            : (x.pad_to_capacity ? static_cast<double>(capacity)
                                                 : std::min(rows, static_cast<double>(capacity)));
    }
    n.routed = std::llround(sent);
    const auto ranks = moe_ep_rank_rows(raw, x.experts, x.ep, x.expert_shares, capacity,
                                        x.pad_to_capacity);
    n.received = ep_rank >= 0 && ep_rank < x.ep ? ranks[static_cast<std::size_t>(ep_rank)]
                                                : *std::max_element(ranks.begin(), ranks.end());
    n.a2a_rows = std::max(n.routed, *std::max_element(ranks.begin(), ranks.end()));
  }
  if (n.a2a_rows == 0) n.a2a_rows = n.routed;
  // Rows of the local experts: the rows received, all-gathered over expert TP; evenly over
  // the local experts. Balanced: every rank of the expert TP x EP group sends them routed *
  // local_experts / num_experts rows.
  n.per_expert = x.expert_shares.empty() ? ceil_div(n.routed * x.etp * x.ep, x.experts)
                                         : ceil_div(n.received * x.etp, n.local_experts);
  return n;
}

std::int64_t probs_bytes(const Dims& x) { return bytes_of(x.router_dtype); }

namespace {

/// One GEMM of the local experts: a grouped GEMM over them (TEGroupedMLP), or one GEMM per
/// expert (SequentialMLP).
void expert_gemm(OpList& ops, std::string_view name, std::int32_t layer, Phase phase,
                 std::int64_t m, std::int64_t n, std::int64_t k) {
  const Dims& x = ops.dims();
  if (x.grouped_gemm) {
    ops.gemm(name, layer, phase, m, n, k, x.local_experts());
    return;
  }
  for (std::int64_t e = 0; e < x.local_experts(); ++e) ops.gemm(name, layer, phase, m, n, k);
}

// Router: softmax over the logits (read, write), top-k (read the scores, write values and
// int64 indices), the dense probs and the boolean routing map scattered back.
std::int64_t router_topk_bytes(const Dims& x, const MoeTokens& n) {
  const std::int64_t pb = probs_bytes(x);
  return n.tokens * x.experts * (4 * pb + 1) + n.tokens * x.topk * (pb + 8);
}

void emit_router_forward(OpList& ops, std::int32_t layer, Phase phase, const MoeTokens& n) {
  const Dims& x = ops.dims();
  ops.compute("router_gemm", layer, phase,
              GemmOp{.m = n.tokens, .n = x.experts, .k = x.h, .batch = 1, .dtype = x.router_dtype,
                     .layout = te_linear_layout(phase, x.router_dtype)});
  ops.memory("router_topk", layer, phase, router_topk_bytes(x, n));
  if (!x.aux_loss) return;
  // router.py _apply_aux_loss: tokens per expert (the routing map summed over tokens; per
  // sequence with seq_aux_loss), all-reduced over the TP group (int64), then the
  // probabilities summed over tokens and the loss (switch_load_balancing_loss_func).
  ops.memory("router_aux_loss", layer, phase, n.tokens * x.experts * (1 + probs_bytes(x)));
  if (x.t > 1) {
    ops.wait(ops.tp_collective(CollectiveKind::kAllReduce, layer, phase,
                               x.experts * 8 * (x.seq_aux_loss ? x.b : 1)));
  }
}

void emit_router_backward(OpList& ops, std::int32_t layer, const MoeTokens& n) {
  const Dims& x = ops.dims();
  if (x.aux_loss) {
    // The aux loss's gradient broadcast over the probabilities and added to the scores'.
    ops.memory("router_aux_loss_bwd", layer, Phase::kBackwardInput,
               n.tokens * x.experts * 3 * probs_bytes(x));
  }
  ops.memory("router_topk_bwd", layer, Phase::kBackwardInput,
             n.tokens * x.experts * 3 * probs_bytes(x));
  ops.compute("router_dgrad", layer, Phase::kBackwardInput,
              GemmOp{.m = n.tokens, .n = x.h, .k = x.experts, .batch = 1, .dtype = x.router_dtype,
                     .layout = te_linear_layout(Phase::kBackwardInput, x.router_dtype)});
  ops.compute("router_wgrad", layer, Phase::kBackwardWeight,
              GemmOp{.m = x.experts, .n = x.h, .k = n.tokens, .batch = 1, .dtype = x.router_dtype,
                     .layout = te_linear_layout(Phase::kBackwardWeight, x.router_dtype)});
}

}  // namespace

/// The local experts: fc1, the activation scaled by each row's routing probability, fc2.
void emit_experts_forward(OpList& ops, std::int32_t layer, Phase phase, const MoeTokens& n) {
  const Dims& x = ops.dims();
  if (x.fp8) {
    emit_fp8_experts_forward(ops, layer, phase, n);
    return;
  }
  const std::int64_t rows = n.expert_rows();
  expert_gemm(ops, "expert_fc1_gemm", layer, phase, n.per_expert, x.expert_fc1_n(), x.h);
  if (x.clamp_glu) emit_glu_clamp_forward(ops, layer, phase, rows);
  if (x.squared_relu) {
    emit_squared_relu_forward(ops, layer, phase, rows);
  } else {
    ops.memory(activation_name(x, false), layer, phase,
               rows * x.expert_ffn_n() * (x.gated() ? 3 : 2) * x.e + rows * probs_bytes(x));
  }
  expert_gemm(ops, "expert_fc2_gemm", layer, phase, n.per_expert, x.h, x.expert_ffn_n());
}

void emit_experts_backward(OpList& ops, std::int32_t layer, const MoeTokens& n) {
  const Dims& x = ops.dims();
  if (x.fp8) {
    emit_fp8_experts_backward(ops, layer, n);
    return;
  }
  const std::int64_t rows = n.expert_rows();
  const Phase ph = Phase::kBackwardInput;
  const Phase wg = Phase::kBackwardWeight;
  expert_gemm(ops, "expert_fc2_dgrad", layer, ph, n.per_expert, x.expert_ffn_n(), x.h);
  expert_gemm(ops, "expert_fc2_wgrad", layer, wg, x.h, x.expert_ffn_n(), n.per_expert);
  // The activation's backward also makes the routing probabilities' gradient.
  if (x.squared_relu) {
    emit_squared_relu_backward(ops, layer, rows);
  } else {
    ops.memory(activation_name(x, true), layer, ph,
               rows * x.expert_ffn_n() * (x.gated() ? 5 : 3) * x.e + rows * 2 * probs_bytes(x));
  }
  if (x.clamp_glu) emit_glu_clamp_backward(ops, layer, rows);
  expert_gemm(ops, "expert_fc1_dgrad", layer, ph, n.per_expert, x.h, x.expert_fc1_n());
  expert_gemm(ops, "expert_fc1_wgrad", layer, wg, x.expert_fc1_n(), x.h, n.per_expert);
}

namespace {

/// Returns what the shared experts' output leaves to wait for (overlapped), else nothing.
OpList::Waits emit_alltoall_forward(OpList& ops, std::int32_t layer, Phase phase,
                                    const MoeTokens& n) {
  const Dims& x = ops.dims();
  const std::int64_t pb = probs_bytes(x);
  const std::int64_t rows = n.received * x.etp;  // after the expert-TP all-gather
  // Without padding to capacity the dispatcher copies its token counts to the host after the
  // router (cuda_dtoh_point "before_permutation_1") and the host waits for that copy at its
  // cuda_sync_point, the earliest of: before permutation 1 with a capacity factor (the
  // output size is dynamic), before the EP all-to-all with ep or expert tp > 1 (its split
  // sizes), before permutation 2 with several local experts (moe_permute_fusion, which would
  // avoid it, is not modelled), else before the experts (token_dispatcher.py preprocess).
  enum SyncPoint { kPermutation1, kEpAllToAll, kPermutation2, kFinish, kNoSync };
  SyncPoint sync = kNoSync;
  if (!x.pad_to_capacity) {
    sync = x.capacity_factor > 0   ? kPermutation1
           : x.ep > 1 || x.etp > 1 ? kEpAllToAll
           : n.local_experts > 1   ? kPermutation2
                                   : kFinish;
  }
  const std::int32_t d2h = ops.last_compute();  // the router's last kernel
  const auto sync_here = [&](SyncPoint point) {
    if (sync == point && d2h >= 0) ops.host_waits_before_next(d2h);
  };
  const std::int32_t shared_input =
      x.shared_overlap ? emit_shared_pre_forward_comm(ops, layer, phase) : -1;
  sync_here(kPermutation1);
  ops.memory("moe_permute", layer, phase,
             (n.tokens + n.routed) * x.h * x.e + n.routed * pb + n.tokens * x.experts);
  sync_here(kEpAllToAll);
  std::int32_t dispatch = -1;
  if (x.ep > 1) {
    dispatch = ops.expert_collective("moe_dispatch_all_to_all", CollectiveKind::kAllToAll,
                                     CommGroup::kExpert, layer, phase, n.a2a_rows * x.h * x.e);
  }
  if (x.shared_overlap) emit_shared_fc1_side(ops, layer, phase, shared_input);
  if (x.ep > 1) {
    const auto probs = ops.expert_collective("moe_dispatch_probs_all_to_all",
                                             CollectiveKind::kAllToAll, CommGroup::kExpert, layer,
                                             phase, n.a2a_rows * pb);
    ops.wait(dispatch);
    ops.wait(probs);
  }
  if (x.etp > 1) {
    const auto tokens = ops.expert_collective("moe_etp_all_gather", CollectiveKind::kAllGather,
                                              CommGroup::kExpertTensor, layer, phase,
                                              rows * x.h * x.e);
    const auto probs = ops.expert_collective("moe_etp_probs_all_gather", CollectiveKind::kAllGather,
                                             CommGroup::kExpertTensor, layer, phase, rows * pb);
    ops.wait(tokens);
    ops.wait(probs);
  }
  sync_here(kPermutation2);
  if (n.local_experts > 1) {
    ops.memory("moe_sort_chunks", layer, phase, rows * (x.h * x.e + pb) * 2);
  }
  sync_here(kFinish);
  emit_experts_forward(ops, layer, phase, n);
  if (n.local_experts > 1) ops.memory("moe_unsort_chunks", layer, phase, rows * x.h * x.e * 2);
  if (x.etp > 1) {
    ops.wait(ops.expert_collective("moe_etp_reduce_scatter", CollectiveKind::kReduceScatter,
                                   CommGroup::kExpertTensor, layer, phase, rows * x.h * pb));
  }
  std::int32_t combine = -1;
  if (x.ep > 1) {
    combine = ops.expert_collective("moe_combine_all_to_all", CollectiveKind::kAllToAll,
                                    CommGroup::kExpert, layer, phase, n.a2a_rows * x.h * x.e);
  }
  OpList::Waits shared;
  if (x.shared_overlap) shared = emit_shared_fc2_side(ops, layer, phase);
  if (combine >= 0) ops.wait(combine);
  ops.memory("moe_unpermute", layer, phase, (n.routed + n.tokens) * x.h * x.e);
  return shared;
}

/// Returns what the shared experts' input gradient leaves to wait for (overlapped).
OpList::Waits emit_alltoall_backward(OpList& ops, std::int32_t layer, const MoeTokens& n) {
  const Dims& x = ops.dims();
  const Phase ph = Phase::kBackwardInput;
  const std::int64_t pb = probs_bytes(x);
  const std::int64_t rows = n.received * x.etp;
  const std::int32_t shared_grad = x.shared_overlap ? emit_shared_output_grad_comm(ops, layer) : -1;
  ops.memory("moe_unpermute_bwd", layer, ph, (n.routed + n.tokens) * x.h * x.e);
  std::int32_t combine = -1;
  if (x.ep > 1) {
    combine = ops.expert_collective("moe_combine_all_to_all_bwd", CollectiveKind::kAllToAll,
                                    CommGroup::kExpert, layer, ph, n.a2a_rows * x.h * x.e);
  }
  if (x.shared_overlap) emit_shared_fc2_backward_side(ops, layer, shared_grad);
  if (combine >= 0) ops.wait(combine);
  if (x.etp > 1) {
    ops.wait(ops.expert_collective("moe_etp_reduce_scatter_bwd", CollectiveKind::kAllGather,
                                   CommGroup::kExpertTensor, layer, ph, rows * x.h * pb));
  }
  if (n.local_experts > 1) ops.memory("moe_unsort_chunks_bwd", layer, ph, rows * x.h * x.e * 2);
  emit_experts_backward(ops, layer, n);
  if (n.local_experts > 1) {
    ops.memory("moe_sort_chunks_bwd", layer, ph, rows * (x.h * x.e + pb) * 2);
  }
  if (x.etp > 1) {
    const auto tokens = ops.expert_collective("moe_etp_all_gather_bwd",
                                              CollectiveKind::kReduceScatter,
                                              CommGroup::kExpertTensor, layer, ph,
                                              rows * x.h * x.e);
    const auto probs = ops.expert_collective("moe_etp_probs_all_gather_bwd",
                                             CollectiveKind::kReduceScatter,
                                             CommGroup::kExpertTensor, layer, ph, rows * pb);
    ops.wait(tokens);
    ops.wait(probs);
  }
  if (x.ep > 1) {
    // Backward launch order: probs all-to-all, then tokens (token_dispatcher.py).
    const auto probs = ops.expert_collective("moe_dispatch_probs_all_to_all_bwd",
                                             CollectiveKind::kAllToAll, CommGroup::kExpert, layer,
                                             ph, n.a2a_rows * pb);
    const auto tokens = ops.expert_collective("moe_dispatch_all_to_all_bwd",
                                              CollectiveKind::kAllToAll, CommGroup::kExpert, layer,
                                              ph, n.a2a_rows * x.h * x.e);
    ops.wait(probs);
    ops.wait(tokens);
  }
  OpList::Waits shared;
  if (x.shared_overlap) shared = emit_shared_fc1_backward_side(ops, layer);
  ops.memory("moe_permute_bwd", layer, ph, (n.tokens + n.routed) * x.h * x.e + n.routed * pb);
  return shared;
}

void emit_allgather_forward(OpList& ops, std::int32_t layer, Phase phase, const MoeTokens& n) {
  const Dims& x = ops.dims();
  const std::int64_t pb = probs_bytes(x);
  const std::int64_t g = n.gathered;
  const std::int64_t rows = n.expert_rows();
  if (x.etp * x.ep > 1) {
    const CommGroup group = CommGroup::kExpertTensorExpert;
    const auto map = ops.expert_collective("moe_gather_routing_map", CollectiveKind::kAllGather,
                                           group, layer, phase, g * x.experts);
    const auto probs = ops.expert_collective("moe_gather_probs", CollectiveKind::kAllGather,
                                             group, layer, phase, g * x.experts * pb);
    const auto tokens = ops.expert_collective("moe_gather_tokens", CollectiveKind::kAllGather,
                                              group, layer, phase, g * x.h * x.e);
    ops.wait(map);
    ops.wait(probs);
    ops.wait(tokens);
  }
  ops.memory("moe_permute", layer, phase,
             rows * x.h * x.e * 2 + g * n.local_experts * (1 + pb) + rows * pb);
  emit_experts_forward(ops, layer, phase, n);
  ops.memory("moe_unpermute", layer, phase, rows * x.h * x.e + g * x.h * pb);
  if (x.etp * x.ep > 1) {
    ops.wait(ops.expert_collective("moe_reduce_scatter", CollectiveKind::kReduceScatter,
                                   CommGroup::kExpertTensorExpert, layer, phase, g * x.h * pb));
  }
}

void emit_allgather_backward(OpList& ops, std::int32_t layer, const MoeTokens& n) {
  const Dims& x = ops.dims();
  const Phase ph = Phase::kBackwardInput;
  const std::int64_t pb = probs_bytes(x);
  const std::int64_t g = n.gathered;
  const std::int64_t rows = n.expert_rows();
  const CommGroup group = CommGroup::kExpertTensorExpert;
  if (x.etp * x.ep > 1) {
    ops.wait(ops.expert_collective("moe_reduce_scatter_bwd", CollectiveKind::kAllGather, group,
                                   layer, ph, g * x.h * pb));
  }
  ops.memory("moe_unpermute_bwd", layer, ph, g * x.h * pb + rows * x.h * x.e);
  emit_experts_backward(ops, layer, n);
  ops.memory("moe_permute_bwd", layer, ph, rows * x.h * x.e + g * x.h * x.e);
  if (x.etp * x.ep > 1) {
    const auto tokens = ops.expert_collective("moe_gather_tokens_bwd",
                                              CollectiveKind::kReduceScatter, group, layer, ph,
                                              g * x.h * x.e);
    const auto probs = ops.expert_collective("moe_gather_probs_bwd",
                                             CollectiveKind::kReduceScatter, group, layer, ph,
                                             g * x.experts * pb);
    ops.wait(tokens);
    ops.wait(probs);
  }
}

}  // namespace

void emit_moe_forward(OpList& ops, std::int32_t layer, Phase phase) {
  const Dims& x = ops.dims();
  const MoeTokens n = moe_tokens(x);
  ops.norm("ln2", layer, phase, norm_forward_bytes(x, n.tokens));
  // By default the shared experts run before the router; overlapped, the dispatcher runs
  // them (transformer_config.py, moe_shared_expert_intermediate_size's docstring).
  if (!x.shared_overlap) emit_shared_forward(ops, layer, phase);
  emit_router_forward(ops, layer, phase, n);
  OpList::Waits shared;
  if (x.dispatcher == MoeDispatcher::kAllToAll) {
    shared = emit_alltoall_forward(ops, layer, phase, n);
  } else if (x.dispatcher == MoeDispatcher::kFlex) {
    shared = emit_flex_forward(ops, layer, phase, n);
  } else {
    emit_allgather_forward(ops, layer, phase, n);
  }
  // postprocess: output + shared_expert_output (get_output: the current stream waits for the
  // shared experts' stream).
  ops.wait(shared);
  if (x.shared_f > 0) ops.memory("moe_shared_add", layer, phase, n.tokens * x.h * 3 * x.e);
}

void emit_moe_backward(OpList& ops, std::int32_t layer) {
  const Dims& x = ops.dims();
  const MoeTokens n = moe_tokens(x);
  OpList::Waits shared;
  if (x.dispatcher == MoeDispatcher::kAllToAll) {
    shared = emit_alltoall_backward(ops, layer, n);
  } else if (x.dispatcher == MoeDispatcher::kFlex) {
    shared = emit_flex_backward(ops, layer, n);
  } else {
    emit_allgather_backward(ops, layer, n);
  }
  emit_router_backward(ops, layer, n);
  if (!x.shared_overlap) emit_shared_backward(ops, layer);
  ops.wait(shared);
  // The norm's output gradient sums the routed path's, the router's (and the shared
  // experts'); then the norm's own backward and the residual branch's gradient.
  ops.memory("moe_input_grad_add", layer, Phase::kBackwardInput,
             n.tokens * x.h * 3 * x.e * (x.shared_f > 0 ? 2 : 1));
  ops.norm("ln2_bwd", layer, Phase::kBackwardInput, norm_backward_bytes(x, n.tokens),
           n.tokens * x.h * 3 * x.e);
}

MoeParameters moe_mlp_parameters(const Dims& x) {
  MoeParameters p;
  p.dense = x.h * x.experts + (x.bias ? x.experts : 0);
  if (x.shared_f > 0) p.dense += x.h * x.shared_fc1_n() + x.shared_ffn_n() * x.h;
  p.experts = x.local_experts() * (x.h * x.expert_fc1_n() + x.expert_ffn_n() * x.h +
                                   (x.bias ? x.expert_fc1_n() + x.h : 0));
  return p;
}

double moe_mlp_stored_bytes(const Dims& x) {
  const MoeTokens n = moe_tokens(x);
  const auto d = [](std::int64_t v) { return static_cast<double>(v); };
  const double e = d(x.e);
  const double pb = d(probs_bytes(x));
  const double rows = d(n.expert_rows());
  // The router's probabilities (softmax output kept for its backward); the experts' fc1
  // input, activation input and fc2 input, and the rows' probabilities.
  double bytes = d(n.tokens * x.experts) * pb +
                 (x.fp8 ? fp8_expert_stored_bytes(x, n)
                        : rows * (d(x.h + x.expert_fc1_n() + x.expert_ffn_n()) * e + pb));
  // Quick-GEGLU's clamps keep their input (FC1's output) for clamp_backward, beside the
  // concatenated clamped halves the fused kernel keeps.
  if (x.clamp_glu) bytes += rows * d(x.expert_fc1_n()) * e;
  // Squared ReLU's probability scaling (a PyTorch mul) keeps the activation's output for the
  // probabilities' gradient (emit_squared_relu_forward).
  if (x.squared_relu && !x.fp8) bytes += rows * d(x.expert_ffn_n()) * e;
  // The shared experts: activation input and fc2 input (their fc1 input is the norm's output,
  // kept sequence-sharded like the dense MLP's).
  if (x.shared_f > 0) bytes += d(x.tokens) * d(x.shared_fc1_n() + x.shared_ffn_n()) * e;
  return bytes;
}

}  // namespace stepsim::detail
