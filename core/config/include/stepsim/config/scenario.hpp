#pragma once
// The validated description of one training job: model, training (parallel) configuration,
// system and cost model. Field names are Megatron-LM's argument names (the `dest` of its
// flags). A Workload only exists after load_scenario() validated it; afterwards every
// invariant documented here holds and nobody re-checks it.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "stepsim/base/dtype.hpp"
#include "stepsim/config/nccl_env.hpp"

namespace stepsim {

enum class RecomputeGranularity : std::uint8_t { kNone, kSelective, kFull };
enum class RecomputeMethod : std::uint8_t { kNone, kUniform, kBlock };
enum class PositionEmbedding : std::uint8_t { kLearnedAbsolute, kRope, kNone };
enum class Normalization : std::uint8_t { kLayerNorm, kRmsNorm };
/// Megatron-Core's AttnBackend (megatron/core/transformer/enums.py), in its order after kAuto.
/// auto, flash and fused run a fused attention kernel (Transformer Engine's flash-attn or
/// cuDNN fused attention: no s x s scores in memory); unfused and local materialise them.
enum class AttentionBackend : std::uint8_t { kAuto, kFlash, kFused, kUnfused, kLocal };
/// Megatron-Core's --softmax-type (TransformerConfig.softmax_type): the attention softmax with
/// no sink (vanilla), a fixed zero logit in every row's denominator (off-by-one), or one learned
/// logit per head (learnable, GPT-OSS's attention sinks). Transformer Engine runs the last two
/// in cuDNN fused attention only (dot_product_attention/utils.py get_attention_backend).
enum class SoftmaxType : std::uint8_t { kVanilla, kOffByOne, kLearnable };
/// Megatron-Core's --fp8-format (TransformerConfig.fp8): none, e4m3 everywhere, or hybrid (E4M3
/// activations and weights, E5M2 gradients).
enum class Fp8Format : std::uint8_t { kNone, kE4m3, kHybrid };
/// Megatron-Core's --fp8-recipe (megatron/core/enums.py Fp8Recipe), in the schema's order.
enum class Fp8Recipe : std::uint8_t { kDelayed, kTensorwise, kBlockwise, kMxfp8, kCustom };
/// Megatron-Core's --fp4-format (TransformerConfig.fp4): none or e2m1.
enum class Fp4Format : std::uint8_t { kNone, kE2m1 };
/// Megatron-Core's --fp4-recipe (megatron/core/enums.py Fp4Recipe), in the schema's order.
enum class Fp4Recipe : std::uint8_t { kNvfp4, kCustom };
/// Megatron-LM's --cp-comm-type (Transformer Engine's cp_comm_type): how context-parallel
/// attention exchanges keys and values. kP2p: TE's KV ring (AttnFuncWithCPAndKVP2P); kA2a:
/// Ulysses all-to-all of Q, K, V and the output (AttnFuncWithCPAndQKVOA2A); kAllGather: KV
/// all-gather (AttnFuncWithCPAndKVAllGather); kA2aP2p: the hierarchical form (TE's
/// AttnFuncWithCPAndKVP2P given [a2a group, p2p group]): the all-to-all of heads inside the
/// first level of --hierarchical-context-parallel-sizes, the KV ring over the second.
enum class CpCommType : std::uint8_t { kP2p, kA2a, kAllGather, kA2aP2p };
/// Megatron's --cross-entropy-fusion-impl: its own jit-fused vocab-parallel cross entropy, or
/// Transformer Engine's Triton kernel.
enum class CrossEntropyFusionImpl : std::uint8_t { kNative, kTe };
/// Megatron-Core's --moe-token-dispatcher-type, in the schema's order. kAllGather
/// (MoEAllGatherTokenDispatcher: all-gather over the expert tensor x expert group, reduce-scatter
/// back), kAllToAll (MoEAlltoAllTokenDispatcher: all-to-all over the EP group, all-gather and
/// reduce-scatter over the expert TP group), kFlex (MoEFlexTokenDispatcher: DeepEP's fused
/// dispatch and combine over the expert TP x EP group; moe_flex.cpp).
enum class MoeDispatcher : std::uint8_t { kAllGather, kAllToAll, kFlex };
/// Megatron-Core's --moe-flex-dispatcher-backend, in the schema's order: kDeepEp is modelled,
/// kHybridEp and kNcclEp are refused (validate_moe.cpp says why).
enum class MoeFlexBackend : std::uint8_t { kDeepEp, kHybridEp, kNcclEp };
/// Megatron-Core's --moe-router-load-balancing-type, in the schema's order.
enum class MoeLoadBalancing : std::uint8_t {
  kAuxLoss,
  kSeqAuxLoss,
  kGlobalAuxLoss,
  kSinkhorn,
  kQuantileBalancing,
  kNone
};
/// Megatron-Core's --moe-router-dtype: kNone = the params dtype; kFp64 is rejected (no FP64
/// tensor-core peak in the system files).
enum class MoeRouterDtype : std::uint8_t { kNone, kFp32, kFp64 };
/// Megatron-Core's --moe-router-score-function (transformer_config.py).
enum class MoeRouterScore : std::uint8_t { kSoftmax, kSigmoid, kSqrtSoftplus };

struct ModelConfig {
  std::int64_t num_layers = 0;
  std::int64_t hidden_size = 0;
  std::int64_t num_attention_heads = 0;
  std::int64_t num_query_groups = 0;  ///< = num_attention_heads for multi-head attention
  std::int64_t kv_channels = 0;       ///< head dim; hidden_size / num_attention_heads by default
  std::int64_t ffn_hidden_size = 0;   ///< 4h, or Megatron's SwiGLU default int(8h/3/64)*64
  std::int64_t seq_length = 0;
  std::int64_t max_position_embeddings = 0;  ///< = seq_length by default
  std::int64_t vocab_size = 0;               ///< unpadded, when given
  std::int64_t make_vocab_size_divisible_by = 128;
  std::int64_t padded_vocab_size = 0;  ///< always set: given, or padded as Megatron pads it
  bool swiglu = false;
  /// Megatron's --squared-relu: the MLP's activation is relu(x)^2 (megatron/core/activations.py),
  /// not gated, so FC1 keeps ffn_hidden_size outputs; never with swiglu or linear biases.
  bool squared_relu = false;
  /// Megatron's --quick-geglu: a gated MLP (FC1 of 2 x ffn outputs) whose activation is
  /// quick_gelu(x_glu) * (x_linear + glu_linear_offset), quick_gelu(y) = y * sigmoid(1.702 y)
  /// (megatron/core/fusions/fused_bias_geglu.py); never with swiglu or squared_relu.
  bool quick_geglu = false;
  /// Megatron's --glu-linear-offset: added to the gated unit's linear half (GPT-OSS: 1.0). A
  /// scalar inside the fused activation kernel: it changes no kernel or byte.
  double glu_linear_offset = 0.0;
  /// Megatron's --activation-func-clamp-value; 0 = None. Clamps FC1's output before the gated
  /// activation (x_glu at most it, x_linear within +-it): inside SwiGLU's fused kernel, but as
  /// separate clamp and concatenation kernels before quick-GEGLU's
  /// (weighted_bias_quick_geglu_impl).
  double activation_func_clamp_value = 0.0;
  bool untie_embeddings_and_output_weights = false;
  bool use_flash_attn = false;
  /// kUnfused when not given (scenario contract v1, where use_flash_attn picks flash); the
  /// importers write Megatron-Core's default, kAuto.
  AttentionBackend attention_backend = AttentionBackend::kUnfused;
  /// Megatron's --softmax-type; anything but vanilla runs in Transformer Engine's cuDNN fused
  /// attention (validate_gpt_oss.cpp), learnable adds num_attention_heads parameters per layer.
  SoftmaxType softmax_type = SoftmaxType::kVanilla;
  bool add_bias_linear = true;
  PositionEmbedding position_embedding_type = PositionEmbedding::kLearnedAbsolute;
  /// Megatron's --rotary-percent: RoPE rotates the first int(kv_channels * this) dims of each
  /// head (RotaryEmbedding); read only with position_embedding_type rope.
  double rotary_percent = 1.0;
  Normalization normalization = Normalization::kLayerNorm;
  /// Megatron's --window-size (TransformerConfig.window_size): (left, right) keys a query
  /// attends to on either side of its own position; -1 = unbounded; empty = None (no window).
  /// Transformer Engine runs a causal mask with (>= 0, 0) or (-1, 0) (check_set_window_size).
  std::vector<std::int64_t> window_size;
  /// Megatron's --window-attn-skip-freq: an integer N (layer numbers 1.. divisible by N attend
  /// fully, the others through the window) or a list pattern "[1,1,1,0]*3", one 0/1 per layer
  /// (1 = window); empty = None (every layer through the window). window_attention.hpp parses it.
  std::string window_attn_skip_freq;
  /// Megatron's --attention-dropout and --hidden-dropout. Only whether they are zero changes
  /// the work: PyTorch's dropout with p = 0 returns its input (no kernel, no mask kept).
  double attention_dropout = 0.1;
  double hidden_dropout = 0.1;
  /// Megatron's --no-masked-softmax-fusion: only its local DotProductAttention
  /// (attention_backend "local") reads it; Transformer Engine's backends ignore it.
  bool masked_softmax_fusion = true;
  /// Megatron's --cross-entropy-loss-fusion and --cross-entropy-fusion-impl.
  bool cross_entropy_loss_fusion = false;
  CrossEntropyFusionImpl cross_entropy_fusion_impl = CrossEntropyFusionImpl::kNative;

