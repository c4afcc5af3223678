#pragma once
// Megatron's data-parallel gradient buckets (megatron/core/distributed/
// distributed_data_parallel.py and param_and_grad_buffer.py): which parameters of a model
// chunk are reduced together, where in the chunk's backward each bucket's gradients become
// final, and where in a pipeline rank's program each bucket's reduction is issued. The graph
// builder dispatches one collective per bucket there, and the validator's executor posts
// them at the same places.

#include <cstdint>
#include <vector>

#include "stepsim/ops/plan.hpp"
#include "stepsim/base/result.hpp"
#include "stepsim/config/scenario.hpp"
#include "stepsim/schedule/schedule.hpp"

namespace stepsim::sim {

/// One bucket of a model chunk's gradient buffer.
struct DdpBucket {
  std::int64_t parameters = 0;
  /// Index into ChunkPlan::backward of the op whose end makes the bucket's last gradient
  /// final: Megatron's backward hook registers that gradient ready there.
  std::int32_t ready_op = -1;
  /// Index into ChunkPlan::forward of the first op that uses one of its parameters: the
  /// forward pre-hook waits there for the bucket's parameter all-gather
  /// (overlap_param_gather).
  std::int32_t first_use_op = -1;
};

/// The bucket size, in parameters, of the DDP instance that wraps `chunk` of pipeline rank
/// `stage`, which holds `stage_parameters` parameters over all its chunks; 0 means one bucket
/// for the whole chunk. Megatron (training.py resolve_ddp_bucket_size): with
/// `--ddp-num-buckets` n, the rank's parameters // n; else `--ddp-bucket-size`, default
/// max(40M, 1M * dp * cp) (the data-parallel group with context parallelism); no bucketing
/// without overlap_grad_reduce, on pipeline ranks after the
/// first, or for model chunks after the first (per_chunk_bucket_sizes). A size under one
/// parameter (n above the parameters) is 1: one bucket per module here, where Megatron has
/// one per parameter.
std::int64_t ddp_bucket_size(const TrainingConfig& t, std::int64_t stage_parameters,
                             std::int32_t stage, std::int32_t chunk);

/// The buckets of `chunk`, in the order Megatron creates them (and dispatches their
/// reductions): backward order, the one nearest the output first. Parameters are walked in
/// the order their gradients become final in `chunk.backward`, a module (a linear's weight
/// and bias, a norm, an embedding) at a time, and a bucket closes once it holds at least
/// `bucket_size` parameters (_compute_default_per_buffer_param_layout). Megatron walks
/// single parameters in reverse registration order; the two differ by where a module's
/// bias falls (at most one bias vector) and by the order of a layer's two attention
/// linears, neither of which moves a bucket's ready point by more than one op.
/// Fails (a plan bug) when the modules found in the backward ops do not add up to
/// `chunk.parameters`, or one of them has no op in the forward.
Result<std::vector<DdpBucket>> ddp_buckets(const Workload& w, const ChunkPlan& chunk,
                                           std::int64_t bucket_size);

/// total * part / whole (part <= whole) without overflowing 64 bits: exact whenever the
/// product fits; past that (a 400B model's parameter gather times a chunk's parameters) the
/// quotient's remainder is scaled in long double.
std::int64_t scaled_share(std::int64_t total, std::int64_t part, std::int64_t whole);

/// Bucket `b`'s share of a chunk-wide collective of `total` bytes over the chunk's
/// `parameters`: in proportion to its parameters, the last bucket taking the remainder.
std::int64_t bucket_bytes(std::int64_t total, const std::vector<DdpBucket>& buckets, std::size_t b,
                          std::int64_t parameters);

/// Where Megatron issues one bucket's gradient reduction in a pipeline rank's program.
struct GradSyncLaunch {
  std::int32_t chunk = 0;   ///< model chunk (virtual stage of this rank)
  std::int32_t bucket = 0;  ///< index into the chunk's buckets
  /// The backward action after (or inside) which it is issued: its ordinal among the rank's
  /// backward actions in program order; -1: after the whole program.
  std::int32_t backward = -1;
  /// Inside that backward: once its op `after_op` (index into ChunkPlan::backward) ends,
  /// the bucket's last gradient is final (its backward hook fires); -1: after the action.
  std::int32_t after_op = -1;
  bool operator==(const GradSyncLaunch&) const = default;
};

/// The gradient reductions of `program`'s rank, in the order Megatron issues them (and the
/// DP stream runs them): `buckets[c]` are chunk c's buckets (ddp_buckets), `virtual_size`
/// the chunks per rank. Without `overlap` (overlap_grad_reduce off, or a serialised
/// execution) every chunk's buckets after the program, in chunk order (finalize_model_grads).
/// With it: interleaved, a chunk's after the backward that is its last, counted with the
/// rank's lag (grad_sync_virtual_microbatch_id = k - rank in schedules.py), the others after
/// the program; without interleaving, on the first pipeline rank each bucket as soon as its
/// last gradient is final inside the chunk's last backward, on the other ranks (one bucket:
/// Megatron does not bucket them) after the program.
std::vector<GradSyncLaunch> grad_sync_launches(const RankProgram& program,
                                               std::int32_t virtual_size, bool overlap,
                                               const std::vector<std::vector<DdpBucket>>& buckets);

}  // namespace stepsim::sim
