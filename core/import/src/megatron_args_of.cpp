// The Megatron-LM launch flags of a scenario: the inverse of scenario_from_megatron_args
// (import_megatron_args.cpp), which the round-trip test holds it to, with Transformer Engine's
// settings from the environment as assignments before the flags. The flags and the values'
// spellings are the schema rows' (schema.hpp); what is written when stays here, in the order
// of the steps below.

#include <charconv>
#include <string>
#include <string_view>

#include "stepsim/config/enum_names.hpp"
#include "stepsim/config/schema.hpp"
#include "stepsim/import/import.hpp"

namespace stepsim {
namespace {

// The shortest form that reads back as the same double.
std::string shortest(double v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, static_cast<std::size_t>(r.ptr - buf));
}

/// The launch line being written: flags with their values, from the schema rows.
class LaunchLine {
 public:
  explicit LaunchLine(const Workload& w) : w_(w) {}

  void flag(std::string_view name) {
    if (!out_.empty()) out_ += ' ';
    out_ += name;
  }
  void word(std::string_view name, std::string_view value) {
    flag(name);
    out_ += ' ';
    out_ += value;
  }
  void num(std::string_view name, std::int64_t v) { word(name, std::to_string(v)); }
  /// A text value in single quotes (its characters need quoting from the shell, never ').
  void quoted(std::string_view name, const std::string& v) { word(name, "'" + v + "'"); }

  /// The row of `dotted_key`'s flag that takes a value ("--num-layers"), or the first one.
  static std::string_view flag_of(std::string_view dotted_key) {
    const std::string_view flags = find_schema_key(dotted_key)->flags;
    return flags.substr(0, flags.find_first_of(" ="));
  }

  /// Writes the key's current value as its row spells it: a value-taking flag and the number
  /// or choice, or the flag of the row's "--flag=VALUE" forms that sets this value.
  void key(std::string_view dotted_key) {
    const KeyInfo& k = *find_schema_key(dotted_key);
    const KnobValue v = k.get(w_);
    std::string value;
    switch (k.kind) {
      case KnobKind::kInt:
        value = std::to_string(v.integer);
        break;
      case KnobKind::kBool:
        value = v.integer != 0 ? "true" : "false";
        break;
      case KnobKind::kReal:
        value = shortest(v.real);
        break;
      case KnobKind::kChoice:
        value = k.choices[static_cast<std::size_t>(v.integer)];
        break;
      case KnobKind::kSystem:
      case KnobKind::kString:
        break;
    }
    std::string_view rest = k.flags;
    while (!rest.empty()) {
      const auto space = rest.find(' ');
      const std::string_view f = rest.substr(0, space);
      const auto eq = f.find('=');
      if (eq == std::string_view::npos) return word(f, value);
      if (f.substr(eq + 1) == value) return flag(f.substr(0, eq));
      rest = space == std::string_view::npos ? std::string_view() : rest.substr(space + 1);
    }
  }

  std::string take() { return std::move(out_); }