  // Mixture of experts (Megatron-Core's MoELayer). num_experts = 0: a dense model (Megatron's
  // None); then none of the moe_ keys apply.
  std::int64_t num_experts = 0;
  std::int64_t moe_router_topk = 2;  ///< experts each token is routed to
  std::int64_t moe_ffn_hidden_size = 0;  ///< one expert's FFN width; = ffn_hidden_size when 0
  std::int64_t moe_shared_expert_intermediate_size = 0;  ///< 0 = no shared experts
  /// Megatron's --moe-layer-freq: an integer N (every N-th layer, from layer 0, is an MoE
  /// layer) or its list pattern "([0]*3+[1]*58)", one 0/1 per layer (moe.hpp parses it).
  std::string moe_layer_freq = "1";
  /// The router's score function, its expert bias (aux-loss-free balancing) and group-limited
  /// routing (0 = Megatron's None). Routing choices only: under the balanced (or moe_load)
  /// routing stepsim prices, they leave the kernels and bytes of a step as they are.
  MoeRouterScore moe_router_score_function = MoeRouterScore::kSoftmax;
  bool moe_router_enable_expert_bias = false;
  std::int64_t moe_router_num_groups = 0;
  std::int64_t moe_router_group_topk = 0;

  // Multi-latent attention (Megatron-Core's MLASelfAttention, multi_latent_attention.py).
  // Defaults are arguments.py's; the sizes are read only with multi_latent_attention.
  bool multi_latent_attention = false;
  std::int64_t q_lora_rank = 0;  ///< 0 = None: one column-parallel Q projection from h
  std::int64_t kv_lora_rank = 32;
  std::int64_t qk_head_dim = 128;         ///< the query/key head dim without the RoPE part
  std::int64_t qk_pos_emb_head_dim = 64;  ///< the RoPE part of the query/key head dim
  std::int64_t v_head_dim = 128;
  /// --qk-layernorm: with MLA, norms on the q and kv latents (fused into the up-projections).
  bool qk_layernorm = false;

