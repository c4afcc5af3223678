// optimizer_impl "apex_distributed_fused_adam" (dfa.hpp): the job NeMo runs it in that stepsim
// models, and what of its other settings it does not model yet.

#include <string>

#include "check_internal.hpp"

namespace stepsim::detail {

void check_optimizer_impl(const Workload& w, Checker& check) {
  const TrainingConfig& t = w.training;
  if (t.optimizer_impl != OptimizerImpl::kApexDistributedFusedAdam) {
    // Apex's bucket size means nothing to Megatron-Core's optimizer (its buckets are
    // ddp_bucket_size's): a value other than Apex's default would be silently ignored.
    if (t.apex_bucket_cap_mb != 100) {
      check.fail("training.apex_bucket_cap_mb",
                 "=" + str(t.apex_bucket_cap_mb) +
                     " has no effect without optimizer_impl \"apex_distributed_fused_adam\" "
                     "(Megatron-Core's buckets are ddp_bucket_size's)");
    }
    return;
  }
  const std::string key = "training.optimizer_impl";
  const std::string what = "=\"apex_distributed_fused_adam\" ";
  // NeMo's optim settings of the modelled job (NVIDIA's MLPerf GPT-3 175B):
  // overlap_grad_sync / overlap_param_sync true, grad_sync_dtype bf16, fp8_params (which makes
  // NeMo keep fp32 master shards, store_params), under Megatron-Core's interleaved schedule.
  if (!t.use_distributed_optimizer) {
    check.fail(key, what +
                        "needs use_distributed_optimizer (NeMo's USE_DIST_OPTIMIZER: the "
                        "optimizer's states are sharded over data parallelism)");
  }
  if (!t.overlap_grad_reduce || !t.overlap_param_gather) {
    check.fail(key, what +
                        "without overlap_grad_reduce and overlap_param_gather (NeMo's "
                        "overlap_grad_sync / overlap_param_sync) is not modelled yet");
  }
  if (t.params_dtype != DType::kBf16 || !t.grad_reduce_in_bf16) {
    check.fail(key, what +
                        "is modelled with bf16 parameters and grad_reduce_in_bf16 (NeMo's "
                        "grad_sync_dtype bf16) only");
  }
  if (!t.fp8_enabled() || !t.fp8_param_gather || t.fp8_recipe != Fp8Recipe::kDelayed) {
    check.fail(key, what +
                        "is modelled with FP8 parameters (fp8 with the delayed recipe and "
                        "fp8_param_gather: NeMo's fp8_params) only; its buckets without "
                        "them hold other parameters");
  }
  if (t.virtual_pipeline_model_parallel_size <= 1) {
    check.fail(key, what +
                        "needs interleaving (virtual_pipeline_model_parallel_size > 1): "
                        "without it NeMo's buckets are one model chunk, not modelled yet");
  }
  if (w.model.num_experts > 0) {
    check.fail(key, what + "with experts is not modelled yet");
  }
  if (t.context_parallel_size > 1) {
    check.fail(key, what + "with context parallelism is not modelled yet");
  }
}

}  // namespace stepsim::detail
