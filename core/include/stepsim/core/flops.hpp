#pragma once
// Model and hardware FLOPs, parameters, MFU/HFU.

#include <cstdint>
#include <vector>

#include "stepsim/core/scenario.hpp"

namespace stepsim {

struct FlopsSummary {
  double model_flops_per_step = 0;     ///< forward + backward, no recompute, whole model
  double hardware_flops_per_step = 0;  ///< including recomputed forward work
  std::int64_t parameters = 0;         ///< whole model (all TP/PP shards, one replica)
  std::vector<double> stage_model_flops_per_microbatch;  ///< per pipeline rank, per TP rank
  bool operator==(const FlopsSummary&) const = default;
};

FlopsSummary count_flops(const Workload& w);

/// Model FLOPs utilisation: flops / (step_time * gpus * peak).
double utilisation(double flops_per_step, double step_time_s, std::int64_t gpus,
                   double peak_flops_per_gpu);

}  // namespace stepsim
