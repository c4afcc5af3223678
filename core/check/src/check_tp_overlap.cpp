// Megatron-LM's rules on TP-communication overlap and deferred embedding wgrad
// (megatron/training/arguments.py, ModelParallelConfig.__post_init__ in
// megatron/core/model_parallel_config.py), Transformer Engine's userbuffers' own limits
// (transformer_engine/pytorch/module/base.py initialize_ub, the comm+GEMM overlap in
// transformer_engine/common/comm_gemm_overlap/comm_gemm_overlap.cpp), and what stepsim does
// not model of them yet.

#include <string>
#include <tuple>

#include "stepsim/layout/nccl_topology.hpp"
#include "check_internal.hpp"

namespace stepsim::detail {

namespace {

/// Whether the system gives a peak: the rules that need its figures apply only then.
bool given(const SystemConfig& s) {
  return s.peak_flops_fp32 > 0 || s.peak_flops_fp16 > 0 || s.peak_flops_bf16 > 0;
}

/// Transformer Engine's norm kernels' SM margins against the system's SMs.
void check_sm_margins(const Workload& w, Checker& check) {
  const TrainingConfig& t = w.training;
  // Transformer Engine's norm kernels launch on the device's multiProcessorCount minus the
  // margin (transformer_engine/common/normalization/common.cpp: multiprocessorCount -
  // sm_margin; the tuned kernels then put ctas_per_sm CTAs on each of those SMs).
  const SystemConfig& s = w.system;
  const bool system_given = given(s);
  for (const auto& [key, env, margin] :
       {std::tuple{"training.fwd_layernorm_sm_margin", "NVTE_FWD_LAYERNORM_SM_MARGIN",
                   t.fwd_layernorm_sm_margin},
        std::tuple{"training.bwd_layernorm_sm_margin", "NVTE_BWD_LAYERNORM_SM_MARGIN",
                   t.bwd_layernorm_sm_margin}}) {
    if (margin <= 0 || !system_given) continue;
    if (s.sm_count <= 0) {
      check.fail(key, "=" + str(margin) + " (" + env + ") needs the system's sm_count (system \"" +
                          s.name +
                          "\" does not give it): the norm kernels run on the SMs "
                          "the margin leaves");
    } else if (margin >= s.sm_count) {
      check.fail(key, "=" + str(margin) + " (" + env + ") must be below system.sm_count=" +
                          str(s.sm_count) + ": the norm kernels need an SM");
    }
  }
}

/// NCCL_NVLS_ENABLE, the deferred embedding wgrad, a userbuffers file without the overlap.
void check_overlap_flags(const Workload& w, Checker& check) {
  const TrainingConfig& t = w.training;
  const SystemConfig& s = w.system;
  const bool system_given = given(s);
  // NCCL_NVLS_ENABLE (src/transport/nvls.cc ncclNvlsInit): 0 off, 2 auto-detect, 1 forced on
  // (and cuMulticast fails on a GPU without multicast).
  if (t.nccl_nvls_enable < 0 || t.nccl_nvls_enable > 2) {
    check.fail("training.nccl_nvls_enable",
               "=" + str(t.nccl_nvls_enable) + " (NCCL_NVLS_ENABLE) must be 0, 1 or 2");
  } else if (t.nccl_nvls_enable == 1 && system_given && !nccl_nvls_capable(s)) {
    check.fail("training.nccl_nvls_enable",
               "=1 (NCCL_NVLS_ENABLE) forces NVLink SHARP, which system \"" + s.name +
                   "\" does not have (it needs a Hopper or newer GPU on NVSwitch): NCCL fails");
  }
  if (t.defer_embedding_wgrad_compute && t.pipeline_model_parallel_size == 1) {
    check.fail("training.defer_embedding_wgrad_compute",
               "=true needs pipeline_model_parallel_size > 1 (Megatron: \"Cannot defer embedding "
               "wgrad compute when pipeline model parallel is not used\")");
  }
  // gradient_accumulation_fusion (needed by the deferral) is Megatron's default; turning it off
  // (--no-gradient-accumulation-fusion) is not modelled and rejected as such.
  if (!t.tp_comm_overlap_cfg.empty() && !t.tp_comm_overlap) {
    // _initialize_tp_communicators reads the file only to set up the userbuffers.
    check.fail("training.tp_comm_overlap_cfg",
               "=\"" + t.tp_comm_overlap_cfg +
                   "\" has no effect without tp_comm_overlap "
                   "(Megatron reads it only to initialize Transformer Engine's userbuffers)");
  }
}

/// tp_comm_overlap itself: sequence parallelism, one node, the system's SMs. false: no
/// further rule applies (sequence parallelism is off).
bool check_overlap_setup(const Workload& w, Checker& check) {
  const TrainingConfig& t = w.training;
  const SystemConfig& s = w.system;
  const bool system_given = given(s);
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
    return false;
  }
  // Userbuffers map the TP group's buffers over NVLink: Transformer Engine's initialize_ub
  // (pytorch/module/base.py) makes each TP group one "NVLink domain", and userbuffers-host.cpp
  // shares the buffers across hosts of a multi-node NVLink fabric (has_mnnvl_fabric,
  // CU_MEM_HANDLE_TYPE_FABRIC). A TP group larger than the NVLink domain would need the NICs.
  const std::int64_t gpn = s.nvlink_domain();
  if (gpn > 0 && t.tensor_model_parallel_size > gpn) {
    const bool host = s.nvlink_domain_size <= 0 || s.nvlink_domain_size == s.gpus_per_node;
    check.fail(key, "=true with tensor_model_parallel_size=" + str(t.tensor_model_parallel_size) +
                        (host ? " across nodes (gpus_per_node=" + str(gpn)
                              : " across NVLink domains (nvlink_domain_size=" + str(gpn)) +
                        "): userbuffers over the network is not modelled yet");
  }
  if (system_given && s.sm_count <= 0) {
    check.fail(key, "=true needs the system's sm_count (system \"" + s.name +
                        "\" does not give it): Transformer Engine runs GEMMs on the SMs its "
                        "communication kernels leave");
  }
  return true;
}

/// Each userbuffers GEMM's settings (tp_comm_overlap_cfg) against the model and the system.
void check_overlap_gemms(const Workload& w, Checker& check) {
  const TrainingConfig& t = w.training;
  const SystemConfig& s = w.system;
  // comm_gemm_overlap.cpp split_overlap_rs: the GEMM's output features (h) in num_splits chunks
  // (initialize_ub's default 4, or tp_comm_overlap_cfg's).
  const std::int64_t h = w.model.hidden_size;
  for (std::size_t i = 0; i < kUbGemmNames.size(); ++i) {
    const std::string name(kUbGemmNames[i]);
    const UbGemmSettings& g = t.tp_comm_overlap_gemms[i];
    const bool pipelined =
        ((name == "proj_fprop" || name == "fc2_fprop") && t.tp_comm_overlap_rs &&
         g.ring_exchange != 1) ||
        ((name == "qkv_dgrad" || name == "fc1_dgrad") && t.tp_comm_overlap_rs_dgrad);
    // split_overlap_ag with _aggregate swaps chunks within rank pairs (tp_id ^ 1) and runs
    // tp / 2 steps of two chunks: with an odd tp the last rank's pair does not exist.
    if (g.aggregate == 1 && t.tensor_model_parallel_size % 2 != 0) {
      check.fail("training.tp_comm_overlap_cfg",
                 ": " + name + ".aggregate=true needs an even tensor_model_parallel_size (" +
                     str(t.tensor_model_parallel_size) +
                     "): Transformer Engine's aggregated ring exchange runs tp / 2 steps of a "
                     "pair of chunks");
    }
    const std::int64_t splits = g.num_splits > 0 ? g.num_splits : 4;
    if (pipelined && h > 0 && h % splits != 0) {
      check.fail("model.hidden_size", "=" + str(h) + " is not divisible by " + str(splits) +
                                          ", the chunks Transformer "
                                          "Engine's pipelined GEMM+reduce-scatter " +
                                          name +
                                          " splits it into "
                                          "(tp_comm_overlap" +
                                          (g.num_splits > 0 ? "_cfg's num_splits" : "") + ")");
    }
    if (g.atomic_gemm == 1 && !t.fp8_enabled()) {
      // add_ub: "Atomic GEMM overlap supported only for FP8 GEMM".
      check.fail("training.tp_comm_overlap_cfg",
                 ": " + name +
                     ".atomic_gemm=true needs fp8 (Transformer Engine: \"Atomic GEMM overlap "
                     "supported only for FP8 GEMM\")");
    }
    if (g.num_sm > 0 && s.sm_count > 0 && g.num_sm >= s.sm_count) {
      check.fail("training.tp_comm_overlap_cfg", ": " + name + ".num_sm=" + str(g.num_sm) +
                                                     " leaves no SM of the system's " +
                                                     str(s.sm_count) + " to the GEMM");
    }
  }
}

}  // namespace

void check_tp_overlap(const Workload& w, Checker& check) {
  check_sm_margins(w, check);
  check_overlap_flags(w, check);
  if (!w.training.tp_comm_overlap) return;
  if (!check_overlap_setup(w, check)) return;
  check_overlap_gemms(w, check);
}


}  // namespace stepsim::detail
