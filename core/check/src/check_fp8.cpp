// Megatron-LM's FP8 rules (megatron/training/arguments.py, TransformerConfig.__post_init__ in
// megatron/core/transformer/transformer_config.py) and what stepsim models of FP8 so far.

#include <string>

#include "check_internal.hpp"

namespace stepsim::detail {

namespace {

// TE keeps the history of every FP8 tensor on the GPU and rolls it each step; beyond 2^24 steps
// it is no job, and the amax update's byte count stays far inside int64 (stepsim's own limit).
constexpr std::int64_t kMaxAmaxHistory = std::int64_t{1} << 24;

/// Why a recipe is not modelled, from Transformer Engine's recipes and support checks
/// (transformer_engine/common/recipe/__init__.py, pytorch/quantization.py check_*_support).
std::string_view unmodelled_recipe_reason(Fp8Recipe r) {
  switch (r) {
    case Fp8Recipe::kCustom:
      return ": a custom recipe's quantizers come from fp8_quantizer_factory, code stepsim "
             "cannot price";
    case Fp8Recipe::kDelayed:
    case Fp8Recipe::kTensorwise:
    case Fp8Recipe::kBlockwise:
    case Fp8Recipe::kMxfp8:
      break;
  }
  return "";
}

/// Which recipes run on the system's GPU, by its compute capability: MXFP8 only where the
/// system file says 10.0 or more, the Hopper recipes only below.
void check_fp8_architecture(const Workload& w, Checker& check) {
  const TrainingConfig& t = w.training;
  const SystemConfig& s = w.system;
  const std::string name = std::string("=\"") + std::string(to_string(t.fp8_recipe)) + "\"";
  const std::string gpu =
      " on system \"" + s.name + "\" (" + s.gpu_name +
      (s.compute_capability > 0 ? ", compute capability " + str(s.compute_capability / 10) + "." +
                                      str(s.compute_capability % 10)
                                : ", whose system file gives no compute_capability") +
      ")";
  if (t.fp8_recipe == Fp8Recipe::kMxfp8 && s.compute_capability < 100) {
    // quantization.py check_mxfp8_support.
    check.fail("training.fp8_recipe",
               name + gpu +
                   ": Transformer Engine's MXFP8BlockScaling needs compute capability 10.0 or "
                   "higher (check_mxfp8_support: \"Device compute capability 10.0 or higher "
                   "required for MXFP8 execution.\"), a Blackwell GPU");
  }
  if (t.fp8_recipe != Fp8Recipe::kMxfp8 && s.compute_capability >= 100) {
    // TE on Blackwell runs FP8 GEMMs in any layout (is_non_tn_fp8_gemm_supported): no FP8
    // transposes, other quantize kernels than the Hopper ones stepsim prices.
    check.fail("training.fp8_recipe",
               name + gpu +
                   " is not modelled yet: stepsim prices the Hopper FP8 recipes as Transformer "
                   "Engine runs them before Blackwell (TN-only FP8 GEMMs and their transposes); "
                   "on compute capability 10.0+ only \"mxfp8\" is modelled");
  }
}

/// MXFP8BlockScaling as modelled (fp8_ops.cpp): what stepsim does not price yet.
void check_mxfp8(const Workload& w, Checker& check) {
  const TrainingConfig& t = w.training;
  const ModelConfig& m = w.model;
  if (t.tp_comm_overlap) {
    // base.py fill_userbuffers_buffer_for_all_gather takes MXFP8, one copy at a time.
    check.fail("training.tp_comm_overlap",
               "=true with fp8_recipe \"mxfp8\" is not modelled yet (Transformer Engine's "
               "userbuffers exchange MXFP8 data and scales one copy at a time)");
  }
  if (t.fp8_param_gather && !t.reuse_grad_buf_for_mxfp8_param_ag) {
    // param_and_grad_buffer.py: without the reuse, MXFP8 parameters are remapped into a
    // persistent parameter buffer (modify_underlying_storage), a path not modelled.
    check.fail("training.fp8_param_gather",
               "=true with fp8_recipe \"mxfp8\" is modelled with "
               "reuse_grad_buf_for_mxfp8_param_ag (Megatron-LM's "
               "--reuse-grad-buf-for-mxfp8-param-ag, as NeMo's MXFP8 recipes set it) only; "
               "without it not yet");
  }
  if (t.reuse_grad_buf_for_mxfp8_param_ag && t.overlap_param_gather) {
    // optimizer.py: with the overlap the training loop stages the parameters
    // (prepare_model_params_for_param_sync) and each bucket is quantized in the forward's
    // pre-hooks: not modelled.
    check.fail("training.reuse_grad_buf_for_mxfp8_param_ag",
               "=true with overlap_param_gather is not modelled yet (NeMo turns the overlap "
               "off for it: \"Disabling AG overlap because it is not supported with "
               "reuse_grad_buf_for_mxfp8_param_ag\")");
  }
  // MXFP8Quantizer.is_quantizable: both dims multiples of 32 (MXFP8_BLOCK_SCALING_SIZE);
  // otherwise TE gathers and quantizes another way, not modelled.
  const RankShapes r = rank_shapes(w, m.ffn_hidden_size);
  const std::int64_t tokens = r.tokens;
  if (tokens % 32 != 0) {
    check.fail("training.fp8_recipe",
               std::string("=\"mxfp8\" with ") + str(tokens) +
                   " tokens per rank (seq_length / context_parallel_size x micro_batch_size" +
                   (r.sp ? " / tensor_model_parallel_size" : "") +
                   ") is not modelled yet: MXFP8 quantizes 32-row blocks (MXFP8Quantizer."
                   "is_quantizable), a multiple of 32 is");
  }
  // The widths of the linears' inputs and outputs on a rank: hidden, FFN, attention, QKV.
  const std::int64_t ffn = r.ffn;
  const std::int64_t attn = r.attn;
  const std::int64_t qkv = r.qkv;
  if (m.hidden_size % 32 != 0 || ffn % 32 != 0 || attn % 32 != 0 || qkv % 32 != 0) {
    check.fail("model.hidden_size",
               "=" + str(m.hidden_size) + " (per tensor-parallel rank: ffn " + str(ffn) +
                   ", attention " + str(attn) + ", QKV " + str(qkv) +
                   ") with fp8_recipe \"mxfp8\" is not modelled yet: MXFP8 scales 32 "
                   "consecutive values of a row (MXFP8Quantizer.is_quantizable), every width "
                   "must be a multiple of 32");
  }
}

}  // namespace

void check_fp8(const Workload& w, Checker& check) {
  const TrainingConfig& t = w.training;
  if (t.fp8_param_gather && !t.fp8_enabled()) {
    // TransformerConfig: "fp8_param must be used together with fp8 mode."
    check.fail("training.fp8_param_gather", "=true needs fp8 (Megatron-LM's --fp8-format)");
  }
  if (t.fp8_param_gather && t.fp8_enabled() && t.params_dtype == DType::kFp32) {
    // FP8 parameters are kept with 32-bit master copies that the distributed optimizer
    // quantizes back after each step; Megatron-LM builds those only for 16-bit parameters
    // (DistributedOptimizer._build_model_and_main_param_groups: float16 groups), and an fp32
    // job has no 16-bit parameters to hold them.
    check.fail("training.fp8_param_gather",
               "=true needs bf16 or fp16: FP8 parameters (Megatron-LM's --fp8-param-gather) "
               "belong to a mixed-precision job, and this one trains in fp32 (give bf16=true)");
  }
  if (t.fp8_param_gather && !t.use_distributed_optimizer) {
    // arguments.py: "--fp8-param-gather only supported with distributed optimizer, ..."
    check.fail("training.fp8_param_gather", "=true needs use_distributed_optimizer");
  }
  if (t.reuse_grad_buf_for_mxfp8_param_ag &&
      (!t.fp8_param_gather || !t.fp8_enabled() || t.fp8_recipe != Fp8Recipe::kMxfp8)) {
    // distributed_data_parallel_config.py: "Reuse grad buffer only when keeping params in
    // MXFP8." (with fp8_param_gather); its doc: "Should be set to True only when fp8_recipe
    // is mxfp8 and fp8_param_gather is True" (otherwise the optimizer skips the FP8 cast).
    check.fail("training.reuse_grad_buf_for_mxfp8_param_ag",
               "=true needs fp8_param_gather and fp8_recipe \"mxfp8\" (Megatron-Core: \"Reuse "
               "grad buffer only when keeping params in MXFP8.\")");
  }
  if (t.fp8_amax_history_len > kMaxAmaxHistory) {
    check.fail("training.fp8_amax_history_len",
               "=" + str(t.fp8_amax_history_len) + " exceeds stepsim's limit of " +
                   str(kMaxAmaxHistory) + " steps");
  }
  if (!t.fp8_enabled()) return;
  const SystemConfig& s = w.system;
  const bool system_given = s.peak_flops_fp32 > 0 || s.peak_flops_fp16 > 0 || s.peak_flops_bf16 > 0;
  if (system_given && s.peak_flops_fp8 <= 0) {
    check.fail("training.fp8", "=\"" + std::string(to_string(t.fp8)) + "\" but system \"" + s.name +
                                   "\" (" + s.gpu_name +
                                   ") has no FP8 tensor cores (no peak_flops_fp8)");
  }
  if (t.fp8_recipe == Fp8Recipe::kCustom) {
    check.fail("training.fp8_recipe", std::string("=\"") + std::string(to_string(t.fp8_recipe)) +
                                          "\" is not modelled yet (\"delayed\", Megatron-LM's "
                                          "default, \"tensorwise\", \"blockwise\" and "
                                          "\"mxfp8\" are)" +
                                          std::string(unmodelled_recipe_reason(t.fp8_recipe)));
  }
  check_fp8_architecture(w, check);
  if (t.fp8_recipe == Fp8Recipe::kMxfp8) check_mxfp8(w, check);
  if (t.fp8_recipe == Fp8Recipe::kBlockwise && t.tp_comm_overlap) {
    // Transformer Engine's fill_userbuffers_buffer_for_all_gather (module/base.py) takes
    // Float8 / current-scaling, MXFP8 and NVFP4 quantizers only: a Float8BlockQuantizer
    // raises ValueError("Unsupported quantizer for Userbuffers").
    check.fail("training.fp8_recipe",
               "=\"blockwise\" with tp_comm_overlap: Transformer Engine's userbuffers take no "
               "block-scaled tensor (module/base.py fill_userbuffers_buffer_for_all_gather: "
               "\"Unsupported quantizer for Userbuffers\")");
  }
}

}  // namespace stepsim::detail
