#pragma once
// Ops of one Megatron transformer layer (megatron/core/transformer/transformer_layer.py with
// the local, non-Transformer-Engine spec: norms, bias-GeLU and bias-dropout-add are kernels of
// their own), per TP rank, in the order the layer runs them.
// Internal to stepsim_core.

#include <cstdint>

#include "stepsim/ops/op_list.hpp"

namespace stepsim::detail {

/// Byte traffic of the memory-bound kernels (bytes read + written), per element or token.
/// Activations are `e` bytes, dropout masks 1 byte, norm statistics and main grads fp32.
std::int64_t norm_forward_bytes(const Dims& x, std::int64_t tokens);
std::int64_t norm_backward_bytes(const Dims& x, std::int64_t tokens);

/// Forward of layer `layer` (global index): input norm, QKV, core attention, projection,
/// bias-dropout-add, MLP. `phase` is kForward, or kRecompute when re-run by full recompute.
void emit_layer_forward(OpList& ops, std::int32_t layer, Phase phase);

/// Backward of layer `layer`, from the MLP's bias-dropout-add down to the input norm. With
/// `selective_recompute` the core attention forward is re-done (kRecompute) just before the
/// core attention backward, as Megatron's checkpointed core attention does.
void emit_layer_backward(OpList& ops, std::int32_t layer, bool selective_recompute);

/// A transformer layer's two residual blocks, each from its norm through its
/// bias-dropout-add (forward) or back (backward): the attention block, and the MLP block (an
/// MoE layer's MLP where x.is_moe(layer)). A hybrid model's *, - and E layers are one each.
void emit_attention_block_forward(OpList& ops, std::int32_t layer, Phase phase);
void emit_mlp_block_forward(OpList& ops, std::int32_t layer, Phase phase);
void emit_attention_block_backward(OpList& ops, std::int32_t layer, bool selective_recompute);
void emit_mlp_block_backward(OpList& ops, std::int32_t layer);

/// A hybrid model's layer (mamba_ops.cpp): by its letter, a Mamba layer (MambaLayer) or one
/// of the blocks above.
void emit_hybrid_layer_forward(OpList& ops, std::int32_t layer, Phase phase);
void emit_hybrid_layer_backward(OpList& ops, std::int32_t layer, bool selective_recompute);

/// A Mamba layer's linears, as a transformer layer runs its own: in_proj is a
/// LayerNormColumnParallelLinear (the norm, the SP all-gather, the GEMM to `out_n` per-rank
/// outputs), out_proj a RowParallelLinear from `in_k` (the GEMM, the TP all-reduce or
/// reduce-scatter); their backward; the residual block's bias-dropout-add.
void emit_in_proj_forward(OpList& ops, std::string_view norm_name, std::string_view prefix,
                          std::string_view gemm_name, std::int32_t layer, Phase phase,
                          std::int64_t out_n);
void emit_out_proj_forward(OpList& ops, std::string_view gemm_name, std::int32_t layer,
                           Phase phase, std::int64_t in_k);
void emit_in_proj_backward(OpList& ops, std::string_view norm_name, std::string_view prefix,
                           std::string_view dgrad_name, std::string_view wgrad_name,
                           std::int32_t layer, std::int64_t out_n);
void emit_out_proj_backward(OpList& ops, std::string_view prefix, std::string_view dgrad_name,
                            std::string_view wgrad_name, std::int32_t layer, std::int64_t in_k);
void emit_block_bda_forward(OpList& ops, std::string_view name, std::int32_t layer, Phase phase);
void emit_block_bda_backward(OpList& ops, std::string_view name, std::int32_t layer);

/// Core attention with context parallelism (cp_attention_ops.cpp): Transformer Engine's
/// ring (p2p), Ulysses all-to-all (a2a) or KV all-gather (allgather), forward (kForward or
/// kRecompute) and backward, with their communication on the CP stream.
void emit_cp_attention_forward(OpList& ops, std::int32_t layer, Phase phase);
void emit_cp_attention_backward(OpList& ops, std::int32_t layer);

/// Multi-latent attention (mla_ops.cpp): the attention block from the input norm through the
/// output projection and its TP reduction (forward, kForward or kRecompute), and its backward
/// from the projection down to the input norm's (with `selective_recompute` the core
/// attention re-run before its backward).
void emit_mla_forward(OpList& ops, std::int32_t layer, Phase phase);
void emit_mla_backward(OpList& ops, std::int32_t layer, bool selective_recompute);

/// Backward of a column-parallel linear (QKV, FC1, output layer), Megatron's
/// LinearWithGradAccumulationAndAsyncCommunication: dgrad GEMM, the input-grad all-reduce
/// (reduce-scatter with SP, after re-gathering the input) issued asynchronously, the wgrad
/// GEMM concurrently, then the wait. `out_n` is the per-rank output width, `in_k` the input
/// width.
/// With `wgrad` false (a deferred output-layer wgrad) the input's all-gather and the wgrad
/// GEMM are left out.
void emit_column_parallel_backward(OpList& ops, std::string_view dgrad_name,
                                   std::string_view wgrad_name, std::int32_t layer,
                                   std::int64_t out_n, std::int64_t in_k, bool bias,
                                   bool wgrad = true);

/// TP-communication overlap (tp_overlap_ops.cpp; Dims::ub_*): Transformer Engine's
/// userbuffers. A column-parallel forward GEMM after its norm as the AG+GEMM ring exchange
/// (with the copy into the userbuffer); a row-parallel forward GEMM pipelined with its
/// reduce-scatter; a row-parallel backward with the ring-exchange dgrad; a LayerNorm
/// column-parallel backward with the bulk overlaps or the pipelined dgrad reduce-scatter.
void emit_ub_ag_fprop(OpList& ops, std::string_view prefix, std::string_view gemm_name,
                      std::int32_t layer, Phase phase, std::int64_t out_n, std::int64_t in_k);
void emit_ub_rs_fprop(OpList& ops, std::string_view gemm_name, std::int32_t layer, Phase phase,
                      std::int64_t in_k);
void emit_ub_row_parallel_backward(OpList& ops, std::string_view prefix,
                                   std::string_view dgrad_name, std::string_view wgrad_name,
                                   std::int32_t layer, std::int64_t in_k);
void emit_ub_column_parallel_backward(OpList& ops, std::string_view prefix,
                                      std::string_view dgrad_name, std::string_view wgrad_name,
                                      std::int32_t layer, std::int64_t out_n, std::int64_t in_k,
                                      bool bias);

}  // namespace stepsim::detail
