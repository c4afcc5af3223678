// Sharded data parallelism (--use-megatron-fsdp with --data-parallel-sharding-strategy,
// --use-torch-fsdp2): Megatron-LM's rules (megatron/training/arguments.py, validate_args) and
// the combinations stepsim does not model yet.

#include "check_internal.hpp"

namespace stepsim::detail {

namespace {

/// Settings stepsim models beside neither FSDP yet (both FSDP keys share them).
void check_fsdp_not_modelled(const Workload& w, const std::string& key, Checker& check) {
  const TrainingConfig& t = w.training;
  const auto not_modelled = [&](const std::string& with) {
    check.fail(key, "=true with " + with + ": not modelled yet");
  };
  if (t.pipeline_model_parallel_size > 1) not_modelled("pipeline_model_parallel_size > 1");
  if (t.expert_model_parallel_size > 1 || w.model.moe()) not_modelled("num_experts (MoE layers)");
  if (t.context_parallel_size > 1) not_modelled("context_parallel_size > 1");
  if (t.fp8_enabled()) not_modelled("fp8 (FP8 parameters gathered by FSDP)");
  if (w.model.mtp_num_layers > 0) not_modelled("mtp_num_layers");
  if (t.optimizer_impl != OptimizerImpl::kMegatron) {
    not_modelled("optimizer_impl " + std::string(to_string(t.optimizer_impl)));
  }
}

}  // namespace

void check_fsdp(const Workload& w, Checker& check) {
  const TrainingConfig& t = w.training;
  if (t.use_megatron_fsdp) {
    const std::string key = "training.use_megatron_fsdp";
    if (t.use_torch_fsdp2) {
      check.fail(key, "=true with use_torch_fsdp2: choose one FSDP implementation");
    }
    // arguments.py: "Megatron-FSDP v1 is only compatible with --use-distributed-optimizer"
    // (it turns the optimizer on; a scenario states it).
    if (!t.use_distributed_optimizer) {
      check.fail(key, "=true needs use_distributed_optimizer (arguments.py: \"Megatron-FSDP v1 "
                      "is only compatible with --use-distributed-optimizer\")");
    }
    if (t.data_parallel_sharding_strategy == DpSharding::kNoShard) {
      // Its gradients are all-reduced into unsharded buffers under the distributed
      // optimizer's name: another path than the one stepsim prices for that optimizer.
      check.fail("training.data_parallel_sharding_strategy",
                 "=\"no_shard\" with use_megatron_fsdp: not modelled yet");
    }
    check_fsdp_not_modelled(w, key, check);
  } else if (t.data_parallel_sharding_strategy != DpSharding::kOptimGradsParams) {
    check.fail("training.data_parallel_sharding_strategy",
               "=\"" + std::string(to_string(t.data_parallel_sharding_strategy)) +
                   "\" is read only with use_megatron_fsdp");
  }
  if (t.fsdp_double_buffer && !t.use_megatron_fsdp) {
    check.fail("training.fsdp_double_buffer", "=true needs use_megatron_fsdp");
  }
  if (!t.torch_fsdp2_reshard_after_forward && !t.use_torch_fsdp2) {
    check.fail("training.torch_fsdp2_reshard_after_forward", "=false needs use_torch_fsdp2");
  }
  if (!t.use_torch_fsdp2) return;
  const std::string key = "training.use_torch_fsdp2";
  // arguments.py's asserts under args.use_torch_fsdp2.
  if (t.pipeline_model_parallel_size != 1) {
    check.fail(key, "=true needs pipeline_model_parallel_size 1 (\"--use-torch-fsdp2 is not "
                    "supported with pipeline parallelism\")");
  }
  if (t.expert_model_parallel_size != 1) {
    check.fail(key, "=true needs expert_model_parallel_size 1 (\"--use-torch-fsdp2 is not "
                    "supported with expert parallelism\")");
  }
  if (t.use_distributed_optimizer) {
    check.fail(key, "=true with use_distributed_optimizer (\"--use-torch-fsdp2 is not "
                    "supported with MCore's distributed optimizer\")");
  }
  if (!w.model.untie_embeddings_and_output_weights) {
    check.fail(key, "=true needs untie_embeddings_and_output_weights (\"--use-torch-fsdp2 "
                    "requires --untie-embeddings-and-output-weights\")");
  }
  if (t.params_dtype == DType::kFp16) {
    check.fail(key, "=true with fp16 (\"--use-torch-fsdp2 not supported with fp16 yet\")");
  }
  if (!t.use_megatron_fsdp) check_fsdp_not_modelled(w, key, check);
}

}  // namespace stepsim::detail
