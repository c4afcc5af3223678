#pragma once
// Analytic memory per pipeline stage (Korthikanti et al. 2022 and the 18-byte rule), the
// oracle the simulated memory timeline is checked against.

#include <cstdint>
#include <vector>

#include "stepsim/config/scenario.hpp"
#include "stepsim/ops/dfa.hpp"

namespace stepsim {

struct StageMemory {
  std::int32_t stage = 0;
  std::int64_t weights_bytes = 0;
  std::int64_t gradients_bytes = 0;
  std::int64_t optimizer_bytes = 0;
  std::int64_t activations_bytes = 0;        ///< everything held at the peak of 1F1B
  std::int64_t layer_activations_bytes = 0;  ///< the transformer layers' share of it
  std::int64_t comm_buffer_bytes = 0;        ///< comm_buffer_bytes(): held the whole run
  std::int64_t peak_bytes = 0;
  bool operator==(const StageMemory&) const = default;
};

/// Activation bytes of one transformer layer for one micro-batch under `w`'s settings
/// (the reference's table), stored between forward and backward. With full recompute: the
/// bytes of one stored layer input (the "per stored input" row).
double layer_activation_bytes(const Workload& w);

/// Activation memory of one model chunk (virtual stage) for one micro-batch, per TP rank.
/// ChunkPlan's stored/recompute bytes are these figures.
struct ChunkActivations {
  std::int64_t stored_bytes = 0;        ///< held from the end of forward to end of backward
  std::int64_t layer_stored_bytes = 0;  ///< transformer layers' share of stored_bytes
  std::int64_t recompute_bytes = 0;     ///< re-materialised in backward (largest at once)
  std::int64_t transient_bytes = 0;     ///< held only while an op runs (fp32 logits)
  bool operator==(const ChunkActivations&) const = default;
};

ChunkActivations chunk_activations(const Workload& w, std::int32_t stage, std::int32_t chunk);

/// Weights, gradients and optimizer states of `parameters` parameters on one rank, bytes.
/// Mixed precision (bf16/fp16): 2 + 4 + 12 = 18 bytes per parameter, the optimizer's 12
/// divided over data parallelism with the distributed optimizer (6 + 12/dp). fp32: 4 + 4 + 8.
struct StaticMemory {
  std::int64_t weights_bytes = 0;
  std::int64_t gradients_bytes = 0;
  std::int64_t optimizer_bytes = 0;
  /// Allocated by the optimizer step and held until the next step's zero_grad, when no
  /// activations are held (not part of total()): the fp32 copy of the rank's bf16 gradient
  /// shard with grad_reduce_in_bf16 (distrib_optimizer.py `.float()`).
  std::int64_t optimizer_step_bytes = 0;
  /// Communication buffers allocated once and held (comm_buffer_bytes()): TE's userbuffers
  /// with tp_comm_overlap; DeepEP's NVLink and RDMA buffers on a stage with MoE layers and the
  /// flex dispatcher (moe_flex.hpp deepep_buffer_bytes).
  std::int64_t comm_buffer_bytes = 0;
  /// CUDA graphs' static buffers (cuda_graph_impl): per captured callable and micro-batch in
  /// flight its input and output and their gradients (per-layer graphs), or every
  /// micro-batch's input batch (full_iteration), held from capture on.
  std::int64_t cuda_graph_bytes = 0;
  std::int64_t total() const {
    return weights_bytes + gradients_bytes + optimizer_bytes + comm_buffer_bytes +
           cuda_graph_bytes;
  }
  bool operator==(const StaticMemory&) const = default;
};

/// Transformer Engine's userbuffers of tp_comm_overlap on every GPU: initialize_ub
/// (transformer_engine/pytorch/module/base.py) registers one communication buffer per
/// userbuffers GEMM (the 12 of kUbGemmNames, whether the job's flags use them or not) of
/// Megatron's shape [s * b / cp, h] (megatron/training/initialize.py
/// _initialize_tp_communicators), cudaMalloc'ed outside PyTorch's allocator
/// (comm_gemm_overlap.cpp register_user_buffer_collective): in bf16 (initialize_ub's dtype),
/// or one byte per element where the job is FP8 and the buffer is an FP8 one (the all-gather
/// GEMMs of layers_all_gather_overlap, a "pipeline" GEMM with fp8_buf). The
/// all-gather ring exchanges hold tp chunks of the shape (the same bytes); a reduce-scatter
/// given method ring_exchange (proj_fprop, fc2_fprop) holds 2 tp - 1 chunks
/// (CommOverlapP2PBase::initialize). 0 without tp_comm_overlap.
std::int64_t userbuffer_bytes(const Workload& w);

/// The communication buffers a stage holds all run: userbuffer_bytes(), plus DeepEP's
/// buffers when the stage has experts (`expert_parameters` > 0) and the flex dispatcher.
std::int64_t comm_buffer_bytes(const Workload& w, std::int64_t expert_parameters);

/// `fp8_weight_elements`: weights of the layers' linears on the rank when they run in FP8
/// (fp8_weight_elements()); Transformer Engine keeps an FP8 copy and an FP8 transpose of each
/// (2 bytes per element, cached across micro-batches), counted under weights_bytes. With
/// fp8_param_gather those weights are FP8 parameters: their 16-bit copy is gone, the FP8 data
/// and its transpose remain (2 bytes per element instead of 2 + params dtype).
/// `expert_parameters`: the routed experts' share of `parameters` (chunk_expert_parameters),
/// whose optimizer states the distributed optimizer shards over the expert data-parallel group
/// (expert_data_parallel_size) rather than dp * cp.
StaticMemory static_memory(const TrainingConfig& t, std::int64_t parameters,
                           std::int64_t fp8_weight_elements = 0,
                           std::int64_t expert_parameters = 0);

/// Elements of the transformer layers' linear weights (QKV, projection, FC1, FC2) on pipeline
/// rank `stage`, per TP rank, when `w` trains in FP8; 0 otherwise.
std::int64_t fp8_weight_elements(const Workload& w, std::int32_t stage);

/// What the optimizer and CUDA graphs add to a stage's static memory (`s` from static_memory):
/// Muon's momentum instead of Adam's moments and its Newton-Schulz working set in the step
/// (optimizer "muon"); the graphs' static buffers (cuda_graph_impl).
void add_step_states(const Workload& w, std::int32_t stage, StaticMemory& s);

/// Micro-batches (virtual micro-batches with interleaving) whose activations pipeline rank
/// `stage` holds at most at once under Megatron's schedule: min(p - r, m) for 1F1B,
/// warm-up + 1 (capped at m*v) interleaved.
std::int64_t max_in_flight(const TrainingConfig& t, std::int32_t stage);

/// Per pipeline rank: static memory plus the activations held at the peak of the schedule
/// (stored activations of in-flight micro-batches, plus the recompute buffers of the
/// backward running at that moment); peak adds the transient fp32 logits on the last stage.
std::vector<StageMemory> analytic_memory(const Workload& w);

namespace detail {

/// What DistributedFusedAdam holds on the rank, with the FP8 weights' transposes Transformer
/// Engine caches (one byte per weight element).
StaticMemory dfa_static_memory(const DfaLayout& d);

}  // namespace detail

}  // namespace stepsim
