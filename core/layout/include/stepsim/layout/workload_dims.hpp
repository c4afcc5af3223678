#pragma once
// The sizes every part of the decomposition and the memory model needs, derived once from a
// validated Workload, in the reference's notation (s, b, h, a, g, d, f, V, t, p, v).
// Internal to stepsim_core.

#include <algorithm>
#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "stepsim/base/assert.hpp"
#include "stepsim/base/dtype.hpp"
#include "stepsim/layout/hybrid_layout.hpp"
#include "stepsim/layout/moe_layout.hpp"
#include "stepsim/layout/rank_layout.hpp"
#include "stepsim/config/scenario.hpp"
#include "stepsim/layout/window_attention.hpp"

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
  /// Hierarchical CP (cp_comm a2a+p2p, cp = cp_a2a * cp_p2p): the all-to-all group's size
  /// (consecutive ranks of the CP group) and the ring's (every cp_a2a-th), and the nodes each
  /// group of the representative rank spans.
  std::int64_t cp_a2a = 1, cp_p2p = 1;
  std::int64_t cp_a2a_nodes = 1, cp_p2p_nodes = 1;
  std::int64_t layers = 0;
  std::int64_t mtp = 0;     ///< multi-token prediction layers (on the last stage's last chunk)
  std::int64_t tokens = 0;     ///< (s/cp)*b, as a GEMM's m (all-gathered with SP)
  std::int64_t sp_tokens = 0;  ///< tokens a rank holds outside the TP regions: s*b/t with SP
  std::int64_t e = 2;          ///< bytes per activation element (params dtype)
  DType dtype = DType::kBf16;
  bool sp = false;
  bool swiglu = false;
  bool squared_relu = false;  ///< the MLP's activation is squared ReLU (not gated)
  /// quick-GEGLU (gated: FC1 of 2f outputs); clamp_glu: with activation_func_clamp_value, whose
  /// clamps and concatenation run as kernels of their own before quick-GEGLU's fused one.
  bool quick_geglu = false;
  bool clamp_glu = false;
  /// softmax_type learnable: num_attention_heads / t learned sink logits per layer and rank.
  bool learnable_sink = false;
  bool flash = false;
  bool bias = true;
  bool learned_pos = true;
  bool rope = false;
  bool layernorm = true;  ///< LayerNorm (weight + bias) rather than RMSNorm
  /// hidden_dropout > 0: the bias-dropout-adds and the embedding dropout keep 1-byte masks.
  bool hidden_dropout = true;
  /// attention_dropout > 0: unfused attention runs a dropout on the probabilities and keeps
  /// its mask and output (flash kernels draw theirs inside, nothing kept either way).
  bool attention_dropout = true;
  /// cross_entropy_loss_fusion (native): one TP all-reduce of the predicted logits and the
  /// exp sums together.
  bool ce_fusion = false;
  /// cross_entropy_fusion_impl "te" with cross_entropy_loss_fusion: Transformer Engine's
  /// Triton parallel cross entropy (embedding_ops.cpp) instead of Megatron's native one.
  bool ce_te = false;
  bool tied = true;       ///< input embedding and output layer share their weight
  bool dist_saved = false;  ///< distribute_saved_activations in effect
  bool fp8 = false;         ///< the layers' linears run FP8 GEMMs (Transformer Engine)
  bool fp8_current = false;  ///< with per-tensor current scaling (fp8_recipe "tensorwise")
  /// With block scaling: fp8_recipe "blockwise" or "mxfp8" (both quantize row- and
  /// column-wise copies from 16 bits, no amaxes; fp8_ops.hpp).
  bool fp8_block = false;
  bool fp8_mx = false;        ///< the block scaling is MXFP8's (1x32 E8M0 scales, Blackwell)
  /// MXFP8 parameters (fp8_param_gather): TE swizzles their scales before each GEMM.
  bool fp8_mx_params = false;
  /// NVFP4 (training.fp4, Transformer Engine's NVFP4BlockScaling): the FP8 block-scaled path
  /// (fp8 and fp8_block also set: both copies quantized from 16 bits, no amax history) with
  /// FP4 GEMMs and NVFP4's quantize bytes (fp8_ops.cpp, fp4 branches).
  bool fp4 = false;
  /// NVFP4 parameters (fp4_param_gather): as MXFP8's, their scales swizzled before each GEMM.
  bool fp4_params = false;
  std::int64_t tp_nodes = 1;  ///< nodes a TP group spans
  // TP-communication overlap as Transformer Engine's linears resolve it (tp_overlap_ops.cpp):
  // the AG+GEMM ring exchange (QKV/FC1 fprop, projection/FC2 dgrad), the GEMM+RS pipeline
  // (projection/FC2 fprop), QKV/FC1 dgrad GEMM+RS pipelined, the bulk overlaps (off with it).
  bool ub_ag = false;
  bool ub_rs = false;
  bool ub_rs_dgrad = false;
  bool ub_bulk_dgrad = false;
  bool ub_bulk_wgrad = false;
  /// Per userbuffers GEMM (kUbGemmNames order), TE's settings with tp_comm_overlap_cfg's on top.
  struct UbGemm {
    /// Share of the SMs the GEMM runs on beside its userbuffers kernel: (sm_count - num_sm) /
    /// sm_count with set_sm_margin, else 1.
    double sm_share = 1.0;
    std::int64_t splits = 4;  ///< chunks of a pipelined GEMM+reduce-scatter (num_splits)
    bool fp8_buf = false;     ///< a pipelined reduce-scatter's buffer is FP8 (with fp8 only)
    /// proj_fprop / fc2_fprop: the ring-exchange reduce-scatter (split_overlap_rs of
    /// CommOverlapP2PBase), not the pipelined one.
    bool ring_rs = false;
    bool aggregate = false;  ///< an all-gather ring exchange two chunks a step (tp / 2 steps)
    bool atomic = false;     ///< a pipelined GEMM+reduce-scatter as one atomic GEMM
  };
  std::array<UbGemm, kUbGemmNames.size()> ub_gemm{};
  /// Share of the SMs Transformer Engine's norm kernels run on, forward (and recompute) and
  /// backward: (sm_count - NVTE_{FWD,BWD}_LAYERNORM_SM_MARGIN) / sm_count, else 1.
  double norm_share_fwd = 1.0;
  double norm_share_bwd = 1.0;
  /// The settings of GEMM `name` ("qkv_fprop", ...); asserts it is one.
  const UbGemm& ub(std::string_view name) const;

  // Mixture of experts (moe_ops.cpp); experts = 0 for a dense model.
  std::int64_t experts = 0;   ///< routed experts per MoE layer
  std::int64_t topk = 0;      ///< experts per token
  std::int64_t moe_f = 0;     ///< one routed expert's FFN width
  std::int64_t shared_f = 0;  ///< the shared experts' FFN width (0: none)
  /// moe_shared_expert_overlap with shared experts: they run beside the dispatcher.
  bool shared_overlap = false;
  std::int64_t ep = 1;        ///< expert-parallel size
  std::int64_t etp = 1;       ///< expert tensor-parallel size
  std::int64_t edp = 1;       ///< expert data-parallel size
  std::int64_t ep_nodes = 1;     ///< nodes the EP group of the representative rank spans
  std::int64_t etp_nodes = 1;    ///< ... its expert TP group
  std::int64_t tp_ep_nodes = 1;  ///< ... its expert TP x EP group (the allgather dispatcher's)
  MoeDispatcher dispatcher = MoeDispatcher::kAllGather;
  /// The flex dispatcher (DeepEP, moe_flex.cpp): the SMs its kernels hold, the GPU's SMs (0:
  /// not given), and the group-limited routing (0: none) that bounds a token's nodes.
  std::int64_t deepep_sms = 0;
  std::int64_t sm_count = 0;
  std::int64_t router_groups = 0;
  std::int64_t router_group_topk = 0;
  bool grouped_gemm = false;
  double capacity_factor = 0;  ///< 0: no capacity
  /// The router runs aux_loss / seq_aux_loss kernels (moe_aux_loss_coeff > 0); seq_aux_loss
  /// counts tokens per expert per sequence.
  bool aux_loss = false;
  bool seq_aux_loss = false;
  bool pad_to_capacity = false;
  DType router_dtype = DType::kBf16;  ///< the router GEMM's and the routing probabilities' dtype
  std::vector<bool> moe_layer;        ///< per global layer: an MoE layer
  /// Per-expert shares of the routed rows (moe_expert_shares); empty: balanced routing.
  std::vector<double> expert_shares;

  // Multi-latent attention (mla_ops.cpp); mla false: the other attention.
  bool mla = false;
  std::int64_t q_lora = 0;   ///< q_lora_rank; 0: one Q projection from h
  std::int64_t kv_lora = 0;  ///< kv_lora_rank
  std::int64_t dqk = 0;      ///< qk_head_dim
  std::int64_t dr = 0;       ///< qk_pos_emb_head_dim (the RoPE part)
  std::int64_t dv = 0;       ///< v_head_dim
  bool qk_norm = false;      ///< qk_layernorm: norms on the q and kv latents

  std::int64_t mla_q_dim() const { return dqk + dr; }  ///< query/key head dim
  std::int64_t mla_q_n() const { return a * mla_q_dim() / t; }  ///< per-rank Q width
  std::int64_t mla_kv_n() const { return a * (dqk + dv) / t; }  ///< per-rank kv up width

  // Hybrid models (hybrid_layout.hpp, mamba_ops.cpp): each layer's kind; empty for a GPT
  // model, whose layers are transformer layers (attention + MLP or MoE).
  std::vector<HybridLayer> hybrid;
  // The Mamba-2 mixer (MambaMixer): heads H, head dim P, state N, groups G, the causal
  // convolution's width (d_conv 4) and the SSD scan's chunk (chunk_size 128), both
  // MambaMixer's defaults, which HybridStack's spec keeps.
  std::int64_t mamba_heads = 0, mamba_p = 0, mamba_n = 0, mamba_g = 0;
  std::int64_t mamba_conv = 4, mamba_chunk = 128;

  /// A hybrid layer's kind; a GPT model's layers have none (kTransformer's absence).
  bool is_hybrid() const { return !hybrid.empty(); }
  HybridLayer kind_of(std::int32_t layer) const {
    STEPSIM_ASSERT(layer >= 0 && static_cast<std::size_t>(layer) < hybrid.size());
    return hybrid[static_cast<std::size_t>(layer)];
  }
  // Per-rank Mamba widths (MambaMixer's *_local_tp).
  std::int64_t mamba_heads_n() const { return mamba_heads / t; }
  std::int64_t mamba_groups_n() const { return mamba_g / t; }
  std::int64_t mamba_inner_n() const { return mamba_heads_n() * mamba_p; }  ///< d_inner / t
  /// The convolution's channels x, B, C.
  std::int64_t mamba_conv_n() const { return mamba_inner_n() + 2 * mamba_groups_n() * mamba_n; }
  /// in_proj's outputs z, x, B, C, dt.
  std::int64_t mamba_in_n() const { return mamba_inner_n() + mamba_conv_n() + mamba_heads_n(); }

  // Sliding-window attention (window_attention.hpp): keys per query in a window layer (0: no
  // window) and which layers attend through it.
  std::int64_t window = 0;
  std::vector<bool> window_layer;  ///< per global layer: attends through the window

  /// The window of a global layer's core attention: 0 for full attention.
  std::int64_t window_of(std::int32_t layer) const {
    return layer >= 0 && static_cast<std::size_t>(layer) < window_layer.size() &&
                   window_layer[static_cast<std::size_t>(layer)]
               ? window
               : 0;
  }
  bool is_moe(std::int32_t layer) const {
    // A multi-token prediction layer (global index layers + k) is built from the last decoder
    // layer's spec (Megatron's MTP block spec; training.py counts it as that layer's kind).
    if (layer >= layers && layer < layers + mtp && !moe_layer.empty()) return moe_layer.back();
    return layer >= 0 && static_cast<std::size_t>(layer) < moe_layer.size() &&
           moe_layer[static_cast<std::size_t>(layer)];
  }
  std::int64_t local_experts() const { return experts / ep; }
  std::int64_t expert_ffn_n() const { return moe_f / etp; }  ///< per-rank expert FFN width
  /// A gated MLP: FC1 makes both halves of the gated linear unit.
  bool gated() const { return swiglu || quick_geglu; }
  std::int64_t expert_fc1_n() const { return (gated() ? 2 : 1) * moe_f / etp; }
  std::int64_t shared_ffn_n() const { return shared_f / t; }
  std::int64_t shared_fc1_n() const { return (gated() ? 2 : 1) * shared_f / t; }

  // Per-rank widths after tensor-parallel slicing.
  std::int64_t heads() const { return a / t; }
  std::int64_t groups() const { return g / t; }
  /// Q, K and V widths together (with MLA: as the core attention receives them).
  std::int64_t qkv_n() const { return mla ? a * (2 * mla_q_dim() + dv) / t : (a + 2 * g) * d / t; }
  /// Core attention output width.
  std::int64_t attn_n() const { return mla ? a * dv / t : a * d / t; }
  std::int64_t ffn_n() const { return f / t; }
  std::int64_t fc1_n() const { return (gated() ? 2 : 1) * f / t; }
  std::int64_t vocab_n() const { return vocab / t; }
  std::int64_t attn_batch() const { return b * a / t; }  ///< batched-GEMM count of QK^T, AV
  std::int64_t score_elems() const { return b * (a / t) * s * s; }  ///< attention scores
};

