#pragma once
// Apex's DistributedFusedAdam as NeMo drives it: its buckets, groups and step.
// Details: docs/models.md, "Apex DistributedFusedAdam".

#include <cstdint>
#include <vector>

#include "stepsim/ops/ops.hpp"
#include "stepsim/ops/plan.hpp"
#include "stepsim/config/scenario.hpp"
#include "stepsim/layout/workload_dims.hpp"

namespace stepsim::detail {

/// One pipeline rank's DistributedFusedAdam buckets.
struct DfaLayout {
  std::int64_t shard = 0;                  ///< elements of each bucket on each rank
  std::int64_t bucket = 0;                 ///< elements of every bucket: shard x dp_cp
  std::vector<std::int64_t> fp8_elements;  ///< per model chunk: its FP8 weights
  std::vector<std::int64_t> fp8_buckets;   ///< per model chunk: buckets of them
  std::int64_t normal_elements = 0;        ///< the other bf16 parameters (the first chunk's group)
  std::int64_t normal_buckets = 0;
  std::int64_t embedding_elements = 0;  ///< fp32-gradient parameters (_with_fp32_optimizer)
  std::int64_t embedding_buckets = 0;
  /// Sequence-parallel parameters (norms, row-parallel biases), all-reduced over TP before the
  /// first chunk's group is reduce-scattered.
  std::int64_t sp_elements = 0;
  std::int64_t layers = 0;  ///< transformer layers on the rank
  std::int64_t buckets() const;
};

DfaLayout dfa_layout(const Workload& w, const Dims& x, std::int32_t stage);

/// Chunk `chunk`'s gradient reduce-scatters (launched where Megatron-Core's interleaved
/// schedule calls grad_sync_func) and parameter all-gathers (in the forward): one per bucket
/// of its FP8 weights; none for the first chunk, whose group the step ops carry.
void add_dfa_chunk_ops(ChunkPlan& chunk, const DfaLayout& d, const CollectiveOp& dp_group);

/// The step: the sequence-parallel gradients' TP all-reduce, the tied embeddings' fp32
/// all-reduce, the first chunk's group reduce-scattered, the grad norm, Adam and the FP8 casts
/// of the first group, its all-gather, Adam and casts of the rest, the amax all-reduce behind
/// the gather, the scale update. Returns the index of the last op.
std::int32_t append_dfa_step_ops(std::vector<Op>& ops, const Dims& x, const DfaLayout& d,
                                 const CollectiveOp& dp_group, const CollectiveOp& tp_group,
                                 const CollectiveOp* embedding_group,
                                 const CollectiveOp& grad_stats);

}  // namespace stepsim::detail
