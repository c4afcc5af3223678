#pragma once
// The sizes every part of the decomposition and the memory model needs, derived once from a
// validated Workload, in the reference's notation (s, b, h, a, g, d, f, V, t, p, v).
// Internal to stepsim_core.

#include <cstdint>

#include "stepsim/core/dtype.hpp"
#include "stepsim/core/rank_layout.hpp"
#include "stepsim/core/scenario.hpp"

namespace stepsim::detail {

struct Dims {
  std::int64_t s = 0;   ///< sequence length
  std::int64_t b = 0;   ///< micro-batch size
  std::int64_t h = 0;   ///< hidden size
  std::int64_t a = 0;   ///< attention heads
  std::int64_t g = 0;   ///< query groups
  std::int64_t d = 0;   ///< head dim (kv_channels)
  std::int64_t f = 0;   ///< FFN hidden size
  std::int64_t vocab = 0;  ///< padded vocabulary
  std::int64_t max_pos = 0;
  std::int64_t t = 1, p = 1, v = 1, dp = 1;
  std::int64_t cp = 1;  ///< context-parallel size: a rank holds s/cp tokens of each sequence
  CpCommType cp_comm = CpCommType::kP2p;
  std::int64_t cp_nodes = 1;  ///< nodes a CP group spans
  std::int64_t layers = 0;
  std::int64_t tokens = 0;     ///< (s/cp)*b, as a GEMM's m (all-gathered with SP)
  std::int64_t sp_tokens = 0;  ///< tokens a rank holds outside the TP regions: s*b/t with SP
  std::int64_t e = 2;          ///< bytes per activation element (params dtype)
  DType dtype = DType::kBf16;
  bool sp = false;
  bool swiglu = false;
  bool flash = false;
  bool bias = true;
  bool learned_pos = true;
  bool rope = false;
  bool layernorm = true;  ///< LayerNorm (weight + bias) rather than RMSNorm
  bool tied = true;       ///< input embedding and output layer share their weight
  bool dist_saved = false;  ///< distribute_saved_activations in effect
  bool fp8 = false;         ///< the layers' linears run FP8 GEMMs (Transformer Engine)
  bool fp8_current = false;  ///< with per-tensor current scaling (fp8_recipe "tensorwise")
  std::int64_t tp_nodes = 1;  ///< nodes a TP group spans
  // TP-communication overlap as Transformer Engine's linears resolve it (tp_overlap_ops.cpp):
  // the AG+GEMM ring exchange (QKV/FC1 fprop, projection/FC2 dgrad), the GEMM+RS pipeline
  // (projection/FC2 fprop), QKV/FC1 dgrad GEMM+RS pipelined, the bulk overlaps (off with it).
  bool ub_ag = false;
  bool ub_rs = false;
  bool ub_rs_dgrad = false;
  bool ub_bulk_dgrad = false;
  bool ub_bulk_wgrad = false;
  /// Share of the SMs a GEMM beside a userbuffers kernel runs on: (sm_count - num_sm) / sm_count.
  double ub_gemm_sm_share = 1.0;

