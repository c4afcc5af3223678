#include "stepsim/ops/fsdp_units.hpp"

#include "stepsim/base/assert.hpp"
#include "stepsim/ops/flops.hpp"

namespace stepsim {

DpSharding fsdp_sharding(const TrainingConfig& t) {
  return t.use_megatron_fsdp ? t.data_parallel_sharding_strategy : DpSharding::kOptimGradsParams;
}

std::int64_t fsdp_root_parameters(const Workload& w) {
  // The same job without transformer layers holds exactly the root's parameters.
  Workload root = w;
  root.model.num_layers = 0;
  root.training.pipeline_model_parallel_layout.clear();
  return chunk_parameters(root, 0, 0);
}

std::int64_t fsdp_unit_parameters(const Workload& w) {
  const std::int64_t layers = w.model.num_layers;
  if (layers <= 0) return 0;
  const std::int64_t in_layers = chunk_parameters(w, 0, 0) - fsdp_root_parameters(w);
  STEPSIM_ASSERT(in_layers % layers == 0);
  return in_layers / layers;
}

}  // namespace stepsim
