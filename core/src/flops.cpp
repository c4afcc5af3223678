#include "stepsim/core/flops.hpp"

#include "stepsim/core/decompose.hpp"

namespace stepsim {

FlopsSummary count_flops(const Workload& w) {
  const WorkloadPlan plan = decompose(w);
  const TrainingConfig& t = w.training;
  // Ops are one TP rank's share; every TP rank, micro-batch and replica does the same.
  const double scale = static_cast<double>(t.tensor_model_parallel_size) *
                       static_cast<double>(t.num_microbatches) *
                       static_cast<double>(t.data_parallel_size);
  FlopsSummary out;
  out.parameters = count_parameters(w.model);
  out.stage_model_flops_per_microbatch.reserve(plan.stages.size());
  double model = 0.0;
  double recompute = 0.0;
  for (const StagePlan& stage : plan.stages) {
    double stage_model = 0.0;
    for (const ChunkPlan& chunk : stage.chunks) {
      for (const Op& op : chunk.forward) stage_model += op.flops();
      for (const Op& op : chunk.backward) {
        if (op.phase == Phase::kRecompute) {
          recompute += op.flops();
        } else {
          stage_model += op.flops();
        }
      }
    }
    out.stage_model_flops_per_microbatch.push_back(stage_model);
    model += stage_model;
  }
  out.model_flops_per_step = model * scale;
  out.hardware_flops_per_step = (model + recompute) * scale;
  return out;
}

double utilisation(double flops_per_step, double step_time_s, std::int64_t gpus,
                   double peak_flops_per_gpu) {
  const double capacity = step_time_s * static_cast<double>(gpus) * peak_flops_per_gpu;
  return capacity > 0.0 ? flops_per_step / capacity : 0.0;
}

}  // namespace stepsim
