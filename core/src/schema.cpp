// The scenario schema table (see schema.hpp). Defaults and rules are Megatron-LM's
// (megatron/training/arguments.py, megatron/core/transformer/transformer_config.py); the rule
// texts point at the checks in validate.cpp, which enforces them.

#include "stepsim/core/schema.hpp"

#include <algorithm>
#include <array>
#include <vector>

namespace stepsim {
namespace {

constexpr std::array<std::string_view, 3> kGranularity = {"none", "selective", "full"};
constexpr std::array<std::string_view, 3> kMethod = {"none", "uniform", "block"};
constexpr std::array<std::string_view, 3> kPosition = {"learned_absolute", "rope", "none"};
constexpr std::array<std::string_view, 2> kNorm = {"LayerNorm", "RMSNorm"};

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
            .doc = "prose: where the setting comes from"},
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
    KeyInfo{STEPSIM_INT("system.memory_bytes", system.memory_bytes), .required = true,
            .sweep = Sweep::kListed, .default_text = "must be given", .check = kCited,
            .doc = "device memory per GPU, bytes"},
    KeyInfo{STEPSIM_REAL("system.peak_flops_fp32", system.peak_flops_fp32), .required = true,
            .sweep = Sweep::kListed, .default_text = "must be given",
            .check = "FLOP/s >= 0; one of the three peaks > 0; cited",
            .doc = "dense peak of the fp32 GEMM path (TF32 tensor cores where there are); 0 if "
                   "unsupported"},
    KeyInfo{STEPSIM_REAL("system.peak_flops_fp16", system.peak_flops_fp16), .required = true,
            .sweep = Sweep::kListed, .default_text = "must be given", .check = "FLOP/s >= 0; cited",
            .doc = "dense FP16 tensor-core peak; 0 if unsupported"},
    KeyInfo{STEPSIM_REAL("system.peak_flops_bf16", system.peak_flops_bf16), .required = true,
            .sweep = Sweep::kListed, .default_text = "must be given", .check = "FLOP/s >= 0; cited",
            .doc = "dense BF16 tensor-core peak; 0 if unsupported"},
    KeyInfo{STEPSIM_REAL("system.hbm_bandwidth_Bps", system.hbm_bandwidth_bytes_per_s),
            .required = true, .sweep = Sweep::kListed, .default_text = "must be given",
            .check = "bytes/s > 0; cited", .doc = "device memory bandwidth"},
    KeyInfo{
        STEPSIM_REAL("system.intra_node.bandwidth_Bps", system.intra_node.bandwidth_bytes_per_s),
        .required = true, .sweep = Sweep::kListed, .default_text = "must be given",
        .check = "bytes/s > 0; cited", .doc = "per GPU, one direction (NVLink/NVSwitch)"},
    KeyInfo{STEPSIM_REAL("system.intra_node.latency_s", system.intra_node.latency_s),
            .required = true, .sweep = Sweep::kListed, .default_text = "must be given",
            .check = "seconds in [0, 1]; cited",
            .doc = "one ring step / one-way small message inside a node"},
    KeyInfo{
        STEPSIM_REAL("system.inter_node.bandwidth_Bps", system.inter_node.bandwidth_bytes_per_s),
        .required = true, .sweep = Sweep::kListed, .default_text = "must be given",
        .check = "bytes/s > 0; cited", .doc = "per NIC, one direction"},
    KeyInfo{STEPSIM_REAL("system.inter_node.latency_s", system.inter_node.latency_s),
            .required = true, .sweep = Sweep::kListed, .default_text = "must be given",
            .check = "seconds in [0, 1]; cited",
            .doc = "one ring step / one-way small message across nodes"},
    KeyInfo{STEPSIM_REAL("system.efficiency.gemm_max", system.efficiency.gemm_max),
            .required = true, .sweep = Sweep::kListed, .default_text = "must be given",
            .check = "fraction in (0, 1]; cited",
            .doc = "share of dense peak large GEMMs reach (matmul microbenchmarks)"},
    KeyInfo{STEPSIM_REAL("system.efficiency.gemm_half_flops", system.efficiency.gemm_half_flops),
            .required = true, .sweep = Sweep::kListed, .default_text = "must be given",
            .check = "FLOPs >= 0; cited",
            .doc = "GEMM size reaching half of gemm_max; 0 = no size dependence"},
    KeyInfo{STEPSIM_REAL("system.efficiency.memory_max", system.efficiency.memory_max),
            .required = true, .sweep = Sweep::kListed, .default_text = "must be given",
            .check = "fraction in (0, 1]; cited",
            .doc = "share of HBM bandwidth streaming kernels reach"},
    KeyInfo{STEPSIM_REAL("system.efficiency.kernel_launch_s", system.efficiency.kernel_launch_s),
            .required = true, .sweep = Sweep::kListed, .default_text = "must be given",
            .check = "seconds in [0, 1]; cited", .doc = "fixed cost per kernel"},
    KeyInfo{STEPSIM_REAL("system.efficiency.link_max", system.efficiency.link_max),
            .required = true, .sweep = Sweep::kListed, .default_text = "must be given",
            .check = "fraction in (0, 1]; cited", .doc = "NCCL bus bandwidth over link bandwidth"},

