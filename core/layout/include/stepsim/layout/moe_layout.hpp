#pragma once
// Mixture of experts: which layers are MoE layers (Megatron's --moe-layer-freq) and the
// parameter counts of an MoE model, total and active (what a token passes through).

#include <cstdint>
#include <string_view>
#include <vector>

#include "stepsim/base/result.hpp"
#include "stepsim/config/scenario.hpp"

namespace stepsim {

/// Megatron-LM's moe_freq_type (megatron/training/arguments.py): an integer N makes layer i an
/// MoE layer when i % N == 0; a list pattern such as "([0]*3+[1]*58)" or "([1]*3+[0]*2)*2"
/// (Python lists of 0/1 joined by + and repeated by *) gives one entry per layer. The result
/// has `num_layers` entries (true = MoE layer); an error (key model.moe_layer_freq) when the
/// text does not parse, an entry is not 0 or 1, or the length is not num_layers.
Result<std::vector<bool>> parse_moe_layer_freq(std::string_view text, std::int64_t num_layers);

/// The MoE layers of `m`: parse_moe_layer_freq of a validated model, all false for a dense
/// model (num_experts = 0) or a pattern that does not parse.
std::vector<bool> moe_layer_pattern(const ModelConfig& m);

/// The routing of a validated workload (training.moe_load): the share of every source rank's
/// routed rows each expert gets, one entry per expert summing to 1; empty for balanced routing
/// (no moe_load, or a skew of 1) and for a dense model. A skew k puts k / num_experts on each
/// expert of EP rank 0 (experts 0 .. num_experts/ep - 1, Megatron's local_expert_indices) and
/// (1 - k/ep) / (num_experts - num_experts/ep) on each of the others.
std::vector<double> moe_expert_shares(const ModelConfig& m, const TrainingConfig& t);

/// Rows of one MoE layer and micro-batch that EP rank r (0 .. ep - 1) receives for its local
/// experts from its EP group (before the expert-TP all-gather), when every source rank routes
/// `routed` = tokens * topk rows as `shares` says (balanced when empty), each expert taking at
/// most `capacity` rows of a source (0: no capacity; with `pad`, exactly capacity). Rounded to
/// the nearest row. Balanced and without capacity every rank receives `routed`.
std::vector<std::int64_t> moe_ep_rank_rows(std::int64_t routed, std::int64_t num_experts,
                                           std::int64_t ep, const std::vector<double>& shares,
                                           std::int64_t capacity, bool pad);

/// Parameters a token passes through: the whole model with each MoE layer's routed experts
/// cut to moe_router_topk of them (shared experts, router, attention, both embedding tables in
/// full), as Mistral (Mixtral), Qwen and DeepSeek count "active parameters". =
/// count_parameters() for a dense model.
std::int64_t count_active_parameters(const ModelConfig& m);

/// Whether DeepEP's normal kernels run over an expert TP x EP group of `group` GPUs (the flex
/// dispatcher's): 2, 4 or 8 GPUs of one node (csrc/kernels/legacy/launch.cuh SWITCH_RANKS), or
/// 8 GPUs (NUM_MAX_NVL_PEERS) on each of 2, 3, 4, 6, 8, 12, 16, 18 or 20 nodes
/// (SWITCH_RDMA_RANKS); across nodes an expert TP group must lie inside a node.
bool deepep_group_supported(std::int64_t group, std::int64_t etp, std::int64_t gpus_per_node);

/// count_active_parameters() less the input embedding's lookups (the word embedding unless
/// tied to the output layer, the learned position embedding): the weights of the GEMMs a token
/// passes, about those behind Megatron's logged FLOPs (6 x tokens x these, plus the attention
/// scores) and OpenAI's "active parameters per forward pass" of gpt-oss. Mistral, Qwen and DeepSeek
/// count both embedding tables in theirs (docs/outputs.md, "Active parameters").
std::int64_t count_active_parameters_without_input_embedding(const ModelConfig& m);

}  // namespace stepsim
