#pragma once
// Apex's DistributedFusedAdam as NeMo drives it (optim.name distributed_fused_adam, which
// NVIDIA's MLPerf Training GPT-3 175B job runs: training.optimizer_impl
// "apex_distributed_fused_adam"). Sources, read at the versions NVIDIA's MLPerf Training v4.1
// job (mlcommons/training_results_v4.1 b87b9e396f771345d4ef122ba33456304f15228d,
// NVIDIA/benchmarks/gpt3/implementations/eos_n64_ngc24.09_nemo/) builds:
// - NVIDIA/apex tag 24.09 (59b80ee8df79cec125794949327f29913c328746; the container's Apex, not
//   pinned by the Dockerfile), apex/contrib/optimizers/distributed_fused_adam.py ("A");
// - NVIDIA/NeMo 24.09-alpha.rc0 (4068955b5add5a52a493c10be12437de3f4ca361):
//   nemo/core/optim/distributed_adam.py ("N"), nemo/collections/nlp/models/language_modeling/
//   megatron_gpt_model.py ("NG") and megatron_base_model.py ("NB");
// - NVIDIA/Megatron-LM 24.09-alpha.rc0 (dd182053afc66a2195e018571537c8ce9f890df4),
//   megatron/core/pipeline_parallel/schedules.py ("MS").
// What it does differently from Megatron-Core's distributed optimizer:
// - Buckets (A 709-716, 1377-1446): every bucket holds shard x dp_cp elements, the shard
//   floor(bucket_cap_mb MiB / 2 bytes / dp_cp) rounded down to 64 elements; a parameter may
//   span two buckets; collectives and optimizer state are always a whole bucket (padding).
// - NeMo's buckets (NG configure_optimizers 572-651; A init_params_bucket 1223-1286; N
//   245-345): per model chunk, its FP8 weights only; every other parameter (biases, norms,
//   sequence-parallel ones, the embeddings) joins the first chunk's group, in bf16 buckets
//   (the embeddings, _with_fp32_optimizer, in fp32-gradient buckets). A chunk's buckets all
//   list all its parameters, so a chunk is reduced and gathered as one coalesced group.
// - Gradients (A 1838-1889; MS 791-799): accumulated in bf16 in the full-size buffer; a
//   chunk's group reduce-scattered (bf16, AVG) from Megatron-Core's grad_sync_func, where the
//   interleaved schedule calls it; the first chunk's group holds sequence-parallel parameters
//   (_disable_overlap_grad_sync), so it is reduce-scattered only in gradient clipping, after
//   the sequence-parallel gradients' TP all-reduce and the embeddings' all-reduce (NG
//   883-923), with the compute stream waiting (A 1741-1759).
// - Grad norm (N 496-524): multi_tensor_l2norm over the local shards, the squared norm summed
//   over the world; clipping inside the Adam kernel.
// - Step (A 2386-2425; N 598-713): Adam on the first chunk's group, its FP8 casts, its
//   all-gather launched (uint8 FP8 weights, bf16 others), Adam and casts of the rest beside
//   it, then the amax MAX all-reduce on the same communicator, which waits for that
//   all-gather. The other chunks' groups are gathered in the next forward, one chunk ahead
//   (A 1947-2047; MS 664-666, 719-729).
// - Memory (A 451-476, 1038-1118, 1852-1859): uint8 FP8 weights and bf16 gradients per padded
//   bucket element; fp32 master, exp_avg, exp_avg_sq and the reduce-scatter's output per shard
//   element of every bucket; the bf16 and fp32 groups' buffers start one bucket late (A
//   last_bucket_id's `while bucket_id > 0`, 1340-1353).

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
