#pragma once
// Published training runs with their measured throughput: the accuracy report's inputs
// (scenarios/published/runs.json). Each run names a scenario file of the same folder and the
// figure its authors measured, with the source. The figures are for comparison only: nothing
// in stepsim is fitted or tuned to them.

#include <string>
#include <vector>

#include "stepsim/base/result.hpp"

namespace stepsim {

/// How a run's measured FLOP/s per GPU were counted by its authors.
enum class FlopsFormula {
  /// Narayanan et al. 2021 (SC21), eq. 3: F = 96 B s l h^2 (1 + s/(6h) + V/(16 l h)) per
  /// iteration (full activation recomputation counted), with the paper's V = 51200.
  kNarayanan2021Eq3,
  /// Megatron-LM's num_floating_point_operations (training.py), the model FLOPs it logs:
  /// for runs whose authors published the step time itself (`measured_step_s`).
  kMegatron,
};

struct PublishedRun {
  std::string scenario;  ///< resolved path of the scenario file
  FlopsFormula formula = FlopsFormula::kNarayanan2021Eq3;
  double measured_tflops_per_gpu = 0;  ///< 0 when the step time is what was published
  double measured_step_s = 0;          ///< 0 when the FLOP/s per GPU is what was published
  std::string source;  ///< where the figure and the configuration are published
  bool operator==(const PublishedRun&) const = default;
};

/// Reads a runs file; scenario paths are resolved next to it. Every problem is reported.
Result<std::vector<PublishedRun>> load_published_runs(const std::string& path);

}  // namespace stepsim