    // ---- model ----
    KeyInfo{STEPSIM_INT("model.num_layers", model.num_layers), .required = true,
            .sweep = Sweep::kListed, .flags = "--num-layers", .default_text = "must be given",
            .check = "> 0; divisible by pipeline_model_parallel_size", .doc = "transformer layers"},
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
    KeyInfo{STEPSIM_BOOL("model.untie_embeddings_and_output_weights",
                         model.untie_embeddings_and_output_weights),
            .sweep = Sweep::kListed, .flags = "--untie-embeddings-and-output-weights=true",
            .default_text = "false",
            .doc = "a separate output layer instead of the tied embedding"},
    KeyInfo{STEPSIM_BOOL("model.use_flash_attn", model.use_flash_attn), .sweep = Sweep::kAuto,
            .autoable = true, .flags = "--use-flash-attn=true", .default_text = "false",
            .doc = "fused flash attention (no s x s score tensors in memory)"},
    KeyInfo{STEPSIM_BOOL("model.add_bias_linear", model.add_bias_linear), .sweep = Sweep::kListed,
            .flags = "--disable-bias-linear=false --add-bias-linear=true", .default_text = "true",
            .doc = "biases in the linear layers"},
    KeyInfo{STEPSIM_ENUM("model.position_embedding_type", model.position_embedding_type,
                         PositionEmbedding),
            .choices = kPosition, .sweep = Sweep::kListed,
            .flags = "--position-embedding-type --use-rotary-position-embeddings=rope",
            .default_text = "\"learned_absolute\"",
            .check = "\"learned_absolute\", \"rope\", \"none\"", .doc = "position embedding"},
    KeyInfo{STEPSIM_ENUM("model.normalization", model.normalization, Normalization),
            .choices = kNorm, .sweep = Sweep::kListed, .flags = "--normalization",
            .default_text = "\"LayerNorm\"", .check = "\"LayerNorm\", \"RMSNorm\"",
            .doc = "normalization layer"},

