// The scenario schema table (see schema.hpp). Defaults and rules are Megatron-LM's
// (megatron/training/arguments.py, megatron/core/transformer/transformer_config.py); the rule
// texts point at the checks in validate.cpp, which enforces them.

#include "stepsim/config/schema.hpp"

#include <algorithm>
#include <array>
#include <vector>

#include "stepsim/config/enum_names.hpp"

namespace stepsim {
namespace {

KnobValue int_value(std::int64_t v) { return KnobValue{.integer = v}; }
KnobValue real_value(double v) { return KnobValue{.real = v}; }
KnobValue bool_value(bool v) { return KnobValue{.integer = v ? 1 : 0}; }

// The first fields of a row (key, kind, set, get) for a plain member. Their captureless
// lambdas convert to the row's function pointers.
#define STEPSIM_INT(k, member)                                          \
  .key = k, .kind = KnobKind::kInt,                                     \
  .set = [](Workload& w, const KnobValue& v) { w.member = v.integer; }, \
  .get = [](const Workload& w) { return int_value(w.member); }
#define STEPSIM_BOOL(k, member)                                              \
  .key = k, .kind = KnobKind::kBool,                                         \
  .set = [](Workload& w, const KnobValue& v) { w.member = v.integer != 0; }, \
  .get = [](const Workload& w) { return bool_value(w.member); }
#define STEPSIM_REAL(k, member)                                      \
  .key = k, .kind = KnobKind::kReal,                                 \
  .set = [](Workload& w, const KnobValue& v) { w.member = v.real; }, \
  .get = [](const Workload& w) { return real_value(w.member); }
#define STEPSIM_ENUM(k, member, Enum)                                                      \
  .key = k, .kind = KnobKind::kChoice,                                                     \
  .set = [](Workload& w, const KnobValue& v) { w.member = static_cast<Enum>(v.integer); }, \
  .get = [](const Workload& w) { return int_value(static_cast<std::int64_t>(w.member)); }

constexpr std::string_view kCited = "cited under `sources`";

const std::array kSchema = {
    // ---- the top level ----
    KeyInfo{.key = "name",
            .kind = KnobKind::kString,
            .required = true,
            .default_text = "must be given",
            .check = "non-empty",
            .doc = "short id used in reports"},
    KeyInfo{.key = "description",
            .kind = KnobKind::kString,
            .default_text = "none",
            .check = "one line",
            .doc = "one sentence a person reads: what the job is"},
    KeyInfo{.key = "sources",
            .kind = KnobKind::kString,
            .default_text = "{}",
            .check = "{\"DOTTED.KEY\": \"citation\", ...}: each key given in this file",
            .doc = "where each value comes from and why, keyed by the dotted key it justifies "
                   "(\"training.fp8\"), a section (\"model\") or \"name\" for the whole job; "
                   "every shipped scenario has it"},
    // The system file itself: in a sweep its value indexes SweepSpec::systems; the enumerator
    // swaps the whole SystemConfig, set/get only carry the index through.
    KeyInfo{.key = "system",
            .kind = KnobKind::kSystem,
            .set = [](Workload&, const KnobValue&) {},
            .get = [](const Workload&) { return KnobValue{}; },
            .required = true,
            .sweep = Sweep::kListed,
            .default_text = "must be given",
            .check = "a system file (next to the scenario, then under scenarios/) or an object",
            .doc = "the cluster: a system file path or an inline system object"},
    KeyInfo{.key = "cost_model",
            .kind = KnobKind::kString,
            .default_text = "\"roofline\"",
            .check = "\"roofline\" or {\"profile\": \"<path>\"}",
            .doc = "the roofline model of the system file, or a calibration profile"},
    KeyInfo{.key = "unmodelled",
            .kind = KnobKind::kString,
            .default_text = "[]",
            .check = "a list of strings",
            .doc = "job-changing launch-line flags stepsim left out (import-megatron "
                   "--allow-unmodelled): every report then warns that it predicts another job"},
    // ---- heterogeneity (read by hand in load.cpp; predict's flags add to it) ----
    KeyInfo{.key = "heterogeneity.full_rank",
            .kind = KnobKind::kBool,
            .default_text = "false",
            .doc = "simulate every GPU (each TP, CP peer and DP replica, collectives over their "
                   "real members) instead of one representative rank per stage (predict "
                   "--full-rank)"},
    KeyInfo{.key = "heterogeneity.stragglers",
            .kind = KnobKind::kString,
            .default_text = "{}",
            .check = "{\"RANK\": FACTOR, ...}: global ranks of the job, factors in [0.001, 1000]; "
                     "ranks in several data-parallel replicas need full_rank",
            .doc = "GPUs whose compute kernels take FACTOR times as long (predict --straggler "
                   "adds more)"},
    KeyInfo{.key = "heterogeneity.slow_nics",
            .kind = KnobKind::kString,
            .default_text = "{}",
            .check = "{\"NODE\": FACTOR, ...}: nodes of the job (global rank / gpus_per_node), "
                     "factors in [0.001, 1000]; needs full_rank",
            .doc = "nodes whose NIC rails move bytes FACTOR times as slowly (predict --slow-nic "
                   "adds more)"},
    KeyInfo{.key = "heterogeneity.jitter_sigma",
            .kind = KnobKind::kReal,
            .default_text = "0",
            .check = "in [0, 1]; > 0 needs full_rank",
            .doc = "each GPU's kernels take exp(sigma * z) times as long, z a standard normal "
                   "drawn per global rank (lognormal, median 1; predict --jitter replaces it)"},
    KeyInfo{.key = "heterogeneity.jitter_seed",
            .kind = KnobKind::kInt,
            .default_text = "0",
            .check = ">= 0",
            .doc = "seed of the jitter's draws (std::mt19937_64, Box-Muller; predict --seed "
                   "with --jitter)"},

    // ---- system files (and inline systems) ----
    KeyInfo{.key = "system.name",
            .kind = KnobKind::kString,
            .required = true,
            .default_text = "must be given",
            .doc = "short id used in reports"},
    KeyInfo{.key = "system.gpu_name",
            .kind = KnobKind::kString,
            .required = true,
            .default_text = "must be given",
            .doc = "the device"},
    KeyInfo{STEPSIM_INT("system.gpus_per_node", system.gpus_per_node), .required = true,
            .sweep = Sweep::kListed, .default_text = "must be given", .check = kCited,
            .doc = "GPUs per node"},
    KeyInfo{STEPSIM_INT("system.nics_per_node", system.nics_per_node), .required = true,
            .sweep = Sweep::kListed, .default_text = "must be given", .check = kCited,
            .doc = "compute-fabric NICs per node"},
    KeyInfo{STEPSIM_INT("system.sm_count", system.sm_count), .sweep = Sweep::kListed,
            .default_text = "0 (not given)", .check = "> 0; cited when given",
            .doc = "streaming multiprocessors per GPU; training.tp_comm_overlap needs it"},
    KeyInfo{STEPSIM_INT("system.compute_capability", system.compute_capability),
            .sweep = Sweep::kListed, .default_text = "0 (not given)",
            .check = "in [10, 1000]; cited when given",
            .doc = "CUDA compute capability, major * 10 + minor as NCCL's cudaCompCap (80 A100, "
                   "90 H100/H200, 100 B200); training.fp8_recipe \"mxfp8\" needs 100 or more, "
                   "the Hopper recipes below 100"},
    KeyInfo{STEPSIM_INT("system.memory_bytes", system.memory_bytes), .required = true,
            .sweep = Sweep::kListed, .default_text = "must be given", .check = kCited,
            .doc = "device memory per GPU, bytes"},
    KeyInfo{STEPSIM_REAL("system.peak_flops_fp32", system.peak_flops_fp32), .required = true,
            .sweep = Sweep::kListed, .default_text = "must be given",
            .check = "0 or FLOP/s in [1e9, 1e30]; one of the three peaks > 0; cited",
            .doc = "dense peak of the fp32 GEMM path (TF32 tensor cores where there are); 0 if "
                   "unsupported"},
    KeyInfo{STEPSIM_REAL("system.peak_flops_fp16", system.peak_flops_fp16), .required = true,
            .sweep = Sweep::kListed, .default_text = "must be given",
            .check = "0 or FLOP/s in [1e9, 1e30]; cited",
            .doc = "dense FP16 tensor-core peak; 0 if unsupported"},
    KeyInfo{STEPSIM_REAL("system.peak_flops_bf16", system.peak_flops_bf16), .required = true,
            .sweep = Sweep::kListed, .default_text = "must be given",
            .check = "0 or FLOP/s in [1e9, 1e30]; cited",
            .doc = "dense BF16 tensor-core peak; 0 if unsupported"},
    KeyInfo{STEPSIM_REAL("system.peak_flops_fp8", system.peak_flops_fp8), .sweep = Sweep::kListed,
            .default_text = "0 (no FP8 tensor cores)",
            .check = "0 or FLOP/s in [1e9, 1e30]; cited when given",
            .doc = "dense FP8 (E4M3/E5M2) tensor-core peak; training.fp8 needs it"},
    KeyInfo{STEPSIM_REAL("system.hbm_bandwidth_Bps", system.hbm_bandwidth_bytes_per_s),
            .required = true, .sweep = Sweep::kListed, .default_text = "must be given",
            .check = "bytes/s in [1e6, 1e30]; cited", .doc = "device memory bandwidth"},
    KeyInfo{
        STEPSIM_REAL("system.intra_node.bandwidth_Bps", system.intra_node.bandwidth_bytes_per_s),
        .required = true, .sweep = Sweep::kListed, .default_text = "must be given",
        .check = "bytes/s in [1e6, 1e30]; cited",
        .doc = "per GPU, one direction (NVLink/NVSwitch)"},
    KeyInfo{STEPSIM_REAL("system.intra_node.latency_s", system.intra_node.latency_s),
            .required = true, .sweep = Sweep::kListed, .default_text = "must be given",
            .check = "seconds in [0, 1]; cited",
            .doc = "one ring step / one-way small message inside a node"},
    KeyInfo{
        STEPSIM_REAL("system.inter_node.bandwidth_Bps", system.inter_node.bandwidth_bytes_per_s),
        .required = true, .sweep = Sweep::kListed, .default_text = "must be given",
        .check = "bytes/s in [1e6, 1e30]; cited", .doc = "per NIC, one direction"},
    KeyInfo{STEPSIM_REAL("system.inter_node.latency_s", system.inter_node.latency_s),
            .required = true, .sweep = Sweep::kListed, .default_text = "must be given",
            .check = "seconds in [0, 1]; cited",
            .doc = "one ring step / one-way small message across nodes"},
    KeyInfo{STEPSIM_REAL("system.efficiency.gemm_max", system.efficiency.gemm_max),
            .required = true, .sweep = Sweep::kListed, .default_text = "must be given",
            .check = "fraction in [0.01, 1]; cited",
            .doc = "share of dense peak large GEMMs reach (matmul microbenchmarks)"},
    KeyInfo{STEPSIM_REAL("system.efficiency.gemm_half_flops", system.efficiency.gemm_half_flops),
            .required = true, .sweep = Sweep::kListed, .default_text = "must be given",
            .check = "FLOPs in [0, 1e30]; cited",
            .doc = "GEMM size reaching half of gemm_max; 0 = no size dependence"},
    KeyInfo{STEPSIM_REAL("system.efficiency.memory_max", system.efficiency.memory_max),
            .required = true, .sweep = Sweep::kListed, .default_text = "must be given",
            .check = "fraction in [0.01, 1]; cited",
            .doc = "share of HBM bandwidth streaming kernels reach"},
    KeyInfo{STEPSIM_REAL("system.efficiency.kernel_launch_s", system.efficiency.kernel_launch_s),
            .required = true, .sweep = Sweep::kListed, .default_text = "must be given",
            .check = "seconds in [0, 1]; cited", .doc = "fixed cost per kernel"},
    KeyInfo{STEPSIM_REAL("system.efficiency.link_max", system.efficiency.link_max),
            .required = true, .sweep = Sweep::kListed, .default_text = "must be given",
            .check = "fraction in [0.01, 1]; cited",
            .doc = "NCCL bus bandwidth over link bandwidth"},
    KeyInfo{
        STEPSIM_REAL("system.interference.compute_slowdown", system.interference.compute_slowdown),
        .sweep = Sweep::kListed, .default_text = "1 (no interference)",
        .check = "factor in [1, 10]; cited when given",
        .doc = "compute kernels' time factor while an NCCL kernel runs beside them"},
    KeyInfo{STEPSIM_REAL("system.interference.collective_slowdown",
                         system.interference.collective_slowdown),
            .sweep = Sweep::kListed, .default_text = "1 (no interference)",
            .check = "factor in [1, 10]; cited when given",
            .doc = "an NCCL kernel's time factor while compute kernels run beside it"},

    // ---- model ----
    KeyInfo{STEPSIM_INT("model.num_layers", model.num_layers), .required = true,
            .sweep = Sweep::kListed, .flags = "--num-layers", .default_text = "must be given",
            .check = "> 0; divisible by pipeline_model_parallel_size (embedding/loss counted with "
                     "account_for_*), unless decoder_first/last_pipeline_num_layers or "
                     "pipeline_model_parallel_layout split it",
            .doc = "transformer layers"},
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
                     "into GeLU and SwiGLU; --no-bias-gelu-fusion is not modelled yet); not with "
                     "num_experts (not modelled yet)",
            .doc = "squared ReLU MLP (Nemotron-4): one FC1 GEMM of ffn_hidden_size outputs, then "
                   "relu(x)^2 as one fused elementwise kernel that keeps its input for backward"},
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
            .default_text = "\"unfused\" (\"flash\" with use_flash_attn); the importers write "
                            "Megatron-Core's default \"auto\"",
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

