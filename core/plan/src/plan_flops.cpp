#include "stepsim/plan/plan_flops.hpp"

#include "stepsim/layout/moe_layout.hpp"
#include "stepsim/ops/flops.hpp"
#include "stepsim/plan/decompose.hpp"

namespace stepsim {

FlopsSummary count_flops(const Workload& w) {
  const WorkloadPlan plan = decompose(w);
  const TrainingConfig& t = w.training;
  // Ops are one TP and CP rank's share; every TP rank, CP rank, micro-batch and replica does
  // the same (context-parallel attention counts whole score-matrix rows: AttentionOp).
  const double scale = static_cast<double>(t.tensor_model_parallel_size) *
                       static_cast<double>(t.context_parallel_size) *
                       static_cast<double>(t.num_microbatches) *
                       static_cast<double>(t.data_parallel_size);
  FlopsSummary out;
  out.parameters = count_parameters(w.model);
  out.active_parameters = count_active_parameters(w.model);
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

}  // namespace stepsim