    // ---- training ----
    KeyInfo{STEPSIM_INT("training.world_size", training.world_size), .required = true,
            .sweep = Sweep::kListed, .default_text = "must be given",
            .check = "divisible by tensor_model_parallel_size * pipeline_model_parallel_size",
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
    KeyInfo{
        STEPSIM_INT("training.pipeline_model_parallel_size", training.pipeline_model_parallel_size),
        .sweep = Sweep::kAuto, .autoable = true, .flags = "--pipeline-model-parallel-size",
        .default_text = "1", .check = "divides num_layers", .doc = "p"},
    KeyInfo{STEPSIM_INT("training.virtual_pipeline_model_parallel_size",
                        training.virtual_pipeline_model_parallel_size),
            .sweep = Sweep::kAuto, .autoable = true,
            .flags = "--virtual-pipeline-model-parallel-size",
            .default_text = "1 (no interleaving)",
            .check = "divides num_layers / pipeline_model_parallel_size; with > 1: "
                     "pipeline_model_parallel_size > 2 (> 1 with overlap_p2p_comm), "
                     "num_microbatches >= pipeline_model_parallel_size; give at most one of the "
                     "three virtual-stage keys",
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
            .choices = kGranularity, .null_choice = true, .sweep = Sweep::kAuto, .autoable = true,
            .flags = "--recompute-granularity --recompute-activations=selective",
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
            .choices = kMethod, .null_choice = true, .sweep = Sweep::kAuto, .autoable = true,
            .flags = "--recompute-method", .default_text = "null",
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
    KeyInfo{STEPSIM_INT("training.microbatch_group_size_per_vp_stage",
                        training.microbatch_group_size_per_vp_stage),
            .sweep = Sweep::kAuto, .autoable = true,
            .flags = "--microbatch-group-size-per-virtual-pipeline-stage",
            .default_text = "pipeline_model_parallel_size",
            .check = "in [pipeline_model_parallel_size, num_microbatches]; num_microbatches mod it "
                     "is 0 or >= pipeline_model_parallel_size; only with interleaving",
            .doc = "N of the interleaved schedule"},
};

#undef STEPSIM_INT
#undef STEPSIM_BOOL
#undef STEPSIM_REAL
#undef STEPSIM_ENUM

// Megatron-LM arguments that change the job and are not modelled yet (megatron/training/
// arguments.py and the config dataclasses its flags are built from).
constexpr UnmodelledArgument kUnmodelled[] = {
    // parallelism
    {"context_parallel_size", "--context-parallel-size"},
    {"cp_comm_type", "--cp-comm-type"},
    {"hierarchical_context_parallel_sizes", "--hierarchical-context-parallel-sizes"},
    {"expert_model_parallel_size", "--expert-model-parallel-size"},
    {"expert_tensor_parallel_size", "--expert-tensor-parallel-size"},
    {"decoder_first_pipeline_num_layers", "--decoder-first-pipeline-num-layers"},
    {"decoder_last_pipeline_num_layers", "--decoder-last-pipeline-num-layers"},
    {"account_for_embedding_in_pipeline_split", "--account-for-embedding-in-pipeline-split"},
    {"account_for_loss_in_pipeline_split", "--account-for-loss-in-pipeline-split"},
    {"pipeline_model_parallel_layout", "--pipeline-model-parallel-layout"},
    {"num_distributed_optimizer_instances", "--num-distributed-optimizer-instances"},
    {"use_torch_fsdp2", "--use-torch-fsdp2"},
    {"use_megatron_fsdp", "--use-megatron-fsdp"},
    {"data_parallel_sharding_strategy", "--data-parallel-sharding-strategy"},
    // precision
    {"fp8", "--fp8-format"},
    {"fp8_recipe", "--fp8-recipe"},
    {"fp8_param_gather", "--fp8-param-gather"},
    {"fp8_amax_history_len", "--fp8-amax-history-len"},
    {"fp8_amax_compute_algo", "--fp8-amax-compute-algo"},
    {"fp4", "--fp4-format"},
    {"first_last_layers_bf16", "--first-last-layers-bf16"},
    // communication overlap
    {"tp_comm_overlap", "--tp-comm-overlap"},
    {"tp_comm_overlap_cfg", "--tp-comm-overlap-cfg"},
    {"defer_embedding_wgrad_compute", "--defer-embedding-wgrad-compute"},
    {"wgrad_deferral_limit", "--wgrad-deferral-limit"},
    {"overlap_moe_expert_parallel_comm", "--overlap-moe-expert-parallel-comm"},
    // attention and layers
    {"attention_backend", "--attention-backend"},
    {"window_size", "--window-size"},
    {"multi_latent_attention", "--multi-latent-attention"},
    {"q_lora_rank", "--q-lora-rank"},
    {"kv_lora_rank", "--kv-lora-rank"},
    {"qk_head_dim", "--qk-head-dim"},
    {"qk_pos_emb_head_dim", "--qk-pos-emb-head-dim"},
    {"v_head_dim", "--v-head-dim"},
    {"qk_layernorm", "--qk-layernorm"},
    {"mtp_num_layers", "--mtp-num-layers"},
    {"hybrid_override_pattern", "--hybrid-override-pattern"},
    {"recompute_modules", "--recompute-modules"},
    {"cpu_offloading", "--cpu-offloading"},
    // mixture of experts
    {"num_experts", "--num-experts"},
    {"moe_router_topk", "--moe-router-topk"},
    {"moe_ffn_hidden_size", "--moe-ffn-hidden-size"},
    {"moe_shared_expert_intermediate_size", "--moe-shared-expert-intermediate-size"},
    {"moe_layer_freq", "--moe-layer-freq"},
    {"moe_token_dispatcher_type", "--moe-token-dispatcher-type"},
    {"moe_grouped_gemm", "--moe-grouped-gemm"},
    {"moe_router_load_balancing_type", "--moe-router-load-balancing-type"},
    {"moe_expert_capacity_factor", "--moe-expert-capacity-factor"},
    {"moe_pad_expert_input_to_capacity", "--moe-pad-expert-input-to-capacity"},
    {"moe_router_dtype", "--moe-router-dtype"},
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

std::string unknown_key_message(std::string_view section, std::string_view key) {
  if (const UnmodelledArgument* a = find_unmodelled_argument(key)) {
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
      "Generated from the schema table in `core/src/schema.cpp` by `stepsim_scenario_keys`\n"
      "(`build/bin/stepsim_scenario_keys > docs/scenario-keys.md`); the test\n"
      "`Schema.KeyReferenceIsCurrent` fails when this file is stale. Do not edit it by hand.\n\n"
      "A scenario is one JSON object: the top-level keys, a `model` and a `training` section\n"
      "(Megatron-LM argument dests; omitted keys take Megatron-LM's defaults), and a `system`\n"
      "(a system file, whose keys are the `system.` rows). Unknown keys are errors: a misspelt "
      "key\n"
      "gets \"did you mean\", a Megatron-LM argument stepsim does not model gets \"does not model\n"
      "yet\" (the list at the end). `Sweep`: a sweep file may vary the key (`auto`: it also takes\n"
      "`\"auto\"`, the key's whole valid range). `Megatron-LM flag`: what `--megatron-args` and\n"
      "`import-megatron` read (`--flag=value` sets the value without taking one).\n\n";
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
