// Megatron-LM's argument rules for what stepsim models. Sources: megatron/training/arguments.py
// (validate_args), megatron/core/transformer/transformer_config.py (__post_init__),
// megatron/core/model_parallel_config.py, megatron/core/pipeline_parallel/schedules.py
// (interleaved schedule checks) and megatron/core/num_microbatches_calculator.py.

#include "stepsim/check/check.hpp"

#include "stepsim/layout/pipeline_split.hpp"
#include "check_internal.hpp"

namespace stepsim {

namespace {

using detail::Checker;
using detail::str;

std::string_view name_of(RecomputeMethod m) {
  return m == RecomputeMethod::kBlock ? "\"block\"" : "\"uniform\"";
}

void check_model(const Workload& w, Checker& check) {
  const ModelConfig& m = w.model;
  for (const auto& [key, p] : {std::pair<const char*, double>{"model.attention_dropout",
                                                              m.attention_dropout},
                               {"model.hidden_dropout", m.hidden_dropout}}) {
    if (!(p >= 0.0 && p < 1.0)) {
      check.fail(key, "=" + std::to_string(p) + " is not a dropout probability (>= 0 and < 1)");
    }
  }
  if (!m.masked_softmax_fusion && m.attention_backend == AttentionBackend::kLocal) {
    // Megatron's local DotProductAttention then runs PyTorch's scale, masked_fill and
    // softmax as separate kernels (fused_softmax.py forward_torch_softmax).
    check.fail("model.masked_softmax_fusion",
               "=false with attention_backend=\"local\" is not modelled yet (PyTorch's "
               "unfused scale, mask and softmax kernels)");
  }
  if (m.squared_relu) {
    // megatron/training/argument_utils.py core_transformer_config_from_args: squared_relu
    // asserts not swiglu; bias_activation_fusion = bias_gelu_fusion, which validate_args turns
    // off only without linear biases, and TransformerConfig.__post_init__ then refuses any
    // activation but gelu, silu and quick_gelu.
    if (m.swiglu) {
      check.fail("model.squared_relu", "=true with swiglu=true: Megatron-LM asserts not swiglu "
                                       "with --squared-relu (one activation per MLP)");
    }
    if (m.add_bias_linear) {
      check.fail("model.squared_relu",
                 "=true needs add_bias_linear=false: with linear biases Megatron-LM keeps "
                 "bias_activation_fusion on, which supports only gelu, swiglu and quick_geglu "
                 "(its --no-bias-gelu-fusion is not modelled yet)");
    }
  }
  if (!(m.rotary_percent > 0.0 && m.rotary_percent <= 1.0)) {
    check.fail("model.rotary_percent", "=" + std::to_string(m.rotary_percent) +
                                           " is not a share of the head's dims (> 0 and <= 1)");
  } else if (m.rotary_percent < 1.0 && m.multi_latent_attention) {
    check.fail("model.rotary_percent", "=" + std::to_string(m.rotary_percent) +
                                           " with multi_latent_attention is not modelled yet "
                                           "(MLA's RoPE kernels are priced on whole rope dims)");
  }
  const std::int64_t t = w.training.tensor_model_parallel_size;
  const std::int64_t a = m.num_attention_heads;
  const std::int64_t g = m.num_query_groups;
  if (a > 0 && g > 0 && a % g != 0) {
    check.fail("model.num_query_groups",
               std::string("=") + str(g) + " does not divide num_attention_heads=" + str(a));
  }
  if (t > 0) {
    const std::string key = "training.tensor_model_parallel_size";
    const std::string tp = "=" + str(t);
    if (a > 0 && a % t != 0) check.fail(key, tp + " does not divide num_attention_heads=" + str(a));
    if (g > 0 && g != a && g % t != 0) {
      check.fail(key, tp + " does not divide num_query_groups=" + str(g) +
                          " (replicating key/value heads across tensor-parallel ranks is not "
                          "modelled)");
    }
    if (m.ffn_hidden_size > 0 && m.ffn_hidden_size % t != 0) {
      check.fail(key, tp + " does not divide ffn_hidden_size=" + str(m.ffn_hidden_size));
    }
    if (m.padded_vocab_size > 0 && m.padded_vocab_size % t != 0) {
      check.fail(key, tp + " does not divide padded_vocab_size=" + str(m.padded_vocab_size));
    }
  }
  if (m.vocab_size > 0 && m.padded_vocab_size > 0 && m.padded_vocab_size < m.vocab_size) {
    check.fail("model.padded_vocab_size", std::string("=") + str(m.padded_vocab_size) +
                                              " is smaller than vocab_size=" + str(m.vocab_size));
  }
  if (m.seq_length > 0 && m.max_position_embeddings > 0 &&
      m.seq_length > m.max_position_embeddings) {
    check.fail("model.seq_length",
               std::string("=") + str(m.seq_length) +
                   " exceeds max_position_embeddings=" + str(m.max_position_embeddings));
  }
}

void check_pipeline(const Workload& w, Checker& check) {
  const TrainingConfig& t = w.training;
  const std::int64_t p = t.pipeline_model_parallel_size;
  const std::int64_t v = t.virtual_pipeline_model_parallel_size;
  detail::check_pipeline_split(w, check);
  if (v <= 1 || p <= 0) return;
  if (p == 1 || (p == 2 && !t.overlap_p2p_comm)) {
    check.fail("training.pipeline_model_parallel_size",
               std::string("=") + str(p) +
                   ": the interleaved schedule (virtual_pipeline_model_parallel_size=" + str(v) +
                   ") needs pipeline_model_parallel_size > 2, or > 1 with "
                   "overlap_p2p_comm");
  }
  // schedules.py, forward_backward_pipelining_with_interleaving.
  const std::int64_t m = t.num_microbatches;
  const std::int64_t n = t.microbatch_group_size_per_vp_stage;
  if (m <= 0 || n <= 0) return;
  if (m < p) {
    check.fail("training.global_batch_size",
               std::string("=") + str(t.global_batch_size) + " gives num_microbatches=" + str(m) +
                   ", fewer than pipeline_model_parallel_size=" + str(p) +
                   " as the interleaved schedule needs");
    return;
  }
  if (n < p || n > m) {
    check.fail("training.microbatch_group_size_per_vp_stage",
               std::string("=") + str(n) + " must range in [pipeline_model_parallel_size=" +
                   str(p) + ", num_microbatches=" + str(m) + "]");
    return;
  }
  const std::int64_t remainder = m % n;
  if (remainder > 0 && remainder < p) {
    check.fail("training.global_batch_size",
               std::string("=") + str(t.global_batch_size) + " gives num_microbatches=" + str(m) +
                   "; its remainder=" + str(remainder) +
                   " after groups of microbatch_group_size_per_vp_stage=" + str(n) +
                   " must be 0 or >= pipeline_model_parallel_size=" + str(p));
  }
}

/// t * cp * p (Megatron's total_model_size), or 0 when a size is unknown or it overflows.
std::int64_t model_parallel_size(const TrainingConfig& t) {
  const std::int64_t tp = t.tensor_model_parallel_size;
  const std::int64_t cp = t.context_parallel_size;
  const std::int64_t pp = t.pipeline_model_parallel_size;
  std::int64_t tcp = 0;
  std::int64_t size = 0;
  if (tp <= 0 || cp <= 0 || pp <= 0 || __builtin_mul_overflow(tp, cp, &tcp) ||
      __builtin_mul_overflow(tcp, pp, &size)) {
    return 0;
  }
  return size;
}

void check_batch(const Workload& w, Checker& check) {
  const TrainingConfig& t = w.training;
  const std::int64_t tp = t.tensor_model_parallel_size;
  const std::int64_t cp = t.context_parallel_size;
  const std::int64_t pp = t.pipeline_model_parallel_size;
  const std::int64_t model_size = model_parallel_size(t);
  if (t.world_size > 0 && tp > 0 && cp > 0 && pp > 0 &&
      (model_size == 0 || t.world_size % model_size != 0)) {
    // arguments.py: "world size is not divisible by total_model_size" (t * p * cp).
    check.fail("training.world_size",
               std::string("=") + str(t.world_size) +
                   (cp == 1 ? " is not divisible by tensor_model_parallel_size*"
                              "pipeline_model_parallel_size=" +
                                  str(tp) + "*" + str(pp)
                            : " is not divisible by tensor_model_parallel_size*"
                              "context_parallel_size*pipeline_model_parallel_size=" +
                                  str(tp) + "*" + str(cp) + "*" + str(pp)));
  }
  const std::int64_t dp = t.data_parallel_size;
  std::int64_t per_step = 0;
  if (dp > 0 && t.micro_batch_size > 0 && t.global_batch_size > 0 &&
      (__builtin_mul_overflow(t.micro_batch_size, dp, &per_step) ||
       t.global_batch_size % per_step != 0)) {
    check.fail("training.global_batch_size",
               std::string("=") + str(t.global_batch_size) +
                   " is not divisible by micro_batch_size*data_parallel_size=" +
                   str(t.micro_batch_size) + "*" + str(dp));
  }
}

void check_recompute(const Workload& w, Checker& check) {
  const TrainingConfig& t = w.training;
  const auto granularity = t.recompute_granularity;
  const bool has_method = t.recompute_method != RecomputeMethod::kNone;
  if (granularity != RecomputeGranularity::kFull && has_method) {
    check.fail("training.recompute_method",
               std::string("=") + std::string(name_of(t.recompute_method)) +
                   (granularity == RecomputeGranularity::kSelective
                        ? " is not supported with recompute_granularity \"selective\""
                        : " needs recompute_granularity \"full\""));
  }
  if (granularity != RecomputeGranularity::kFull && t.recompute_num_layers != 0) {
    check.fail("training.recompute_num_layers",
               std::string("=") + str(t.recompute_num_layers) +
                   (granularity == RecomputeGranularity::kSelective
                        ? " must not be given with recompute_granularity \"selective\""
                        : " needs recompute_granularity \"full\""));
  }
  if (granularity == RecomputeGranularity::kFull) {
    if (!has_method) {
      check.fail("training.recompute_granularity",
                 "=\"full\" needs recompute_method \"uniform\" or \"block\"");
    }
    // Megatron caps a uniform group at the chunk's end; a count beyond the largest chunk is
    // a mistake either way.
    if (detail::pipeline_split_valid(w)) {
      const std::int64_t most = pipeline_split(t, w.model).max_chunk_layers();
      if (t.recompute_num_layers > most) {
        check.fail("training.recompute_num_layers",
                   std::string("=") + str(t.recompute_num_layers) +
                       " must be between 1 and the layers per model chunk (" + str(most) +
                       (uneven_pipeline(t) ? " in the largest chunk" : "") + ")");
      }
    }
  }
  if (t.distribute_saved_activations) {
    const std::string key = "training.distribute_saved_activations";
    if (t.tensor_model_parallel_size == 1) {
      check.fail(key, "=true needs tensor_model_parallel_size > 1");
    }
    if (granularity != RecomputeGranularity::kFull) {
      check.fail(key, "=true needs recompute_granularity \"full\" with a recompute_method");
    }
    if (t.sequence_parallel) check.fail(key, "=true cannot be combined with sequence_parallel");
  }
}

// Context parallelism: megatron/training/arguments.py (seq_length multiple of 2 * cp,
// a2a+p2p: validate_hierarchical_cp.cpp), megatron/core/transformer/dot_product_attention.py
// (the local attention asserts cp == 1) and Transformer Engine's
// pytorch/attention/dot_product_attention/context_parallel.py (attn_forward_func_with_cp:
// FlashAttention not with Megatron's sbhd layout; a2a: heads divisible by cp) and utils.py
// (UnfusedDotProductAttention disabled with CP).
void check_context_parallel(const Workload& w, Checker& check) {
  const TrainingConfig& t = w.training;
  const ModelConfig& m = w.model;
  const std::int64_t cp = t.context_parallel_size;
  check_hierarchical_cp(w, check);
  if (cp <= 1) return;
  const std::string key = "training.context_parallel_size";
  const std::string cps = "=" + str(cp);
  const std::int64_t s = m.seq_length;
  // cp > s / 2 first: 2 * cp cannot overflow after it.
  const bool balanced = s > 0 && cp <= s / 2 && s % (2 * cp) == 0;
  if (s > 0 && !balanced) {
    check.fail("model.seq_length",
               std::string("=") + str(s) + " is not a multiple of 2*context_parallel_size=2*" +
                   str(cp) +
                   " (Transformer Engine splits each sequence into 2*cp chunks for causal "
                   "load balance)");
  }
  const std::int64_t tp = t.tensor_model_parallel_size;
  if (t.sequence_parallel && tp > 1 && balanced && (s / cp) % tp != 0) {
    check.fail("model.seq_length",
               std::string("=") + str(s) + ": its context-parallel share seq_length/" +
                   "context_parallel_size=" + str(s / cp) +
                   " is not divisible by tensor_model_parallel_size=" + str(tp) +
                   ", which sequence_parallel splits it by");
  }
  switch (m.attention_backend) {
    case AttentionBackend::kAuto:
    case AttentionBackend::kFused:
      break;
    case AttentionBackend::kFlash:
      check.fail(key, cps +
                          " needs Transformer Engine's fused (cuDNN) attention: its "
                          "FlashAttention backend does not support context parallelism with "
                          "Megatron's sbhd layout; give attention_backend \"auto\" or "
                          "\"fused\"");
      break;
    case AttentionBackend::kUnfused:
    case AttentionBackend::kLocal:
      check.fail(key, cps +
                          (m.use_flash_attn
                               ? " needs Transformer Engine's fused (cuDNN) attention, but "
                                 "use_flash_attn=true picks FlashAttention, which does not "
                                 "support context parallelism with Megatron's sbhd layout; give "
                                 "attention_backend \"auto\" or \"fused\""
                               : " needs Transformer Engine's fused attention (Megatron-LM's "
                                 "local DotProductAttention asserts context_parallel_size == 1); "
                                 "give attention_backend \"auto\" or \"fused\""));
      break;
  }
  if (t.cp_comm_type == CpCommType::kA2a && tp > 0) {
    const std::int64_t a = m.num_attention_heads;
    const std::int64_t g = m.num_query_groups;
    if (a > 0 && a % tp == 0 && (a / tp) % cp != 0) {
      check.fail(key, cps + " does not divide the attention heads per tensor-parallel rank "
                            "(num_attention_heads/tensor_model_parallel_size=" +
                          str(a / tp) + "), which cp_comm_type \"a2a\" scatters over the CP group");
    }
    if (g > 0 && g % tp == 0 && (g / tp) % cp != 0) {
      check.fail(key, cps + " does not divide the key/value heads per tensor-parallel rank "
                            "(num_query_groups/tensor_model_parallel_size=" +
                          str(g / tp) + "), which cp_comm_type \"a2a\" scatters over the CP group");
    }
  }
}

void check_training(const Workload& w, Checker& check) {
  const TrainingConfig& t = w.training;
  if (t.sequence_parallel && t.tensor_model_parallel_size == 1) {
    check.fail("training.sequence_parallel", "=true needs tensor_model_parallel_size > 1");
  }
  // mappings.py _split_along_first_dim: "First dimension of the tensor should be divisible by
  // tensor parallel size" (sequence parallelism splits the sequence).
  const std::int64_t seq = w.model.seq_length;
  if (t.sequence_parallel && t.tensor_model_parallel_size > 1 && seq > 0 &&
      t.context_parallel_size == 1 && seq % t.tensor_model_parallel_size != 0) {
    check.fail("model.seq_length",
               std::string("=") + str(seq) + " is not divisible by tensor_model_parallel_size=" +
                   str(t.tensor_model_parallel_size) + ", which sequence_parallel splits it by");
  }
  if (t.overlap_param_gather && !t.use_distributed_optimizer) {
    check.fail("training.overlap_param_gather", "=true needs use_distributed_optimizer");
  }
  if (t.overlap_param_gather && !t.overlap_grad_reduce) {
    check.fail("training.overlap_param_gather", "=true needs overlap_grad_reduce");
  }
  // distributed_data_parallel_config.py __post_init__.
  if (t.ddp_num_buckets != 0 && t.ddp_bucket_size != 0) {
    check.fail("training.ddp_num_buckets",
               "=" + str(t.ddp_num_buckets) + " and ddp_bucket_size=" + str(t.ddp_bucket_size) +
                   " are both given: Cannot specify both num_buckets and bucket_size");
  }
  // Both must be positive when given (the loader's rule for every size; 0 is "not given"):
  // Megatron asserts num_buckets > 0 and makes one bucket per parameter with a bucket size
  // <= 0, which stepsim does not model.
  if (t.overlap_p2p_comm && !t.interleaved()) {
    check.fail("training.overlap_p2p_comm",
               "=true applies only to the interleaved schedule (virtual pipeline stages)");
  }
  const SystemConfig& s = w.system;
  const bool system_given = s.peak_flops_fp32 > 0 || s.peak_flops_fp16 > 0 || s.peak_flops_bf16 > 0;
  if (system_given && s.peak_flops(t.params_dtype) <= 0) {
    const std::string dtype(to_string(t.params_dtype));
    check.fail(t.params_dtype == DType::kBf16 ? "training.bf16" : "training.fp16",
               t.params_dtype == DType::kFp32
                   ? "=false and bf16=false (fp32 training) but system \"" + s.name +
                         "\" has no fp32 peak FLOP/s (peak_flops_fp32=0)"
                   : "=true but system \"" + s.name + "\" has no " + dtype +
                         " peak FLOP/s (peak_flops_" + dtype + "=0)");
  }
}

void apply_model_defaults(Workload& w, Checker& check) {
  ModelConfig& m = w.model;
  const std::int64_t h = m.hidden_size;
  const std::int64_t a = m.num_attention_heads;
  if (m.num_query_groups == 0) m.num_query_groups = a;
  if (m.kv_channels == 0 && h > 0 && a > 0) {
    if (h % a == 0) {
      m.kv_channels = h / a;
    } else {
      check.fail("model.hidden_size", std::string("=") + str(h) +
                                          " is not divisible by num_attention_heads=" + str(a) +
                                          " (give kv_channels for another head size)");
    }
  }
  // arguments.py: int((4 * h * 2 / 3) / 64) * 64 with SwiGLU, which is (h / 24) * 64.
  if (m.ffn_hidden_size == 0 && h > 0 && h <= (std::int64_t{1} << 56)) {
    m.ffn_hidden_size = m.swiglu ? (h / 24) * 64 : 4 * h;
  }
  if (m.max_position_embeddings == 0) m.max_position_embeddings = m.seq_length;
  const std::int64_t t = w.training.tensor_model_parallel_size;
  std::int64_t multiple = 0;
  std::int64_t padded = 0;
  if (m.padded_vocab_size == 0 && m.vocab_size > 0 && m.make_vocab_size_divisible_by > 0 && t > 0 &&
      !__builtin_mul_overflow(m.make_vocab_size_divisible_by, t, &multiple) &&
      !__builtin_mul_overflow(m.vocab_size / multiple + (m.vocab_size % multiple != 0 ? 1 : 0),
                              multiple, &padded)) {
    m.padded_vocab_size = padded;
  }
  if (m.padded_vocab_size == 0 && m.vocab_size > 0 && m.make_vocab_size_divisible_by > 0 && t > 0) {
    check.fail("model.vocab_size", std::string("=") + str(m.vocab_size) +
                                       " padded to a multiple of make_vocab_size_divisible_by*"
                                       "tensor_model_parallel_size overflows a 64-bit integer");
  }
}

}  // namespace

Errors validate_workload(const Workload& w, const std::string& file) {
  Errors errors;
  Checker check{file, errors};
  check_model(w, check);
  check_batch(w, check);
  check_pipeline(w, check);
  check_recompute(w, check);
  check_training(w, check);
  check_context_parallel(w, check);
  detail::check_limits(w, check);
  detail::check_fp8(w, check);
  detail::check_fp4(w, check);
  detail::check_tp_overlap(w, check);
  detail::check_nccl(w, check);
  detail::check_optimizer_impl(w, check);
  detail::check_moe(w, check);
  detail::check_mla(w, check);
  detail::check_window(w, check);
  detail::check_gpt_oss(w, check);
  detail::check_hybrid(w, check);
  detail::check_mtp(w, check);
  detail::check_fsdp(w, check);
  detail::check_step(w, check);
  return errors;
}

Errors finalize_workload(Workload& w, const std::string& file) {
  Errors errors;
  Checker check{file, errors};
  apply_model_defaults(w, check);
  TrainingConfig& t = w.training;
  t.data_parallel_size = 0;  // derived below; stale values would mislead the rules
  t.num_microbatches = 0;
  detail::apply_hybrid_defaults(w, check);
  detail::derive_virtual_stages(w);
  if (t.microbatch_group_size_per_vp_stage != 0 &&
      t.microbatch_group_size_per_vp_stage != t.pipeline_model_parallel_size &&
      t.virtual_pipeline_model_parallel_size == 1) {
    check.fail("training.microbatch_group_size_per_vp_stage",
               std::string("=") + str(t.microbatch_group_size_per_vp_stage) +
                   " applies only to the interleaved schedule (virtual pipeline stages)");
  }
  if (t.microbatch_group_size_per_vp_stage == 0) {
    t.microbatch_group_size_per_vp_stage = t.pipeline_model_parallel_size;
  }
  if (t.recompute_granularity == RecomputeGranularity::kFull && t.recompute_num_layers == 0) {
    t.recompute_num_layers = 1;
  }
  const std::int64_t model_size = model_parallel_size(t);
  if (t.world_size > 0 && model_size > 0 && t.world_size % model_size == 0) {
    t.data_parallel_size = t.world_size / model_size;
  }
  // parallel_state.py: expert_data_parallel_size = world_size // (etp * ep * pp).
  t.expert_data_parallel_size = 0;
  std::int64_t expert_model = 0;
  if (t.world_size > 0 && t.expert_model_parallel_size > 0 && t.expert_tensor_parallel() > 0 &&
      t.pipeline_model_parallel_size > 0 &&
      !__builtin_mul_overflow(t.expert_model_parallel_size, t.expert_tensor_parallel(),
                              &expert_model) &&
      !__builtin_mul_overflow(expert_model, t.pipeline_model_parallel_size, &expert_model) &&
      t.world_size % expert_model == 0) {
    t.expert_data_parallel_size = t.world_size / expert_model;
  }
  std::int64_t per_step = 0;
  if (t.data_parallel_size > 0 && t.micro_batch_size > 0 && t.global_batch_size > 0 &&
      !__builtin_mul_overflow(t.micro_batch_size, t.data_parallel_size, &per_step) &&
      t.global_batch_size % per_step == 0) {
    t.num_microbatches = t.global_batch_size / per_step;
  }
  const Errors rules = validate_workload(w, file);
  errors.insert(errors.end(), rules.begin(), rules.end());
  return errors;
}

}  // namespace stepsim
