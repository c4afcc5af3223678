#pragma once
// Hybrid models' layer patterns (Megatron-Core's megatron/core/models/hybrid/
// hybrid_layer_allocation.py): one letter per layer (Symbols: M Mamba, * attention, - MLP,
// E MoE) and '|' between pipeline segments, which select_pipeline_segment hands out
// virtual stage major, pipeline rank minor (segment vp_stage * pp + pp_rank).

#include <cstdint>
#include <string_view>
#include <vector>

#include "stepsim/base/result.hpp"
#include "stepsim/config/scenario.hpp"

namespace stepsim {

/// A hybrid layer's kind: Megatron's Symbols letters.
enum class HybridLayer : char { kMamba = 'M', kAttention = '*', kMlp = '-', kMoe = 'E' };

struct HybridPattern {
  std::vector<HybridLayer> layers;       ///< one per layer, in order
  std::vector<std::int64_t> segments;    ///< layers per '|' segment (one without '|')
};

/// Parses the main pattern (parse_hybrid_pattern, _validate_pattern). Errors (key
/// model.hybrid_layer_pattern) for a letter Megatron does not know, for G (gated delta
/// net), D (DeepSeek sparse attention), + (MLA) and MTP's '/' (Megatron's, not modelled yet),
/// and for an empty pipeline segment.
Result<HybridPattern> parse_hybrid_layer_pattern(std::string_view text);

/// The layer kinds of a validated model: empty for a GPT model (or a pattern that does not
/// parse).
std::vector<HybridLayer> hybrid_layer_kinds(const ModelConfig& m);

/// Layers of each '|' segment of a validated model's pattern; empty for a GPT model.
std::vector<std::int64_t> hybrid_segments(const ModelConfig& m);

}  // namespace stepsim
