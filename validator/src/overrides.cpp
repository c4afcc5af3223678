// Scaled-down validation: --num-layers and --world-size applied to a loaded scenario.

#include "stepsim/validator/validate.hpp"
#include "stepsim/layout/pipeline_split.hpp"
#include "stepsim/check/check.hpp"

namespace stepsim::calib {

Result<Workload> apply_overrides(Workload w, const ScaleOverrides& o) {
  Errors errors;
  auto& t = w.training;
  if (o.num_layers < 0) errors.push_back(Error{"", "--num-layers", "must be positive"});
  if (o.world_size < 0) errors.push_back(Error{"", "--world-size", "must be positive"});
  if (o.num_layers > 0 && uneven_pipeline(t)) {
    // Which smaller split would keep the job's shape is a choice, not a derivation.
    errors.push_back(Error{"", "--num-layers",
                           "=" + std::to_string(o.num_layers) +
                               " cannot scale down uneven pipeline stages "
                               "(decoder_first/last_pipeline_num_layers, account_for_*, "
                               "pipeline_model_parallel_layout): give a scaled-down scenario"});
  } else if (o.num_layers > 0) {
    const std::int64_t per_chunk =
        t.pipeline_model_parallel_size * t.virtual_pipeline_model_parallel_size;
    if (t.interleaved() && o.num_layers % per_chunk != 0) {
      errors.push_back(Error{"", "--num-layers",
                             "=" + std::to_string(o.num_layers) +
                                 " is not divisible by pipeline_model_parallel_size * "
                                 "virtual_pipeline_model_parallel_size=" +
                                 std::to_string(per_chunk)});
    } else {
      w.model.num_layers = o.num_layers;
      if (t.interleaved()) t.num_layers_per_virtual_pipeline_stage = o.num_layers / per_chunk;
    }
  }
  if (o.world_size > 0) {
    const std::int64_t model_parallel = t.tensor_model_parallel_size *
                                        t.context_parallel_size * t.pipeline_model_parallel_size;
    if (o.world_size % model_parallel != 0) {
      errors.push_back(Error{"", "--world-size",
                             "=" + std::to_string(o.world_size) +
                                 " is not divisible by tensor_model_parallel_size * "
                                 "context_parallel_size * pipeline_model_parallel_size=" +
                                 std::to_string(model_parallel)});
    } else {
      // Fewer replicas, same micro-batches per pipeline: the global batch follows dp.
      t.world_size = o.world_size;
      t.data_parallel_size = o.world_size / model_parallel;
      t.global_batch_size = t.num_microbatches * t.micro_batch_size * t.data_parallel_size;
    }
  }
  if (!errors.empty()) return errors;
  Errors rules = validate_workload(w, w.source_file);
  if (!rules.empty()) return rules;
  return w;
}

}  // namespace stepsim::calib
