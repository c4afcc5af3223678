#pragma once
// StagePlan: what each pipeline rank runs, as op templates per model chunk and micro-batch.
// The simulator stamps these templates once per (micro-batch, chunk) action of a schedule.

#include <cstdint>
#include <vector>

#include "stepsim/ops/ops.hpp"

namespace stepsim {

/// One model chunk (virtual stage) of one pipeline rank, for one micro-batch.
struct ChunkPlan {
  std::int32_t stage = 0;        ///< pipeline rank
  std::int32_t chunk = 0;        ///< model chunk on that rank (0 without interleaving)
  std::int32_t first_layer = 0;  ///< global index of its first transformer layer
  std::int32_t num_layers = 0;
  bool has_embedding = false;  ///< first virtual stage: input embedding
  bool has_loss = false;       ///< last virtual stage: output layer and cross-entropy

  std::vector<Op> forward;   ///< one micro-batch's forward
  std::vector<Op> backward;  ///< recompute (Phase::kRecompute) first, then dgrad/wgrad ops

  /// Activation tensor sent to the next virtual stage ([s/t or s, b, h] in params dtype).
  std::int64_t p2p_bytes = 0;
  /// Memory held from the end of this chunk's forward until the end of its backward.
  std::int64_t stored_activation_bytes = 0;
  /// Extra memory re-materialised by recompute at the start of backward, freed at its end.
  std::int64_t recompute_activation_bytes = 0;
  /// Ops that reduce this chunk's gradients over data parallelism (launched after the
  /// chunk's last backward with overlap_grad_reduce, else at the end of the step).
  std::vector<Op> grad_sync;
  /// Ops that gather this chunk's parameters in the forward of the next step (Apex
  /// DistributedFusedAdam's per-chunk groups, dispatched one chunk ahead); empty with
  /// Megatron-Core's distributed optimizer, whose gather is the stage's dp_param_all_gather
  /// (StagePlan::step_ops) cut by chunk and bucket.
  std::vector<Op> param_gather;
  std::int64_t parameters = 0;  ///< parameters held by this chunk on this rank

  /// defer_embedding_wgrad_compute (the last virtual stage, p > 1): the backward of a
  /// micro-batch whose output-layer weight gradient is deferred (Megatron's
  /// LinearWithGradAccumulationAndAsyncCommunication with wgrad_compute false: no all-gather
  /// of the input, no logits_wgrad), and the work each such micro-batch leaves for
  /// drain_embedding_wgrad_compute at the end of the stage's backward: the input all-gather
  /// (with SP) and the wgrad GEMM. Empty otherwise.
  std::vector<Op> backward_wgrad_deferred;
  std::vector<Op> deferred_wgrad;
  /// Held by each deferred micro-batch until the drain: the output layer's input
  /// (embedding_activation_buffer) and the logits gradient (grad_output_buffer).
  std::int64_t deferred_wgrad_bytes = 0;

  bool operator==(const ChunkPlan&) const = default;
};

/// Everything one pipeline rank (one representative TP rank of it) does in a step.
struct StagePlan {
  std::int32_t stage = 0;
  std::vector<ChunkPlan> chunks;  ///< index = chunk id
  /// After all gradients are reduced: embedding-group gradient all-reduce (tied embeddings,
  /// p > 1), optimizer step, distributed-optimizer parameter all-gather.
  std::vector<Op> step_ops;
  std::int64_t parameters = 0;    ///< parameters on this rank (sum over chunks)
  std::int64_t static_bytes = 0;  ///< weights + gradients + optimizer states on this rank

  bool operator==(const StagePlan&) const = default;
};

struct WorkloadPlan {
  std::vector<StagePlan> stages;  ///< index = pipeline rank
  bool operator==(const WorkloadPlan&) const = default;
};

}  // namespace stepsim
