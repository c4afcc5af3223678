// The scenario schema's rows for the model (see schema.hpp; rows.hpp has the macros).

#include "rows.hpp"

namespace stepsim::schema_rows {
namespace {

const std::array kRows = {
    // ---- model ----
    KeyInfo{STEPSIM_INT("model.num_layers", model.num_layers), .required = true,
            .sweep = Sweep::kListed, .flags = "--num-layers", .default_text = "must be given",
            .check = "> 0; divisible by pipeline_model_parallel_size (embedding/loss counted with "
                     "account_for_*), unless decoder_first/last_pipeline_num_layers or "
                     "pipeline_model_parallel_layout split it",
            .doc = "transformer layers",
            .int_max = std::int64_t{1} << 14,
            .int_max_why = "stepsim's limit of layers to simulate (validate_limits.cpp): every "
                       "layer's ops are listed per micro-batch; published models have ~100"},
    KeyInfo{STEPSIM_INT("model.hidden_size", model.hidden_size), .required = true,
            .sweep = Sweep::kListed, .flags = "--hidden-size", .default_text = "must be given",
            .check = "> 0; divisible by num_attention_heads unless kv_channels is given",
            .doc = "h"},
    KeyInfo{STEPSIM_INT("model.num_attention_heads", model.num_attention_heads), .required = true,
            .sweep = Sweep::kListed, .flags = "--num-attention-heads",
            .default_text = "must be given",
            .check = "> 0; divisible by tensor_model_parallel_size", .doc = "attention heads a"},
    KeyInfo{STEPSIM_INT("model.num_query_groups", model.num_query_groups), .sweep = Sweep::kListed,
            .flags = "--num-query-groups", .default_text = "num_attention_heads",
            .check = "divides num_attention_heads; divisible by tensor_model_parallel_size",
            .doc = "key/value head groups (grouped-query attention; Megatron needs "
                   "--group-query-attention with it)"},
    KeyInfo{STEPSIM_INT("model.kv_channels", model.kv_channels), .sweep = Sweep::kListed,
            .flags = "--kv-channels", .default_text = "hidden_size / num_attention_heads",
            .check = "> 0", .doc = "head dimension"},
    KeyInfo{STEPSIM_INT("model.ffn_hidden_size", model.ffn_hidden_size), .sweep = Sweep::kListed,
            .flags = "--ffn-hidden-size",
            .default_text = "4 * hidden_size; with swiglu int((4 * hidden_size * 2 / 3) / 64) * 64",
            .check = "divisible by tensor_model_parallel_size", .doc = "MLP inner size"},
    KeyInfo{STEPSIM_INT("model.seq_length", model.seq_length), .required = true,
            .sweep = Sweep::kListed, .flags = "--seq-length", .default_text = "must be given",
            .check = "<= max_position_embeddings; divisible by tensor_model_parallel_size with "
                     "sequence_parallel",
            .doc = "training sequence length s"},
    KeyInfo{STEPSIM_INT("model.max_position_embeddings", model.max_position_embeddings),
            .sweep = Sweep::kListed, .flags = "--max-position-embeddings",
            .default_text = "seq_length", .check = ">= seq_length",
            .doc = "positions of the position embedding table"},
    KeyInfo{STEPSIM_INT("model.vocab_size", model.vocab_size), .sweep = Sweep::kListed,
            .flags = "--vocab-size", .default_text = "none (give it or padded_vocab_size)",
            .check = "> 0", .doc = "unpadded vocabulary"},
    KeyInfo{STEPSIM_INT("model.make_vocab_size_divisible_by", model.make_vocab_size_divisible_by),
            .sweep = Sweep::kListed, .flags = "--make-vocab-size-divisible-by",
            .default_text = "128", .check = "> 0",
            .doc = "vocab_size is padded to a multiple of this times tensor_model_parallel_size"},
    KeyInfo{
        STEPSIM_INT("model.padded_vocab_size", model.padded_vocab_size), .sweep = Sweep::kListed,
        .flags = "--padded-vocab-size",
        .default_text = "vocab_size rounded up to make_vocab_size_divisible_by * "
                        "tensor_model_parallel_size",
        .check = ">= vocab_size; divisible by tensor_model_parallel_size",
        .doc = "the embedding's rows (Megatron derives it; give it when vocab_size is unknown)"},
    KeyInfo{STEPSIM_BOOL("model.swiglu", model.swiglu), .sweep = Sweep::kListed,
            .flags = "--swiglu=true", .default_text = "false",
            .doc = "SwiGLU MLP (two input GEMMs)"},
    KeyInfo{STEPSIM_BOOL("model.squared_relu", model.squared_relu), .sweep = Sweep::kListed,
            .flags = "--squared-relu=true", .default_text = "false",
            .check = "not with swiglu; needs add_bias_linear=false (Megatron fuses the bias only "
                     "into GeLU and SwiGLU; --no-bias-gelu-fusion is not modelled yet)",
            .doc = "squared ReLU MLP (Nemotron-4, Nemotron 3's experts): one FC1 GEMM of "
                   "ffn_hidden_size outputs, then relu(x)^2 as one fused elementwise kernel that "
                   "keeps its input for backward; routed experts then scale it by the routing "
                   "probabilities in a separate PyTorch mul"},
    // GPT-OSS's gated activation (validate_gpt_oss.cpp, moe_ops.cpp)
    KeyInfo{STEPSIM_BOOL("model.quick_geglu", model.quick_geglu), .sweep = Sweep::kListed,
            .flags = "--quick-geglu=true", .default_text = "false",
            .check = "not with swiglu or squared_relu (Megatron-LM asserts not swiglu); needs "
                     "add_bias_linear (else bias_activation_fusion is off: the unfused GLU is "
                     "not modelled yet) and num_experts with every layer an MoE layer and no "
                     "shared experts (Megatron's dense MLP fuses only gelu and swiglu)",
            .doc = "quick-GEGLU MLP (GPT-OSS): FC1 of 2 x ffn outputs, then quick_gelu(x_glu) * "
                   "(x_linear + glu_linear_offset) times the routing probability as one fused "
                   "kernel (weighted_bias_quick_geglu_impl) that keeps its input for backward"},
    KeyInfo{STEPSIM_REAL("model.glu_linear_offset", model.glu_linear_offset),
            .sweep = Sweep::kListed, .flags = "--glu-linear-offset", .default_text = "0.0",
            .check = "not 0 needs quick_geglu (TransformerConfig refuses it with "
                     "bias_activation_fusion and another activation)",
            .doc = "offset added to the gated unit's linear half (GPT-OSS: 1.0); a scalar inside "
                   "the fused activation kernel, so no kernel or byte changes"},
    KeyInfo{STEPSIM_REAL("model.activation_func_clamp_value", model.activation_func_clamp_value),
            .sweep = Sweep::kListed, .flags = "--activation-func-clamp-value",
            .default_text = "none (no clamp)",
            .check = "> 0 and finite; needs quick_geglu, or swiglu with num_experts and "
                     "glu_linear_offset 0 (TransformerConfig's rules)",
            .doc = "clamps FC1's output before the gated activation (x_glu <= it, |x_linear| <= "
                   "it; GPT-OSS: 7.0): inside SwiGLU's fused kernel (no cost), but before "
                   "quick-GEGLU's as two clamp kernels and a concatenation, whose input and "
                   "output both stay for backward, and whose backward runs PyTorch's "
                   "clamp_backward (masks, where) and the halves' concatenation"},
    KeyInfo{STEPSIM_BOOL("model.untie_embeddings_and_output_weights",
                         model.untie_embeddings_and_output_weights),
            .sweep = Sweep::kListed, .flags = "--untie-embeddings-and-output-weights=true",
            .default_text = "false",
            .doc = "a separate output layer instead of the tied embedding"},
    KeyInfo{STEPSIM_BOOL("model.use_flash_attn", model.use_flash_attn), .sweep = Sweep::kAuto,
            .autoable = true, .flags = "--use-flash-attn=true", .default_text = "false",
            .doc = "fused flash attention (no s x s score tensors in memory)"},
    KeyInfo{STEPSIM_ENUM("model.attention_backend", model.attention_backend, AttentionBackend),
            .choices = kAttentionBackendNames, .sweep = Sweep::kListed,
            .flags = "--attention-backend",
            .default_text = "\"auto\", Megatron-Core's default (\"flash\" with "
                            "use_flash_attn)",
            .check = "\"auto\", \"flash\", \"fused\", \"unfused\", \"local\"; unfused and local "
                     "not with use_flash_attn",
            .doc = "Megatron-Core's attention backend: auto, flash and fused run one fused kernel "
                   "(no s x s scores in memory), unfused and local materialise the scores"},
    KeyInfo{STEPSIM_ENUM("model.softmax_type", model.softmax_type, SoftmaxType),
            .choices = kSoftmaxTypeNames, .sweep = Sweep::kListed, .flags = "--softmax-type",
            .default_text = "\"vanilla\"",
            .check = "\"vanilla\", \"off-by-one\", \"learnable\"; not vanilla needs "
                     "Transformer Engine's fused (cuDNN) attention: attention_backend \"auto\" "
                     "or \"fused\" (FlashAttention does not run it; the unfused backends are not "
                     "modelled yet with it), no use_flash_attn, context_parallel_size 1 or "
                     "cp_comm_type \"a2a\", no multi_latent_attention",
            .doc = "attention sinks: an extra logit in every softmax row's denominator, fixed "
                   "at zero (off-by-one) or learned per head (learnable, GPT-OSS: "
                   "num_attention_heads parameters per layer, sharded over tensor parallelism, "
                   "with their gradients and optimizer states); cuDNN computes the sink and its "
                   "gradient inside the fused attention kernels, Megatron casts the learned "
                   "logits to fp32 before them and their fp32 gradient back"},
    KeyInfo{STEPSIM_BOOL("model.add_bias_linear", model.add_bias_linear), .sweep = Sweep::kListed,
            .flags = "--disable-bias-linear=false --add-bias-linear=true", .default_text = "true",
            .doc = "biases in the linear layers"},
    KeyInfo{STEPSIM_ENUM("model.position_embedding_type", model.position_embedding_type,
                         PositionEmbedding),
            .choices = kPositionEmbeddingNames, .sweep = Sweep::kListed,
            .flags = "--position-embedding-type --use-rotary-position-embeddings=rope",
            .default_text = "\"learned_absolute\"",
            .check = "\"learned_absolute\", \"rope\", \"none\"", .doc = "position embedding"},
    KeyInfo{STEPSIM_REAL("model.rotary_percent", model.rotary_percent), .sweep = Sweep::kListed,
            .flags = "--rotary-percent", .default_text = "1.0",
            .check = "> 0 and <= 1; read only with position_embedding_type \"rope\"; < 1 with "
                     "multi_latent_attention is not modelled yet",
            .doc = "share of each head's dims RoPE rotates (int(kv_channels * this)); Transformer "
                   "Engine's fused RoPE kernel still reads and writes whole heads (it copies the "
                   "rest), so its bytes and the step's FLOPs do not change"},
    KeyInfo{STEPSIM_ENUM("model.normalization", model.normalization, Normalization),
            .choices = kNormalizationNames, .sweep = Sweep::kListed, .flags = "--normalization",
            .default_text = "\"LayerNorm\"", .check = "\"LayerNorm\", \"RMSNorm\"",
            .doc = "normalization layer"},
    KeyInfo{.key = "model.window_size",
            .kind = KnobKind::kString,
            .flags = "--window-size",
            .default_text = "none (no window)",
            .check = "[left, right] (or Megatron's text \"left,right\"): left >= 0 with right 0 "
                     "(Transformer Engine's causal mask takes no keys to the right), or -1 with "
                     "-1 or 0 (full attention); a window needs a fused attention backend, "
                     "context_parallel_size 1, no multi_latent_attention, and attention_dropout "
                     "0 unless attention_backend is \"flash\"",
            .doc = "sliding-window attention: each query attends to itself and the left keys "
                   "before it; the fused kernel computes only that band under the causal mask"},
    KeyInfo{.key = "model.window_attn_skip_freq",
            .kind = KnobKind::kString,
            .flags = "--window-attn-skip-freq",
            .default_text = "none (every layer through the window)",
            .check = "an integer N > 0 (layer numbers N, 2N, ... attend fully) or Megatron's list "
                     "pattern, e.g. \"[1,1,1,0]*9\", with num_layers 0/1 entries (1 = window); "
                     "needs window_size",
            .doc = "which layers attend through the sliding window (the others fully)"},
    KeyInfo{STEPSIM_REAL("model.attention_dropout", model.attention_dropout),
            .sweep = Sweep::kListed, .flags = "--attention-dropout", .default_text = "0.1",
            .check = ">= 0 and < 1",
            .doc = "dropout on the attention probabilities; 0 removes the unfused kernel's "
                   "dropout and its mask (flash kernels drop inside either way)"},
    KeyInfo{STEPSIM_REAL("model.hidden_dropout", model.hidden_dropout), .sweep = Sweep::kListed,
            .flags = "--hidden-dropout", .default_text = "0.1", .check = ">= 0 and < 1",
            .doc = "dropout in the bias-dropout-adds and after the embedding; 0 removes the "
                   "masks they keep and the embedding's dropout kernel"},
    KeyInfo{STEPSIM_BOOL("model.masked_softmax_fusion", model.masked_softmax_fusion),
            .sweep = Sweep::kListed, .flags = "--no-masked-softmax-fusion=false",
            .default_text = "true",
            .check = "false is not modelled yet with attention_backend \"local\"",
            .doc = "Megatron's fused scale-mask-softmax kernel; only its local attention reads it "
                   "(Transformer Engine's backends ignore it)"},
    KeyInfo{STEPSIM_BOOL("model.cross_entropy_loss_fusion", model.cross_entropy_loss_fusion),
            .sweep = Sweep::kListed, .flags = "--cross-entropy-loss-fusion=true",
            .default_text = "false",
            .doc = "the fused vocab-parallel cross entropy: one tensor-parallel all-reduce of "
                   "the predicted logits and the exp sums instead of two"},
    KeyInfo{STEPSIM_ENUM("model.cross_entropy_fusion_impl", model.cross_entropy_fusion_impl,
                         CrossEntropyFusionImpl),
            .choices = kCrossEntropyFusionImplNames, .sweep = Sweep::kListed,
            .flags = "--cross-entropy-fusion-impl", .default_text = "\"native\"",
            .check = "\"native\" or \"te\"",
            .doc = "which fused cross entropy cross_entropy_loss_fusion runs: Megatron's native "
                   "one, or Transformer Engine's Triton parallel cross entropy (an online "
                   "softmax, one all-gather of per-token fp32 max/sum/target triples), as "
                   "Megatron-Bridge's and NeMo's recipes set it (recent Megatron-LM's own "
                   "validate_args refuses it on stability grounds; TransformerConfig warns)"},
    // mixture of experts (moe.hpp, moe_ops.cpp; rules in validate_moe.cpp)
    KeyInfo{STEPSIM_INT("model.num_experts", model.num_experts), .sweep = Sweep::kListed,
            .flags = "--num-experts", .default_text = "none (a dense model)",
            .check = "> 0; divisible by expert_model_parallel_size",
            .doc = "routed experts per MoE layer (Megatron-Core's MoELayer)"},
    KeyInfo{STEPSIM_INT("model.moe_router_topk", model.moe_router_topk), .sweep = Sweep::kListed,
            .flags = "--moe-router-topk", .default_text = "2",
            .check = "between 1 and num_experts; needs num_experts",
            .doc = "experts each token is routed to"},
    KeyInfo{STEPSIM_INT("model.moe_ffn_hidden_size", model.moe_ffn_hidden_size),
            .sweep = Sweep::kListed, .flags = "--moe-ffn-hidden-size",
            .default_text = "ffn_hidden_size",
            .check = "needs num_experts; divisible by expert_tensor_parallel_size",
            .doc = "one routed expert's FFN width"},
    KeyInfo{STEPSIM_INT("model.moe_shared_expert_intermediate_size",
                        model.moe_shared_expert_intermediate_size),
            .sweep = Sweep::kListed, .flags = "--moe-shared-expert-intermediate-size",
            .default_text = "none (no shared experts)",
            .check = "> 0; needs num_experts; divisible by tensor_model_parallel_size",
            .doc = "FFN width of the shared experts every token also passes (all of them "
                   "together, SharedExpertMLP)"},
    KeyInfo{.key = "model.moe_layer_freq",
            .kind = KnobKind::kString,
            .flags = "--moe-layer-freq",
            .default_text = "1",
            .check = "an integer N > 0 (layers 0, N, 2N, ... are MoE layers) or Megatron's list "
                     "pattern, e.g. \"([0]*3+[1]*58)\", with num_layers 0/1 entries; needs "
                     "num_experts",
            .doc = "which layers are MoE layers (the others keep the dense MLP)"},
    KeyInfo{STEPSIM_ENUM("model.moe_router_score_function", model.moe_router_score_function,
                         MoeRouterScore),
            .choices = kMoeRouterScoreNames, .sweep = Sweep::kListed,
            .flags = "--moe-router-score-function", .default_text = "\"softmax\"",
            .check = "\"softmax\", \"sigmoid\", \"sqrtsoftplus\"; not softmax needs num_experts",
            .doc = "the router's score function; cost-neutral: the same [tokens, num_experts] "
                   "kernel traffic as softmax (the routing itself is balanced or moe_load)"},
    KeyInfo{
        STEPSIM_BOOL("model.moe_router_enable_expert_bias", model.moe_router_enable_expert_bias),
        .sweep = Sweep::kListed, .flags = "--moe-router-enable-expert-bias=true",
        .default_text = "false",
        .check = "needs num_experts and moe_router_score_function \"sigmoid\" or "
                 "\"sqrtsoftplus\"",
        .doc = "aux-loss-free balancing (a per-expert bias added to the scores before top-k); "
               "modelled as cost-neutral: its add on [tokens, num_experts] and its "
               "num_experts-float update per step are not priced"},
    KeyInfo{STEPSIM_INT("model.moe_router_num_groups", model.moe_router_num_groups),
            .sweep = Sweep::kListed, .flags = "--moe-router-num-groups", .default_text = "none",
            .check = "> 0; needs num_experts, which it divides",
            .doc = "group-limited routing: the experts in this many groups (device- or "
                   "node-limited routing); a routing choice, cost-neutral under balanced routing"},
    KeyInfo{STEPSIM_INT("model.moe_router_group_topk", model.moe_router_group_topk),
            .sweep = Sweep::kListed, .flags = "--moe-router-group-topk",
            .default_text = "none (no group-limited routing)",
            .check = "> 0; needs moe_router_num_groups, at most it",
            .doc = "groups each token may be routed into; a routing choice, cost-neutral under "
                   "balanced routing (give training.moe_load for a skew)"},
    // multi-latent attention (mla_ops.cpp; rules in validate_mla.cpp)
    KeyInfo{STEPSIM_BOOL("model.multi_latent_attention", model.multi_latent_attention),
            .sweep = Sweep::kListed, .flags = "--multi-latent-attention=true",
            .default_text = "false",
            .check = "not with num_query_groups != num_attention_heads (Group query attention "
                     "is mutually exclusive with multi latent attention); not modelled yet with "
                     "context_parallel_size > 1, fp8, tp_comm_overlap, attention_backend "
                     "unfused or local",
            .doc = "Megatron-Core's MLASelfAttention: q (optionally low-rank) and kv low-rank "
                   "projections, RoPE on a separate part of the query/key head, core attention "
                   "with query/key head dim qk_head_dim + qk_pos_emb_head_dim and value head "
                   "dim v_head_dim"},
    KeyInfo{STEPSIM_INT("model.q_lora_rank", model.q_lora_rank), .sweep = Sweep::kListed,
            .flags = "--q-lora-rank", .default_text = "none (one Q projection from h)",
            .check = "> 0; needs multi_latent_attention",
            .doc = "rank of the query's low-rank projection (a replicated h x q_lora_rank down "
                   "projection, then a column-parallel up projection)"},
    KeyInfo{STEPSIM_INT("model.kv_lora_rank", model.kv_lora_rank), .sweep = Sweep::kListed,
            .flags = "--kv-lora-rank", .default_text = "32",
            .check = "> 0; a value other than 32 needs multi_latent_attention",
            .doc = "rank of the keys' and values' shared low-rank projection"},
    KeyInfo{STEPSIM_INT("model.qk_head_dim", model.qk_head_dim), .sweep = Sweep::kListed,
            .flags = "--qk-head-dim", .default_text = "128",
            .check = "> 0; a value other than 128 needs multi_latent_attention",
            .doc = "query/key head dim without the RoPE part"},
    KeyInfo{STEPSIM_INT("model.qk_pos_emb_head_dim", model.qk_pos_emb_head_dim),
            .sweep = Sweep::kListed, .flags = "--qk-pos-emb-head-dim", .default_text = "64",
            .check = "> 0; a value other than 64 needs multi_latent_attention",
            .doc = "the RoPE part of the query/key head dim (one RoPE key shared by all heads)"},
    KeyInfo{STEPSIM_INT("model.v_head_dim", model.v_head_dim), .sweep = Sweep::kListed,
            .flags = "--v-head-dim", .default_text = "128",
            .check = "> 0; a value other than 128 needs multi_latent_attention",
            .doc = "value head dim (the core attention's output per head)"},
    KeyInfo{STEPSIM_BOOL("model.qk_layernorm", model.qk_layernorm), .sweep = Sweep::kListed,
            .flags = "--qk-layernorm=true", .default_text = "false",
            .check = "only with multi_latent_attention (without it: not modelled yet)",
            .doc = "with multi-latent attention: norms on the q and kv latents, fused into the "
                   "up projections (Transformer Engine's LayerNormColumnParallelLinear)"},
    // hybrid Mamba models (mamba_ops.cpp, hybrid_layout.cpp; rules in check_hybrid.cpp)
    KeyInfo{.key = "model.hybrid_layer_pattern",
            .kind = KnobKind::kString,
            .flags = "--hybrid-layer-pattern",
            .default_text = "none (a GPT model)",
            .check = "letters M (Mamba), * (attention), - (MLP), E (MoE) and '|' between "
                     "pipeline segments, a multiple of pipeline_model_parallel_size of them "
                     "(G, D, + and MTP's '/' are not modelled yet); sets num_layers; not with "
                     "hybrid_override_pattern, pipeline_model_parallel_layout, "
                     "num_layers_per_virtual_pipeline_stage, account_for_*_in_pipeline_split; "
                     "with '|' not with decoder_first/last_pipeline_num_layers; M layers not "
                     "with context_parallel_size > 1 (not modelled yet)",
            .doc = "a hybrid model (Megatron-Core's HybridModel): one layer per letter, each its "
                   "own residual block; '|' splits the layers into pp x vp pipeline segments"},
    KeyInfo{.key = "model.hybrid_override_pattern",
            .kind = KnobKind::kString,
            .flags = "--hybrid-override-pattern",
            .default_text = "none",
            .check = "as hybrid_layer_pattern; not with it",
            .doc = "deprecated spelling of hybrid_layer_pattern (Megatron forwards it there)"},
    KeyInfo{STEPSIM_INT("model.mamba_num_heads", model.mamba_num_heads), .sweep = Sweep::kListed,
            .flags = "--mamba-num-heads",
            .default_text = "none: 2 * hidden_size / mamba_head_dim",
            .check = "> 0; divisible by tensor_model_parallel_size and by mamba_num_groups; "
                     "needs hybrid_layer_pattern",
            .doc = "Mamba-2 heads (MambaMixer nheads; d_inner = heads * mamba_head_dim)"},
    KeyInfo{STEPSIM_INT("model.mamba_head_dim", model.mamba_head_dim), .sweep = Sweep::kListed,
            .flags = "--mamba-head-dim", .default_text = "64", .check = "> 0",
            .doc = "Mamba-2 head dim P"},
    KeyInfo{STEPSIM_INT("model.mamba_state_dim", model.mamba_state_dim), .sweep = Sweep::kListed,
            .flags = "--mamba-state-dim", .default_text = "128", .check = "> 0",
            .doc = "Mamba-2 SSM state size N (B and C per group)"},
    KeyInfo{STEPSIM_INT("model.mamba_num_groups", model.mamba_num_groups), .sweep = Sweep::kListed,
            .flags = "--mamba-num-groups", .default_text = "8",
            .check = "> 0; divisible by tensor_model_parallel_size",
            .doc = "Mamba-2 B/C groups (heads share B and C within a group)"},
    KeyInfo{STEPSIM_INT("model.mtp_num_layers", model.mtp_num_layers), .sweep = Sweep::kListed,
            .flags = "--mtp-num-layers", .default_text = "none (no multi-token prediction)",
            .check = "0 (none) or > 0; needs position_embedding_type rope or none (arguments.py); "
                     "a pipeline_model_parallel_layout places them (m) just before the loss",
            .doc = "multi-token prediction modules on the last pipeline stage "
                   "(MultiTokenPredictionBlock): each normalizes the embedding of the next "
                   "token and the hidden state, projects their concatenation 2h -> h, runs one "
                   "transformer layer of the last layer's kind, a final norm, the shared output "
                   "layer and its own cross entropy",
            .zero_allowed = true},
    KeyInfo{STEPSIM_REAL("model.mtp_loss_scaling_factor", model.mtp_loss_scaling_factor),
            .sweep = Sweep::kNo, .flags = "--mtp-loss-scaling-factor", .default_text = "0.1",
            .check = ">= 0 and finite",
            .doc = "weight of the averaged MTP losses: a scalar in the loss, so no kernel or "
                   "byte changes"},

};

}  // namespace

std::span<const KeyInfo> model_keys() { return kRows; }

}  // namespace stepsim::schema_rows
