#pragma once
// Analytic memory per pipeline stage (Korthikanti et al. 2022 and the 18-byte rule), the
// oracle the simulated memory timeline is checked against.

#include <cstdint>
#include <vector>

#include "stepsim/core/scenario.hpp"

namespace stepsim {

struct StageMemory {
  std::int32_t stage = 0;
  std::int64_t weights_bytes = 0;
  std::int64_t gradients_bytes = 0;
  std::int64_t optimizer_bytes = 0;
  std::int64_t activations_bytes = 0;        ///< everything held at the peak of 1F1B
  std::int64_t layer_activations_bytes = 0;  ///< the transformer layers' share of it
  std::int64_t peak_bytes = 0;
  bool operator==(const StageMemory&) const = default;
};

/// Activation bytes of one transformer layer for one micro-batch under `w`'s settings
/// (the reference's table), stored between forward and backward.
double layer_activation_bytes(const Workload& w);

std::vector<StageMemory> analytic_memory(const Workload& w);

}  // namespace stepsim