  // Per-rank widths after tensor-parallel slicing.
  std::int64_t heads() const { return a / t; }
  std::int64_t groups() const { return g / t; }
  std::int64_t qkv_n() const { return (a + 2 * g) * d / t; }
  std::int64_t attn_n() const { return a * d / t; }  ///< core attention output width
  std::int64_t ffn_n() const { return f / t; }
  std::int64_t fc1_n() const { return (swiglu ? 2 : 1) * f / t; }
  std::int64_t vocab_n() const { return vocab / t; }
  std::int64_t attn_batch() const { return b * a / t; }  ///< batched-GEMM count of QK^T, AV
  std::int64_t score_elems() const { return b * (a / t) * s * s; }  ///< attention scores
};

inline std::int64_t ceil_div(std::int64_t x, std::int64_t y) { return (x + y - 1) / y; }

/// Transformer Engine's initialize_ub defaults (transformer_engine/pytorch/module/base.py
/// get_default_config) for the methods other than ring_exchange: num_sm = 16 SMs for the
/// userbuffers kernel, set_sm_margin (the GEMM runs on sm_count - num_sm SMs), num_splits = 4.
inline constexpr std::int64_t kUbCommSms = 16;
inline constexpr std::int64_t kUbPipelineSplits = 4;

inline Dims dims_of(const Workload& w) {
  const ModelConfig& mc = w.model;
  const TrainingConfig& tc = w.training;
  Dims x;
  x.s = mc.seq_length;
  x.b = tc.micro_batch_size;
  x.h = mc.hidden_size;
  x.a = mc.num_attention_heads;
  x.g = mc.num_query_groups > 0 ? mc.num_query_groups : mc.num_attention_heads;
  x.d = mc.kv_channels > 0 ? mc.kv_channels : mc.hidden_size / mc.num_attention_heads;
  x.f = mc.ffn_hidden_size;
  x.vocab = mc.padded_vocab_size;
  x.max_pos = mc.max_position_embeddings > 0 ? mc.max_position_embeddings : mc.seq_length;
  x.t = tc.tensor_model_parallel_size;
  x.p = tc.pipeline_model_parallel_size;
  x.v = tc.virtual_pipeline_model_parallel_size;
  x.dp = tc.data_parallel_size > 0 ? tc.data_parallel_size : 1;
  x.cp = tc.context_parallel_size > 0 ? tc.context_parallel_size : 1;
  x.cp_comm = tc.cp_comm_type;
  x.layers = mc.num_layers;
  x.sp = tc.sequence_parallel && x.t > 1;
  x.tokens = x.s / x.cp * x.b;
  x.sp_tokens = x.sp ? x.tokens / x.t : x.tokens;
  x.dtype = tc.params_dtype;
  x.e = bytes_of(tc.params_dtype);
  x.swiglu = mc.swiglu;
  x.flash = mc.fused_attention();
  x.bias = mc.add_bias_linear;
  x.learned_pos = mc.position_embedding_type == PositionEmbedding::kLearnedAbsolute;
  x.rope = mc.position_embedding_type == PositionEmbedding::kRope;
  x.layernorm = mc.normalization == Normalization::kLayerNorm;
  x.tied = !mc.untie_embeddings_and_output_weights;
  // Megatron rejects distribute_saved_activations with sequence parallelism and with t = 1.
  x.dist_saved = tc.distribute_saved_activations && !x.sp && x.t > 1 &&
                 tc.recompute_granularity == RecomputeGranularity::kFull;
  x.fp8 = tc.fp8_enabled();
  x.fp8_current = x.fp8 && tc.fp8_recipe == Fp8Recipe::kTensorwise;
  // layernorm_linear.py / linear.py: every overlap needs sequence parallelism; the bulk
  // overlaps give way to the dgrad GEMM+RS pipeline.
  const bool ub = tc.tp_comm_overlap && x.sp && !x.fp8;  // FP8 userbuffers: rejected
  x.ub_ag = ub && tc.tp_comm_overlap_ag;
  x.ub_rs = ub && tc.tp_comm_overlap_rs;
  x.ub_rs_dgrad = ub && tc.tp_comm_overlap_rs_dgrad;
  x.ub_bulk_dgrad = ub && tc.tp_comm_bulk_dgrad && !x.ub_rs_dgrad;
  x.ub_bulk_wgrad = ub && tc.tp_comm_bulk_wgrad && !x.ub_rs_dgrad;
  if (ub && w.system.sm_count > kUbCommSms) {
    x.ub_gemm_sm_share = static_cast<double>(w.system.sm_count - kUbCommSms) /
                         static_cast<double>(w.system.sm_count);
  }
  const std::int64_t gpn = w.system.gpus_per_node > 0 ? w.system.gpus_per_node : 1;
  x.tp_nodes = ceil_div(x.t, gpn);
  if (x.cp > 1) {
    // Megatron's layout (tp-cp-ep-dp-pp): the CP group of the representative rank (rank 0).
    const RankGenerator ranks(ParallelSizes{.tp = x.t, .cp = x.cp, .dp = x.dp, .pp = x.p});
    x.cp_nodes = ranks.nodes_spanned("cp", 0, gpn);
  }
  return x;
}

}  // namespace stepsim::detail