inline std::int64_t ceil_div(std::int64_t x, std::int64_t y) { return (x + y - 1) / y; }

/// Transformer Engine's initialize_ub defaults (transformer_engine/pytorch/module/base.py
/// get_default_config) for the methods other than ring_exchange: num_sm = 16 SMs for the
/// userbuffers kernel, set_sm_margin (the GEMM runs on sm_count - num_sm SMs), num_splits = 4;
/// for ring_exchange num_sm = 1 and no SM margin (the copy engine moves the chunks).
inline constexpr std::int64_t kUbCommSms = 16;
inline constexpr std::int64_t kUbPipelineSplits = 4;

inline const Dims::UbGemm& Dims::ub(std::string_view name) const {
  for (std::size_t i = 0; i < kUbGemmNames.size(); ++i) {
    if (kUbGemmNames[i] == name) return ub_gemm[i];
  }
  STEPSIM_UNREACHABLE("Dims::ub: not a userbuffers GEMM");
  return ub_gemm[0];
}

/// Each userbuffers GEMM's settings: TE's defaults, then tp_comm_overlap_cfg's (ub_cfg.cpp).
inline void resolve_ub_gemms(const TrainingConfig& tc, std::int64_t sm_count, bool fp8, Dims& x) {
  for (std::size_t i = 0; i < kUbGemmNames.size(); ++i) {
    const std::string_view name = kUbGemmNames[i];
    const bool ring =
        name == "qkv_fprop" || name == "fc1_fprop" || name == "proj_dgrad" || name == "fc2_dgrad";
    const bool pipeline = name == "proj_fprop" || name == "fc2_fprop";
    const UbGemmSettings& given = tc.tp_comm_overlap_gemms[i];
    const std::int64_t num_sm = given.num_sm > 0 ? given.num_sm : (ring ? 1 : kUbCommSms);
    const bool margin = given.set_sm_margin >= 0 ? given.set_sm_margin == 1 : !ring;
    Dims::UbGemm& out = x.ub_gemm[i];
    if (margin && sm_count > num_sm) {
      out.sm_share = static_cast<double>(sm_count - num_sm) / static_cast<double>(sm_count);
    }
    out.splits = given.num_splits > 0 ? given.num_splits : kUbPipelineSplits;
    // initialize_ub: fp8_buf = name in layers_all_gather_overlap or (the user's fp8_buf and a
    // "pipeline" GEMM, proj_fprop or fc2_fprop whichever method the config gives it); only the
    // reduce-scatters of those two read it here.
    out.fp8_buf = fp8 && pipeline && given.fp8_buf == 1;
    out.ring_rs = pipeline && given.ring_exchange == 1;
    out.aggregate = ring && given.aggregate == 1;
    out.atomic = pipeline && !out.ring_rs && given.atomic_gemm == 1;
  }
}

