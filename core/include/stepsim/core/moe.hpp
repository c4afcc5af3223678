#pragma once
// Mixture of experts: which layers are MoE layers (Megatron's --moe-layer-freq) and the
// parameter counts of an MoE model, total and active (what a token passes through).

#include <cstdint>
#include <string_view>
#include <vector>

#include "stepsim/core/result.hpp"
#include "stepsim/core/scenario.hpp"

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

/// Parameters a token passes through: the whole model with each MoE layer's routed experts
/// cut to moe_router_topk of them (shared experts, router, attention, embeddings in full), as
/// the published "active parameters" of MoE models count them. = count_parameters() for a
/// dense model.
std::int64_t count_active_parameters(const ModelConfig& m);

}  // namespace stepsim