  // Hybrid models (Megatron-Core's HybridModel, megatron/core/models/hybrid/): one letter per
  // layer, Megatron's Symbols (hybrid_layer_allocation.py): M Mamba-2 mixer, * self-attention,
  // - MLP, E MoE; '|' separates pipeline segments (pp x vp of them). Empty: a GPT model.
  // --hybrid-override-pattern (deprecated) is read into the same member. Each layer is its
  // own residual block (MambaLayer, TransformerLayer with attention only or MLP only,
  // MoETransformerLayer), not a transformer layer's attention + MLP pair.
  std::string hybrid_layer_pattern;
  /// Megatron's --mamba-num-heads; 0 = None: hidden_size * 2 (expand) / mamba_head_dim.
  std::int64_t mamba_num_heads = 0;
  std::int64_t mamba_head_dim = 64;   ///< --mamba-head-dim (TransformerConfig default)
  std::int64_t mamba_state_dim = 128;  ///< --mamba-state-dim
  std::int64_t mamba_num_groups = 8;   ///< --mamba-num-groups
  bool hybrid() const { return !hybrid_layer_pattern.empty(); }
  /// Mamba heads: mamba_num_heads, or MambaMixer's d_inner (2 h) / mamba_head_dim.
  std::int64_t mamba_heads() const {
    return mamba_num_heads > 0 ? mamba_num_heads
                               : (mamba_head_dim > 0 ? 2 * hidden_size / mamba_head_dim : 0);
  }
  // Multi-token prediction (Megatron-Core's MultiTokenPredictionBlock,
  // megatron/core/transformer/multi_token_prediction.py): mtp_num_layers modules on the last
  // pipeline stage, each enorm/hnorm, the 2h -> h eh_proj, one transformer layer of the last
  // decoder layer's kind, a final norm, and the shared output layer with its own loss.
  std::int64_t mtp_num_layers = 0;       ///< 0 = Megatron's None: no MTP
  double mtp_loss_scaling_factor = 0.1;  ///< the MTP losses' weight (numerics only)

  bool moe() const { return num_experts > 0; }
  /// One routed expert's FFN width (Megatron defaults moe_ffn_hidden_size to ffn_hidden_size).
  std::int64_t moe_ffn() const {
    return moe_ffn_hidden_size > 0 ? moe_ffn_hidden_size : ffn_hidden_size;
  }

