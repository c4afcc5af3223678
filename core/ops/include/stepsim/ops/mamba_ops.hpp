#pragma once
// The Mamba-2 layer of Megatron-Core's hybrid models (megatron/core/ssm/mamba_layer.py
// MambaLayer, mamba_mixer.py MambaMixer, training path _ssm_training) per TP rank: in_proj (a
// LayerNormColumnParallelLinear to z, x, B, C, dt), mamba_ssm's
// mamba_split_conv1d_scan_combined (causal_conv1d and the chunked SSD scan's Triton kernels,
// mamba_ssm/ops/triton/ssd_combined.py MambaSplitConv1dScanCombinedFn), the gated RMSNorm
// (ExtendedRMSNorm, per group of d_inner / ngroups channels: no TP communication), out_proj
// (a RowParallelLinear) and the bias-dropout-add. Internal to stepsim_core.

#include <cstdint>

#include "stepsim/layout/workload_dims.hpp"

namespace stepsim::detail {

/// Parameters of one Mamba layer on one TP rank: in_proj's norm and weight, conv1d's weight
/// (d_conv taps per channel) and bias, dt_bias, A_log and D (one per head), the gated norm's
/// weight, out_proj's weight (MambaMixer.__init__; no linear biases: it asserts bias=False).
std::int64_t mamba_parameters(const Dims& x);

/// Bytes one Mamba layer keeps for backward: the inputs of its norm and of in_proj (outside
/// the TP region, sequence-sharded with SP), the dropout mask, and what the mixer saves:
/// zxBCdt (MambaSplitConv1dScanCombinedFn's ctx, the conv and SSD states are recomputed in
/// backward), out_x, the gated norm's input and rstd, out_proj's input.
double mamba_stored_bytes(const Dims& x);

/// The FLOPs of one Mamba layer's SSD kernels (the chunked scan, forward only) on one rank:
/// chunk_state 2 T H P N, bmm_chunk 2 T Q N G, chunk_scan 2 T H P (Q + N), with T the rank's
/// tokens, Q the chunk, H heads, P head dim, N state, G groups on the rank.
double ssd_forward_flops(const Dims& x);

}  // namespace stepsim::detail
