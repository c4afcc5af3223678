#pragma once
// Megatron-Core's EP communication overlap (overlap_moe_expert_parallel_comm): in the 1F1B
// steady state one micro-batch's forward and another's backward run as one combined step,
// layer by layer, so that the all-to-alls of one run on the communication stream while the
// other computes (megatron/core/pipeline_parallel/combined_1f1b.py,
// TransformerModelChunkSchedulePlan.run and TransformerLayerSchedulePlan.run in
// megatron/core/models/common/model_chunk_schedule_plan.py).

#include <cstdint>
#include <vector>

#include "stepsim/graph/chunk_template.hpp"
#include "stepsim/ops/ops.hpp"

namespace stepsim::sim {

/// A forward's and a backward's op lists merged in the order Megatron issues them.
struct PairedOps {
  std::vector<Op> ops;
  std::vector<std::int32_t> forward_at;   ///< index in `ops` of the forward's op k
  std::vector<std::int32_t> backward_at;  ///< index in `ops` of the backward's op k
};

/// Merges `forward` (layers in ascending order) and `backward` (descending) as
/// TransformerModelChunkSchedulePlan.run does: the forward's pre-process, the backward's
/// post-process (output layer), then forward layer i with backward layer n - 1 - i, each pair
/// as TransformerLayerSchedulePlan.run orders it:
///   comm stream:    combine_bwd | dispatch_fwd -> dispatch_bwd | combine_fwd
///   compute stream: pre_dispatch_fwd | mlp_bwd -> mlp_bwd_dw -> mlp_fwd | pre_dispatch_bwd
/// then the layers left unpaired (backward first), the forward's post-process and the
/// backward's pre-process. A layer's submodules are cut at its all-to-alls (pre_dispatch: up
/// to the dispatch all-to-all; mlp: between dispatch and combine). The all-to-alls of both
/// micro-batches share one communication stream, in that order. The combine's unpermute,
/// which Megatron runs on the communication stream, stays a compute kernel, at the end of the
/// pair (the compute stream does not wait for the combine before the backward's work).
/// With `delay_wgrad` (delay_wgrad_compute) the backward's weight-gradient kernels are split
/// off: the experts' (mlp.backward_dw) run after the dgrad, beside the dispatch backward,
/// which waits only for the dgrad; the attention's (pre_dispatch_computation.backward_dw) at
/// the end of the pair, and the next layer's combine backward does not wait for them.
PairedOps pair_ops(const std::vector<Op>& forward, const std::vector<Op>& backward,
                   bool delay_wgrad);

struct PairedTemplates {
  ChunkTemplate forward;   ///< the forward's ops, offsets from the pair's start
  ChunkTemplate backward;  ///< the backward's ops, likewise
};

/// Splits `merged` (time_ops of `paired.ops`) into the two actions' templates. Both start
/// and end with the pair (its ops at their offsets in it), so that the backward's stored
/// activations are freed as the forward's are stored (Megatron hands them over layer by
/// layer: the peak is within a layer's activations of this). FLOPs and recompute come from
/// the actions timed alone (the same kernels); the pair's exposed communication is the
/// forward's.
PairedTemplates split_pair(const PairedOps& paired, const ChunkTemplate& merged,
                           const ChunkTemplate& forward_alone,
                           const ChunkTemplate& backward_alone);

}  // namespace stepsim::sim