  /// Whether attention runs as one fused kernel (flash-attn or cuDNN fused attention).
  bool fused_attention() const {
    return use_flash_attn || attention_backend == AttentionBackend::kAuto ||
           attention_backend == AttentionBackend::kFlash ||
           attention_backend == AttentionBackend::kFused;
  }
  bool operator==(const ModelConfig&) const = default;
};

/// Transformer Engine's userbuffers GEMM names (initialize_ub's ub_cfgs keys), in this order.
inline constexpr std::array<std::string_view, 12> kUbGemmNames = {
    "qkv_fprop", "qkv_dgrad", "qkv_wgrad", "proj_fprop", "proj_dgrad", "proj_wgrad",
    "fc1_fprop", "fc1_dgrad", "fc1_wgrad", "fc2_fprop", "fc2_dgrad", "fc2_wgrad"};

/// One GEMM's settings from a tp_comm_overlap_cfg file that stepsim prices; -1: not given
/// (Transformer Engine's default, initialize_ub get_default_config).
struct UbGemmSettings {
  std::int64_t num_sm = -1;         ///< SMs of the userbuffers kernel
  std::int64_t num_splits = -1;     ///< chunks of a pipelined GEMM+reduce-scatter
  std::int64_t set_sm_margin = -1;  ///< 1: the GEMM leaves num_sm SMs to the kernel; 0: it does not
  std::int64_t fp8_buf = -1;        ///< 1: an FP8 buffer (honoured for a "pipeline" GEMM)
  /// 1: method ring_exchange on a reduce-scatter GEMM (proj_fprop, fc2_fprop): Transformer
  /// Engine's CommOverlapP2PBase::split_overlap_rs instead of the default pipeline.
  std::int64_t ring_exchange = -1;
  /// 1: an all-gather ring exchange (qkv_fprop, fc1_fprop, proj_dgrad, fc2_dgrad) multiplies
  /// two chunks a step in tp / 2 steps (split_overlap_ag's _aggregate).
  std::int64_t aggregate = -1;
  /// 1: a pipelined GEMM+reduce-scatter (proj_fprop, fc2_fprop with method pipeline) as one
  /// cuBLAS atomic GEMM whose chunks the reduce-scatter kernels wait for by counters
  /// (CommOverlapBase::atomic_gemm_overlap_rs); FP8 with per-tensor scales only.
  std::int64_t atomic_gemm = -1;
  bool operator==(const UbGemmSettings&) const = default;
};

/// The distributed optimizer's implementation: Megatron-Core's DistributedOptimizer with its
/// DDP buckets, or Apex's DistributedFusedAdam as NeMo drives it (optim.name
/// distributed_fused_adam; core/ops/include/stepsim/ops/dfa.hpp).
enum class OptimizerImpl : std::uint8_t { kMegatron, kApexDistributedFusedAdam };

/// Megatron-FSDP's --data-parallel-sharding-strategy: what the data-parallel ranks shard
/// (ZeRO stages 0-3): nothing, the optimizer states, also the gradients, also the parameters.
enum class DpSharding : std::uint8_t { kNoShard, kOptim, kOptimGrads, kOptimGradsParams };
/// Megatron-LM's --optimizer for the matrices: Adam everywhere, or Muon for the 2-D weights
/// with Adam for the rest (megatron/core/optimizer/emerging_optimizers.py, _is_muon_excluded).
enum class OptimizerKind : std::uint8_t { kAdam, kMuon };
/// --muon-tp-mode: how Newton-Schulz treats a tensor-parallel weight (TensorParallelMuon).
enum class MuonTpMode : std::uint8_t { kBlockwise, kDuplicated, kDistributed };
/// --cuda-graph-impl (TransformerConfig.cuda_graph_impl).
enum class CudaGraphImpl : std::uint8_t { kNone, kLocal, kTransformerEngine, kFullIteration };

/// One process group's ncclConfig_t options from Megatron's --nccl-communicator-config-path
/// (parallel_state.get_nccl_options): the YAML key of the group (Megatron's names: "tp",
/// "dp_cp", ...) and the options given; -1: not given (NCCL's default: min_ctas 1, max_ctas 64,
/// cga_cluster_size 4 on Hopper, as current Megatron-LM leaves them to NCCL).
struct NcclGroupOptions {
  std::string group;
  std::int64_t min_ctas = -1;
  std::int64_t max_ctas = -1;
  std::int64_t cga_cluster_size = -1;
  bool operator==(const NcclGroupOptions&) const = default;
};

struct TrainingConfig {
  std::int64_t world_size = 0;
  std::int64_t tensor_model_parallel_size = 1;
  std::int64_t pipeline_model_parallel_size = 1;
  /// cp: every sequence split over cp GPUs (s / cp tokens each), attention exchanging keys and
  /// values over the CP group as cp_comm_type says. World = t * cp * p * dp.
  std::int64_t context_parallel_size = 1;
  CpCommType cp_comm_type = CpCommType::kP2p;
  /// Megatron's --hierarchical-context-parallel-sizes: the CP group's levels, innermost first
  /// (parallel_state.py create_hierarchical_groups); with cp_comm_type a2a+p2p two levels, the
  /// all-to-all group's size and the ring's. Empty: not given.
  std::vector<std::int64_t> hierarchical_context_parallel_sizes;
  /// Model chunks per pipeline rank (v); 1 without interleaving.
  std::int64_t virtual_pipeline_model_parallel_size = 1;
  /// Layers per model chunk; 0 without interleaving, and with uneven stages unless given
  /// (with the embedding/loss counted as layers it is Megatron's count, those included).
  std::int64_t num_layers_per_virtual_pipeline_stage = 0;
  /// Uneven stages (see pipeline_split.hpp). Transformer layers of the first / last pipeline
  /// rank (all its virtual stages); 0 = not given (Megatron's None).
  std::int64_t decoder_first_pipeline_num_layers = 0;
  std::int64_t decoder_last_pipeline_num_layers = 0;
  /// The embedding / the loss counted as one layer each in the even split.
  bool account_for_embedding_in_pipeline_split = false;
  bool account_for_loss_in_pipeline_split = false;
  /// Megatron's layout string ("Et*3|(t*4|)*6,t*3L"); empty = not given.
  std::string pipeline_model_parallel_layout;
  bool sequence_parallel = false;
  std::int64_t micro_batch_size = 0;
  std::int64_t global_batch_size = 0;
  RecomputeGranularity recompute_granularity = RecomputeGranularity::kNone;
  RecomputeMethod recompute_method = RecomputeMethod::kNone;
  std::int64_t recompute_num_layers = 0;  ///< 1 when full recompute and not given
  bool distribute_saved_activations = false;
  bool use_distributed_optimizer = false;
  bool overlap_grad_reduce = false;
  bool overlap_param_gather = false;
  bool overlap_p2p_comm = false;
  /// Megatron's --grad-reduce-in-bf16: with bf16 parameters the gradient buffers hold bf16
  /// and the data-parallel reduction runs in bf16 (accumulate_allreduce_grads_in_fp32 off);
  /// Megatron reads it only with --bf16 (see grad_bytes()).
  bool grad_reduce_in_bf16 = false;
  /// Megatron's data-parallel gradient buckets (DistributedDataParallelConfig; used by
  /// sim/graph/include/stepsim/graph/ddp_buckets.hpp): `--ddp-bucket-size` in parameters and `--ddp-num-buckets`;
  /// 0 = not given (Megatron's None: max(40M, 1M * dp) parameters per bucket).
  std::int64_t ddp_bucket_size = 0;
  std::int64_t ddp_num_buckets = 0;
  /// Megatron's --clip-grad (default 1.0): > 0 clips gradients by their global norm, so the
  /// optimizer step runs the grad-norm and clip-scale kernels; 0 skips both.
  double clip_grad = 1.0;
  /// With overlap_param_gather and interleaving, every pipeline rank launches its parameter
  /// all-gathers from the schedule (Megatron's default); false (`--no-align-param-gather`):
  /// each chunk's forward pre-hook launches them as it needs them. Megatron forces it off
  /// without interleaving, where it changes nothing.
  bool align_param_gather = true;
  /// N of the interleaved schedule; = pipeline_model_parallel_size by default.
  std::int64_t microbatch_group_size_per_vp_stage = 0;
  DType params_dtype = DType::kFp32;  ///< kBf16 with "bf16": true, kFp16 with "fp16": true
  /// FP8 GEMMs in the transformer layers' linears (Transformer Engine); kNone = off.
  Fp8Format fp8 = Fp8Format::kNone;
  Fp8Recipe fp8_recipe = Fp8Recipe::kDelayed;  ///< only kDelayed is modelled (validate.cpp)
  /// The distributed optimizer all-gathers FP8 parameters (1 byte each) and the model keeps
  /// no 16-bit copy of the FP8 weights.
  bool fp8_param_gather = false;
  /// Megatron-Core's --reuse-grad-buf-for-mxfp8-param-ag: MXFP8 parameters all-gathered in
  /// 16 bits through the gradient buffer, then quantized (with fp8_param_gather and mxfp8).
  bool reuse_grad_buf_for_mxfp8_param_ag = false;
  std::int64_t fp8_amax_history_len = 1;  ///< delayed scaling's amax history per FP8 tensor
  /// Megatron-Core's --fp4-format, --fp4-recipe and --fp4-param-gather (TransformerConfig fp4,
  /// fp4_recipe, fp4_param): NVFP4 linears through Transformer Engine (check_fp4.cpp).
  Fp4Format fp4 = Fp4Format::kNone;
  Fp4Recipe fp4_recipe = Fp4Recipe::kNvfp4;
  bool fp4_param_gather = false;
  /// Megatron's --tp-only-amax-red: delayed scaling reduces the amaxes over the tensor (and
  /// context) parallel group only, not over the data-parallel ranks too.
  bool tp_only_amax_red = false;
  /// TP-communication overlap (Megatron's --tp-comm-overlap: Transformer Engine's userbuffers
  /// around the layers' linears, tp_overlap_ops.cpp). The per-GEMM switches are
  /// ModelParallelConfig's, defaults Megatron's; TE derives each linear's overlaps from them.
  bool tp_comm_overlap = false;
  bool tp_comm_overlap_ag = true;        ///< AG+GEMM ring exchange (QKV/FC1 fprop, proj/FC2 dgrad)
  bool tp_comm_overlap_rs = true;        ///< GEMM+RS pipelined (proj/FC2 fprop)
  bool tp_comm_overlap_rs_dgrad = false;  ///< QKV/FC1 dgrad GEMM+RS pipelined (bulk off)
  bool tp_comm_bulk_dgrad = true;        ///< QKV/FC1: input all-gather beside the dgrad GEMM
  bool tp_comm_bulk_wgrad = true;        ///< QKV/FC1: dgrad reduce-scatter beside the wgrad GEMM
  /// Megatron's --tp-comm-overlap-cfg: the YAML file of TE's per-GEMM ub_cfgs, as given (a path
  /// relative to the scenario file), and the settings read from it, per kUbGemmNames entry.
  std::string tp_comm_overlap_cfg;
  std::array<UbGemmSettings, kUbGemmNames.size()> tp_comm_overlap_gemms{};
  /// The output layer's weight-gradient GEMMs of the last pipeline stage deferred to the end
  /// of its backward (Megatron's drain_embedding_wgrad_compute); wgrad_deferral_limit caps the
  /// micro-batches deferred (0 = all).
  bool defer_embedding_wgrad_compute = false;
  std::int64_t wgrad_deferral_limit = 0;
  /// Transformer Engine's NVTE_FWD_LAYERNORM_SM_MARGIN / NVTE_BWD_LAYERNORM_SM_MARGIN
  /// (environment variables, not Megatron flags): its LayerNorm/RMSNorm kernels run on
  /// sm_count minus this many SMs in forward (and recompute) / backward, leaving them to the
  /// communication kernels beside.
  std::int64_t fwd_layernorm_sm_margin = 0;
  std::int64_t bwd_layernorm_sm_margin = 0;
  /// NCCL's NCCL_NVLS_ENABLE (an environment variable of the job): 0 = no NVLink SHARP, so
  /// NCCL's tuning never picks the NVLS algorithms; 2 (NCCL's default) = where the system
  /// supports multicast; 1 = forced on.
  std::int64_t nccl_nvls_enable = 2;
  /// NCCL's NCCL_ALGO and NCCL_PROTO (environment variables of the job), in NCCL's own syntax
  /// (nccl_env.hpp); empty: unset. The algorithms and protocols NCCL's tuning may pick.
  std::string nccl_algo;
  std::string nccl_proto;
  /// NCCL's channel limits (nccl_model.hpp nccl_channel_factor): NCCL_MIN_NCHANNELS and
  /// NCCL_MAX_NCHANNELS (environment variables of the job; 0 = unset), and the per-process-
  /// group ncclConfig_t options of Megatron's --nccl-communicator-config-path (a YAML file,
  /// relative to the scenario file; parallel_state.get_nccl_options), read into
  /// nccl_group_options. A communicator runs max(min_nchannels, min_ctas, min(max_nchannels,
  /// max_ctas, NCCL's own channels)) channels, one CTA (one SM) each.
  std::int64_t nccl_min_nchannels = 0;
  std::int64_t nccl_max_nchannels = 0;
  std::string nccl_communicator_config_path;
  std::vector<NcclGroupOptions> nccl_group_options;
  /// NCCL_P2P_NET_CHUNKSIZE (an environment variable of the job): the chunk of a
  /// point-to-point transfer across nodes; NCCL caps it at its 4 MiB buffer / 8 steps.
  std::int64_t nccl_p2p_net_chunksize = 131072;
  /// The distributed optimizer's implementation, and Apex DistributedFusedAdam's bucket_cap_mb
  /// (NeMo's optim.bucket_cap_mb; Apex's default 100): its buckets' size in MiB of bf16
  /// gradients.
  OptimizerImpl optimizer_impl = OptimizerImpl::kMegatron;
  std::int64_t apex_bucket_cap_mb = 100;
  /// Sharded data parallelism: Megatron-FSDP (--use-megatron-fsdp, megatron/core/distributed/
  /// fsdp/) with its sharding strategy, or PyTorch's FSDP2 (--use-torch-fsdp2,
  /// torch_fully_sharded_data_parallel.py; --torch-fsdp2-no-reshard-after-forward keeps the
  /// gathered parameters from forward to backward).
  bool use_megatron_fsdp = false;
  DpSharding data_parallel_sharding_strategy = DpSharding::kOptimGradsParams;
  bool use_torch_fsdp2 = false;
  bool torch_fsdp2_reshard_after_forward = true;
  /// --fsdp-double-buffer: Megatron-FSDP's persistent pair of gather buffers.
  bool fsdp_double_buffer = false;
  /// Sharded parameters gathered per step: every transformer layer is one FSDP unit.
  bool fsdp() const { return use_megatron_fsdp || use_torch_fsdp2; }
  /// The optimizer (--optimizer) and Muon's options (OptimizerConfig.muon_*): Newton-Schulz
  /// steps, the TP mode, the QKV weight orthogonalized per q, k and v, Nesterov momentum.
  OptimizerKind optimizer = OptimizerKind::kAdam;
  std::int64_t muon_num_ns_steps = 5;
  MuonTpMode muon_tp_mode = MuonTpMode::kDuplicated;
  bool muon_split_qkv = true;
  bool muon_nesterov = false;
  /// CUDA graphs (TransformerConfig.cuda_graph_*): the implementation, the captured modules
  /// (space-separated CudaGraphModule names; empty: the whole layer) and the eager warm-up
  /// steps before capture.
  CudaGraphImpl cuda_graph_impl = CudaGraphImpl::kNone;
  std::string cuda_graph_modules;
  std::int64_t cuda_graph_warmup_steps = 3;