/// The MoE part of dims_of: experts, routing, the dispatcher and the expert groups' spans.
inline void set_moe_dims(Dims& x, const Workload& w, std::int64_t gpn) {
  const ModelConfig& mc = w.model;
  const TrainingConfig& tc = w.training;
  x.experts = mc.num_experts;
  x.topk = mc.moe_router_topk;
  x.moe_f = mc.moe_ffn();
  x.shared_f = mc.moe_shared_expert_intermediate_size;
  x.shared_overlap = x.shared_f > 0 && tc.moe_shared_expert_overlap;
  x.ep = tc.expert_model_parallel_size > 0 ? tc.expert_model_parallel_size : 1;
  x.etp = tc.expert_tensor_parallel() > 0 ? tc.expert_tensor_parallel() : 1;
  x.edp = tc.expert_data_parallel_size > 0 ? tc.expert_data_parallel_size : 1;
  x.dispatcher = tc.moe_token_dispatcher_type;
  x.deepep_sms = tc.deepep_num_sms();
  x.sm_count = w.system.sm_count;
  x.router_groups = mc.moe_router_num_groups;
  x.router_group_topk = mc.moe_router_group_topk;
  x.grouped_gemm = tc.moe_grouped_gemm;
  x.capacity_factor = tc.moe_expert_capacity_factor;
  const MoeLoadBalancing lb = tc.moe_router_load_balancing_type;
  x.aux_loss = tc.moe_aux_loss_coeff > 0 &&
               (lb == MoeLoadBalancing::kAuxLoss || lb == MoeLoadBalancing::kSeqAuxLoss);
  x.seq_aux_loss = x.aux_loss && lb == MoeLoadBalancing::kSeqAuxLoss;
  x.pad_to_capacity = tc.moe_pad_expert_input_to_capacity;
  x.router_dtype = tc.moe_router_dtype == MoeRouterDtype::kNone ? x.dtype : DType::kFp32;
  x.moe_layer = moe_layer_pattern(mc);
  x.expert_shares = moe_expert_shares(mc, tc);
  if (tc.world_size > 0 && tc.expert_data_parallel_size > 0) {
    // Megatron's expert rank generator (tp = etp, ep, dp = expert dp, pp; cp = 1).
    const RankGenerator experts(
        ParallelSizes{.tp = x.etp, .ep = x.ep, .dp = x.edp, .pp = x.p});
    x.ep_nodes = experts.nodes_spanned("ep", 0, gpn);
    x.etp_nodes = experts.nodes_spanned("tp", 0, gpn);
    x.tp_ep_nodes = experts.nodes_spanned("tp-ep", 0, gpn);
  }
}

