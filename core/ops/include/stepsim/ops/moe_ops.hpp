#pragma once
// The MLP half of a Megatron-Core MoE layer (megatron/core/transformer/moe/: moe_layer.py,
// router.py, token_dispatcher.py, experts.py, shared_experts.py) per rank, in the order it
// runs, in place of the dense MLP on the layers moe_layer_freq marks. Internal to stepsim_core.

#include <cstdint>

#include "stepsim/ops/op_list.hpp"

namespace stepsim::detail {

/// Per-rank token counts of one MoE layer for one micro-batch. Balanced routing: every expert
/// gets tokens * topk / num_experts of each source rank's tokens. With training.moe_load the
/// EP ranks receive different counts (moe_ep_rank_rows); an all-to-all waits for the most
/// loaded rank, so its buffer is the largest any rank of the group sends or receives.
struct MoeTokens {
  std::int64_t tokens = 0;      ///< tokens entering the layer on this rank (sequence-parallel)
  std::int64_t routed = 0;      ///< rows of the permuted buffer a rank sends (all-to-all)
  std::int64_t received = 0;    ///< rows this EP rank receives for its local experts (= routed
                                ///< when balanced)
  std::int64_t a2a_rows = 0;    ///< the all-to-all's buffer: max over the group's ranks of the
                                ///< rows sent and received
  std::int64_t gathered = 0;    ///< allgather dispatcher: tokens of the whole expert TP x EP group
  std::int64_t per_expert = 0;  ///< rows each local expert's GEMMs run (m; their mean when the
                                ///< local experts' loads differ)
  std::int64_t expert_rows() const;  ///< rows of all local experts together
  std::int64_t local_experts = 0;
};

/// The counts of EP rank `ep_rank`; -1: the most loaded EP rank, the one the representative
/// rank prices (every all-to-all, and the combine after the experts, wait for it).
MoeTokens moe_tokens(const Dims& x, std::int64_t ep_rank = -1);

/// Bytes of one routing probability (the router's dtype).
std::int64_t probs_bytes(const Dims& x);

/// The local experts' forward (fc1, the activation scaled by each row's probability, fc2) and
/// backward, on the rows of `n`.
void emit_experts_forward(OpList& ops, std::int32_t layer, Phase phase, const MoeTokens& n);
void emit_experts_backward(OpList& ops, std::int32_t layer, const MoeTokens& n);

/// From the pre-MLP norm through the shared experts, the router, the dispatch, the local
/// experts and the combine to the MoE layer's output (the caller adds the bias-dropout-add).
void emit_moe_forward(OpList& ops, std::int32_t layer, Phase phase);

/// Backward of emit_moe_forward, from the combine's gradient down to the pre-MLP norm.
void emit_moe_backward(OpList& ops, std::int32_t layer);

/// The shared experts (moe_shared_ops.cpp). Not overlapped: the whole MLP on the current
/// stream, forward (before the router) and backward.
void emit_shared_forward(OpList& ops, std::int32_t layer, Phase phase);
void emit_shared_backward(OpList& ops, std::int32_t layer);

/// Overlapped (Dims::shared_overlap), the pieces the token dispatcher interleaves with its
/// own steps. Forward: the sequence-parallel all-gather (its index, -1 without SP); fc1 and
/// the activation on the side stream after `gathered`; fc2 and its reduce-scatter on the
/// side stream (returns what get_output() waits for).
std::int32_t emit_shared_pre_forward_comm(OpList& ops, std::int32_t layer, Phase phase);
void emit_shared_fc1_side(OpList& ops, std::int32_t layer, Phase phase, std::int32_t gathered);
OpList::Waits emit_shared_fc2_side(OpList& ops, std::int32_t layer, Phase phase);
/// Backward: the output gradient's all-gather (-1 without SP), issued first; fc2's dgrad and
/// wgrad on the side stream after it; the activation's and fc1's backward on the side stream
/// (returns the input gradient's reduction, which the MoE input's gradient sum waits for).
std::int32_t emit_shared_output_grad_comm(OpList& ops, std::int32_t layer);
void emit_shared_fc2_backward_side(OpList& ops, std::int32_t layer, std::int32_t gathered);
OpList::Waits emit_shared_fc1_backward_side(OpList& ops, std::int32_t layer);

/// Parameters of one MoE layer's MLP half on one rank: router (replicated), shared experts
/// (TP-sharded) and the local experts (EP x ETP-sharded); `experts` is the latter alone.
struct MoeParameters {
  std::int64_t dense = 0;    ///< router and shared experts: reduced over data parallelism
  std::int64_t experts = 0;  ///< the local routed experts: reduced over expert data parallelism
};
MoeParameters moe_mlp_parameters(const Dims& x);

/// Activation bytes one MoE layer's MLP half keeps for backward (one micro-batch, one rank).
double moe_mlp_stored_bytes(const Dims& x);

}  // namespace stepsim::detail
