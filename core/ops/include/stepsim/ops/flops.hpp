#pragma once
// Parameters, Megatron's logged FLOPs, MFU/HFU. (The FLOPs of the op lists: plan/plan_flops.hpp.)

#include <cstdint>
#include <vector>

#include "stepsim/config/scenario.hpp"

namespace stepsim {

/// Parameters of the whole model: one copy of each weight (tied embeddings counted once).
std::int64_t count_parameters(const ModelConfig& m);

/// Parameters (stage, chunk) holds on one TP rank; the last stage of a pipeline with tied
/// embeddings holds its own copy of the word embedding for the output layer.
std::int64_t chunk_parameters(const Workload& w, std::int32_t stage, std::int32_t chunk);

/// The routed experts' parameters among chunk_parameters(w, stage, chunk): their gradients are
/// reduced over the expert data-parallel group and their optimizer states sharded over it.
std::int64_t chunk_expert_parameters(const Workload& w, std::int32_t stage, std::int32_t chunk);

/// The FLOPs Megatron-LM counts for one step of `w` when it logs "throughput per GPU
/// (TFLOP/s/GPU)" (divided by the iteration time and world size): its analytic formula,
/// num_floating_point_operations() in megatron/training/training.py (MoE terms included), with
/// full causal masks (BSHD, no padding): model FLOPs only (3 x 2 FLOPs per multiply-add,
/// recompute not counted), attention scores halved for the causal mask, logits included.
double megatron_logged_flops_per_step(const Workload& w);

/// Model FLOPs utilisation: flops / (step_time * gpus * peak).
double utilisation(double flops_per_step, double step_time_s, std::int64_t gpus,
                   double peak_flops_per_gpu);

}  // namespace stepsim