/// The expert groups' spans at pipeline stage `stage` (in place of dims_of's, which are those
/// of rank 0's groups): the most NVLink domains any of the stage's EP, expert TP and expert TP
/// x EP groups spans. Megatron's expert rank generator makes each group ranks of one stage;
/// where a domain boundary cuts through the stage (an NVL72 rack of 72 GPUs under stages of 64
/// ranks) some groups straddle it and their all-to-alls cross the NICs, and the slowest group
/// sets the step. On hosts that hold whole groups every group spans what rank 0's does.
inline void set_stage_expert_nodes(Dims& x, const Workload& w, std::int64_t stage) {
  if (!w.model.moe() || w.training.world_size <= 0 || w.training.expert_data_parallel_size <= 0) {
    return;
  }
  const std::int64_t gpn = w.system.nvlink_domain() > 0 ? w.system.nvlink_domain() : 1;
  const RankGenerator experts(ParallelSizes{.tp = x.etp, .ep = x.ep, .dp = x.edp, .pp = x.p});
  std::int64_t ep = 1, etp = 1, tp_ep = 1;
  for (std::int64_t d = 0; d < x.edp; ++d) {
    for (std::int64_t t = 0; t < x.etp; ++t) {
      const std::int64_t r = experts.rank(ParallelCoords{.tp = t, .dp = d, .pp = stage});
      ep = std::max(ep, experts.nodes_spanned("ep", r, gpn));
      if (t == 0) tp_ep = std::max(tp_ep, experts.nodes_spanned("tp-ep", r, gpn));
    }
    for (std::int64_t e = 0; e < x.ep; ++e) {
      const std::int64_t r = experts.rank(ParallelCoords{.ep = e, .dp = d, .pp = stage});
      etp = std::max(etp, experts.nodes_spanned("tp", r, gpn));
    }
  }
  x.ep_nodes = ep;
  x.etp_nodes = etp;
  x.tp_ep_nodes = tp_ep;
}

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
  x.mtp = mc.mtp_num_layers;
  x.sp = tc.sequence_parallel && x.t > 1;
  x.tokens = x.s / x.cp * x.b;
  x.sp_tokens = x.sp ? x.tokens / x.t : x.tokens;
  x.dtype = tc.params_dtype;
  x.e = bytes_of(tc.params_dtype);
  x.swiglu = mc.swiglu;
  x.squared_relu = mc.squared_relu;
  x.quick_geglu = mc.quick_geglu;
  x.clamp_glu = mc.quick_geglu && mc.activation_func_clamp_value > 0;
  x.learnable_sink = mc.softmax_type == SoftmaxType::kLearnable;
  x.flash = mc.fused_attention();
  x.bias = mc.add_bias_linear;
  x.learned_pos = mc.position_embedding_type == PositionEmbedding::kLearnedAbsolute;
  x.rope = mc.position_embedding_type == PositionEmbedding::kRope;
  x.layernorm = mc.normalization == Normalization::kLayerNorm;
  x.hidden_dropout = mc.hidden_dropout > 0;
  x.attention_dropout = mc.attention_dropout > 0;
  x.ce_fusion = mc.cross_entropy_loss_fusion;
  x.ce_te = x.ce_fusion && mc.cross_entropy_fusion_impl == CrossEntropyFusionImpl::kTe;
  x.tied = !mc.untie_embeddings_and_output_weights;
  // Megatron rejects distribute_saved_activations with sequence parallelism and with t = 1.
  x.dist_saved = tc.distribute_saved_activations && !x.sp && x.t > 1 &&
                 tc.recompute_granularity == RecomputeGranularity::kFull;
  x.fp8 = tc.fp8_enabled();
  x.fp8_current = x.fp8 && tc.fp8_recipe == Fp8Recipe::kTensorwise;
  x.fp8_mx = x.fp8 && tc.fp8_recipe == Fp8Recipe::kMxfp8;
  x.fp8_mx_params = x.fp8_mx && tc.fp8_param_gather;
  x.fp8_block = x.fp8_mx || (x.fp8 && tc.fp8_recipe == Fp8Recipe::kBlockwise);
  if (tc.fp4_enabled() && !x.fp8) {
    x.fp4 = true;
    x.fp8 = true;
    x.fp8_block = true;
    x.fp4_params = tc.fp4_param_gather;
  }
  // layernorm_linear.py / linear.py: every overlap needs sequence parallelism; the bulk
  // overlaps give way to the dgrad GEMM+RS pipeline.
  const bool ub = tc.tp_comm_overlap && x.sp;
  x.ub_ag = ub && tc.tp_comm_overlap_ag;
  x.ub_rs = ub && tc.tp_comm_overlap_rs;
  x.ub_rs_dgrad = ub && tc.tp_comm_overlap_rs_dgrad;
  x.ub_bulk_dgrad = ub && tc.tp_comm_bulk_dgrad && !x.ub_rs_dgrad;
  x.ub_bulk_wgrad = ub && tc.tp_comm_bulk_wgrad && !x.ub_rs_dgrad;
  if (ub) resolve_ub_gemms(tc, w.system.sm_count, x.fp8, x);
  const auto norm_share = [&](std::int64_t margin) {
    const std::int64_t sms = w.system.sm_count;
    return margin > 0 && sms > margin ? static_cast<double>(sms - margin) / static_cast<double>(sms)
                                      : 1.0;
  };
  x.norm_share_fwd = norm_share(tc.fwd_layernorm_sm_margin);
  x.norm_share_bwd = norm_share(tc.bwd_layernorm_sm_margin);
  // Groups span NVLink domains (gpus_per_node unless the system gives nvlink_domain_size).
  const std::int64_t gpn = w.system.nvlink_domain() > 0 ? w.system.nvlink_domain() : 1;
  x.tp_nodes = ceil_div(x.t, gpn);
  if (x.cp > 1) {
    // Megatron's layout (tp-cp-ep-dp-pp): the CP group of the representative rank (rank 0).
    const RankGenerator ranks(ParallelSizes{.tp = x.t, .cp = x.cp, .dp = x.dp, .pp = x.p});
    x.cp_nodes = ranks.nodes_spanned("cp", 0, gpn);
    const std::vector<std::int64_t>& levels = tc.hierarchical_context_parallel_sizes;
    if (x.cp_comm == CpCommType::kA2aP2p && levels.size() == 2) {
      // Transformer Engine's attn_forward_func_with_cp runs a level of size 1 as the plain
      // form over the other (the whole CP group).
      if (levels[0] == 1) {
        x.cp_comm = CpCommType::kP2p;
      } else if (levels[1] == 1) {
        x.cp_comm = CpCommType::kA2a;
      } else {
        const std::vector<std::int64_t> cp_ranks = ranks.group_of("cp", 0);
        x.cp_a2a = levels[0];
        x.cp_p2p = levels[1];
        x.cp_a2a_nodes = nodes_of(hierarchical_group_of(cp_ranks, levels, 0, 0), gpn);
        x.cp_p2p_nodes = nodes_of(hierarchical_group_of(cp_ranks, levels, 1, 0), gpn);
      }
    }
  }
  if (mc.hybrid()) {
    x.hybrid = hybrid_layer_kinds(mc);
    x.mamba_heads = mc.mamba_heads();
    x.mamba_p = mc.mamba_head_dim;
    x.mamba_n = mc.mamba_state_dim;
    x.mamba_g = mc.mamba_num_groups;
  }
  x.window = window_keys(mc);
  if (x.window > 0) x.window_layer = window_layer_pattern(mc);
  if (mc.multi_latent_attention) {
    x.mla = true;
    x.q_lora = mc.q_lora_rank;
    x.kv_lora = mc.kv_lora_rank;
    x.dqk = mc.qk_head_dim;
    x.dr = mc.qk_pos_emb_head_dim;
    x.dv = mc.v_head_dim;
    x.qk_norm = mc.qk_layernorm;
  }
  if (mc.moe()) set_moe_dims(x, w, gpn);
  return x;
}

}  // namespace stepsim::detail