 private:
  const Workload& w_;
  std::string out_;
};

// Transformer Engine's and NCCL's settings from the environment, as assignments before the
// flags; NCCL_ALGO / NCCL_PROTO in single quotes when their ';' or '^' needs them.
void write_environment(const Workload& w, LaunchLine& line) {
  for (const KeyInfo& k : scenario_schema()) {
    if (k.env.empty() || k.get == nullptr) continue;
    const std::string v = std::to_string(k.get(w).integer);
    if (v != k.default_text) line.flag(std::string(k.env) + "=" + v);
  }
  const auto nccl = [&line](std::string_view env, const std::string& v) {
    if (v.empty()) return;
    const bool plain = v.find_first_of(";^") == std::string::npos;
    line.flag(std::string(env) + "=" + (plain ? v : "'" + v + "'"));
  };
  nccl("NCCL_ALGO", w.training.nccl_algo);
  nccl("NCCL_PROTO", w.training.nccl_proto);
}

// The model's shape: layers, widths, heads, sequence and vocabulary.
void write_shape(const ModelConfig& m, LaunchLine& line) {
  line.key("model.num_layers");
  line.key("model.hidden_size");
  line.key("model.num_attention_heads");
  if (m.num_query_groups != m.num_attention_heads) {
    line.flag("--group-query-attention");
    line.key("model.num_query_groups");
  }
  if (m.num_attention_heads > 0 && m.kv_channels != m.hidden_size / m.num_attention_heads) {
    line.key("model.kv_channels");
  }
  line.key("model.ffn_hidden_size");
  line.key("model.seq_length");
  line.key("model.max_position_embeddings");
  if (m.vocab_size > 0) {
    line.key("model.vocab_size");
    line.key("model.make_vocab_size_divisible_by");
  } else {
    // Only the padded size is known: pad by 1 so Megatron keeps it (a multiple of t).
    line.num(LaunchLine::flag_of("model.vocab_size"), m.padded_vocab_size);
    line.num(LaunchLine::flag_of("model.make_vocab_size_divisible_by"), 1);
  }
}

// The layer's kernels: activation, attention, norms, embeddings, dropout, windows and loss.
void write_layer(const ModelConfig& m, LaunchLine& line) {
  if (m.swiglu) line.key("model.swiglu");
  if (m.squared_relu) line.key("model.squared_relu");
  if (m.quick_geglu) line.key("model.quick_geglu");
  if (m.glu_linear_offset != 0.0) line.key("model.glu_linear_offset");
  if (m.activation_func_clamp_value > 0.0) line.key("model.activation_func_clamp_value");
  if (m.untie_embeddings_and_output_weights) line.key("model.untie_embeddings_and_output_weights");
  if (m.use_flash_attn) line.key("model.use_flash_attn");
  // Explicit: without it the importer takes Megatron-Core's default, auto.
  if (!(m.use_flash_attn && m.attention_backend == AttentionBackend::kUnfused)) {
    line.key("model.attention_backend");
  }
  if (m.softmax_type != SoftmaxType::kVanilla) line.key("model.softmax_type");
  if (!m.add_bias_linear) line.key("model.add_bias_linear");
  line.key("model.normalization");
  line.key("model.position_embedding_type");
  // Megatron's defaults are 0.1.
  if (m.attention_dropout != 0.1) line.key("model.attention_dropout");
  if (m.hidden_dropout != 0.1) line.key("model.hidden_dropout");
  if (m.rotary_percent != 1.0) line.key("model.rotary_percent");
  if (m.window_size.size() == 2) {
    // arguments.py tuple_type reads "left,right".
    line.word(LaunchLine::flag_of("model.window_size"),
              std::to_string(m.window_size[0]) + ',' + std::to_string(m.window_size[1]));
    if (!m.window_attn_skip_freq.empty()) {
      line.quoted(LaunchLine::flag_of("model.window_attn_skip_freq"), m.window_attn_skip_freq);
    }
  }
  if (!m.masked_softmax_fusion) line.key("model.masked_softmax_fusion");
  if (m.cross_entropy_loss_fusion) {
    line.key("model.cross_entropy_loss_fusion");
    line.key("model.cross_entropy_fusion_impl");
  }
}

// Batch sizes and the tensor, context and pipeline parallel layout.
/// `vp_from_pattern`: a hybrid model, whose '|' segments set the virtual stages (Megatron
/// refuses the virtual-stage flags beside --hybrid-layer-pattern).
void write_parallelism(const TrainingConfig& t, bool vp_from_pattern, LaunchLine& line) {
  line.key("training.micro_batch_size");
  line.key("training.global_batch_size");
  line.key("training.tensor_model_parallel_size");
  if (t.context_parallel_size > 1) {
    line.key("training.context_parallel_size");
    line.key("training.cp_comm_type");
    if (!t.hierarchical_context_parallel_sizes.empty()) {
      std::string sizes;
      for (const std::int64_t n : t.hierarchical_context_parallel_sizes) {
        sizes += (sizes.empty() ? "" : " ") + std::to_string(n);
      }
      line.word(LaunchLine::flag_of("training.hierarchical_context_parallel_sizes"), sizes);
    }
  }
  line.key("training.pipeline_model_parallel_size");
  const bool first_last =
      t.decoder_first_pipeline_num_layers > 0 || t.decoder_last_pipeline_num_layers > 0;
  if (t.decoder_first_pipeline_num_layers > 0)
    line.key("training.decoder_first_pipeline_num_layers");
  if (t.decoder_last_pipeline_num_layers > 0) line.key("training.decoder_last_pipeline_num_layers");
  if (t.account_for_embedding_in_pipeline_split) {
    line.key("training.account_for_embedding_in_pipeline_split");
  }
  if (t.account_for_loss_in_pipeline_split) line.key("training.account_for_loss_in_pipeline_split");
  if (!t.pipeline_model_parallel_layout.empty()) {
    line.quoted(LaunchLine::flag_of("training.pipeline_model_parallel_layout"),
                t.pipeline_model_parallel_layout);
  }
  // A layout's stages set the virtual stages; Megatron refuses
  // --num-layers-per-virtual-pipeline-stage with uneven first/last stages.
  if (t.virtual_pipeline_model_parallel_size > 1 && t.pipeline_model_parallel_layout.empty() &&
      !vp_from_pattern) {
    if (first_last) {
      line.num(LaunchLine::flag_of("training.num_virtual_stages_per_pipeline_rank"),
               t.virtual_pipeline_model_parallel_size);
    } else {
      line.num(LaunchLine::flag_of("training.num_layers_per_virtual_pipeline_stage"),
               t.num_layers_per_virtual_pipeline_stage);
    }
  }
  if (t.virtual_pipeline_model_parallel_size > 1) {
    if (t.microbatch_group_size_per_vp_stage != t.pipeline_model_parallel_size) {
      line.key("training.microbatch_group_size_per_vp_stage");
    }
    if (!t.overlap_p2p_comm) line.key("training.overlap_p2p_comm");
  }
  if (t.sequence_parallel) line.key("training.sequence_parallel");
}

// Recomputation, the data-parallel optimizer and its buckets, dtypes and FP8.
void write_optimizer_and_precision(const TrainingConfig& t, LaunchLine& line) {
  if (t.recompute_granularity != RecomputeGranularity::kNone) {
    line.key("training.recompute_granularity");
  }
  if (t.recompute_granularity == RecomputeGranularity::kFull) {
    line.word(LaunchLine::flag_of("training.recompute_method"),
              to_string(t.recompute_method == RecomputeMethod::kBlock ? RecomputeMethod::kBlock
                                                                      : RecomputeMethod::kUniform));
    line.key("training.recompute_num_layers");
  }
  if (t.distribute_saved_activations) line.key("training.distribute_saved_activations");
  if (t.use_distributed_optimizer) line.key("training.use_distributed_optimizer");
  if (t.overlap_grad_reduce) line.key("training.overlap_grad_reduce");
  if (t.overlap_param_gather) line.key("training.overlap_param_gather");
  if (t.ddp_bucket_size > 0) line.key("training.ddp_bucket_size");
  if (t.ddp_num_buckets > 0) line.key("training.ddp_num_buckets");
  if (!t.align_param_gather) line.key("training.align_param_gather");
  if (t.params_dtype == DType::kBf16) line.flag(LaunchLine::flag_of("training.bf16"));
  if (t.params_dtype == DType::kFp16) line.flag(LaunchLine::flag_of("training.fp16"));
  if (t.grad_reduce_in_bf16) line.key("training.grad_reduce_in_bf16");
  if (t.clip_grad != 1.0) line.key("training.clip_grad");  // Megatron's default is 1.0
  if (t.fp8_enabled()) {
    line.key("training.fp8");
    line.key("training.fp8_recipe");
  }
  if (t.fp8_param_gather) line.key("training.fp8_param_gather");
  if (t.fp4_enabled()) {
    line.key("training.fp4");
    line.key("training.fp4_recipe");
  }
  if (t.fp4_param_gather) line.key("training.fp4_param_gather");
  if (t.reuse_grad_buf_for_mxfp8_param_ag) line.key("training.reuse_grad_buf_for_mxfp8_param_ag");
  if (t.fp8_amax_history_len != 1) line.key("training.fp8_amax_history_len");
  if (t.tp_only_amax_red) line.key("training.tp_only_amax_red");
}

// Tensor-parallel communication overlap and NCCL's communicator settings.
void write_tp_overlap(const TrainingConfig& t, LaunchLine& line) {
  if (t.tp_comm_overlap) line.key("training.tp_comm_overlap");
  if (!t.tp_comm_overlap_ag) line.key("training.tp_comm_overlap_ag");
  if (!t.tp_comm_overlap_rs) line.key("training.tp_comm_overlap_rs");
  if (t.tp_comm_overlap_rs_dgrad) line.key("training.tp_comm_overlap_rs_dgrad");
  if (!t.nccl_communicator_config_path.empty()) {
    line.quoted(LaunchLine::flag_of("training.nccl_communicator_config_path"),
                t.nccl_communicator_config_path);
  }
  if (!t.tp_comm_overlap_cfg.empty()) {
    line.quoted(LaunchLine::flag_of("training.tp_comm_overlap_cfg"), t.tp_comm_overlap_cfg);
  }
  if (!t.tp_comm_bulk_dgrad) line.key("training.tp_comm_bulk_dgrad");
  if (!t.tp_comm_bulk_wgrad) line.key("training.tp_comm_bulk_wgrad");
  if (t.defer_embedding_wgrad_compute) line.key("training.defer_embedding_wgrad_compute");
  if (t.wgrad_deferral_limit != 0) line.key("training.wgrad_deferral_limit");
}

// The mixture of experts: experts, their parallelism, the dispatcher and the router.
void write_moe(const ModelConfig& m, const TrainingConfig& t, LaunchLine& line) {
  line.key("model.num_experts");
  line.key("model.moe_router_topk");
  if (m.moe_ffn_hidden_size > 0) line.key("model.moe_ffn_hidden_size");
  if (m.moe_shared_expert_intermediate_size > 0) {
    line.key("model.moe_shared_expert_intermediate_size");
  }
  if (m.moe_layer_freq != "1")
    line.quoted(LaunchLine::flag_of("model.moe_layer_freq"), m.moe_layer_freq);
  if (t.expert_model_parallel_size > 1) line.key("training.expert_model_parallel_size");
  if (t.expert_tensor_parallel_size > 0) line.key("training.expert_tensor_parallel_size");
  line.key("training.moe_token_dispatcher_type");
  if (t.moe_token_dispatcher_type == MoeDispatcher::kFlex) {
    line.key("training.moe_flex_dispatcher_backend");
    if (t.moe_flex_dispatcher_num_sms > 0 || t.moe_deepep_num_sms > 0) {
      line.num(LaunchLine::flag_of("training.moe_flex_dispatcher_num_sms"), t.deepep_num_sms());
    }
  }
  if (t.moe_grouped_gemm) line.key("training.moe_grouped_gemm");
  if (t.moe_shared_expert_overlap) line.key("training.moe_shared_expert_overlap");
  if (t.overlap_moe_expert_parallel_comm) line.key("training.overlap_moe_expert_parallel_comm");
  if (t.delay_wgrad_compute) line.key("training.delay_wgrad_compute");
  if (t.moe_router_load_balancing_type != MoeLoadBalancing::kAuxLoss) {
    line.key("training.moe_router_load_balancing_type");
  }
  if (t.moe_expert_capacity_factor > 0) line.key("training.moe_expert_capacity_factor");
  if (t.moe_pad_expert_input_to_capacity) line.key("training.moe_pad_expert_input_to_capacity");
  if (t.moe_aux_loss_coeff > 0) line.key("training.moe_aux_loss_coeff");
  if (t.moe_router_dtype == MoeRouterDtype::kFp32) line.key("training.moe_router_dtype");
  if (m.moe_router_score_function != MoeRouterScore::kSoftmax) {
    line.key("model.moe_router_score_function");
  }
  if (m.moe_router_enable_expert_bias) line.key("model.moe_router_enable_expert_bias");
  if (m.moe_router_num_groups > 0) line.key("model.moe_router_num_groups");
  if (m.moe_router_group_topk > 0) line.key("model.moe_router_group_topk");
}

// Muon and its options; CUDA graphs and what they capture.
void write_muon_and_cuda_graphs(const TrainingConfig& t, LaunchLine& line) {
  if (t.optimizer == OptimizerKind::kMuon) {
    line.key("training.optimizer");
    line.key("training.muon_num_ns_steps");
    line.key("training.muon_tp_mode");
    if (!t.muon_split_qkv) line.key("training.muon_split_qkv");
    if (t.muon_nesterov) line.key("training.muon_nesterov");
  }
  if (t.cuda_graph_impl == CudaGraphImpl::kNone) return;
  line.key("training.cuda_graph_impl");
  if (!t.cuda_graph_modules.empty()) {
    line.word(LaunchLine::flag_of("training.cuda_graph_modules"), t.cuda_graph_modules);
  }
  line.key("training.cuda_graph_warmup_steps");
}

// Multi-token prediction; sharded data parallelism (Megatron-FSDP, torch FSDP2).
void write_mtp_and_fsdp(const ModelConfig& m, const TrainingConfig& t, LaunchLine& line) {
  if (m.mtp_num_layers > 0) {
    line.key("model.mtp_num_layers");
    if (m.mtp_loss_scaling_factor != 0.1) line.key("model.mtp_loss_scaling_factor");
  }
  if (t.use_megatron_fsdp) {
    line.key("training.use_megatron_fsdp");
    line.key("training.data_parallel_sharding_strategy");
    if (t.fsdp_double_buffer) line.key("training.fsdp_double_buffer");
  }
  if (t.use_torch_fsdp2) {
    line.key("training.use_torch_fsdp2");
    if (!t.torch_fsdp2_reshard_after_forward) line.key("training.torch_fsdp2_reshard_after_forward");
  }
}

// Multi-latent attention's low-rank projections.
void write_mla(const ModelConfig& m, LaunchLine& line) {
  line.key("model.multi_latent_attention");
  if (m.q_lora_rank > 0) line.key("model.q_lora_rank");
  line.key("model.kv_lora_rank");
  line.key("model.qk_head_dim");
  line.key("model.qk_pos_emb_head_dim");
  line.key("model.v_head_dim");
  if (m.qk_layernorm) line.key("model.qk_layernorm");
}

// A hybrid model's layer pattern and Mamba-2 sizes (pretrain_hybrid.py's flags).
void write_hybrid(const ModelConfig& m, LaunchLine& line) {
  line.quoted(LaunchLine::flag_of("model.hybrid_layer_pattern"), m.hybrid_layer_pattern);
  if (m.mamba_num_heads > 0) line.key("model.mamba_num_heads");
  line.key("model.mamba_head_dim");
  line.key("model.mamba_state_dim");
  line.key("model.mamba_num_groups");
}

}  // namespace

std::string megatron_args_of(const Workload& w) {
  LaunchLine line(w);
  write_environment(w, line);
  write_shape(w.model, line);
  write_layer(w.model, line);
  write_parallelism(w.training, w.model.hybrid(), line);
  write_optimizer_and_precision(w.training, line);
  write_tp_overlap(w.training, line);
  if (w.model.moe()) write_moe(w.model, w.training, line);
  if (w.model.multi_latent_attention) write_mla(w.model, line);
  if (w.model.hybrid()) write_hybrid(w.model, line);
  write_mtp_and_fsdp(w.model, w.training, line);
  write_muon_and_cuda_graphs(w.training, line);
  return line.take();
}

}  // namespace stepsim