  // Expert parallelism (Megatron-Core's expert rank generator: tp = expert_tensor_parallel_size,
  // ep, dp = expert data-parallel size, pp; order tp-ep-dp-pp, cp = 1).
  std::int64_t expert_model_parallel_size = 1;
  std::int64_t expert_tensor_parallel_size = 0;  ///< = tensor_model_parallel_size when 0
  MoeDispatcher moe_token_dispatcher_type = MoeDispatcher::kAllGather;
  /// The flex dispatcher's backend (--moe-flex-dispatcher-backend) and its deprecated switch
  /// --moe-enable-deepep (TransformerConfig.__post_init__ turns it into backend "deepep").
  MoeFlexBackend moe_flex_dispatcher_backend = MoeFlexBackend::kDeepEp;
  bool moe_enable_deepep = false;
  /// SMs of DeepEP's dispatch and combine kernels (--moe-flex-dispatcher-num-sms; its
  /// deprecated form --moe-deepep-num-sms is routed to it when it is not given). 0 = None:
  /// _DeepepManager's 20.
  std::int64_t moe_flex_dispatcher_num_sms = 0;
  std::int64_t moe_deepep_num_sms = 0;
  /// The SMs DeepEP's kernels take: num_sms, else the deprecated form, else 20.
  std::int64_t deepep_num_sms() const {
    if (moe_flex_dispatcher_num_sms > 0) return moe_flex_dispatcher_num_sms;
    return moe_deepep_num_sms > 0 ? moe_deepep_num_sms : 20;
  }
  /// Transformer Engine's grouped GEMM for the local experts (TEGroupedMLP) instead of one
  /// GEMM per expert (SequentialMLP).
  bool moe_grouped_gemm = false;
  /// Megatron-Core's --moe-shared-expert-overlap: the shared experts run on their own CUDA
  /// stream beside the token dispatcher's all-to-alls (SharedExpertMLP.stream), after the
  /// router instead of before it. No effect without shared experts (Megatron ignores it then).
  bool moe_shared_expert_overlap = false;
  /// Megatron-Core's --overlap-moe-expert-parallel-comm: in the 1F1B steady state one
  /// micro-batch's forward runs layer by layer beside another's backward, each one's EP
  /// all-to-alls on a communication stream while the other computes (combined_1f1b.py).
  bool overlap_moe_expert_parallel_comm = false;
  /// Megatron-Core's --delay-wgrad-compute (with the overlap above): the backward's
  /// weight-gradient GEMMs split off its dgrad, so the all-to-all after them need not wait.
  bool delay_wgrad_compute = false;
  MoeLoadBalancing moe_router_load_balancing_type = MoeLoadBalancing::kAuxLoss;
  double moe_expert_capacity_factor = 0;  ///< 0 = no capacity (Megatron's None): no dropping
  /// The load-balancing loss coefficient; > 0 runs the router's aux-loss kernels (and the
  /// tokens-per-expert all-reduce over the TP group) with aux_loss or seq_aux_loss.
  double moe_aux_loss_coeff = 0;
  bool moe_pad_expert_input_to_capacity = false;
  MoeRouterDtype moe_router_dtype = MoeRouterDtype::kNone;
  /// Routing imbalance (stepsim's `training.moe_load`, not a Megatron flag; moe.hpp
  /// moe_expert_shares resolves it). moe_load_skew k: the most loaded EP rank (modelled as EP
  /// rank 0) receives k times the balanced rows, the other EP ranks share the rest evenly;
  /// 1 = balanced. moe_load_shares: every source rank sends share[i] / sum(shares) of its
  /// routed rows to expert i instead (one entry per expert; empty = not given).
  double moe_load_skew = 1;
  std::vector<double> moe_load_shares;