    // ---- training ----
    KeyInfo{STEPSIM_INT("training.world_size", training.world_size), .required = true,
            .sweep = Sweep::kListed, .default_text = "must be given",
            .check = "divisible by tensor_model_parallel_size * context_parallel_size * "
                     "pipeline_model_parallel_size",
            .doc = "GPUs of the job (the launcher's nodes x processes per node)"},
    KeyInfo{STEPSIM_INT("training.global_batch_size", training.global_batch_size), .required = true,
            .sweep = Sweep::kListed, .flags = "--global-batch-size",
            .default_text = "must be given",
            .check = "divisible by micro_batch_size * data_parallel_size",
            .doc = "sequences per optimizer step"},
    KeyInfo{
        .key = "training.bf16",
        .kind = KnobKind::kBool,
        .set =
            [](Workload& w, const KnobValue& v) {
              if (v.integer != 0) {
                w.training.params_dtype = DType::kBf16;
              } else if (w.training.params_dtype == DType::kBf16) {
                w.training.params_dtype = DType::kFp32;
              }
            },
        .get =
            [](const Workload& w) { return bool_value(w.training.params_dtype == DType::kBf16); },
        .sweep = Sweep::kListed,
        .flags = "--bf16=true",
        .default_text = "false",
        .check = "not with fp16; the system has a bf16 peak",
        .doc = "bf16 mixed precision (fp32 when neither bf16 nor fp16)"},
    KeyInfo{
        .key = "training.fp16",
        .kind = KnobKind::kBool,
        .set =
            [](Workload& w, const KnobValue& v) {
              if (v.integer != 0) {
                w.training.params_dtype = DType::kFp16;
              } else if (w.training.params_dtype == DType::kFp16) {
                w.training.params_dtype = DType::kFp32;
              }
            },
        .get =
            [](const Workload& w) { return bool_value(w.training.params_dtype == DType::kFp16); },
        .sweep = Sweep::kListed,
        .flags = "--fp16=true",
        .default_text = "false",
        .check = "not with bf16; the system has an fp16 peak",
        .doc = "fp16 mixed precision"},
    KeyInfo{STEPSIM_INT("training.tensor_model_parallel_size", training.tensor_model_parallel_size),
            .sweep = Sweep::kAuto, .autoable = true, .flags = "--tensor-model-parallel-size",
            .default_text = "1",
            .check = "divides num_attention_heads, num_query_groups, ffn_hidden_size, "
                     "padded_vocab_size",
            .doc = "t"},
    KeyInfo{STEPSIM_ENUM("training.cp_comm_type", training.cp_comm_type, CpCommType),
            .choices = kCpCommTypeNames, .sweep = Sweep::kListed, .flags = "--cp-comm-type",
            .default_text = "\"p2p\"",
            .check = "\"p2p\", \"a2a\", \"allgather\", \"a2a+p2p\" (needs "
                     "hierarchical_context_parallel_sizes); with \"a2a\": num_attention_heads "
                     "and num_query_groups divisible by tensor_model_parallel_size * "
                     "context_parallel_size; one value for every layer",
            .doc = "how context-parallel attention exchanges keys and values: p2p (KV ring, "
                   "overlapped with the attention steps), a2a (Ulysses all-to-all of Q, K, V and "
                   "the output), allgather (KV all-gather, dKV reduce-scatter), a2a+p2p (an "
                   "all-to-all of heads inside each group of the first hierarchical level, then "
                   "the KV ring over the second)"},
    KeyInfo{.key = "training.hierarchical_context_parallel_sizes",
            .kind = KnobKind::kString,
            .flags = "--hierarchical-context-parallel-sizes",
            .default_text = "none",
            .check = "integers >= 1 whose product is context_parallel_size; with cp_comm_type "
                     "\"a2a+p2p\": two of them [a2a, p2p], num_attention_heads and "
                     "num_query_groups divisible by tensor_model_parallel_size * a2a (other "
                     "cp_comm_types leave them unused, as Megatron-LM does: noted)",
            .doc = "the levels of hierarchical context parallelism, innermost first: the "
                   "all-to-all group (consecutive ranks of the CP group) and the ring over "
                   "them"},
    KeyInfo{STEPSIM_INT("training.context_parallel_size", training.context_parallel_size),
            .sweep = Sweep::kAuto, .autoable = true, .flags = "--context-parallel-size",
            .default_text = "1",
            .check = "> 1 needs seq_length divisible by 2 * context_parallel_size (seq_length "
                     "/ context_parallel_size divisible by tensor_model_parallel_size with "
                     "sequence_parallel) and attention_backend \"auto\" or \"fused\" "
                     "(Transformer Engine's fused attention)",
            .doc = "cp: each sequence split over cp GPUs (s / cp tokens each); world_size = t * "
                   "cp * p * dp; gradients reduced over dp * cp"},
    KeyInfo{
        STEPSIM_INT("training.pipeline_model_parallel_size", training.pipeline_model_parallel_size),
        .sweep = Sweep::kAuto, .autoable = true, .flags = "--pipeline-model-parallel-size",
        .default_text = "1", .check = "divides num_layers (see model.num_layers)", .doc = "p"},
    KeyInfo{STEPSIM_INT("training.virtual_pipeline_model_parallel_size",
                        training.virtual_pipeline_model_parallel_size),
            .sweep = Sweep::kAuto, .autoable = true,
            .flags = "--virtual-pipeline-model-parallel-size",
            .default_text = "1 (no interleaving)",
            .check = "divides num_layers / pipeline_model_parallel_size; with > 1: "
                     "pipeline_model_parallel_size > 2 (> 1 with overlap_p2p_comm), "
                     "num_microbatches >= pipeline_model_parallel_size; give at most one of the "
                     "three virtual-stage keys and pipeline_model_parallel_layout",
            .doc = "model chunks per pipeline rank v (the interleaved schedule)"},
    KeyInfo{STEPSIM_INT("training.num_virtual_stages_per_pipeline_rank",
                        training.virtual_pipeline_model_parallel_size),
            .flags = "--num-virtual-stages-per-pipeline-rank", .default_text = "none",
            .check = "as virtual_pipeline_model_parallel_size",
            .doc = "Megatron's current name for virtual_pipeline_model_parallel_size"},
    KeyInfo{STEPSIM_INT("training.num_layers_per_virtual_pipeline_stage",
                        training.num_layers_per_virtual_pipeline_stage),
            .sweep = Sweep::kAuto, .autoable = true,
            .flags = "--num-layers-per-virtual-pipeline-stage", .default_text = "none",
            .check = "divides num_layers / pipeline_model_parallel_size",
            .doc = "layers per model chunk (sets v = layers per stage / this)"},
    KeyInfo{STEPSIM_BOOL("training.sequence_parallel", training.sequence_parallel),
            .sweep = Sweep::kAuto, .autoable = true, .flags = "--sequence-parallel=true",
            .default_text = "false",
            .check = "needs tensor_model_parallel_size > 1; seq_length divisible by it",
            .doc = "sequence parallelism in the TP group (all-gather/reduce-scatter instead of "
                   "all-reduce)"},
    KeyInfo{STEPSIM_INT("training.micro_batch_size", training.micro_batch_size), .required = true,
            .sweep = Sweep::kAuto, .autoable = true, .flags = "--micro-batch-size",
            .default_text = "must be given", .check = "> 0", .doc = "sequences per micro-batch"},
    KeyInfo{STEPSIM_ENUM("training.recompute_granularity", training.recompute_granularity,
                         RecomputeGranularity),
            .choices = kRecomputeGranularityNames, .null_choice = true, .sweep = Sweep::kAuto,
            .autoable = true, .flags = "--recompute-granularity --recompute-activations=selective",
            .default_text = "null",
            .check = "null, \"selective\", \"full\" (full needs a "
                     "recompute_method)",
            .doc = "activation recomputation"},
    KeyInfo{.key = "training.recompute_activations",
            .kind = KnobKind::kBool,
            .default_text = "false",
            .check = "not with recompute_granularity \"full\"",
            .doc = "Megatron's --recompute-activations: recompute_granularity \"selective\""},
    KeyInfo{STEPSIM_ENUM("training.recompute_method", training.recompute_method, RecomputeMethod),
            .choices = kRecomputeMethodNames, .null_choice = true, .sweep = Sweep::kAuto,
            .autoable = true, .flags = "--recompute-method", .default_text = "null",
            .check = "null, \"uniform\", \"block\"; only with recompute_granularity \"full\"",
            .doc = "which layers full recomputation covers"},
    KeyInfo{STEPSIM_INT("training.recompute_num_layers", training.recompute_num_layers),
            .sweep = Sweep::kAuto, .autoable = true, .flags = "--recompute-num-layers",
            .default_text = "1 with \"full\" (Megatron requires it; stepsim defaults it)",
            .check = "between 1 and the layers per model chunk; only with \"full\"",
            .doc = "layers per recompute group (uniform) or recomputed layers per chunk (block)"},
    KeyInfo{STEPSIM_BOOL("training.distribute_saved_activations",
                         training.distribute_saved_activations),
            .sweep = Sweep::kAuto, .autoable = true, .flags = "--distribute-saved-activations=true",
            .default_text = "false",
            .check = "needs tensor_model_parallel_size > 1 and \"full\"; not with "
                     "sequence_parallel",
            .doc = "checkpointed inputs split across the TP group"},
    KeyInfo{STEPSIM_BOOL("training.use_distributed_optimizer", training.use_distributed_optimizer),
            .sweep = Sweep::kAuto, .autoable = true, .flags = "--use-distributed-optimizer=true",
            .default_text = "false",
            .doc = "optimizer states sharded over data parallelism (ZeRO-1)"},
    KeyInfo{STEPSIM_ENUM("training.optimizer_impl", training.optimizer_impl, OptimizerImpl),
            .choices = kOptimizerImplNames, .default_text = "\"megatron\"",
            .check = "\"apex_distributed_fused_adam\" (not a Megatron-LM argument: NeMo's "
                     "optim.name distributed_fused_adam) needs use_distributed_optimizer, "
                     "overlap_grad_reduce, overlap_param_gather, bf16 with grad_reduce_in_bf16, "
                     "fp8_param_gather (NeMo's fp8_params) and interleaving; not modelled yet "
                     "with experts, context parallelism or fp8_recipe other than delayed",
            .doc = "the distributed optimizer's implementation: Megatron-Core's, or Apex's "
                   "DistributedFusedAdam as NeMo drives it (buckets of apex_bucket_cap_mb "
                   "padded to full size, a model chunk's FP8 weights reduced and gathered as "
                   "one group, the first chunk's and the other parameters' gradients reduced "
                   "after the pipeline and their parameters gathered inside the optimizer "
                   "step)"},
    KeyInfo{STEPSIM_INT("training.apex_bucket_cap_mb", training.apex_bucket_cap_mb),
            .default_text = "100",
            .check = ">= 1; only with optimizer_impl "
                     "\"apex_distributed_fused_adam\"",
            .doc = "Apex DistributedFusedAdam's bucket_cap_mb (NeMo's optim.bucket_cap_mb): "
                   "every bucket holds this many MiB of bf16 gradients"},
    KeyInfo{STEPSIM_BOOL("training.overlap_grad_reduce", training.overlap_grad_reduce),
            .sweep = Sweep::kAuto, .autoable = true, .flags = "--overlap-grad-reduce=true",
            .default_text = "false", .doc = "gradient reduction overlapped with the backward pass"},
    KeyInfo{STEPSIM_BOOL("training.overlap_param_gather", training.overlap_param_gather),
            .sweep = Sweep::kAuto, .autoable = true, .flags = "--overlap-param-gather=true",
            .default_text = "false",
            .check = "needs use_distributed_optimizer and overlap_grad_reduce",
            .doc = "parameter all-gather overlapped with the forward pass"},
    KeyInfo{STEPSIM_BOOL("training.overlap_p2p_comm", training.overlap_p2p_comm),
            .sweep = Sweep::kAuto, .autoable = true,
            .flags = "--overlap-p2p-communication=true --no-overlap-p2p-communication=false",
            .default_text = "true with interleaving, false without (as Megatron-LM)",
            .check = "only with interleaving",
            .doc = "pipeline sends/receives overlapped with compute (interleaved schedule)"},
    KeyInfo{STEPSIM_BOOL("training.grad_reduce_in_bf16", training.grad_reduce_in_bf16),
            .sweep = Sweep::kListed, .flags = "--grad-reduce-in-bf16=true", .default_text = "false",
            .check = "read only with bf16 parameters, as Megatron-LM reads it",
            .doc = "gradient buffers and the data-parallel reduction in bf16 instead of fp32 "
                   "(half the reduce-scatter bytes; the distributed optimizer casts its shard "
                   "to fp32)"},
    KeyInfo{STEPSIM_REAL("training.clip_grad", training.clip_grad), .sweep = Sweep::kListed,
            .flags = "--clip-grad", .default_text = "1.0", .check = ">= 0",
            .doc = "gradient clipping by global norm: > 0 runs the optimizer's grad-norm and "
                   "clip-scale kernels over the main gradients, 0 skips both"},
    KeyInfo{STEPSIM_INT("training.ddp_bucket_size", training.ddp_bucket_size),
            .sweep = Sweep::kListed, .flags = "--ddp-bucket-size",
            .default_text = "none: max(40000000, 1000000 * data_parallel_size)",
            .check = "> 0 (Megatron makes one bucket per parameter at <= 0: not modelled); not "
                     "with ddp_num_buckets (Cannot specify both num_buckets and bucket_size)",
            .doc = "parameters per data-parallel gradient bucket (first model chunk of the first "
                   "pipeline rank, with overlap_grad_reduce; Megatron buckets nothing else)"},
    KeyInfo{STEPSIM_INT("training.ddp_num_buckets", training.ddp_num_buckets),
            .sweep = Sweep::kListed, .flags = "--ddp-num-buckets", .default_text = "none",
            .check = "> 0; not with ddp_bucket_size",
            .doc = "buckets per rank instead of a size: bucket size = the first pipeline rank's "
                   "parameters // this (training.py resolve_ddp_bucket_size)"},
    KeyInfo{STEPSIM_BOOL("training.align_param_gather", training.align_param_gather),
            .sweep = Sweep::kListed, .flags = "--no-align-param-gather=false",
            .default_text = "true (Megatron forces it off without interleaving)",
            .doc = "with overlap_param_gather and interleaving: every pipeline rank launches its "
                   "parameter all-gathers from the schedule (false: each chunk's first forward "
                   "launches its own and waits)"},
    KeyInfo{STEPSIM_INT("training.microbatch_group_size_per_vp_stage",
                        training.microbatch_group_size_per_vp_stage),
            .sweep = Sweep::kAuto, .autoable = true,
            .flags = "--microbatch-group-size-per-virtual-pipeline-stage",
            .default_text = "pipeline_model_parallel_size",
            .check = "in [pipeline_model_parallel_size, num_microbatches]; num_microbatches mod it "
                     "is 0 or >= pipeline_model_parallel_size; only with interleaving",
            .doc = "N of the interleaved schedule"},
    // uneven pipeline stages (pipeline_split.hpp)
    KeyInfo{STEPSIM_INT("training.decoder_first_pipeline_num_layers",
                        training.decoder_first_pipeline_num_layers),
            .sweep = Sweep::kListed, .flags = "--decoder-first-pipeline-num-layers",
            .default_text = "none (even split)",
            .check = "> 0; pipeline_model_parallel_size > 1; divisible by the virtual stages; "
                     "the layers left divide evenly over the middle stages (and their virtual "
                     "stages); not with account_for_*, pipeline_model_parallel_layout or "
                     "num_layers_per_virtual_pipeline_stage",
            .doc = "transformer layers of the first pipeline rank (uneven stages)"},
    KeyInfo{STEPSIM_INT("training.decoder_last_pipeline_num_layers",
                        training.decoder_last_pipeline_num_layers),
            .sweep = Sweep::kListed, .flags = "--decoder-last-pipeline-num-layers",
            .default_text = "none (even split)", .check = "as decoder_first_pipeline_num_layers",
            .doc = "transformer layers of the last pipeline rank (uneven stages)"},
    KeyInfo{STEPSIM_BOOL("training.account_for_embedding_in_pipeline_split",
                         training.account_for_embedding_in_pipeline_split),
            .sweep = Sweep::kAuto, .autoable = true,
            .flags = "--account-for-embedding-in-pipeline-split=true", .default_text = "false",
            .check = "num_layers + 1 divisible by pipeline_model_parallel_size (and the virtual "
                     "stages); not with decoder_first/last_pipeline_num_layers",
            .doc = "the embedding counts as one layer in the split: the first virtual stage "
                   "builds one transformer layer fewer"},
    KeyInfo{STEPSIM_BOOL("training.account_for_loss_in_pipeline_split",
                         training.account_for_loss_in_pipeline_split),
            .sweep = Sweep::kAuto, .autoable = true,
            .flags = "--account-for-loss-in-pipeline-split=true", .default_text = "false",
            .check = "as account_for_embedding_in_pipeline_split",
            .doc = "the loss counts as one layer in the split: the last virtual stage builds "
                   "one transformer layer fewer"},
    KeyInfo{.key = "training.pipeline_model_parallel_layout",
            .kind = KnobKind::kString,
            .flags = "--pipeline-model-parallel-layout",
            .default_text = "none",
            .check = "E t L characters, '|' between stages, x*n and (...)*n repeat, commas "
                     "ignored; stages = pipeline_model_parallel_size x virtual stages; E first, L "
                     "last, each once; num_layers t's; no m (multi-token prediction); not with "
                     "decoder_first/last_*, account_for_* or a virtual-stage key",
            .doc = "every stage's layers, virtual stage by virtual stage (Megatron's layout "
                   "string); sets the virtual stages"},
    KeyInfo{STEPSIM_ENUM("training.fp8", training.fp8, Fp8Format), .choices = kFp8FormatNames,
            .null_choice = true, .sweep = Sweep::kAuto, .autoable = true, .flags = "--fp8-format",
            .default_text = "null (no FP8)",
            .check = "\"e4m3\", \"hybrid\" or null; the system has a peak_flops_fp8",
            .doc = "FP8 GEMMs in the transformer layers' linears (Transformer Engine): e4m3 "
                   "everywhere, or hybrid (E5M2 gradients); embedding, attention and output "
                   "layer stay 16-bit"},
    KeyInfo{STEPSIM_ENUM("training.fp8_recipe", training.fp8_recipe, Fp8Recipe),
            .choices = kFp8RecipeNames, .sweep = Sweep::kAuto, .autoable = true,
            .flags = "--fp8-recipe", .default_text = "\"delayed\"",
            .check = "\"delayed\", \"tensorwise\", \"blockwise\", \"mxfp8\", \"custom\"; "
                     "\"custom\" is not modelled yet; \"delayed\", \"tensorwise\" and "
                     "\"blockwise\" are modelled on Hopper (below system.compute_capability "
                     "100; \"blockwise\" without tp_comm_overlap), \"mxfp8\" on Blackwell "
                     "(Transformer Engine's check_mxfp8_support: compute capability 10.0+) "
                     "without tp_comm_overlap, fp8_param_gather only with "
                     "reuse_grad_buf_for_mxfp8_param_ag, tokens per rank and every linear's "
                     "widths per rank (hidden, ffn, attention, QKV) multiples of 32",
            .doc = "FP8 scaling: delayed (amax history, one amax all-reduce per forward and "
                   "backward of a model chunk), per-tensor current scaling (tensorwise), "
                   "blockwise (Transformer Engine's Float8BlockScaling: 1x128 tiles of "
                   "activations and gradients, 128x128 blocks of weights, block-scaled GEMMs "
                   "priced from the profile's block-scaled samples), or mxfp8 "
                   "(MXFP8BlockScaling: an E8M0 scale per 32 values, row- and column-wise "
                   "copies of every tensor, no amaxes, GEMMs in the 16-bit layouts priced "
                   "from the profile's mx_1x32 samples)"},
    KeyInfo{STEPSIM_BOOL("training.fp8_param_gather", training.fp8_param_gather),
            .sweep = Sweep::kAuto, .autoable = true, .flags = "--fp8-param-gather=true",
            .default_text = "false", .check = "needs fp8 and use_distributed_optimizer",
            .doc = "FP8 parameters: the distributed optimizer all-gathers them in 1 byte and no "
                   "16-bit copy of the linears' weights is kept; the fp32 master shard is "
                   "quantized into them after the optimizer step (delayed, tensorwise, "
                   "blockwise); with mxfp8 see reuse_grad_buf_for_mxfp8_param_ag"},
    KeyInfo{STEPSIM_BOOL("training.reuse_grad_buf_for_mxfp8_param_ag",
                         training.reuse_grad_buf_for_mxfp8_param_ag),
            .sweep = Sweep::kAuto, .autoable = true,
            .flags = "--reuse-grad-buf-for-mxfp8-param-ag=true", .default_text = "false",
            .check = "needs fp8_param_gather and fp8_recipe \"mxfp8\" (Megatron-Core: only then); "
                     "not modelled yet with overlap_param_gather",
            .doc = "MXFP8 parameters as Megatron-Core keeps them (NeMo's bf16_with_mxfp8_mixed): "
                   "the optimizer's fp32 shards copied in bf16 into the gradient buffer, "
                   "all-gathered there in 16 bits, each weight then quantized into its MXFP8 "
                   "copies (no 16-bit weight kept); TE swizzles such a weight's scales before "
                   "every GEMM (no pre-swizzle of primary FP8 weights)"},
    KeyInfo{STEPSIM_INT("training.fp8_amax_history_len", training.fp8_amax_history_len),
            .sweep = Sweep::kListed, .flags = "--fp8-amax-history-len", .default_text = "1",
            .check = "> 0; at most 2^24 (stepsim's limit)",
            .doc = "amax history per FP8 tensor (delayed scaling)"},
    KeyInfo{STEPSIM_BOOL("training.tp_only_amax_red", training.tp_only_amax_red),
            .sweep = Sweep::kListed, .flags = "--tp-only-amax-red=true", .default_text = "false",
            .check = "changes the job only with fp8 and fp8_recipe \"delayed\"",
            .doc = "delayed scaling's amax all-reduce over the tensor x context parallel group "
                   "only (Megatron's get_amax_reduction_group with tp_only_amax_red), not over "
                   "the data-parallel ranks too"},
    // TP-communication overlap (tp_overlap_ops.cpp): Megatron's ModelParallelConfig flags,
    // handed to Transformer Engine's linears (megatron/core/extensions/transformer_engine.py)
    KeyInfo{STEPSIM_BOOL("training.tp_comm_overlap", training.tp_comm_overlap),
            .sweep = Sweep::kAuto, .autoable = true, .flags = "--tp-comm-overlap=true",
            .default_text = "false",
            .check = "needs sequence_parallel (so tensor_model_parallel_size > 1: Megatron turns "
                     "sequence_parallel off at 1) and Transformer Engine (transformer_impl); "
                     "not modelled yet: a TP group across nodes; the system gives sm_count; "
                     "hidden_size divisible by 4 (the pipelined reduce-scatter's chunks)",
            .doc = "Transformer Engine's userbuffers around the layers' linears: AG+GEMM ring "
                   "exchange, GEMM+RS pipelined, bulk dgrad/wgrad overlaps; with fp8 the "
                   "all-gathers in FP8 buffers (1 byte) and every GEMM chunk in FP8"},
    KeyInfo{STEPSIM_BOOL("training.tp_comm_overlap_ag", training.tp_comm_overlap_ag),
            .sweep = Sweep::kListed,
            .flags = "--disable-tp-comm-overlap-ag=false --no-tp-comm-overlap-ag=false",
            .default_text = "true", .check = "no effect without tp_comm_overlap",
            .doc = "all-gather overlapped by ring exchange with the QKV/FC1 forward and the "
                   "projection/FC2 dgrad GEMMs"},
    KeyInfo{STEPSIM_BOOL("training.tp_comm_overlap_rs", training.tp_comm_overlap_rs),
            .sweep = Sweep::kListed,
            .flags = "--disable-tp-comm-overlap-rs=false --no-tp-comm-overlap-rs=false",
            .default_text = "true", .check = "no effect without tp_comm_overlap",
            .doc = "reduce-scatter pipelined with the projection/FC2 forward GEMMs (4 chunks)"},
    KeyInfo{STEPSIM_BOOL("training.tp_comm_overlap_rs_dgrad", training.tp_comm_overlap_rs_dgrad),
            .sweep = Sweep::kListed, .flags = "--tp-comm-overlap-rs-dgrad=true",
            .default_text = "false", .check = "no effect without tp_comm_overlap",
            .doc = "QKV/FC1 dgrad GEMM pipelined with its reduce-scatter (Transformer Engine then "
                   "drops the bulk overlaps)"},
    KeyInfo{STEPSIM_BOOL("training.tp_comm_bulk_dgrad", training.tp_comm_bulk_dgrad),
            .sweep = Sweep::kListed,
            .flags = "--disable-tp-comm-bulk-dgrad=false --no-tp-comm-bulk-dgrad=false",
            .default_text = "true", .check = "no effect without tp_comm_overlap",
            .doc = "QKV/FC1 backward: the input all-gather as a userbuffers kernel beside the "
                   "dgrad GEMM"},
    KeyInfo{STEPSIM_BOOL("training.tp_comm_bulk_wgrad", training.tp_comm_bulk_wgrad),
            .sweep = Sweep::kListed,
            .flags = "--disable-tp-comm-bulk-wgrad=false --no-tp-comm-bulk-wgrad=false",
            .default_text = "true", .check = "no effect without tp_comm_overlap",
            .doc = "QKV/FC1 backward: the dgrad reduce-scatter as a userbuffers kernel beside "
                   "the wgrad GEMM"},
    KeyInfo{.key = "training.tp_comm_overlap_cfg",
            .kind = KnobKind::kString,
            .flags = "--tp-comm-overlap-cfg",
            .default_text = "none (Transformer Engine's defaults)",
            .check = "a YAML file (relative to the scenario; a launch line's to the working "
                     "directory) mapping GEMM names (qkv_fprop ... fc2_wgrad) to flat mappings "
                     "of initialize_ub's settings; needs tp_comm_overlap; not modelled yet: a "
                     "method other than the GEMM's default (or ring_exchange on "
                     "proj_fprop/fc2_fprop), atomic_gemm other than on a pipelined "
                     "proj_fprop/fc2_fprop (which needs fp8), pipeline_rs_overlap_first_gemm, "
                     "use_ce false on a ring exchange, a setting of proj_wgrad/fc2_wgrad; "
                     "aggregate only on an all-gather ring exchange, with an even "
                     "tensor_model_parallel_size; num_sm below the system's sm_count; "
                     "hidden_size divisible by a pipelined GEMM's num_splits",
            .doc = "Megatron's --tp-comm-overlap-cfg (Transformer Engine's ub_cfgs): num_sm, "
                   "set_sm_margin (the SMs left to the GEMM), num_splits (the pipelined "
                   "reduce-scatter's chunks), fp8_buf (a projection/FC2 reduce-scatter in FP8), "
                   "method ring_exchange on proj_fprop/fc2_fprop (the ring-exchange "
                   "reduce-scatter), aggregate (two chunks a ring-exchange step) and atomic_gemm "
                   "on a pipelined proj_fprop/fc2_fprop (one cuBLAS atomic GEMM for its chunks) "
                   "are priced; "
                   "cga_size and the stream priorities are read, not priced"},
    KeyInfo{STEPSIM_BOOL("training.defer_embedding_wgrad_compute",
                         training.defer_embedding_wgrad_compute),
            .sweep = Sweep::kListed, .flags = "--defer-embedding-wgrad-compute=true",
            .default_text = "false",
            .check = "needs pipeline_model_parallel_size > 1 (and gradient accumulation fusion, "
                     "Megatron's default)",
            .doc = "the output layer's weight-gradient GEMMs of the last pipeline stage run at "
                   "the end of its backward, during the pipeline flush"},
    KeyInfo{STEPSIM_INT("training.wgrad_deferral_limit", training.wgrad_deferral_limit),
            .sweep = Sweep::kListed, .flags = "--wgrad-deferral-limit", .default_text = "0",
            .check = ">= 0; no effect without defer_embedding_wgrad_compute",
            .doc = "micro-batches whose output-layer wgrad is deferred (0 = all)",
            .zero_allowed = true},
    // Transformer Engine's norm kernels (layer_ops.cpp OpList::norm; validate.cpp)
    KeyInfo{STEPSIM_INT("training.fwd_layernorm_sm_margin", training.fwd_layernorm_sm_margin),
            .sweep = Sweep::kListed, .env = "NVTE_FWD_LAYERNORM_SM_MARGIN", .default_text = "0",
            .check = ">= 0 and below the system's sm_count",
            .doc = "SMs Transformer Engine's LayerNorm/RMSNorm forward (and recompute) kernels "
                   "leave to the communication beside them (NeMo's PerfEnvPlugin sets 16): the "
                   "norm runs on sm_count minus this many SMs, priced at its full-GPU time over "
                   "that share",
            .zero_allowed = true},
    KeyInfo{STEPSIM_INT("training.bwd_layernorm_sm_margin", training.bwd_layernorm_sm_margin),
            .sweep = Sweep::kListed, .env = "NVTE_BWD_LAYERNORM_SM_MARGIN", .default_text = "0",
            .check = ">= 0 and below the system's sm_count",
            .doc = "the same for the norms' backward kernels", .zero_allowed = true},
    // NCCL's NVLink SHARP (nccl_model.cpp; make_cost_model.cpp; validate_tp_overlap.cpp)
    KeyInfo{STEPSIM_INT("training.nccl_nvls_enable", training.nccl_nvls_enable),
            .env = "NCCL_NVLS_ENABLE", .default_text = "2",
            .check = "0, 1 or 2; 1 needs NVLink SHARP (a Hopper or newer GPU on NVSwitch): "
                     "NCCL fails without it",
            .doc = "NCCL's NVLink SHARP (NVLS): 0 turns it off, so collectives run with the "
                   "ring, tree or PAT algorithm NCCL's tuning picks without it (Megatron-"
                   "Bridge's Llama 3.1 405B recipes set 0); 2, NCCL's default, uses it where "
                   "the system supports multicast. NCCL's NVLS buffers in memory are not "
                   "modelled either way",
            .zero_allowed = true},
    // NCCL's channel limits (nccl_model.cpp nccl_channel_factor; nccl_cfg.cpp; validate.cpp)
    KeyInfo{STEPSIM_INT("training.nccl_min_nchannels", training.nccl_min_nchannels),
            .env = "NCCL_MIN_NCHANNELS", .default_text = "0", .check = "0 (unset) to 64",
            .doc = "NCCL's NCCL_MIN_NCHANNELS: every communicator runs at least this many "
                   "channels (NCCL copies its first ones; connect.cc), above a group's max_ctas "
                   "too; more channels than NCCL's own add no bandwidth in NCCL's model",
            .zero_allowed = true},
    KeyInfo{STEPSIM_INT("training.nccl_max_nchannels", training.nccl_max_nchannels),
            .env = "NCCL_MAX_NCHANNELS", .default_text = "0", .check = "0 (unset: 64) to 64",
            .doc = "NCCL's NCCL_MAX_NCHANNELS: communicators run at most this many channels; "
                   "a collective on fewer channels than NCCL's tuning assumed is priced with "
                   "NCCL's bandwidth formula (channels x per-channel speed) for the channels "
                   "that run",
            .zero_allowed = true},
    KeyInfo{.key = "training.nccl_communicator_config_path",
            .kind = KnobKind::kString,
            .flags = "--nccl-communicator-config-path",
            .default_text = "none (NCCL's defaults)",
            .check = "a YAML file (relative to the scenario; a launch line's to the working "
                     "directory) mapping Megatron's process-group names (tp, dp_cp, pp, embd, "
                     "mp, ...) to min_ctas / max_ctas (1-64) and cga_cluster_size (0-8); not "
                     "modelled yet: net_name, is_high_priority_stream true, options that cut "
                     "the channels of the pipeline or context-parallel point-to-point "
                     "communicators, options of expert groups with expert parallelism",
            .doc = "Megatron's per-process-group ncclConfig_t options "
                   "(parallel_state.get_nccl_options): a group's collectives run "
                   "max(NCCL_MIN_NCHANNELS, min_ctas, min(NCCL_MAX_NCHANNELS, max_ctas, NCCL's "
                   "own)) channels; cga_cluster_size is a launch attribute, read, not priced"},
    KeyInfo{STEPSIM_INT("training.nccl_p2p_net_chunksize", training.nccl_p2p_net_chunksize),
            .env = "NCCL_P2P_NET_CHUNKSIZE", .default_text = "131072",
            .check = ">= 131072 (NCCL's default; smaller chunks are not modelled yet)",
            .doc = "NCCL's chunk of a point-to-point transfer across nodes, capped by NCCL at "
                   "its 4 MiB buffer / 8 steps = 512 KiB (init.cc computeBuffSizes): the "
                   "profiles' cross-node sends, measured at the 128 KiB default, already run at "
                   "the NIC's rate, so larger chunks do not change their price"},
    // expert parallelism and the MoE layer's execution (moe_ops.cpp; validate_moe.cpp)
    KeyInfo{STEPSIM_INT("training.expert_model_parallel_size", training.expert_model_parallel_size),
            .sweep = Sweep::kAuto, .autoable = true, .flags = "--expert-model-parallel-size",
            .default_text = "1",
            .check = "> 1 needs num_experts, which it divides; world_size divisible by "
                     "expert_tensor_parallel_size * expert_model_parallel_size * "
                     "pipeline_model_parallel_size",
            .doc = "ep: the routed experts split over ep GPUs (the expert rank generator's ep)"},
    KeyInfo{
        STEPSIM_INT("training.expert_tensor_parallel_size", training.expert_tensor_parallel_size),
        .sweep = Sweep::kAuto, .autoable = true, .flags = "--expert-tensor-parallel-size",
        .default_text = "tensor_model_parallel_size",
        .check = "divides moe_ffn_hidden_size; 1 with add_bias_linear (Bias in Moe is only "
                 "supported when ETP==1)",
        .doc = "tensor parallelism inside each expert; expert data-parallel size = "
               "world_size / (pipeline * expert_model_parallel * expert_tensor_parallel)"},
    KeyInfo{STEPSIM_ENUM("training.moe_token_dispatcher_type", training.moe_token_dispatcher_type,
                         MoeDispatcher),
            .choices = kMoeDispatcherNames, .sweep = Sweep::kAuto, .autoable = true,
            .flags = "--moe-token-dispatcher-type", .default_text = "\"allgather\"",
            .check = "\"allgather\", \"alltoall\", \"flex\" (with moe_flex_dispatcher_backend "
                     "\"deepep\"; rules there)",
            .doc = "how tokens reach their experts: all-gather over the expert TP x EP group and "
                   "reduce-scatter back, all-to-all over EP (all-gather/reduce-scatter over "
                   "expert TP), or DeepEP's fused dispatch and combine over the expert TP x EP "
                   "group (a token crosses RDMA once per destination node, then NVLink)"},
    KeyInfo{STEPSIM_ENUM("training.moe_flex_dispatcher_backend",
                         training.moe_flex_dispatcher_backend, MoeFlexBackend),
            .choices = kMoeFlexBackendNames, .sweep = Sweep::kListed,
            .flags = "--moe-flex-dispatcher-backend", .default_text = "\"deepep\"",
            .check = "\"deepep\"; \"hybridep\" and \"ncclep\" are not modelled yet. With flex "
                     "and deepep: expert_tensor_parallel_size * expert_model_parallel_size > 1 "
                     "(DeepEP dispatcher requires TPxEP > 1) and 2, 4, 8 GPUs of one node or 8 "
                     "GPUs on each of 2, 3, 4, 6, 8, 12, 16, 18 or 20 nodes (DeepEP's kernels); "
                     "bf16; not moe_pad_expert_input_to_capacity; etp * moe_router_topk <= 32 "
                     "across nodes",
            .doc = "the flex dispatcher's communication library (read with flex only)"},
    KeyInfo{STEPSIM_BOOL("training.moe_enable_deepep", training.moe_enable_deepep),
            .sweep = Sweep::kListed, .flags = "--moe-enable-deepep=true", .default_text = "false",
            .check = "needs moe_token_dispatcher_type \"flex\" (DeepEP backend is only supported "
                     "with flex token dispatcher); not with backend \"hybridep\"",
            .doc = "deprecated form of moe_flex_dispatcher_backend \"deepep\""},
    KeyInfo{
        STEPSIM_INT("training.moe_flex_dispatcher_num_sms", training.moe_flex_dispatcher_num_sms),
        .sweep = Sweep::kListed, .flags = "--moe-flex-dispatcher-num-sms",
        .default_text = "none (DeepEP: 20)",
        .check = "even (DeepEP: The SM count must be even), below system.sm_count",
        .doc = "SMs DeepEP's dispatch and combine kernels hold while they run: the compute "
               "beside them (the overlapped shared experts) keeps the rest; DeepEP's own time "
               "is its published bandwidth whatever the count"},
    KeyInfo{STEPSIM_INT("training.moe_deepep_num_sms", training.moe_deepep_num_sms),
            .sweep = Sweep::kListed, .flags = "--moe-deepep-num-sms", .default_text = "none",
            .check = "as moe_flex_dispatcher_num_sms",
            .doc = "deprecated form of moe_flex_dispatcher_num_sms (used when that is not given)"},
    KeyInfo{STEPSIM_BOOL("training.moe_grouped_gemm", training.moe_grouped_gemm),
            .sweep = Sweep::kListed, .flags = "--moe-grouped-gemm=true", .default_text = "false",
            .doc = "one grouped GEMM over the local experts (TEGroupedMLP) instead of one GEMM "
                   "per expert (SequentialMLP)"},
    KeyInfo{STEPSIM_BOOL("training.moe_shared_expert_overlap", training.moe_shared_expert_overlap),
            .sweep = Sweep::kListed, .flags = "--moe-shared-expert-overlap=true",
            .default_text = "false",
            .check = "with moe_shared_expert_intermediate_size: moe_token_dispatcher_type "
                     "\"alltoall\" or \"flex\" (moe_shared_expert_overlap only works with "
                     "alltoall or flex token dispatcher)",
            .doc = "the shared experts on their own stream beside the dispatcher: fc1 during the "
                   "dispatch all-to-all, fc2 during the combine (forward and backward); no "
                   "effect without shared experts"},
    KeyInfo{STEPSIM_ENUM("training.moe_router_load_balancing_type",
                         training.moe_router_load_balancing_type, MoeLoadBalancing),
            .choices = kMoeLoadBalancingNames, .sweep = Sweep::kListed,
            .flags = "--moe-router-load-balancing-type", .default_text = "\"aux_loss\"",
            .check = "\"aux_loss\", \"seq_aux_loss\", \"global_aux_loss\", \"none\"; "
                     "\"sinkhorn\" and \"quantile_balancing\" are not modelled yet; "
                     "moe_expert_capacity_factor only with aux_loss, seq_aux_loss, "
                     "global_aux_loss or none",
            .doc = "the router's load balancing (routing is balanced, every expert getting "
                   "tokens * topk / num_experts, unless training.moe_load says otherwise)"},
    KeyInfo{
        STEPSIM_REAL("training.moe_expert_capacity_factor", training.moe_expert_capacity_factor),
        .sweep = Sweep::kAuto, .autoable = true, .flags = "--moe-expert-capacity-factor",
        .default_text = "none (no token dropping)",
        .check = "> 0 (Megatron's None when not given); needs num_experts and a load "
                 "balancing type other than sinkhorn",
        .doc = "expert capacity = ceil(tokens * topk / num_experts * this) per expert and "
               "source rank; tokens beyond it are dropped"},
    KeyInfo{STEPSIM_REAL("training.moe_aux_loss_coeff", training.moe_aux_loss_coeff),
            .sweep = Sweep::kListed, .flags = "--moe-aux-loss-coeff", .default_text = "0",
            .check = ">= 0; needs num_experts; with global_aux_loss or context parallelism not "
                     "modelled yet",
            .doc = "load-balancing loss coefficient: > 0 with aux_loss or seq_aux_loss runs the "
                   "router's aux-loss kernels (tokens per expert, their all-reduce over the TP "
                   "group, the probabilities' sums and their gradient)"},
    KeyInfo{STEPSIM_BOOL("training.moe_pad_expert_input_to_capacity",
                         training.moe_pad_expert_input_to_capacity),
            .sweep = Sweep::kAuto, .autoable = true,
            .flags = "--moe-pad-expert-input-to-capacity=true", .default_text = "false",
            .check = "needs moe_expert_capacity_factor",
            .doc = "every expert's input padded to its capacity (dispatch, GEMMs and combine "
                   "carry the padding)"},
    KeyInfo{.key = "training.moe_load",
            .kind = KnobKind::kString,
            .default_text = "1 (balanced)",
            .check = "a number k in [1, expert_model_parallel_size] (k > 1 needs "
                     "expert_model_parallel_size > 1), or a list of num_experts numbers >= 0 "
                     "with a positive sum; needs num_experts; with moe_grouped_gemm=false a "
                     "rank's experts are priced at their mean rows",
            .doc = "routing imbalance (stepsim's, not a Megatron flag): k = the most loaded EP "
                   "rank receives k times the balanced rows, the other EP ranks share the rest "
                   "evenly; a list = every source rank sends share[i] / sum of its routed rows "
                   "to expert i (EP rank r holds experts r*E/ep .. (r+1)*E/ep - 1). Every "
                   "all-to-all waits for the most loaded EP rank, whose experts the step "
                   "prices; capacity clips each expert's rows per source"},
    KeyInfo{STEPSIM_ENUM("training.moe_router_dtype", training.moe_router_dtype, MoeRouterDtype),
            .choices = kMoeRouterDtypeNames, .null_choice = true, .sweep = Sweep::kListed,
            .flags = "--moe-router-dtype", .default_text = "null (the params dtype)",
            .check = "null, \"fp32\"; \"fp64\" is not modelled yet",
            .doc = "dtype of the router GEMM, its scores and the routing probabilities"},
};

#undef STEPSIM_INT
#undef STEPSIM_BOOL
#undef STEPSIM_REAL
#undef STEPSIM_ENUM

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
    {.dest = "use_torch_fsdp2", .flag = "--use-torch-fsdp2"},
    {.dest = "use_megatron_fsdp", .flag = "--use-megatron-fsdp"},
    {.dest = "data_parallel_sharding_strategy", .flag = "--data-parallel-sharding-strategy"},
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
    {.dest = "fp4", .flag = "--fp4-format"},
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
    {.dest = "overlap_moe_expert_parallel_comm", .flag = "--overlap-moe-expert-parallel-comm"},
    {.dest = "use_nccl_ub", .flag = "--use-nccl-ub"},
    {.dest = "cuda_graph_impl", .flag = "--cuda-graph-impl", .neutral_value = "none"},
    {.dest = "enable_cuda_graph", .flag = "--enable-cuda-graph"},
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
    {.dest = "mtp_num_layers", .flag = "--mtp-num-layers"},
    {.dest = "hybrid_override_pattern", .flag = "--hybrid-override-pattern"},
    {.dest = "hybrid_layer_pattern", .flag = "--hybrid-layer-pattern"},
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

std::span<const KeyInfo> schema_span() { return kSchema; }

// Levenshtein distance, for "did you mean".
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

std::string_view leaf(std::string_view dotted) {
  const auto dot = dotted.rfind('.');
  return dot == std::string_view::npos ? dotted : dotted.substr(dot + 1);
}

}  // namespace

