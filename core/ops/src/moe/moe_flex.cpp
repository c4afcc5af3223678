// Megatron-Core's flex token dispatcher with DeepEP, per rank.
// Details: docs/models.md, "MoE flex dispatcher (DeepEP)".

#include "stepsim/ops/moe_flex.hpp"

#include <algorithm>
#include <cmath>

#include "stepsim/ops/layer_ops.hpp"

namespace stepsim::detail {

namespace {

/// C(total - unit, k) / C(total, k): the chance that k distinct experts drawn uniformly from
/// `total` all miss a set of `unit` of them.
double miss(std::int64_t total, std::int64_t unit, std::int64_t k) {
  double p = 1;
  for (std::int64_t i = 0; i < k; ++i) {
    const double num = static_cast<double>(total - unit - i);
    if (num <= 0) return 0;
    p *= num / static_cast<double>(total - i);
  }
  return p;
}

/// C(n, r) in double (small arguments: groups of a router).
double binomial(std::int64_t n, std::int64_t r) {
  if (r < 0 || r > n) return 0;
  double c = 1;
  for (std::int64_t i = 1; i <= r; ++i) {
    c *= static_cast<double>(n - r + i) / static_cast<double>(i);
  }
  return c;
}

/// The chance a token's top-k experts include one of a set of `unit` experts (an EP rank's or
/// a node's, consecutive expert indices), under uniform routing: top-k of all experts, or
/// Megatron's group-limited top-k (router.py group_limited_topk: group_topk of num_groups
/// groups of consecutive experts, then top-k inside them), each choice equally likely.
double hit(const Dims& x, std::int64_t unit) {
  const std::int64_t e = x.experts;
  const std::int64_t k = x.topk;
  const std::int64_t groups = x.router_groups;
  const std::int64_t pick = x.router_group_topk;
  if (groups <= 0 || pick <= 0 || pick >= groups || e % groups != 0) return 1 - miss(e, unit, k);
  const std::int64_t size = e / groups;     // experts per group
  const std::int64_t chosen = pick * size;  // experts a token may take
  if (unit % size == 0) {
    // The unit is whole groups: j of its groups among the chosen (hypergeometric), then the
    // top-k among the chosen groups' experts.
    const std::int64_t own = unit / size;
    double p = 0;
    for (std::int64_t j = 1; j <= std::min(own, pick); ++j) {
      const double pj =
          binomial(own, j) * binomial(groups - own, pick - j) / binomial(groups, pick);
      p += pj * (1 - miss(chosen, j * size, k));
    }
    return p;
  }
  if (size % unit == 0) {
    // The unit inside one group: that group chosen, then one of its experts taken.
    return static_cast<double>(pick) / static_cast<double>(groups) * (1 - miss(chosen, unit, k));
  }
  // Groups that straddle units: the ungrouped expectation (an upper bound on the spread).
  return 1 - miss(e, unit, k);
}

std::int64_t align16(std::int64_t v) { return (v + 15) / 16 * 16; }

}  // namespace

DeepEpTraffic deepep_traffic(const Dims& x) {
  DeepEpTraffic t;
  t.group = x.etp * x.ep;
  t.nodes = std::max<std::int64_t>(1, x.tp_ep_nodes);
  // A token goes to every expert TP rank of each EP rank holding one of its experts.
  t.ranks_per_token =
      static_cast<double>(x.ep) * hit(x, x.experts / x.ep) * static_cast<double>(x.etp);
  // Nodes hold consecutive EP ranks (the group is consecutive global ranks, 8 per node).
  t.nodes_per_token =
      t.nodes <= 1 ? 1.0 : static_cast<double>(t.nodes) * hit(x, x.experts / t.nodes);
  return t;
}

std::int64_t deepep_token_bytes(std::int64_t hidden, std::int64_t topk, std::int64_t weights,
                                bool source_meta) {
  // hidden * sizeof(bf16) + sizeof(SourceMeta) (two ints) + topk * sizeof(int) + weights *
  // sizeof(float), aligned to sizeof(int4).
  return align16(hidden * 2 + (source_meta ? 8 : 0) + topk * 4 + weights * 4);
}

std::int64_t deepep_buffer_bytes(const Workload& w) {
  const TrainingConfig& t = w.training;
  if (!w.model.moe() || t.moe_token_dispatcher_type != MoeDispatcher::kFlex) return 0;
  const std::int64_t group = t.expert_tensor_parallel() * t.expert_model_parallel_size;
  if (group <= 1) return 0;
  // num_max_nvl_chunked_recv_tokens per group size (dispatch and combine tables agree);
  // num_max_rdma_chunked_recv_tokens is 128 in every row.
  std::int64_t nvl_recv = 256;
  if (group >= 144) {
    nvl_recv = 720;
  } else if (group >= 128) {
    nvl_recv = 560;
  } else if (group >= 96) {
    nvl_recv = 480;
  } else if (group >= 16) {
    nvl_recv = 288;
  }
  constexpr std::int64_t kRdmaRecv = 128, kNvlPeers = 8;
  // kNumMaxTopK indices (int64 topk_idx_t) and weights, kNumMaxScales fp32 scales, SourceMeta.
  constexpr std::int64_t kPerTokenMeta = 8 + 128 * 8 + 128 * 4 + 128 * 4;
  const std::int64_t hidden_bytes = w.model.hidden_size * 2;
  const std::int64_t channels = t.deepep_num_sms() / 2;
  const std::int64_t rdma_ranks = std::max<std::int64_t>(group / kNvlPeers, 1);
  const std::int64_t nvl_ranks = std::min(group, kNvlPeers);
  const auto align = [](std::int64_t v) { return (v + 127) / 128 * 128; };
  const std::int64_t nvl = align(channels * nvl_ranks * (2 * rdma_ranks + 3) * 4 +
                                 channels * nvl_ranks * nvl_recv * (hidden_bytes + kPerTokenMeta));
  if (group <= kNvlPeers) return nvl;
  const std::int64_t rdma =
      align(channels * rdma_ranks * (kNvlPeers * 2 + 2) * 2 * 4 +
            channels * rdma_ranks * kRdmaRecv * (hidden_bytes + kPerTokenMeta + 16) * 2);
  return nvl + rdma;
}

namespace {

/// One DeepEP kernel on the TP communication stream after the last compute, of `token_bytes`
/// per token over the expected destinations of the representative rank's tokens.
std::int32_t deepep_op(OpList& ops, std::string_view name, CollectiveKind kind, std::int32_t layer,
                       Phase phase, const MoeTokens& n, std::int64_t token_bytes) {
  const Dims& x = ops.dims();
  const DeepEpTraffic t = deepep_traffic(x);
  // Dropped tokens (a capacity factor) are masked from the indices; under moe_load the most
  // loaded rank's receive side sets the pace, as for the all-to-all.
  const double raw = static_cast<double>(n.tokens * x.topk);
  const double kept = raw > 0 ? std::min(1.0, static_cast<double>(n.routed) / raw) : 1.0;
  const double skew =
      n.routed > 0 ? static_cast<double>(n.a2a_rows) / static_cast<double>(n.routed) : 1.0;
  const double tokens = static_cast<double>(n.tokens) * kept * skew;
  const auto bytes = [&](double per_token) {
    return static_cast<std::int64_t>(
        std::llround(tokens * per_token * static_cast<double>(token_bytes)));
  };
  const double share =
      x.sm_count > x.deepep_sms && x.sm_count > 0
          ? static_cast<double>(x.sm_count - x.deepep_sms) / static_cast<double>(x.sm_count)
          : 1.0;
  return ops.collective(name, layer, phase, Stream::kTensorComm,
                        CollectiveOp{.kind = kind,
                                     .group = CommGroup::kExpertTensorExpert,
                                     .bytes = bytes(t.ranks_per_token),
                                     .group_size = t.group,
                                     .nodes_spanned = t.nodes,
                                     .nccl = false,
                                     .rdma_bytes = t.nodes > 1 ? bytes(t.nodes_per_token) : 0,
                                     .compute_share = share});
}

/// Rows DeepEP delivers to this rank: one per (source token, this GPU), the expectation.
std::int64_t received_rows(const Dims& x, const MoeTokens& n) {
  return std::llround(static_cast<double>(n.tokens) * deepep_traffic(x).ranks_per_token);
}

}  // namespace

OpList::Waits emit_flex_forward(OpList& ops, std::int32_t layer, Phase phase, const MoeTokens& n) {
  const Dims& x = ops.dims();
  const std::int64_t group_experts = x.experts * x.etp;  // num_experts' of the expanded map
  const std::int64_t topk = x.topk * x.etp;              // topk'
  const std::int64_t pb = probs_bytes(x);
  const std::int64_t recv = received_rows(x, n);
  const std::int64_t rows = n.expert_rows();
  const std::int64_t le = n.local_experts;
  // _initialize_metadata: the map (bool) and probs expanded into contiguous copies; topk over
  // the probs (values in the probs' dtype, int64 indices), cast to fp32 weights.
  ops.memory("moe_flex_preprocess", layer, phase,
             n.tokens * x.experts * (1 + pb) + n.tokens * group_experts * (1 + pb) * 2 +
                 n.tokens * topk * (pb + 8 + 4));
  const std::int32_t shared_input =
      x.shared_overlap ? emit_shared_pre_forward_comm(ops, layer, phase) : -1;
  // get_dispatch_layout: reads the indices, writes is_token_in_rank and the counts.
  ops.memory("moe_deepep_layout", layer, phase,
             n.tokens * topk * 8 + n.tokens * x.etp * x.ep + (x.etp * x.ep + group_experts) * 4);
  const std::int32_t dispatch =
      deepep_op(ops, "moe_deepep_dispatch", CollectiveKind::kDeepEpDispatch, layer, phase, n,
                deepep_token_bytes(x.h, topk, topk, true));
  if (x.shared_overlap) emit_shared_fc1_side(ops, layer, phase, shared_input);
  ops.wait(dispatch);
  // _indices_to_multihot: [recv, local experts] int64 map and fp32 probs, zeroed and
  // scattered; then Megatron's permute (unfused): the rows gathered in expert order with
  // their fp32 probs.
  ops.memory("moe_flex_multihot", layer, phase, recv * topk * (8 + 4) + recv * le * (8 + 4) * 2);
  ops.memory("moe_permute", layer, phase, (recv + rows) * x.h * x.e + rows * 4 + recv * le);
  emit_experts_forward(ops, layer, phase, n);
  // unpermute: the expert rows scattered back, summed per received token.
  ops.memory("moe_unpermute", layer, phase, (rows + recv) * x.h * x.e);
  const std::int32_t combine = deepep_op(ops, "moe_deepep_combine", CollectiveKind::kDeepEpCombine,
                                         layer, phase, n, deepep_token_bytes(x.h, 0, 0, false));
  OpList::Waits shared;
  if (x.shared_overlap) shared = emit_shared_fc2_side(ops, layer, phase);
  ops.wait(combine);
  return shared;
}

OpList::Waits emit_flex_backward(OpList& ops, std::int32_t layer, const MoeTokens& n) {
  const Dims& x = ops.dims();
  const Phase ph = Phase::kBackwardInput;
  const std::int64_t topk = x.topk * x.etp;
  const std::int64_t pb = probs_bytes(x);
  const std::int64_t recv = received_rows(x, n);
  const std::int64_t rows = n.expert_rows();
  const std::int32_t shared_grad = x.shared_overlap ? emit_shared_output_grad_comm(ops, layer) : -1;
  // FusedCombine.backward: a dispatch with the cached handle (the gradient rows, SourceMeta).
  const std::int32_t combine =
      deepep_op(ops, "moe_deepep_combine_bwd", CollectiveKind::kDeepEpDispatch, layer, ph, n,
                deepep_token_bytes(x.h, 0, 0, true));
  if (x.shared_overlap) emit_shared_fc2_backward_side(ops, layer, shared_grad);
  ops.wait(combine);
  ops.memory("moe_unpermute_bwd", layer, ph, (recv + rows) * x.h * x.e);
  emit_experts_backward(ops, layer, n);
  ops.memory("moe_permute_bwd", layer, ph, (rows + recv) * x.h * x.e + rows * 4 * 2);
  // FusedDispatch.backward: a combine of the rows' gradient and of the fp32 weights'.
  const std::int32_t dispatch =
      deepep_op(ops, "moe_deepep_dispatch_bwd", CollectiveKind::kDeepEpCombine, layer, ph, n,
                deepep_token_bytes(x.h, 0, topk, false));
  ops.wait(dispatch);
  OpList::Waits shared;
  if (x.shared_overlap) shared = emit_shared_fc1_backward_side(ops, layer);
  // The weights' gradient cast back to the probs' dtype and scattered into [tokens, experts].
  ops.memory("moe_flex_preprocess_bwd", layer, ph,
             n.tokens * topk * (4 + pb) + n.tokens * x.experts * x.etp * pb * 2);
  return shared;
}

}  // namespace stepsim::detail
