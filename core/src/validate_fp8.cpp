// Megatron-LM's FP8 rules (megatron/training/arguments.py, TransformerConfig.__post_init__ in
// megatron/core/transformer/transformer_config.py) and what stepsim models of FP8 so far.

#include <string>

#include "validate_internal.hpp"

namespace stepsim::detail {

namespace {

// TE keeps the history of every FP8 tensor on the GPU and rolls it each step; beyond 2^24 steps
// it is no job, and the amax update's byte count stays far inside int64 (stepsim's own limit).
constexpr std::int64_t kMaxAmaxHistory = std::int64_t{1} << 24;

std::string_view recipe_name(Fp8Recipe r) {
  switch (r) {
    case Fp8Recipe::kDelayed: return "delayed";
    case Fp8Recipe::kTensorwise: return "tensorwise";
    case Fp8Recipe::kBlockwise: return "blockwise";
    case Fp8Recipe::kMxfp8: return "mxfp8";
    case Fp8Recipe::kCustom: return "custom";
  }
  return "?";
}

/// Why a recipe is not modelled, from Transformer Engine's recipes and support checks
/// (transformer_engine/common/recipe/__init__.py, pytorch/quantization.py check_*_support).
std::string_view unmodelled_recipe_reason(Fp8Recipe r) {
  switch (r) {
    case Fp8Recipe::kMxfp8:
      return ": Transformer Engine's MXFP8BlockScaling needs compute capability 10.0 or "
             "higher (check_mxfp8_support: \"Device compute capability 10.0 or higher required "
             "for MXFP8 execution.\"), a Blackwell GPU, and stepsim has no Blackwell system "
             "file with cited figures yet";
    case Fp8Recipe::kCustom:
      return ": a custom recipe's quantizers come from fp8_quantizer_factory, code stepsim "
             "cannot price";
    case Fp8Recipe::kDelayed:
    case Fp8Recipe::kTensorwise:
    case Fp8Recipe::kBlockwise:
      break;
  }
  return "";
}

}  // namespace

void check_fp8(const Workload& w, Checker& check) {
  const TrainingConfig& t = w.training;
  if (t.fp8_param_gather && !t.fp8_enabled()) {
    // TransformerConfig: "fp8_param must be used together with fp8 mode."
    check.fail("training.fp8_param_gather", "=true needs fp8 (Megatron-LM's --fp8-format)");
  }
  if (t.fp8_param_gather && !t.use_distributed_optimizer) {
    // arguments.py: "--fp8-param-gather only supported with distributed optimizer, ..."
    check.fail("training.fp8_param_gather", "=true needs use_distributed_optimizer");
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
    check.fail("training.fp8", std::string("=\"") + (t.fp8 == Fp8Format::kE4m3 ? "e4m3" : "hybrid") +
                                   "\" but system \"" + s.name + "\" (" + s.gpu_name +
                                   ") has no FP8 tensor cores (no peak_flops_fp8)");
  }
  if (t.fp8_recipe != Fp8Recipe::kDelayed && t.fp8_recipe != Fp8Recipe::kTensorwise &&
      t.fp8_recipe != Fp8Recipe::kBlockwise) {
    check.fail("training.fp8_recipe", std::string("=\"") + std::string(recipe_name(t.fp8_recipe)) +
                                          "\" is not modelled yet (\"delayed\", Megatron-LM's "
                                          "default, \"tensorwise\" and \"blockwise\" are)" +
                                          std::string(unmodelled_recipe_reason(t.fp8_recipe)));
  }
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
