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
    case Fp8Recipe::kBlockwise:
      // Float8BlockScaling: x and grad 1D blocks (1x128), weights 2D (128x128), fp32 scales;
      // TE quantizes both usages from 16 bits (they are not each other's transposes) and
      // all-gathers data and scales (distributed.py _start_all_gather_fp8_blockwise).
      return ": Transformer Engine's Float8BlockScaling (1x128 tiles of activations and "
             "gradients, 128x128 blocks of weights, fp32 scales, no amax history or reduction; "
             "compute capability 9.0 and CUDA 12.9 or newer, check_fp8_block_scaling_support) "
             "quantizes row- and column-wise copies with their scales and all-gathers both "
             "under sequence parallelism, which stepsim does not price yet";
    case Fp8Recipe::kMxfp8:
      return ": Transformer Engine's MXFP8BlockScaling needs compute capability 10.0 or "
             "higher (check_mxfp8_support: \"Device compute capability 10.0 or higher required "
             "for MXFP8 execution.\"), a Blackwell GPU, and stepsim has no Blackwell system "
             "file with cited figures yet";
    case Fp8Recipe::kCustom:
      return ": a custom recipe's quantizers come from fp8_quantizer_factory, code stepsim "
             "cannot price";
    case Fp8Recipe::kDelayed:
    case Fp8Recipe::kTensorwise: break;
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
  if (t.fp8_recipe != Fp8Recipe::kDelayed && t.fp8_recipe != Fp8Recipe::kTensorwise) {
    check.fail("training.fp8_recipe", std::string("=\"") + std::string(recipe_name(t.fp8_recipe)) +
                                          "\" is not modelled yet (\"delayed\", Megatron-LM's "
                                          "default, and \"tensorwise\" are)" +
                                          std::string(unmodelled_recipe_reason(t.fp8_recipe)));
  }
}

}  // namespace stepsim::detail