std::span<const KeyInfo> scenario_schema() { return schema_span(); }

const KeyInfo* find_schema_key(std::string_view dotted_key) {
  for (const KeyInfo& k : kSchema) {
    if (k.key == dotted_key) return &k;
  }
  return nullptr;
}

std::span<const UnmodelledArgument> unmodelled_arguments() { return kUnmodelled; }

const UnmodelledArgument* find_unmodelled_argument(std::string_view dest_or_flag) {
  const bool is_flag = dest_or_flag.starts_with("--");
  for (const UnmodelledArgument& a : kUnmodelled) {
    if ((is_flag ? a.flag : a.dest) == dest_or_flag) return &a;
  }
  return nullptr;
}

FlagClass classify_unmodelled_flag(std::string_view flag, std::string_view value) {
  if (const UnmodelledArgument* a = find_unmodelled_argument(flag)) {
    if (!a->changes_job) return FlagClass::kHarmless;
    if (!a->neutral_value.empty() && value == a->neutral_value) return FlagClass::kHarmless;
    return FlagClass::kUnmodelled;
  }
  for (const std::string_view prefix : kHarmlessPrefixes) {
    if (flag.starts_with(prefix)) return FlagClass::kHarmless;
  }
  return FlagClass::kUnknown;
}

std::string unknown_key_message(std::string_view section, std::string_view key) {
  if (const UnmodelledArgument* a = find_unmodelled_argument(key)) {
    if (!a->changes_job) {
      return std::string(" is a Megatron-LM argument (") + std::string(a->flag) +
             ") that does not change a step's time or memory: leave it out";
    }
    return std::string(" is a Megatron-LM argument (") + std::string(a->flag) +
           ") that stepsim does not model yet";
  }
  // The nearest key of the model and training sections; a key of the other section with the
  // same name counts as distance 0 ("seq_length" under "training").
  const KeyInfo* best = nullptr;
  std::size_t best_distance = 0;
  for (const KeyInfo& k : kSchema) {
    if (!k.key.starts_with("model.") && !k.key.starts_with("training.")) continue;
    const std::size_t d = edit_distance(key, leaf(k.key));
    if (best == nullptr || d < best_distance) {
      best = &k;
      best_distance = d;
    }
  }
  const std::size_t limit = std::max<std::size_t>(2, key.size() / 4);
  if (best != nullptr && best_distance <= limit &&
      !(best_distance == 0 && best->key.substr(0, best->key.find('.')) == section)) {
    return " is not a known key; did you mean \"" + std::string(best->key) + "\"?";
  }
  return " is not a known key";
}

