#pragma once
// Workload decomposition: Megatron's layer-to-stage assignment and, per (pipeline rank,
// model chunk), the ordered ops of one micro-batch on one representative TP rank.

#include <cstdint>
#include <vector>

#include "stepsim/core/plan.hpp"
#include "stepsim/core/scenario.hpp"

namespace stepsim {

/// Transformer layers [first, first + count) held by one model chunk.
struct LayerRange {
  std::int32_t first = 0;
  std::int32_t count = 0;
  bool operator==(const LayerRange&) const = default;
};

/// Megatron's assignment: with v chunks, chunk c of rank r holds the (c*p + r)-th block of
/// num_layers / (p*v) consecutive layers.
LayerRange layers_of(const TrainingConfig& t, const ModelConfig& m, std::int32_t stage,
                     std::int32_t chunk);

/// The full plan: every rank, every chunk, step ops, static memory.
WorkloadPlan decompose(const Workload& w);

}  // namespace stepsim
