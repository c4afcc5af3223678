// The Megatron-LM launch flags of a scenario: the inverse of scenario_from_megatron_args
// (import_megatron_args.cpp), which the round-trip test holds it to, with Transformer Engine's
// settings from the environment as assignments before the flags.

#include <charconv>
#include <string>
#include <string_view>

#include "stepsim/config/enum_names.hpp"
#include "stepsim/config/schema.hpp"
#include "stepsim/import/import.hpp"

namespace stepsim {

std::string megatron_args_of(const Workload& w) {
  const ModelConfig& m = w.model;
  const TrainingConfig& t = w.training;
  std::string out;
  const auto flag = [&](std::string_view name) {
    if (!out.empty()) out += ' ';
    out += name;
  };
  const auto num = [&](std::string_view name, std::int64_t v) {
    flag(name);
    out += ' ' + std::to_string(v);
  };
  // Transformer Engine's settings from the environment, as assignments before the flags.
  for (const KeyInfo& k : scenario_schema()) {
    if (k.env.empty() || k.get == nullptr) continue;
    const std::string v = std::to_string(k.get(w).integer);
    if (v != k.default_text) flag(std::string(k.env) + "=" + v);
  }
  num("--num-layers", m.num_layers);
  num("--hidden-size", m.hidden_size);
  num("--num-attention-heads", m.num_attention_heads);
  if (m.num_query_groups != m.num_attention_heads) {
    flag("--group-query-attention");
    num("--num-query-groups", m.num_query_groups);
  }
  if (m.num_attention_heads > 0 && m.kv_channels != m.hidden_size / m.num_attention_heads) {
    num("--kv-channels", m.kv_channels);
  }
  num("--ffn-hidden-size", m.ffn_hidden_size);
  num("--seq-length", m.seq_length);
  num("--max-position-embeddings", m.max_position_embeddings);
  if (m.vocab_size > 0) {
    num("--vocab-size", m.vocab_size);
    num("--make-vocab-size-divisible-by", m.make_vocab_size_divisible_by);
  } else {
    // Only the padded size is known: pad by 1 so Megatron keeps it (a multiple of t).
    num("--vocab-size", m.padded_vocab_size);
    num("--make-vocab-size-divisible-by", 1);
  }
  // The shortest form that reads back as the same double.
  const auto decimal = [&](std::string_view name, double v) {
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    flag(name);
    out += ' ';
    out.append(buf, static_cast<std::size_t>(r.ptr - buf));
  };
  if (m.swiglu) flag("--swiglu");
  if (m.squared_relu) flag("--squared-relu");
  if (m.quick_geglu) flag("--quick-geglu");
  if (m.glu_linear_offset != 0.0) decimal("--glu-linear-offset", m.glu_linear_offset);
  if (m.activation_func_clamp_value > 0.0) {
    decimal("--activation-func-clamp-value", m.activation_func_clamp_value);
  }
  if (m.untie_embeddings_and_output_weights) flag("--untie-embeddings-and-output-weights");
  if (m.use_flash_attn) flag("--use-flash-attn");
  // Explicit: without it the importer takes Megatron-Core's default, auto.
  if (!(m.use_flash_attn && m.attention_backend == AttentionBackend::kUnfused)) {
    flag("--attention-backend");
    out += ' ';
    out += to_string(m.attention_backend);
  }
  if (m.softmax_type != SoftmaxType::kVanilla) {
    flag("--softmax-type");
    out += ' ';
    out += to_string(m.softmax_type);
  }
  if (!m.add_bias_linear) flag("--disable-bias-linear");
  flag("--normalization");
  out += ' ';
  out += to_string(m.normalization);
  flag("--position-embedding-type");
  out += ' ';
  out += to_string(m.position_embedding_type);
  // Megatron's defaults are 0.1; the shortest form that reads back as the same double.
  for (const auto& [name, p] : {std::pair<std::string_view, double>{"--attention-dropout",
                                                                    m.attention_dropout},
                                {"--hidden-dropout", m.hidden_dropout}}) {
    if (p == 0.1) continue;
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, p);
    flag(name);
    out += ' ';
    out.append(buf, static_cast<std::size_t>(r.ptr - buf));
  }
  if (m.rotary_percent != 1.0) {
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, m.rotary_percent);
    flag("--rotary-percent");
    out += ' ';
    out.append(buf, static_cast<std::size_t>(r.ptr - buf));
  }
  if (m.window_size.size() == 2) {
    // arguments.py tuple_type reads "left,right".
    flag("--window-size");
    out += ' ' + std::to_string(m.window_size[0]) + ',' + std::to_string(m.window_size[1]);
    // A list pattern's characters need quoting from the shell, never '.
    if (!m.window_attn_skip_freq.empty()) {
      flag("--window-attn-skip-freq");
      out += " '" + m.window_attn_skip_freq + "'";
    }
  }
  if (!m.masked_softmax_fusion) flag("--no-masked-softmax-fusion");
  if (m.cross_entropy_loss_fusion) {
    flag("--cross-entropy-loss-fusion");
    flag("--cross-entropy-fusion-impl");
    out += ' ';
    out += to_string(m.cross_entropy_fusion_impl);
  }
  num("--micro-batch-size", t.micro_batch_size);
  num("--global-batch-size", t.global_batch_size);
  num("--tensor-model-parallel-size", t.tensor_model_parallel_size);
  if (t.context_parallel_size > 1) {
    num("--context-parallel-size", t.context_parallel_size);
    flag("--cp-comm-type");
    out += ' ';
    out += to_string(t.cp_comm_type);
    if (!t.hierarchical_context_parallel_sizes.empty()) {
      flag("--hierarchical-context-parallel-sizes");
      for (const std::int64_t n : t.hierarchical_context_parallel_sizes) {
        out += ' ';
        out += std::to_string(n);
      }
    }
  }
  num("--pipeline-model-parallel-size", t.pipeline_model_parallel_size);
  const bool first_last =
      t.decoder_first_pipeline_num_layers > 0 || t.decoder_last_pipeline_num_layers > 0;
  if (t.decoder_first_pipeline_num_layers > 0) {
    num("--decoder-first-pipeline-num-layers", t.decoder_first_pipeline_num_layers);
  }
  if (t.decoder_last_pipeline_num_layers > 0) {
    num("--decoder-last-pipeline-num-layers", t.decoder_last_pipeline_num_layers);
  }
  if (t.account_for_embedding_in_pipeline_split) flag("--account-for-embedding-in-pipeline-split");
  if (t.account_for_loss_in_pipeline_split) flag("--account-for-loss-in-pipeline-split");
  if (!t.pipeline_model_parallel_layout.empty()) {
    // Its characters (E t L m | * ( ) digits, commas) need quoting from the shell, never '.
    flag("--pipeline-model-parallel-layout");
    out += " '" + t.pipeline_model_parallel_layout + "'";
  }
  // A layout's stages set the virtual stages; Megatron refuses
  // --num-layers-per-virtual-pipeline-stage with uneven first/last stages.
  if (t.virtual_pipeline_model_parallel_size > 1 && t.pipeline_model_parallel_layout.empty()) {
    if (first_last) {
      num("--num-virtual-stages-per-pipeline-rank", t.virtual_pipeline_model_parallel_size);
    } else {
      num("--num-layers-per-virtual-pipeline-stage", t.num_layers_per_virtual_pipeline_stage);
    }
  }
  if (t.virtual_pipeline_model_parallel_size > 1) {
    if (t.microbatch_group_size_per_vp_stage != t.pipeline_model_parallel_size) {
      num("--microbatch-group-size-per-virtual-pipeline-stage",
          t.microbatch_group_size_per_vp_stage);
    }
    if (!t.overlap_p2p_comm) flag("--no-overlap-p2p-communication");
  }
  if (t.sequence_parallel) flag("--sequence-parallel");
  if (t.recompute_granularity != RecomputeGranularity::kNone) {
    flag("--recompute-granularity");
    out += ' ';
    out += to_string(t.recompute_granularity);
  }
  if (t.recompute_granularity == RecomputeGranularity::kFull) {
    flag("--recompute-method");
    out += ' ';
    out += to_string(t.recompute_method == RecomputeMethod::kBlock ? RecomputeMethod::kBlock
                                                                   : RecomputeMethod::kUniform);
    num("--recompute-num-layers", t.recompute_num_layers);
  }
  if (t.distribute_saved_activations) flag("--distribute-saved-activations");
  if (t.use_distributed_optimizer) flag("--use-distributed-optimizer");
  if (t.overlap_grad_reduce) flag("--overlap-grad-reduce");
  if (t.overlap_param_gather) flag("--overlap-param-gather");
  if (t.ddp_bucket_size > 0) num("--ddp-bucket-size", t.ddp_bucket_size);
  if (t.ddp_num_buckets > 0) num("--ddp-num-buckets", t.ddp_num_buckets);
  if (!t.align_param_gather) flag("--no-align-param-gather");
  if (t.params_dtype == DType::kBf16) flag("--bf16");
  if (t.params_dtype == DType::kFp16) flag("--fp16");
  if (t.grad_reduce_in_bf16) flag("--grad-reduce-in-bf16");
  if (t.clip_grad != 1.0) {  // Megatron's default is 1.0
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, t.clip_grad);  // shortest round trip
    flag("--clip-grad");
    out += ' ';
    out += std::string_view(buf, static_cast<std::size_t>(r.ptr - buf));
  }
  if (t.fp8_enabled()) {
    flag("--fp8-format");
    out += ' ';
    out += to_string(t.fp8);
    flag("--fp8-recipe");
    out += ' ';
    out += to_string(t.fp8_recipe);
  }
  if (t.fp8_param_gather) flag("--fp8-param-gather");
  if (t.reuse_grad_buf_for_mxfp8_param_ag) flag("--reuse-grad-buf-for-mxfp8-param-ag");
  if (t.fp8_amax_history_len != 1) num("--fp8-amax-history-len", t.fp8_amax_history_len);
  if (t.tp_only_amax_red) flag("--tp-only-amax-red");
  if (t.tp_comm_overlap) flag("--tp-comm-overlap");
  if (!t.tp_comm_overlap_ag) flag("--disable-tp-comm-overlap-ag");
  if (!t.tp_comm_overlap_rs) flag("--disable-tp-comm-overlap-rs");
  if (t.tp_comm_overlap_rs_dgrad) flag("--tp-comm-overlap-rs-dgrad");
  if (!t.nccl_communicator_config_path.empty()) {
    flag("--nccl-communicator-config-path");
    out += " '" + t.nccl_communicator_config_path + "'";
  }
  if (!t.tp_comm_overlap_cfg.empty()) {
    flag("--tp-comm-overlap-cfg");
    out += " '" + t.tp_comm_overlap_cfg + "'";
  }
  if (!t.tp_comm_bulk_dgrad) flag("--disable-tp-comm-bulk-dgrad");
  if (!t.tp_comm_bulk_wgrad) flag("--disable-tp-comm-bulk-wgrad");
  if (t.defer_embedding_wgrad_compute) flag("--defer-embedding-wgrad-compute");
  if (t.wgrad_deferral_limit != 0) num("--wgrad-deferral-limit", t.wgrad_deferral_limit);
  if (m.moe()) {
    const auto word = [&](std::string_view name, std::string_view value) {
      flag(name);
      out += ' ';
      out += value;
    };
    const auto real = [&](std::string_view name, double v) {
      char buf[32];
      const auto r = std::to_chars(buf, buf + sizeof buf, v);  // shortest round-trip form
      word(name, std::string_view(buf, static_cast<std::size_t>(r.ptr - buf)));
    };
    num("--num-experts", m.num_experts);
    num("--moe-router-topk", m.moe_router_topk);
    if (m.moe_ffn_hidden_size > 0) num("--moe-ffn-hidden-size", m.moe_ffn_hidden_size);
    if (m.moe_shared_expert_intermediate_size > 0) {
      num("--moe-shared-expert-intermediate-size", m.moe_shared_expert_intermediate_size);
    }
    // A list pattern's characters need quoting from the shell, never '.
    if (m.moe_layer_freq != "1") word("--moe-layer-freq", "'" + m.moe_layer_freq + "'");
    if (t.expert_model_parallel_size > 1) {
      num("--expert-model-parallel-size", t.expert_model_parallel_size);
    }
    if (t.expert_tensor_parallel_size > 0) {
      num("--expert-tensor-parallel-size", t.expert_tensor_parallel_size);
    }
    word("--moe-token-dispatcher-type", to_string(t.moe_token_dispatcher_type));
    if (t.moe_token_dispatcher_type == MoeDispatcher::kFlex) {
      word("--moe-flex-dispatcher-backend", to_string(t.moe_flex_dispatcher_backend));
      if (t.moe_flex_dispatcher_num_sms > 0 || t.moe_deepep_num_sms > 0) {
        num("--moe-flex-dispatcher-num-sms", t.deepep_num_sms());
      }
    }
    if (t.moe_grouped_gemm) flag("--moe-grouped-gemm");
    if (t.moe_shared_expert_overlap) flag("--moe-shared-expert-overlap");
    if (t.moe_router_load_balancing_type != MoeLoadBalancing::kAuxLoss) {
      word("--moe-router-load-balancing-type", to_string(t.moe_router_load_balancing_type));
    }
    if (t.moe_expert_capacity_factor > 0) {
      real("--moe-expert-capacity-factor", t.moe_expert_capacity_factor);
    }
    if (t.moe_pad_expert_input_to_capacity) flag("--moe-pad-expert-input-to-capacity");
    if (t.moe_aux_loss_coeff > 0) real("--moe-aux-loss-coeff", t.moe_aux_loss_coeff);
    if (t.moe_router_dtype == MoeRouterDtype::kFp32)
      word("--moe-router-dtype", to_string(MoeRouterDtype::kFp32));
    if (m.moe_router_score_function != MoeRouterScore::kSoftmax) {
      word("--moe-router-score-function", to_string(m.moe_router_score_function));
    }
    if (m.moe_router_enable_expert_bias) flag("--moe-router-enable-expert-bias");
    if (m.moe_router_num_groups > 0) num("--moe-router-num-groups", m.moe_router_num_groups);
    if (m.moe_router_group_topk > 0) num("--moe-router-group-topk", m.moe_router_group_topk);
  }
  if (m.multi_latent_attention) {
    flag("--multi-latent-attention");
    if (m.q_lora_rank > 0) num("--q-lora-rank", m.q_lora_rank);
    num("--kv-lora-rank", m.kv_lora_rank);
    num("--qk-head-dim", m.qk_head_dim);
    num("--qk-pos-emb-head-dim", m.qk_pos_emb_head_dim);
    num("--v-head-dim", m.v_head_dim);
    if (m.qk_layernorm) flag("--qk-layernorm");
  }
  return out;
}

}  // namespace stepsim
