#pragma once
// Sharded data parallelism inside a chunk's op lists: Megatron-FSDP's per-unit parameter
// all-gathers (prefetched one unit ahead into a double buffer) and gradient reduce-scatters
// (megatron/core/distributed/fsdp/src/megatron_fsdp/megatron_fsdp.py: _pre_forward_param_unshard,
// _pre_backward_param_unshard, _process_post_backward_gradients; the schedule of
// fsdp/src/docs/runtime_schedule.md), and torch FSDP2's (fully_shard per layer). Private to
// stepsim_plan.

#include <cstdint>
#include <optional>
#include <vector>

#include "stepsim/ops/op_list.hpp"

namespace stepsim::detail {

/// What one micro-batch of a chunk communicates for FSDP. Bytes are nccl-tests sizes: the
/// gathered output and the unscattered input, each unit padded to a multiple of the group.
struct FsdpChunk {
  CollectiveOp group;                 ///< the data-parallel group (kind and bytes unset)
  std::int64_t unit_gather_bytes = 0;  ///< one transformer layer's parameters, 16-bit
  std::int64_t unit_reduce_bytes = 0;  ///< its gradients, in the reduction dtype
  std::int64_t root_gather_bytes = 0;  ///< embedding, final norm, output layer
  std::int64_t root_reduce_bytes = 0;
  bool gather = false;             ///< parameters sharded: gathered in every micro-batch
  bool regather_backward = false;  ///< resharded after forward: gathered again for backward
  bool reduce_every_microbatch = false;  ///< gradients sharded: reduced in every backward
};

/// The chunk's FSDP traffic, or nullopt when the job reduces gradients once per step (no
/// FSDP, or Megatron-FSDP's optim strategy: Megatron's distributed optimizer path).
std::optional<FsdpChunk> fsdp_chunk(const Workload& w, const CollectiveOp& dp_group);

/// Issues the gathers of one op list in the order its layers are first used (forward order,
/// or backward order with recompute), each prefetched while the unit before it computes.
class FsdpGathers {
 public:
  FsdpGathers(const FsdpChunk& f, Phase phase, std::vector<std::int32_t> order);
  /// Issues the first unit's gather now, with no wait (at the list's start: the root's
  /// prefetch in forward, beside the output layer's backward in backward).
  void prime(OpList& ops);
  /// Before layer `layer`'s first op of the list: its gather waited for, the next one issued.
  void before(OpList& ops, std::int32_t layer);

 private:
  std::int32_t issue(OpList& ops, std::size_t k);
  const FsdpChunk& f_;
  Phase phase_;
  std::vector<std::int32_t> order_;
  std::vector<std::int32_t> issued_;  ///< op index per position of order_, -1 not yet
  std::size_t next_ = 0;              ///< position of the next layer to be used
};

/// The root module's gather, before the chunk's first op (its parameters stay gathered to the
/// end of the backward).
void emit_fsdp_root_gather(OpList& ops, const FsdpChunk& f);
/// A unit's gradient reduce-scatter after its backward (layer -1: the root's, at the end).
void emit_fsdp_reduce(OpList& ops, const FsdpChunk& f, std::int32_t layer);

}  // namespace stepsim::detail
