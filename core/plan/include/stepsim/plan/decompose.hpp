#pragma once
// Workload decomposition: per (pipeline rank, model chunk), the ordered ops of one micro-batch on one representative TP rank.

#include <cstdint>
#include <vector>

#include "stepsim/ops/plan.hpp"
#include "stepsim/config/scenario.hpp"
#include "stepsim/layout/pipeline_split.hpp"

namespace stepsim {

/// The full plan: every rank, every chunk, step ops, static memory.
///
/// Conventions of the op lists (megatron/core/transformer, tensor_parallel/layers.py):
/// - GEMMs are C[m,n] = A[m,k] B[k,n] with m = tokens (s*b, all-gathered with SP): forward
///   "qkv_gemm" {s*b, (a+2g)d/t, h}, "proj_gemm" {s*b, h, ad/t}, "fc1_gemm" {s*b, f/t (2f/t
///   with SwiGLU), h}, "fc2_gemm" {s*b, h, f/t}, "logits_gemm" {s*b, V/t, h}; backward
///   "<x>_dgrad" (kBackwardInput) and "<x>_wgrad" (kBackwardWeight, m = output width).
///   Unfused attention: "attn_qk" {s, s, d, batch b*a/t}, "attn_softmax", "attn_dropout",
///   "attn_av" {s, d, s, batch}; flash attention: one "attn_flash" AttentionOp.
/// - Memory-bound ops carry bytes read + written ("ln1", "ln2", "attn_bda", "mlp_bda",
///   "bias_gelu"/"swiglu"/"squared_relu", "rope", "embedding_*", "cross_entropy", ... and "*_bwd").
/// - TP collectives are "tp_all_reduce", "tp_all_gather", "tp_reduce_scatter" on
///   Stream::kTensorComm. A collective waits (deps) for the compute op issued before it;
///   compute after Megatron's handle.wait() waits for the collective. In backward the
///   input-grad collective is issued after the dgrad GEMM and the wgrad GEMM runs meanwhile.
/// - Recompute (Phase::kRecompute) sits in `backward` where Megatron re-runs it: selective,
///   just before each layer's core attention backward; full, a checkpointed group's whole
///   forward before the group's backward (after an all-gather of its input when
///   distribute_saved_activations).
/// - `layer` is the global transformer layer index, -1 for embedding and output ops.
WorkloadPlan decompose(const Workload& w);

}  // namespace stepsim