  // Derived at load.
  std::int64_t data_parallel_size = 0;  ///< world_size / (t * cp * p)
  std::int64_t num_microbatches = 0;    ///< global_batch_size / (micro_batch_size * dp)
  /// Expert data-parallel size: world_size / (pipeline * expert_model_parallel *
  /// expert_tensor_parallel), Megatron's parallel_state; the experts' gradients are reduced
  /// and their optimizer states sharded over it.
  std::int64_t expert_data_parallel_size = 0;

  bool interleaved() const { return virtual_pipeline_model_parallel_size > 1; }
  /// The experts' tensor-parallel size (Megatron defaults it to tensor_model_parallel_size).
  std::int64_t expert_tensor_parallel() const {
    return expert_tensor_parallel_size > 0 ? expert_tensor_parallel_size
                                           : tensor_model_parallel_size;
  }
  bool fp8_enabled() const { return fp8 != Fp8Format::kNone; }
  bool fp4_enabled() const { return fp4 != Fp4Format::kNone; }
  /// Bytes per element of the gradient buffers and of the data-parallel reduction: fp32
  /// (Megatron's accumulate_allreduce_grads_in_fp32, its default with bf16), bf16 with
  /// grad_reduce_in_bf16 and bf16 parameters. Megatron's fp16 default (fp16 buffers, no
  /// fp32 accumulation) is not followed: fp16 jobs are priced with fp32 buffers.
  std::int64_t grad_bytes() const {
    return grad_reduce_in_bf16 && params_dtype == DType::kBf16 ? 2 : 4;
  }
  bool operator==(const TrainingConfig&) const = default;
};

/// A point-to-point link class: NVLink/NVSwitch inside a node, a NIC across nodes.
struct LinkSpec {
  double bandwidth_bytes_per_s = 0;  ///< unidirectional, per GPU (intra) or per NIC (inter)
  double latency_s = 0;              ///< one-way small-message latency
  bool operator==(const LinkSpec&) const = default;
};

/// Efficiency curves of the roofline cost model (each figure cited in the system file).
struct RooflineEfficiency {
  double gemm_max = 0.0;           ///< fraction of dense peak reached by large GEMMs
  double gemm_half_flops = 0.0;    ///< GEMM size (FLOPs) reaching half of gemm_max
  double memory_max = 0.0;         ///< fraction of HBM bandwidth reached by streaming kernels
  double kernel_launch_s = 0.0;    ///< fixed cost per kernel
  double link_max = 0.0;           ///< fraction of link bandwidth reached by NCCL busbw
  bool operator==(const RooflineEfficiency&) const = default;
};

/// Compute-communication interference on one GPU (sim/engine/include/stepsim/engine/resource_model.hpp): while an NCCL
/// kernel runs beside compute kernels, both take longer, since NCCL's kernels hold SMs (one
/// CTA per channel) and HBM bandwidth. Each figure cited in the system file; 1 = none.
struct Interference {
  double compute_slowdown = 1;     ///< compute kernels' time factor beside an NCCL kernel
  double collective_slowdown = 1;  ///< an NCCL kernel's time factor beside compute kernels
  /// A serialised executor's posted calls (time_ops with async_ring): how much later a call
  /// posted while the caller computes completes because the backend's thread waits for a core.
  /// Measured only (a calibrated profile's MeasuredInterference), never a system-file key.
  double p2p_post_latency_s = 0;
  double collective_post_latency_s = 0;
  bool operator==(const Interference&) const = default;
};

struct SystemConfig {
  std::string name;
  std::string gpu_name;
  double peak_flops_fp32 = 0;  ///< dense FLOP/s per GPU (TF32 tensor cores where available)
  double peak_flops_fp16 = 0;
  double peak_flops_bf16 = 0;
  /// Dense FP8 (E4M3/E5M2) tensor-core FLOP/s per GPU; 0 = the GPU has no FP8 tensor cores
  /// (or its system file does not give the figure): FP8 training is then a validation error.
  double peak_flops_fp8 = 0;
  double peak_flops_fp4 = 0;  ///< dense NVFP4 (E2M1, 1x16 E4M3 scales) tensor-core peak
  std::int64_t memory_bytes = 0;       ///< device memory per GPU
  double hbm_bandwidth_bytes_per_s = 0;
  std::int64_t gpus_per_node = 0;
  std::int64_t nics_per_node = 0;
  /// GPUs that share one NVLink fabric (one NVSwitch domain; NCCL's "NVLink domain", the
  /// clique of multi-node NVLink); 0 = not given: one node's GPUs. A GB200 NVL72 rack is one
  /// domain of 72 GPUs over 18 hosts of 4. Whether a group talks over NVLink or the NICs is a
  /// question of domains (nvlink_domain()); NICs and host memory stay per node.
  std::int64_t nvlink_domain_size = 0;
  /// GPUs per NVLink domain: nvlink_domain_size, else gpus_per_node (0 if neither is set).
  std::int64_t nvlink_domain() const {
    return nvlink_domain_size > 0 ? nvlink_domain_size : gpus_per_node;
  }
  /// Streaming multiprocessors per GPU; 0 = not given (TP-communication overlap needs it:
  /// Transformer Engine runs GEMMs on sm_count - num_sm SMs beside its comm kernels).
  std::int64_t sm_count = 0;
  /// CUDA compute capability as major * 10 + minor (NCCL's cudaCompCap: 80 A100, 90 H100 and
  /// H200, 100 B200); 0 = not given (a CPU, or a system file that does not say). What FP8
  /// recipes run depends on it (validate_fp8.cpp).
  std::int64_t compute_capability = 0;
  /// Whether NCCL may use NVLink SHARP on this system for the job (not a system-file key:
  /// make_cost_model sets it from training.nccl_nvls_enable; nccl_model.hpp).
  bool nccl_nvls = true;
  /// What the job's NCCL_ALGO and NCCL_PROTO leave NCCL's tuning (not a system-file key either:
  /// make_cost_model sets it from training.nccl_algo and nccl_proto; nccl_model.hpp).
  NcclEnabled nccl_enabled;
  /// NCCL's channel limits of the job (not system-file keys either: make_cost_model sets them
  /// from training.nccl_min_nchannels, nccl_max_nchannels and the communicator options;
  /// nccl_model.hpp nccl_channel_factor). Per CommGroup, indexed by its value; 0: NCCL's
  /// default (min_ctas 1, max_ctas MAXCHANNELS = 64).
  struct NcclChannelLimit {
    std::int64_t min_ctas = 0;
    std::int64_t max_ctas = 0;
    bool operator==(const NcclChannelLimit&) const = default;
  };
  std::int64_t nccl_min_nchannels = 0;  ///< 0: unset
  std::int64_t nccl_max_nchannels = 0;  ///< 0: unset
  std::array<NcclChannelLimit, 16> nccl_group_limits{};
  LinkSpec intra_node;
  LinkSpec inter_node;
  RooflineEfficiency efficiency;
  Interference interference;

