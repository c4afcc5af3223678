// Megatron-LM's rules on TP-communication overlap and deferred embedding wgrad
// (megatron/training/arguments.py, ModelParallelConfig.__post_init__ in
// megatron/core/model_parallel_config.py), Transformer Engine's userbuffers' own limits
// (transformer_engine/pytorch/module/base.py initialize_ub, the comm+GEMM overlap in
// transformer_engine/common/comm_gemm_overlap/comm_gemm_overlap.cpp), and what stepsim does
// not model of them yet.

#include <string>

#include "validate_internal.hpp"

namespace stepsim::detail {

void check_tp_overlap(const Workload& w, Checker& check) {
  const TrainingConfig& t = w.training;
  if (t.defer_embedding_wgrad_compute && t.pipeline_model_parallel_size == 1) {
    check.fail("training.defer_embedding_wgrad_compute",
               "=true needs pipeline_model_parallel_size > 1 (Megatron: \"Cannot defer embedding "
               "wgrad compute when pipeline model parallel is not used\")");
  }
  // gradient_accumulation_fusion (needed by the deferral) is Megatron's default; turning it off
  // (--no-gradient-accumulation-fusion) is not modelled and rejected as such.
  if (!t.tp_comm_overlap) return;
  const std::string key = "training.tp_comm_overlap";
  if (!t.sequence_parallel) {
    // arguments.py turns sequence_parallel off with tensor_model_parallel_size 1 first.
    check.fail(key, std::string("=true needs sequence_parallel (Megatron: \"Tensor parallel "
                                "communication/GEMM overlap can happen only when sequence "
                                "parallelism is enabled\")") +
                        (t.tensor_model_parallel_size == 1
                             ? "; with tensor_model_parallel_size 1 Megatron turns "
                               "sequence_parallel off"
                             : ""));
    return;
  }
  const SystemConfig& s = w.system;
  const std::int64_t gpn = s.gpus_per_node;
  if (gpn > 0 && t.tensor_model_parallel_size > gpn) {
    check.fail(key, "=true with tensor_model_parallel_size=" + str(t.tensor_model_parallel_size) +
                        " across nodes (gpus_per_node=" + str(gpn) +
                        "): userbuffers over the network is not modelled yet");
  }
  const bool system_given = s.peak_flops_fp32 > 0 || s.peak_flops_fp16 > 0 || s.peak_flops_bf16 > 0;
  if (system_given && s.sm_count <= 0) {
    check.fail(key, "=true needs the system's sm_count (system \"" + s.name +
                        "\" does not give it): Transformer Engine runs GEMMs on the SMs its "
                        "communication kernels leave");
  }
  // comm_gemm_overlap.cpp split_overlap_rs: the GEMM's output features in num_splits = 4 chunks
  // (initialize_ub's default for the pipelined reduce-scatter).
  const std::int64_t h = w.model.hidden_size;
  if (h > 0 && h % 4 != 0 && (t.tp_comm_overlap_rs || t.tp_comm_overlap_rs_dgrad)) {
    check.fail("model.hidden_size",
               "=" + str(h) + " is not divisible by 4, the chunks Transformer Engine's pipelined "
                              "GEMM+reduce-scatter splits it into (tp_comm_overlap)");
  }
}

}  // namespace stepsim::detail
