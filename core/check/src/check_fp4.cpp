// Megatron-LM's FP4 rules (megatron/training/arguments.py validate_args, TransformerConfig in
// megatron/core/transformer/transformer_config.py, megatron/core/fp4_utils.py) and Transformer
// Engine's (transformer_engine/pytorch/quantization.py check_nvfp4_support, the NVFP4
// quantizer in pytorch/csrc/quantizer.cpp), and what stepsim models of NVFP4 so far.

#include <string>
#include <string_view>

#include "check_internal.hpp"

namespace stepsim::detail {

namespace {

constexpr std::string_view kNotModelled = " is not modelled yet";

/// The shapes NVFP4 is modelled for: TE's fused Hadamard-transform cast
/// (NVFP4Quantizer::is_eligible_for_rht_cast_fusion: rows a multiple of 64, columns of 128)
/// on every linear's input and output gradient; other shapes take an unfused path.
void check_nvfp4_shapes(const Workload& w, Checker& check) {
  const ModelConfig& m = w.model;
  // With sequence parallelism TE quantizes the sequence shards (before _all_gather_nvfp4).
  const RankShapes r = rank_shapes(w, m.moe() ? m.moe_ffn() : m.ffn_hidden_size);
  const std::int64_t tp = r.tp;
  const bool sp = r.sp;
  const std::int64_t tokens = r.tokens;
  if (tokens % 64 != 0) {
    check.fail("training.fp4",
               "=\"e2m1\" with " + str(tokens) +
                   " tokens per rank (seq_length / context_parallel_size x micro_batch_size" +
                   std::string(sp ? " / tensor_model_parallel_size, sequence-parallel" : "") +
                   ")" +
                   std::string(kNotModelled) +
                   ": Transformer Engine's fused Hadamard-transform NVFP4 cast takes rows in "
                   "multiples of 64 (is_eligible_for_rht_cast_fusion)");
  }
  const std::int64_t d = r.head_dim;
  const std::int64_t ffn = r.ffn;
  const std::int64_t attn = r.attn;
  const std::int64_t qkv = r.qkv;
  const std::string key = m.hidden_size % 128 != 0 ? "model.hidden_size"
                          : ffn % 128 != 0
                              ? (m.moe() ? "model.moe_ffn_hidden_size" : "model.ffn_hidden_size")
                              : "model.kv_channels";
  const std::string field = key.substr(key.find('.') + 1);
  const std::int64_t value = field == "hidden_size"  ? m.hidden_size
                             : field == "kv_channels" ? d
                                                      : ffn * tp;
  if (m.hidden_size % 128 != 0 || ffn % 128 != 0 || attn % 128 != 0 || qkv % 128 != 0) {
    check.fail(key, "=" + str(value) + " with fp4 (per tensor-parallel rank: hidden " +
                        str(m.hidden_size) + ", ffn " + str(ffn) + ", attention " + str(attn) +
                        ", QKV " + str(qkv) + ")" + std::string(kNotModelled) +
                        ": Transformer Engine's fused Hadamard-transform NVFP4 cast takes "
                        "columns in multiples of 128 (is_eligible_for_rht_cast_fusion), every "
                        "linear's widths must be");
  }
}

/// FP4 parameters (fp4_param_gather) as modelled: the distributed optimizer's shards quantized
/// by quantize_nvfp4_param_shard and gathered in FP4 (distrib_optimizer.py
/// _copy_main_params_to_model_params).
void check_fp4_params(const Workload& w, Checker& check) {
  const TrainingConfig& t = w.training;
  if (!t.fp4_param_gather) return;
  if (t.fsdp()) {
    check.fail("training.fp4_param_gather",
               "=true with Megatron-FSDP or torch FSDP2 (NVFP4 parameters gathered by FSDP)" +
                   std::string(kNotModelled));
  } else if (!t.use_distributed_optimizer) {
    check.fail("training.fp4_param_gather",
               "=true without use_distributed_optimizer (NVFP4 parameters updated by the "
               "replicated optimizer)" +
                   std::string(kNotModelled));
  }
  if (t.optimizer_impl != OptimizerImpl::kMegatron) {
    check.fail("training.fp4_param_gather",
               "=true with optimizer_impl \"" + std::string(to_string(t.optimizer_impl)) + "\"" +
                   std::string(kNotModelled));
  }
}

/// What stepsim does not price of NVFP4 yet.
void check_fp4_unmodelled(const Workload& w, Checker& check) {
  const TrainingConfig& t = w.training;
  const ModelConfig& m = w.model;
  if (t.fp4_recipe == Fp4Recipe::kCustom) {
    check.fail("training.fp4_recipe",
               std::string("=\"custom\"") + std::string(kNotModelled) +
                   ": a custom recipe's quantizers come from fp4_quantizer_factory, code "
                   "stepsim cannot price (\"nvfp4\" is modelled)");
  }
  check_fp4_params(w, check);
  if (t.tp_comm_overlap) {
    check.fail("training.tp_comm_overlap",
               "=true with fp4 (userbuffers exchanging NVFP4 data and scales)" +
                   std::string(kNotModelled));
  }
  const auto with = [&](const std::string& key, const std::string& what) {
    check.fail(key, what + " with fp4" + std::string(kNotModelled));
  };
  if (m.moe()) with("model.num_experts", "=" + str(m.num_experts) + " (grouped NVFP4 expert GEMMs)");
  if (m.multi_latent_attention) with("model.multi_latent_attention", "=true (NVFP4 MLA projections)");
  if (m.hybrid()) with("model.hybrid_layer_pattern", " (NVFP4 Mamba projections)");
  if (m.mtp_num_layers > 0) with("model.mtp_num_layers", "=" + str(m.mtp_num_layers));
  if (t.fsdp() && !t.fp4_param_gather) {
    with(t.use_megatron_fsdp ? "training.use_megatron_fsdp" : "training.use_torch_fsdp2", "=true");
  }
  if (t.cuda_graph_impl != CudaGraphImpl::kNone) {
    with("training.cuda_graph_impl",
         "=\"" + std::string(to_string(t.cuda_graph_impl)) + "\" (NVFP4 quantizers in graphs)");
  }
  if (t.optimizer_impl != OptimizerImpl::kMegatron && !t.fp4_param_gather) {
    with("training.optimizer_impl", "=\"" + std::string(to_string(t.optimizer_impl)) + "\"");
  }
}

/// The compute capability NVFP4 is modelled on: Transformer Engine's fused Hadamard-transform
/// cast runs on 10.0 to 11.0 only (is_eligible_for_rht_cast_fusion: sm_arch() >= 100 and
/// <= 110); above, TE takes an unfused path (quantize_with_rht_unfused_helper).
void check_fp4_architecture(const Workload& w, Checker& check) {
  const SystemConfig& s = w.system;
  const bool system_given = s.peak_flops_fp32 > 0 || s.peak_flops_fp16 > 0 || s.peak_flops_bf16 > 0;
  if (!system_given) return;
  const std::string gpu =
      " on system \"" + s.name + "\" (" + s.gpu_name +
      (s.compute_capability > 0 ? ", compute capability " + str(s.compute_capability / 10) + "." +
                                      str(s.compute_capability % 10)
                                : ", whose system file gives no compute_capability") +
      ")";
  if (s.compute_capability < 100) {
    // quantization.py _compute_nvfp4_support.
    check.fail("training.fp4",
               "=\"e2m1\"" + gpu +
                   ": Transformer Engine's NVFP4BlockScaling needs compute capability 10.0 or "
                   "higher (check_nvfp4_support: \"Device compute capability 10.0 or higher "
                   "required for NVFP4 execution.\"), a Blackwell GPU");
    return;
  }
  if (s.compute_capability > 110) {
    check.fail("training.fp4", "=\"e2m1\"" + gpu + std::string(kNotModelled) +
                                   ": Transformer Engine fuses the Hadamard transform into the "
                                   "NVFP4 cast on compute capability 10.0 to 11.0 only "
                                   "(is_eligible_for_rht_cast_fusion)");
  }
  if (s.peak_flops_fp4 <= 0) {
    check.fail("training.fp4", "=\"e2m1\"" + gpu +
                                   " but its system file gives no peak_flops_fp4 (the dense "
                                   "NVFP4 tensor-core peak, cited)");
  }
}

}  // namespace

void check_fp4(const Workload& w, Checker& check) {
  const TrainingConfig& t = w.training;
  if (t.fp4_param_gather && !t.fp4_enabled()) {
    // arguments.py validate_args.
    check.fail("training.fp4_param_gather",
               "=true needs fp4 (Megatron-LM: \"--fp4-param-gather must be used together with "
               "--fp4-format.\")");
  }
  if (!t.fp4_enabled()) return;
  if (t.fp8_enabled()) {
    check.fail("training.fp4",
               "=\"e2m1\" with fp8: Megatron-LM: \"--fp4-format and --fp8-format cannot be used "
               "simultaneously. Please choose one.\"");
    return;
  }
  check_fp4_architecture(w, check);
  check_fp4_unmodelled(w, check);
  check_nvfp4_shapes(w, check);
}

}  // namespace stepsim::detail