  double peak_flops(DType t) const {
    switch (t) {
      case DType::kBf16: return peak_flops_bf16;
      case DType::kFp16: return peak_flops_fp16;
      case DType::kFp8: return peak_flops_fp8;
      case DType::kFp4: return peak_flops_fp4;
      case DType::kFp32: return peak_flops_fp32;
    }
    return peak_flops_fp32;
  }
  bool operator==(const SystemConfig&) const = default;
};

struct CostModelSpec {
  enum class Kind : std::uint8_t { kRoofline, kProfile };
  Kind kind = Kind::kRoofline;
  std::string profile_path;  ///< resolved path when kind == kProfile
  /// No `cost_model` given: the shipped public profile of the system's GPU was taken (the
  /// roofline only when none ships); predict says so on its cost model line.
  bool defaulted = false;
  bool operator==(const CostModelSpec&) const = default;
};

/// A validated scenario.
/// Heterogeneous GPUs and links (the scenario's `heterogeneity` section; `predict`'s
/// --full-rank, --straggler, --slow-nic, --jitter and --seed add to it). Everything but
/// stragglers that share one data-parallel replica needs `full_rank`: every GPU simulated.
struct HeterogeneityConfig {
  bool full_rank = false;
  std::vector<std::pair<std::int64_t, double>> stragglers;  ///< (global rank, kernel-time factor)
  std::vector<std::pair<std::int64_t, double>> slow_nics;   ///< (node, NIC time factor)
  double jitter_sigma = 0;  ///< per-GPU compute factor exp(sigma * z), z ~ N(0, 1)
  std::int64_t jitter_seed = 0;  ///< the jitter's std::mt19937_64 seed
  bool operator==(const HeterogeneityConfig&) const = default;
};

struct Workload {
  std::string name;
  std::string source_file;  ///< the scenario file it came from ("" for inline)
  ModelConfig model;
  TrainingConfig training;
  SystemConfig system;
  CostModelSpec cost_model;
  HeterogeneityConfig heterogeneity;
  /// Flags of the launch line the scenario came from that change the job and that stepsim
  /// does not model, kept with --allow-unmodelled: the prediction is of a different job, and
  /// every report says so. Empty for a job stepsim models fully.
  std::vector<std::string> unmodelled;
  /// What the loader adjusted as Megatron-LM does silently (e.g. sequence_parallel turned off
  /// with tensor_model_parallel_size 1), one sentence each, for the CLI to print.
  std::vector<std::string> notes;
  bool operator==(const Workload&) const = default;
};

}  // namespace stepsim
