// The routed experts under Transformer Engine's FP8 recipes: stepsim prices Megatron-Core's
// TEGroupedMLP over TE's GroupedLinear (core/ops/src/moe/moe_fp8_ops.cpp); what it does not
// price yet is refused here, each naming its key.

#include <string>
#include <string_view>

#include "check_internal.hpp"

namespace stepsim::detail {

namespace {
constexpr std::string_view kNotModelled = " is not modelled yet";
}  // namespace

void check_moe_fp8(const Workload& w, Checker& check) {
  const ModelConfig& m = w.model;
  const TrainingConfig& t = w.training;
  if (!t.moe_grouped_gemm) {
    // SequentialMLP runs one TE Linear per expert, each with its own padding and quantizers.
    check.fail("training.moe_grouped_gemm",
               std::string("=false with fp8 (SequentialMLP's per-expert FP8 linears)") +
                   std::string(kNotModelled) + "; give moe_grouped_gemm=true (TEGroupedMLP)");
  }
  if (m.moe_shared_expert_intermediate_size > 0) {
    check.fail("model.moe_shared_expert_intermediate_size",
               std::string(" with fp8 (the shared experts' FP8 linears)") +
                   std::string(kNotModelled));
  }
  if (t.fp8_recipe == Fp8Recipe::kDelayed) {
    // GroupedLinear keeps an amax history per expert GEMM operand: the amax reduction and
    // update of emit_fp8_amax_reduction count the dense layer's tensors only.
    check.fail("training.fp8_recipe",
               std::string("=\"delayed\" with num_experts (the experts' amax histories)") +
                   std::string(kNotModelled) +
                   "; \"tensorwise\", \"blockwise\" and \"mxfp8\" experts are");
  }
  if (t.fp8_param_gather && t.fp8_recipe != Fp8Recipe::kMxfp8) {
    // MXFP8 expert parameters are modelled: with reuse_grad_buf_for_mxfp8_param_ag (which
    // check_mxfp8 asks for) every buffer's shards, the expert-parallel ones too, are gathered
    // in 16 bits through the gradient buffer (distrib_optimizer.py
    // _copy_main_params_to_param_buffer) and quantized after the gather
    // (param_and_grad_buffer.py _post_param_sync). The other recipes quantize the shards
    // before an FP8 gather over the expert data-parallel group (quantize_param_shard).
    check.fail("training.fp8_param_gather",
               "=true with num_experts and fp8_recipe \"" + std::string(to_string(t.fp8_recipe)) +
                   "\" (FP8 expert parameters quantized by the optimizer and gathered over "
                   "the expert data-parallel group)" +
                   std::string(kNotModelled) + "; \"mxfp8\" expert parameters are");
  }
  if (m.add_bias_linear) {
    check.fail("model.add_bias_linear",
               std::string("=true with fp8 and num_experts (GroupedLinear's bias gradients)") +
                   std::string(kNotModelled));
  }
  if (t.fp8_recipe == Fp8Recipe::kTensorwise && t.expert_tensor_parallel_size > 1) {
    check.fail("training.expert_tensor_parallel_size",
               "=" + str(t.expert_tensor_parallel_size) +
                   " with fp8_recipe \"tensorwise\" (the experts' amax reduction over expert "
                   "tensor parallelism)" + std::string(kNotModelled));
  }
  const std::int64_t etp = t.expert_tensor_parallel_size > 0 ? t.expert_tensor_parallel_size : 1;
  if (t.fp8_recipe == Fp8Recipe::kMxfp8 && (m.moe_ffn() / etp) % 32 != 0) {
    // MXFP8Quantizer.is_quantizable: both dims multiples of 32.
    check.fail("model.moe_ffn_hidden_size",
               "=" + str(m.moe_ffn()) + " (per expert-tensor-parallel rank " +
                   str(m.moe_ffn() / etp) +
                   ") with fp8_recipe \"mxfp8\": MXFP8 scales 32 consecutive values of a row "
                   "(MXFP8Quantizer.is_quantizable), a multiple of 32 is needed");
  }
}

}  // namespace stepsim::detail
