#pragma once
// The optimizer step of one rank as the kernels Megatron-Core launches for it
// (megatron/core/optimizer/optimizer.py MixedPrecisionOptimizer.step, distrib_optimizer.py,
// clip_grads.py) with Transformer Engine's FusedAdam and multi-tensor kernels
// (transformer_engine/pytorch/optimizers/fused_adam.py, transformer_engine/common/multi_tensor/).

#include <cstdint>
#include <vector>

#include "stepsim/ops/ops.hpp"
#include "stepsim/ops/plan.hpp"
#include "stepsim/config/scenario.hpp"
#include "stepsim/layout/workload_dims.hpp"

namespace stepsim::detail {

/// Transformer Engine's multi_tensor_applier = MultiTensorApply(2048 * 32): each CUDA block
/// of a multi-tensor kernel takes one chunk of 65,536 elements of one tensor.
inline constexpr std::int64_t kMultiTensorChunk = 2048 * 32;
/// multi_tensor_apply.cuh: depth_to_max_blocks (320 for every depth) and depth_to_max_tensors
/// ({110, 64, 48, 36, 30, 24} for 1..6 tensor lists): a launch carries at most that many
/// chunks and tensors; more take further launches.
inline constexpr std::int64_t kMultiTensorMaxBlocks = 320;
std::int64_t multi_tensor_max_tensors(std::int32_t depth);

/// Launches of one multi-tensor kernel over `tensors` tensors of `elements` elements in all
/// with `depth` tensor lists: enough for the chunks (320 per launch) and for the tensors
/// (depth_to_max_tensors per launch). Tensors are taken as whole chunks (the partial last
/// chunk of each tensor is not counted).
std::int64_t multi_tensor_launches(std::int64_t elements, std::int64_t tensors, std::int32_t depth);

/// A memory-bound kernel (or `kernels` of them) of the optimizer step on the compute stream.
Op step_compute_op(const char* name, std::int64_t bytes, std::int64_t kernels);

/// Parameter tensors a model chunk holds on one rank, as Megatron-Core's GPT layer specs with
/// Transformer Engine build them: `dense` counts the tensors the dense optimizer steps, `expert`
/// the routed experts' (each local expert's fc1 and fc2 weights, and biases), which an
/// expert-parallel job steps in a separate optimizer over the expert data-parallel group.
struct ParameterTensors {
  std::int64_t dense = 0;
  std::int64_t expert = 0;
};
ParameterTensors chunk_parameter_tensors(const Dims& x, const ChunkPlan& chunk, bool last_stage);

/// One optimizer's share of a rank: the elements and tensors of its parameters it steps
/// (with the distributed optimizer, this rank's shard of them).
struct OptimizerShard {
  std::int64_t elements = 0;
  std::int64_t tensors = 0;
  /// Of them, what Muon steps instead of Adam (optimizer "muon": the 2-D weights).
  std::int64_t muon_elements = 0;
  std::int64_t muon_tensors = 0;
};

struct MuonMatrix;
struct MuonGroups;

/// Appends the optimizer step's kernels to `ops` on the compute stream, in Megatron-Core's
/// order: the fp32 copy of bf16 gradients (grad_reduce_in_bf16), the gradient norm and the
/// clip scale (clip_grad > 0), FusedAdam, and the copy of the fp32 main parameters into the
/// model's 16-bit parameters (all but `fp8_params`, this rank's shard of the FP8 parameters of
/// fp8_param_gather, which append_fp8_param_quantization writes instead).
/// Between them the all-reduces of one fp32 scalar over the grad-stats group (`grad_stats`:
/// its size and nodes; none when it has one rank): fp16's found-inf flag and the squared
/// gradient norm, which every rank of the group (every pipeline stage) waits for.
/// `deps` go to the first kernel. Returns the index of the last one, which later step ops
/// (the parameter all-gather) wait for.
/// With `muon` (optimizer "muon"), Muon's kernels for those matrices follow Adam's over the
/// other parameters (append_muon_ops, with `muon_groups`).
std::int32_t append_optimizer_ops(std::vector<Op>& ops, const Workload& w,
                                  const std::vector<OptimizerShard>& optimizers,
                                  const OptimizerShard& fp8_params,
                                  const std::vector<std::int32_t>& deps,
                                  const CollectiveOp& grad_stats,
                                  const std::vector<MuonMatrix>* muon = nullptr,
                                  const MuonGroups* muon_groups = nullptr);

/// fp8_param_gather: the optimizer's updated fp32 master shard of the FP8 parameters written
/// into the FP8 parameters, as Megatron-Core's quantize_param_shard (fp8_utils.py, Transformer
/// Engine 2.2 and newer) runs it through Transformer Engine's quantize_master_weights
/// (transformer_engine/pytorch/tensor/utils.py), on the compute stream after the kernel at
/// `after`:
/// - delayed scaling (_cast_master_weights_to_fp8_delayed_scaling): each shard cast to FP8
///   with the scale the amax history gave (read 4, write 1 byte per element; the kernel
///   records the shard's amax), the amaxes packed, MAX-reduced over `amax_group` and unpacked,
///   the scales packed, inverted and copied into the scale_invs;
/// - per-tensor current scaling, "tensorwise" (_cast_master_weights_to_fp8_current_scaling):
///   the amax of each shard (tex.compute_amax: read 4 bytes per element), the packed amaxes
///   MAX-reduced over `amax_group`, the scales and scale_invs from them
///   (multi_tensor_compute_scale_and_scale_inv), then each shard cast with its new scale (read
///   4, write 1), which so waits for the all-reduce;
/// - block scaling, "blockwise" (_cast_master_weights_to_fp8_blockwise_scaling): the partial
///   amax of every 128x128 block of each shard (read 4 bytes per element), the packed block
///   amaxes MAX-reduced over `amax_group` (so every rank computes the same scales and none are
///   gathered), the blocks' scales and scale_invs, then each shard's partial cast (read 4,
///   write 1).
/// `shard`: this rank's FP8 parameter shard (elements and tensors with a master shard here);
/// `tensors`: every FP8 parameter of the rank (each has an amax, a scale and a scale_inv);
/// `param_elements`: their elements (block scaling's amaxes are one per 128x128 block).
/// The all-reduce is on the data-parallel stream; none for a group of one rank. Returns the
/// index of the last op, which the parameter all-gather waits for.
std::int32_t append_fp8_param_quantization(std::vector<Op>& ops, Fp8Recipe recipe,
                                           const OptimizerShard& shard, std::int64_t tensors,
                                           std::int64_t param_elements,
                                           const CollectiveOp& amax_group, std::int32_t after);

/// fp4_param_gather: the optimizer's updated fp32 master shard of the NVFP4 parameters written
/// into their row-wise NVFP4 data, as Megatron-Core's quantize_nvfp4_param_shard (fp4_utils.py)
/// runs Transformer Engine's _cast_master_weights_to_nvfp4_2d (transformer_engine/pytorch/
/// tensor/utils.py), on the compute stream after the kernel at `after`:
/// nvfp4_multi_tensor_compute_partial_amax (read 4 bytes per shard element; write one fp32
/// amax per 16x16 tile and one per tensor), the packed tile amaxes and the per-tensor amaxes
/// MAX-reduced over `amax_group` (two all-reduces, so every rank computes every scale and none
/// is gathered), nvfp4_compute_global_scale (one kernel over the per-tensor amaxes),
/// nvfp4_multi_tensor_fused_scale (the tile amaxes read, the tiles' fp32 decode scales and
/// the whole row-wise E4M3 scale_inv written, one byte per 16 elements) and
/// nvfp4_multi_tensor_2d_partial_cast (read 4, write half a byte per shard element).
/// `shard`, `tensors`, `param_elements` as append_fp8_param_quantization's. Returns the index
/// of the last op.
std::int32_t append_nvfp4_param_quantization(std::vector<Op>& ops, const OptimizerShard& shard,
                                             std::int64_t tensors, std::int64_t param_elements,
                                             const CollectiveOp& amax_group, std::int32_t after);

}  // namespace stepsim::detail
