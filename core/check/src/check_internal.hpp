#pragma once
// Shared by validate.cpp and validate_limits.cpp. Private to stepsim_core.

#include <cstdint>
#include <string>
#include <vector>

#include "stepsim/base/result.hpp"
#include "stepsim/config/enum_names.hpp"
#include "stepsim/config/scenario.hpp"

namespace stepsim::detail {

/// Collects rule violations for one file.
struct Checker {
  const std::string& file;
  Errors& errors;
  /// `message` follows the key, e.g. "=6 does not divide num_attention_heads=96".
  void fail(std::string key, std::string message) {
    errors.push_back({file, std::move(key), std::move(message)});
  }
};

inline std::string str(std::int64_t v) { return std::to_string(v); }

/// What a block-scaled recipe (MXFP8, NVFP4) quantizes on one rank, whose shapes Transformer
/// Engine's quantizers check: the rows (a micro-batch's tokens; with sequence parallelism the
/// sequence shard) and the linears' widths per tensor-parallel rank (FFN, attention output as
/// heads x head dim, QKV as heads and both KV groups). `ffn_hidden` is the FFN width the
/// recipe's rule is about (the experts' under NVFP4).
struct RankShapes {
  std::int64_t tp = 1;
  bool sp = false;
  std::int64_t tokens = 0;
  std::int64_t head_dim = 0;
  std::int64_t ffn = 0;
  std::int64_t attn = 0;
  std::int64_t qkv = 0;
};

inline RankShapes rank_shapes(const Workload& w, std::int64_t ffn_hidden) {
  const TrainingConfig& t = w.training;
  const ModelConfig& m = w.model;
  RankShapes r;
  r.tp = t.tensor_model_parallel_size > 1 ? t.tensor_model_parallel_size : 1;
  const std::int64_t cp = t.context_parallel_size > 1 ? t.context_parallel_size : 1;
  r.sp = t.sequence_parallel && r.tp > 1;
  r.tokens = m.seq_length / cp * t.micro_batch_size / (r.sp ? r.tp : 1);
  const std::int64_t heads = m.num_attention_heads > 1 ? m.num_attention_heads : 1;
  r.head_dim = m.kv_channels > 0 ? m.kv_channels : m.hidden_size / heads;
  const std::int64_t groups = m.num_query_groups > 0 ? m.num_query_groups : heads;
  r.ffn = ffn_hidden / r.tp;
  r.attn = heads * r.head_dim / r.tp;
  r.qkv = (heads + 2 * groups) * r.head_dim / r.tp;
  return r;
}

/// Sizes beyond 64-bit products or beyond what a simulation can enumerate.
void check_limits(const Workload& w, Checker& check);

/// Sets virtual_pipeline_model_parallel_size from pipeline_model_parallel_layout (its stages
/// over p) or from num_layers_per_virtual_pipeline_stage (the layers per stage, embedding and
/// loss counted when asked, over it), or num_layers_per_virtual_pipeline_stage from v for an
/// even split. Reports nothing: check_pipeline_split does (validate_pipeline_split.cpp).
void derive_virtual_stages(Workload& w);

/// Megatron's rules on the layer split: even split, first/last stage sizes, embedding/loss
/// counted as layers, or an explicit layout (with the virtual stages each implies).
void check_pipeline_split(const Workload& w, Checker& check);

/// Whether check_pipeline_split finds nothing (and the sizes are known): pipeline_split() may
/// then be asked.
bool pipeline_split_valid(const Workload& w);

/// Mixture-of-experts and expert-parallel rules (validate_moe.cpp): Megatron-LM's, and the
/// MoE settings stepsim does not model yet.
void check_moe(const Workload& w, Checker& check);
/// The routed experts under FP8 (check_moe_fp8.cpp): what stepsim does not model of them yet.
void check_moe_fp8(const Workload& w, Checker& check);

/// Multi-latent attention rules (validate_mla.cpp): Megatron-LM's, and the MLA settings
/// stepsim does not model yet; the MLA sizes and qk_layernorm without it.
void check_mla(const Workload& w, Checker& check);

/// Hierarchical context parallelism (cp_comm_type "a2a+p2p", validate_hierarchical_cp.cpp):
/// Megatron-LM's and Transformer Engine's rules on hierarchical_context_parallel_sizes.
void check_hierarchical_cp(const Workload& w, Checker& check);

/// FP8 (Transformer Engine) rules: Megatron-LM's, the system's FP8 peak, the modelled recipes.
void check_fp8(const Workload& w, Checker& check);
/// NVFP4 (training.fp4, check_fp4.cpp).
void check_fp4(const Workload& w, Checker& check);

/// TP-communication overlap (Transformer Engine's userbuffers) and deferred embedding wgrad:
/// Megatron-LM's rules, TE's limits, what is not modelled yet.
void check_tp_overlap(const Workload& w, Checker& check);

/// NCCL's settings of the job (validate_nccl.cpp): the ranges NCCL accepts, what stepsim does
/// not model of the channel limits and the cross-node chunk size.
void check_nccl(const Workload& w, Checker& check);

/// optimizer_impl "apex_distributed_fused_adam" (validate_dfa.cpp): the job stepsim models it
/// in.
void check_optimizer_impl(const Workload& w, Checker& check);

/// Sliding-window attention rules (validate_window.cpp): the window's form, its layer pattern,
/// what Transformer Engine refuses with it and what stepsim does not model yet.
void check_window(const Workload& w, Checker& check);

/// GPT-OSS's attention sinks (softmax_type) and clamped quick-GEGLU (quick_geglu,
/// glu_linear_offset, activation_func_clamp_value), validate_gpt_oss.cpp: Megatron-LM's and
/// Transformer Engine's rules, and what stepsim does not model yet.
void check_gpt_oss(const Workload& w, Checker& check);

/// Hybrid models (check_hybrid.cpp): num_layers from hybrid_layer_pattern and the virtual
/// stages from its '|' segments (arguments.py), reporting the pipeline flags Megatron refuses
/// beside a pattern; run before derive_virtual_stages.
void apply_hybrid_defaults(Workload& w, Checker& check);

/// Hybrid models' rules: MambaMixer's divisibility asserts, MoE letters without experts, and
/// what stepsim does not model yet with Mamba layers.
void check_hybrid(const Workload& w, Checker& check);
/// Multi-token prediction (check_mtp.cpp): Megatron-LM's rules on mtp_num_layers and what
/// stepsim does not model yet beside it.
void check_mtp(const Workload& w, Checker& check);

/// Megatron-FSDP and torch FSDP2 (check_fsdp.cpp): Megatron-LM's rules and what stepsim does
/// not model yet beside them.
void check_fsdp(const Workload& w, Checker& check);
/// Muon (optimizer "muon") and CUDA graphs (cuda_graph_impl, cuda_graph_modules),
/// check_step.cpp: Megatron-LM's rules and what stepsim does not model yet.
void check_step(const Workload& w, Checker& check);

}  // namespace stepsim::detail
