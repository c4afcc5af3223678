#pragma once
// Model and hardware FLOPs of a step, counted from its op lists.

#include <cstdint>
#include <vector>

#include "stepsim/config/scenario.hpp"

namespace stepsim {

struct FlopsSummary {
  double model_flops_per_step = 0;     ///< forward + backward, no recompute, whole model
  double hardware_flops_per_step = 0;  ///< including recomputed forward work
  std::int64_t parameters = 0;         ///< whole model (all TP/PP shards, one replica)
  /// Parameters a token passes through (MoE: topk routed experts per layer); = parameters
  /// for a dense model.
  std::int64_t active_parameters = 0;
  std::vector<double> stage_model_flops_per_microbatch;  ///< per pipeline rank, per TP rank
  bool operator==(const FlopsSummary&) const = default;
};

/// FLOPs of one training step from the op-level decomposition (decompose(w)): every GEMM and
/// attention op, times TP ranks, micro-batches and data-parallel replicas.
FlopsSummary count_flops(const Workload& w);

}  // namespace stepsim
