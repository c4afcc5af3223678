#pragma once
// Megatron-Core's flex token dispatcher with the DeepEP backend (token_dispatcher.py
// MoEFlexTokenDispatcher and _DeepepManager, fused_a2a.py), per rank. Internal to stepsim_core.

#include <cstdint>

#include "stepsim/ops/moe_ops.hpp"

namespace stepsim::detail {

/// What one DeepEP dispatch moves per rank under balanced (uniform top-k) routing, as
/// expectations over a token's choice of experts.
struct DeepEpTraffic {
  double ranks_per_token = 0;  ///< distinct destination GPUs of a token (expert TP copies in)
  double nodes_per_token = 0;  ///< distinct destination nodes of a token, its own included
  std::int64_t nodes = 1;      ///< nodes the expert TP x EP group spans
  std::int64_t group = 1;      ///< GPUs of the expert TP x EP group (DeepEP's group)
};
DeepEpTraffic deepep_traffic(const Dims& x);

/// Bytes of one token in DeepEP's internode buffers (csrc/kernels/legacy/internode.cu
/// get_num_bytes_per_token: the bf16 hidden vector, SourceMeta, top-k indices and weights,
/// aligned to 16 bytes), for `topk` indices and `weights` weights (0 when not sent).
std::int64_t deepep_token_bytes(std::int64_t hidden, std::int64_t topk, std::int64_t weights,
                                bool source_meta);

/// The bytes DeepEP's Buffer allocates per GPU for the flex dispatcher of `w` (0 without it):
/// NVLink plus RDMA buffers of deep_ep/buffers/legacy.py's configs for the expert TP x EP group
/// (get_dispatch_config / get_combine_config: the same receive tokens per channel in both)
/// sized by csrc/legacy/config.hpp get_nvl_buffer_size_hint and get_rdma_buffer_size_hint, as
/// Megatron's fused_a2a.get_buffer asks for them (hidden bytes: h * max(element size, 2)).
std::int64_t deepep_buffer_bytes(const Workload& w);

/// From the router's output through DeepEP's dispatch, the local experts and DeepEP's combine
/// (moe_ops.cpp emits the router and the rest of the layer). Returns what the shared experts'
/// output leaves to wait for (overlapped).
OpList::Waits emit_flex_forward(OpList& ops, std::int32_t layer, Phase phase, const MoeTokens& n);
OpList::Waits emit_flex_backward(OpList& ops, std::int32_t layer, const MoeTokens& n);

}  // namespace stepsim::detail
