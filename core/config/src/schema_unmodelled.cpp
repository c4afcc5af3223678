// The Megatron-LM arguments stepsim knows and does not model, and how a launch-line flag
// outside the schema is classified (see schema.hpp).

#include <iterator>
#include <span>
#include <string_view>
#include <vector>

#include "stepsim/config/megatron_flags.hpp"
#include "stepsim/config/schema.hpp"

namespace stepsim {
namespace {

// Megatron-LM arguments stepsim knows and does not model (megatron/training/arguments.py and
// the config dataclasses its flags are built from). `changes_job` ones are errors unless given
// their neutral value (Megatron's default, which leaves the job as stepsim models it).
constexpr bool kHarmless = false;
constexpr UnmodelledArgument kUnmodelled[] = {
    // the model family: a training script other than pretrain_gpt.py
    {.dest = "model_type", .flag = "pretrain_*.py"},
    // parallelism
    {.dest = "num_distributed_optimizer_instances",
     .flag = "--num-distributed-optimizer-instances",
     .neutral_value = "1"},
    // data-parallel buckets: pads each bucket of the distributed optimizer to a multiple of
    // lcm(dp, 128, 2^16) elements for NCCL's bus bandwidth (param_layout.py)
    {.dest = "ddp_pad_buckets_for_high_nccl_busbw",
     .flag = "--ddp-pad-buckets-for-high-nccl-busbw"},
    {.dest = "rampup_batch_size", .flag = "--rampup-batch-size"},
    {.dest = "step_batch_size_schedule", .flag = "--step-batch-size-schedule"},
    {.dest = "decoder_seq_length", .flag = "--decoder-seq-length"},
    // precision
    // numerics of delayed scaling only: the same kernels and bytes either way
    {.dest = "fp8_amax_compute_algo", .flag = "--fp8-amax-compute-algo", .changes_job = kHarmless},
    {.dest = "fp8_margin", .flag = "--fp8-margin", .changes_job = kHarmless},
    {.dest = "fp8_wgrad", .flag = "--no-fp8-wgrad"},
    {.dest = "fp8_dot_product_attention", .flag = "--fp8-dot-product-attention"},
    {.dest = "fp8_multi_head_attention", .flag = "--fp8-multi-head-attention"},
    {.dest = "first_last_layers_bf16", .flag = "--first-last-layers-bf16"},
    {.dest = "accumulate_allreduce_grads_in_fp32", .flag = "--accumulate-allreduce-grads-in-fp32"},
    {.dest = "disable_bf16_reduced_precision_matmul",
     .flag = "--disable-bf16-reduced-precision-matmul"},
    // communication overlap and kernels
    // deprecated since Transformer Engine 1.6: Megatron hands TE tp_comm_overlap_ag/_rs instead
    {.dest = "tp_comm_split_ag", .flag = "--disable-tp-comm-split-ag", .changes_job = kHarmless},
    {.dest = "tp_comm_split_rs", .flag = "--disable-tp-comm-split-rs", .changes_job = kHarmless},
    {.dest = "tp_comm_bootstrap_backend",
     .flag = "--tp-comm-bootstrap-backend",
     .changes_job = kHarmless},
    {.dest = "use_nccl_ub", .flag = "--use-nccl-ub"},
    // Muon's options that change no kernel or byte (the update's scale and momentum), and
    // those that do and are not modelled: the Triton SYRK Gram kernel, fp32 (TF32 or IEEE)
    // Newton-Schulz GEMMs, Lion for the non-matrix parameters, the cubic coefficient schedule
    // without the A @ A GEMM (emerging_optimizers muon_utils.py "cubic5"; the other schedules
    // run the same three GEMMs an iteration)
    {.dest = "muon_momentum", .flag = "--muon-momentum", .changes_job = kHarmless},
    {.dest = "muon_scale_mode", .flag = "--muon-scale-mode", .changes_job = kHarmless},
    {.dest = "muon_extra_scale_factor",
     .flag = "--muon-extra-scale-factor",
     .changes_job = kHarmless},
    {.dest = "muon_use_syrk", .flag = "--muon-use-syrk"},
    {.dest = "muon_fp32_matmul_prec", .flag = "--muon-fp32-matmul-prec", .neutral_value = "medium"},
    {.dest = "muon_scalar_optimizer", .flag = "--muon-scalar-optimizer", .neutral_value = "adam"},
    {.dest = "muon_coefficient_type", .flag = "--muon-coefficient-type", .neutral_value = "quintic"},
    // CUDA graphs: replay of what the step already prices (retain_graph changes no kernel)
    {.dest = "cuda_graph_retain_backward_graph",
     .flag = "--cuda-graph-retain-backward-graph",
     .changes_job = kHarmless},
    {.dest = "transformer_impl",
     .flag = "--transformer-impl",
     .neutral_value = "transformer_engine"},
    {.dest = "spec", .flag = "--spec"},
    {.dest = "bias_gelu_fusion", .flag = "--no-bias-gelu-fusion"},
    {.dest = "bias_dropout_fusion", .flag = "--no-bias-dropout-fusion"},
    {.dest = "apply_rope_fusion", .flag = "--no-rope-fusion"},
    {.dest = "gradient_accumulation_fusion", .flag = "--no-gradient-accumulation-fusion"},
    // attention and layers
    {.dest = "enable_gpt_oss", .flag = "--enable-gpt-oss"},
    // multi-latent attention: the fused q/kv down projection with the input norm in front
    // (FusedMLASelfAttention) is another op sequence; latent caching is inference only
    // (Megatron asserts it off in training); YaRN's factors change no kernel or byte
    {.dest = "mla_down_proj_fusion", .flag = "--mla-down-proj-fusion"},
    {.dest = "cache_mla_latents", .flag = "--cache-mla-latents"},
    {.dest = "rotary_scaling_factor", .flag = "--rotary-scaling-factor", .changes_job = kHarmless},
    {.dest = "mscale", .flag = "--mscale", .changes_job = kHarmless},
    {.dest = "mscale_all_dim", .flag = "--mscale-all-dim", .changes_job = kHarmless},
    {.dest = "recompute_modules", .flag = "--recompute-modules"},
    {.dest = "cpu_offloading", .flag = "--cpu-offloading"},
    // mixture of experts
    // the z-loss kernels are [tokens, num_experts] reductions, not priced yet
    {.dest = "moe_z_loss_coeff", .flag = "--moe-z-loss-coeff"},
    {.dest = "moe_permute_fusion", .flag = "--moe-permute-fusion"},
    {.dest = "moe_router_pre_softmax", .flag = "--moe-router-pre-softmax"},
    {.dest = "moe_router_fusion", .flag = "--moe-router-fusion"},
    // numerics of the routing: the same kernels and bytes either way
    {.dest = "moe_router_topk_scaling_factor",
     .flag = "--moe-router-topk-scaling-factor",
     .changes_job = kHarmless},
    {.dest = "moe_router_bias_update_rate",
     .flag = "--moe-router-bias-update-rate",
     .changes_job = kHarmless},
    {.dest = "moe_layer_recompute", .flag = "--moe-layer-recompute"},
    {.dest = "moe_latent_size", .flag = "--moe-latent-size"},
    // harmless: hyper-parameters, data, checkpoints, logging, initialisation, profiling
    {.dest = "lr", .flag = "--lr", .changes_job = kHarmless},
    {.dest = "min_lr", .flag = "--min-lr", .changes_job = kHarmless},
    {.dest = "decoupled_lr", .flag = "--decoupled-lr", .changes_job = kHarmless},
    {.dest = "decoupled_min_lr", .flag = "--decoupled-min-lr", .changes_job = kHarmless},
    {.dest = "weight_decay", .flag = "--weight-decay", .changes_job = kHarmless},
    {.dest = "init_method_std", .flag = "--init-method-std", .changes_job = kHarmless},
    {.dest = "train_iters", .flag = "--train-iters", .changes_job = kHarmless},
    {.dest = "train_samples", .flag = "--train-samples", .changes_job = kHarmless},
    {.dest = "seed", .flag = "--seed", .changes_job = kHarmless},
    {.dest = "split", .flag = "--split", .changes_job = kHarmless},
    {.dest = "merge_file", .flag = "--merge-file", .changes_job = kHarmless},
    {.dest = "mock_data", .flag = "--mock-data", .changes_job = kHarmless},
    {.dest = "num_workers", .flag = "--num-workers", .changes_job = kHarmless},
    {.dest = "use_mcore_models", .flag = "--use-mcore-models", .changes_job = kHarmless},
    {.dest = "rotary_base", .flag = "--rotary-base", .changes_job = kHarmless},
    {.dest = "rope_type", .flag = "--rope-type", .changes_job = kHarmless},
    {.dest = "add_position_embedding", .flag = "--no-position-embedding", .changes_job = kHarmless},
    {.dest = "apply_layernorm_1p", .flag = "--apply-layernorm-1p", .changes_job = kHarmless},
    {.dest = "calculate_per_token_loss",
     .flag = "--calculate-per-token-loss",
     .changes_job = kHarmless},
    {.dest = "manual_gc", .flag = "--manual-gc", .changes_job = kHarmless},
    {.dest = "empty_unused_memory_level",
     .flag = "--empty-unused-memory-level",
     .changes_job = kHarmless},
    {.dest = "distributed_backend", .flag = "--distributed-backend", .changes_job = kHarmless},
    {.dest = "distributed_timeout_minutes",
     .flag = "--distributed-timeout-minutes",
     .changes_job = kHarmless},
    {.dest = "tiktoken_pattern", .flag = "--tiktoken-pattern", .changes_job = kHarmless},
    {.dest = "create_attention_mask_in_dataloader",
     .flag = "--no-create-attention-mask-in-dataloader",
     .changes_job = kHarmless},
    {.dest = "mmap_bin_files", .flag = "--no-mmap-bin-files", .changes_job = kHarmless},
    {.dest = "check_for_nan_in_loss_and_grad",
     .flag = "--no-check-for-nan-in-loss-and-grad",
     .changes_job = kHarmless},
    {.dest = "init_model_with_meta_device",
     .flag = "--init-model-with-meta-device",
     .changes_job = kHarmless},
    {.dest = "use_cpu_initialization",
     .flag = "--use-cpu-initialization",
     .changes_job = kHarmless},
    {.dest = "record_memory_history", .flag = "--record-memory-history", .changes_job = kHarmless},
    {.dest = "logging_level", .flag = "--logging-level", .changes_job = kHarmless},
};

// Flag prefixes of arguments that never change a step's time or memory (logging,
// checkpoints, data, schedules of the learning rate, optimizer hyper-parameters, profiling).
constexpr std::string_view kHarmlessPrefixes[] = {
    "--log-",
    "--eval-",
    "--save",
    "--load",
    "--no-load-",
    "--no-save-",
    "--wandb-",
    "--tensorboard",
    "--lr-",
    "--data-",
    "--adam-",
    "--sgd-",
    "--exit-",
    "--ckpt-",
    "--dist-ckpt-",
    "--profile",
    "--tokenizer-",
    "--vocab-",
    "--timing-",
    "--one-logger",
    "--straggler",
    "--rerun-",
    "--inprocess-",
    "--ft-",
    "--start-weight-decay",
    "--end-weight-decay",
    "--weight-decay-",
    "--async-save",
    "--use-checkpoint-",
    "--finetune",
    "--pretrained-checkpoint",
};

}  // namespace

std::span<const UnmodelledArgument> unmodelled_arguments() {
  static const std::vector<UnmodelledArgument> all = [] {
    std::vector<UnmodelledArgument> out(std::begin(kUnmodelled), std::end(kUnmodelled));
    const auto more = detail::more_unmodelled_arguments();
    out.insert(out.end(), more.begin(), more.end());
    return out;
  }();
  return all;
}

const UnmodelledArgument* find_unmodelled_argument(std::string_view dest_or_flag) {
  const bool is_flag = dest_or_flag.starts_with("--");
  for (const UnmodelledArgument& a : unmodelled_arguments()) {
    if ((is_flag ? a.flag : a.dest) == dest_or_flag) return &a;
  }
  return nullptr;
}

FlagClass classify_listed_flag(std::string_view flag, std::string_view value) {
  if (const UnmodelledArgument* a = find_unmodelled_argument(flag)) {
    if (!a->changes_job) return FlagClass::kHarmless;
    if (!a->neutral_value.empty() && value == a->neutral_value) return FlagClass::kHarmless;
    return FlagClass::kUnmodelled;
  }
  if (find_harmless_flag_class(flag) != nullptr) return FlagClass::kHarmless;
  return FlagClass::kUnknown;
}

// The explicit tables first; the family prefixes only for flags they do not list (those of
// Megatron-LM versions other than the pinned one).
FlagClass classify_unmodelled_flag(std::string_view flag, std::string_view value) {
  if (const FlagClass c = classify_listed_flag(flag, value); c != FlagClass::kUnknown) return c;
  for (const std::string_view prefix : kHarmlessPrefixes) {
    if (flag.starts_with(prefix)) return FlagClass::kHarmless;
  }
  return FlagClass::kUnknown;
}

}  // namespace stepsim