std::string scenario_keys_markdown() {
  std::string out =
      "# Scenario keys\n\n"
      "Generated from the schema table in `core/config/src/schema.cpp` by `stepsim_scenario_keys`\n"
      "(`build/bin/stepsim_scenario_keys > docs/scenario-keys.md`); the test\n"
      "`Schema.KeyReferenceIsCurrent` fails when this file is stale. Do not edit it by hand.\n\n"
      "A scenario is one JSON object: the top-level keys, a `model` and a `training` section\n"
      "(Megatron-LM argument dests; omitted keys take Megatron-LM's defaults), and a `system`\n"
      "(a system file, whose keys are the `system.` rows). Unknown keys are errors: a misspelt "
      "key\n"
      "gets \"did you mean\", a Megatron-LM argument stepsim does not model gets \"does not model\n"
      "yet\" (the list at the end). `Sweep`: a sweep file may vary the key (`auto`: it also takes\n"
      "`\"auto\"`, the key's whole valid range). `Megatron-LM flag`: what `--megatron-args` and\n"
      "`import-megatron` read (`--flag=value` sets the value without taking one); an\n"
      "`environment` entry is a variable of Transformer Engine's that they read from the\n"
      "assignments before the launcher (`NVTE_FWD_LAYERNORM_SM_MARGIN=16 torchrun ...`).\n\n";
  const auto section_of = [](std::string_view key) -> std::string_view {
    const auto dot = key.find('.');
    return dot == std::string_view::npos ? std::string_view("top level") : key.substr(0, dot);
  };
  const auto kind_of = [](const KeyInfo& k) -> std::string {
    switch (k.kind) {
      case KnobKind::kInt:
        return "integer";
      case KnobKind::kBool:
        return "boolean";
      case KnobKind::kReal:
        return "number";
      case KnobKind::kSystem:
        return "path or object";
      case KnobKind::kString:
        return "string";
      case KnobKind::kChoice: {
        std::string s;
        for (std::size_t i = k.null_choice ? 1 : 0; i < k.choices.size(); ++i) {
          if (!s.empty()) s += " \\| ";
          s += "`\"" + std::string(k.choices[i]) + "\"`";
        }
        return k.null_choice ? s + " \\| null" : s;
      }
    }
    return "?";
  };
  const auto cell = [](std::string_view text) {
    std::string s;
    for (const char c : text) {
      if (c == '|') {
        s += "\\|";
      } else {
        s += c;
      }
    }
    return s;
  };
  std::string_view current;
  for (const KeyInfo& k : kSchema) {
    const std::string_view section = section_of(k.key);
    if (section != current) {
      current = section;
      out += "\n## " + std::string(section) + "\n\n";
      out += "| key | type | default | Megatron-LM flag | sweep | rule | meaning |\n";
      out += "|---|---|---|---|---|---|---|\n";
    }
    std::string flags;
    if (!k.env.empty()) flags = "environment `" + std::string(k.env) + "`";
    std::string_view rest = k.flags;
    while (!rest.empty()) {
      const auto space = rest.find(' ');
      const std::string_view flag = rest.substr(0, space);
      if (!flags.empty()) flags += ", ";
      flags += "`" + std::string(flag) + "`";
      rest = space == std::string_view::npos ? std::string_view() : rest.substr(space + 1);
    }
    out += "| `" + std::string(k.key) + "` | " + kind_of(k) + " | " + cell(k.default_text) + " | " +
           flags + " | " +
           (k.sweep == Sweep::kAuto     ? "auto"
            : k.sweep == Sweep::kListed ? "yes"
                                        : "") +
           " | " + cell(k.check) + " | " + cell(k.doc) + " |\n";
  }
  out +=
      "\n## Megatron-LM arguments not modelled yet\n\n"
      "A scenario key or a `--megatron-args` flag naming one of these is an error (exit 2).\n\n"
      "| dest | flag |\n|---|---|\n";
  for (const UnmodelledArgument& a : kUnmodelled) {
    out += "| `" + std::string(a.dest) + "` | `" + std::string(a.flag) + "` |\n";
  }
  return out;
}

}  // namespace stepsim
