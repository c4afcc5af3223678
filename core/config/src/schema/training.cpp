// The scenario schema's rows for training: parallelism, batch, recompute, optimizer, pipeline
// stages and FP8 (see schema.hpp; rows.hpp has the macros).

#include "rows.hpp"

namespace stepsim::schema_rows {
namespace {

const std::array kRows = {
    // ---- training ----
    KeyInfo{STEPSIM_INT("training.world_size", training.world_size), .required = true,
            .sweep = Sweep::kListed, .default_text = "must be given",
            .check = "divisible by tensor_model_parallel_size * context_parallel_size * "
                     "pipeline_model_parallel_size",
            .doc = "GPUs of the job (the launcher's nodes x processes per node)",
            .int_max = std::int64_t{1} << 24,
            .int_max_why = "stepsim's limit of GPUs (validate_limits.cpp): full-rank simulation "
                       "holds a table entry per GPU and ranks are int32"},
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
    KeyInfo{STEPSIM_BOOL("training.use_megatron_fsdp", training.use_megatron_fsdp),
            .sweep = Sweep::kListed, .flags = "--use-megatron-fsdp=true", .default_text = "false",
            .check = "needs use_distributed_optimizer (Megatron-FSDP v1), the adam optimizer; "
                     "not with use_torch_fsdp2; not modelled yet with pipeline or expert "
                     "parallelism, context parallelism, FP8, multi-token prediction or "
                     "optimizer_impl apex_distributed_fused_adam",
            .doc = "Megatron-FSDP (megatron/core/distributed/fsdp/): every transformer layer an "
                   "FSDP unit whose parameters, gradients and optimizer states are sharded over "
                   "data parallelism as data_parallel_sharding_strategy says"},
    KeyInfo{STEPSIM_ENUM("training.data_parallel_sharding_strategy",
                         training.data_parallel_sharding_strategy, DpSharding),
            .choices = kDpShardingNames, .sweep = Sweep::kListed,
            .flags = "--data-parallel-sharding-strategy", .default_text = "\"optim_grads_params\"",
            .check = "read only with use_megatron_fsdp; no_shard not modelled yet",
            .doc = "what Megatron-FSDP shards: no_shard (gradients all-reduced once per step), "
                   "optim (optimizer states; gradients reduce-scattered once per step, "
                   "parameters gathered after the step), optim_grads (also gradients: each "
                   "unit's reduce-scattered in every micro-batch's backward), optim_grads_params "
                   "(also parameters: each unit all-gathered before its forward and again before "
                   "its backward, prefetched one unit ahead)"},
    KeyInfo{STEPSIM_BOOL("training.use_torch_fsdp2", training.use_torch_fsdp2),
            .sweep = Sweep::kListed, .flags = "--use-torch-fsdp2=true", .default_text = "false",
            .check = "not with use_distributed_optimizer or use_megatron_fsdp; needs "
                     "pipeline_model_parallel_size 1, expert_model_parallel_size 1, untied "
                     "embeddings, no fp16 (arguments.py); not modelled yet with context "
                     "parallelism, FP8 or multi-token prediction",
            .doc = "PyTorch FSDP2 (fully_shard per transformer layer, "
                   "torch_fully_sharded_data_parallel.py): parameters, gradients and optimizer "
                   "states sharded over data parallelism, each layer gathered before its forward "
                   "and its backward, its gradients reduce-scattered in every micro-batch"},
    KeyInfo{STEPSIM_BOOL("training.torch_fsdp2_reshard_after_forward",
                         training.torch_fsdp2_reshard_after_forward),
            .flags = "--torch-fsdp2-no-reshard-after-forward=false", .default_text = "true",
            .check = "read only with use_torch_fsdp2",
            .doc = "false: FSDP2 keeps every layer's gathered parameters from its forward to its "
                   "backward (ZeRO-2 like: no second gather, the full parameters held)"},
    KeyInfo{STEPSIM_BOOL("training.fsdp_double_buffer", training.fsdp_double_buffer),
            .flags = "--fsdp-double-buffer=true", .default_text = "false",
            .check = "needs use_megatron_fsdp",
            .doc = "Megatron-FSDP's two persistent gather buffers, each the size of the largest "
                   "unit, held the whole step instead of allocated per gather"},
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
    KeyInfo{STEPSIM_ENUM("training.fp4", training.fp4, Fp4Format), .choices = kFp4FormatNames,
            .null_choice = true, .sweep = Sweep::kListed, .flags = "--fp4-format",
            .default_text = "null (no FP4)",
            .check = "\"e2m1\" or null; not with fp8 (Megatron-LM: \"--fp4-format and "
                     "--fp8-format cannot be used simultaneously\"); the system has a "
                     "peak_flops_fp4 and compute capability 10.0 to 11.0 (Blackwell; TE's "
                     "fused Hadamard-transform cast); tokens per rank a multiple of 64 and "
                     "every linear's widths per rank multiples of 128 (the same cast); not "
                     "modelled yet with sequence parallelism over TP > 1, tp_comm_overlap, "
                     "experts, MLA, Mamba, MTP, FSDP or CUDA graphs",
            .doc = "NVFP4 GEMMs in the transformer layers' linears (Transformer Engine's "
                   "NVFP4BlockScaling): E2M1 values with an E4M3 scale per 16 and an fp32 scale "
                   "per tensor, row- and column-wise copies quantized from 16 bits, weights in "
                   "16x16 blocks, a random Hadamard transform on the column-wise (wgrad) copies "
                   "of inputs and gradients, stochastic rounding of gradients; embedding, "
                   "attention and output layer stay 16-bit; GEMMs TN at the system's "
                   "peak_flops_fp4"},
    KeyInfo{STEPSIM_ENUM("training.fp4_recipe", training.fp4_recipe, Fp4Recipe),
            .choices = kFp4RecipeNames, .sweep = Sweep::kListed, .flags = "--fp4-recipe",
            .default_text = "\"nvfp4\"",
            .check = "\"nvfp4\" or \"custom\"; \"custom\" is not modelled yet",
            .doc = "FP4 scaling: nvfp4 (Transformer Engine's NVFP4BlockScaling) or a custom "
                   "quantizer factory"},
    KeyInfo{STEPSIM_BOOL("training.fp4_param_gather", training.fp4_param_gather),
            .sweep = Sweep::kListed, .flags = "--fp4-param-gather=true", .default_text = "false",
            .check = "needs fp4 (Megatron-LM: \"--fp4-param-gather must be used together with "
                     "--fp4-format.\"); modelled with use_distributed_optimizer (Megatron-Core's "
                     "optimizer), not with FSDP",
            .doc = "NVFP4 parameters (Megatron-Core's fp4_param): no 16-bit copy of the "
                   "linears' weights; the distributed optimizer quantizes its fp32 shards "
                   "(16x16 tile amaxes MAX-reduced over data parallelism), all-gathers the "
                   "row-wise NVFP4 data in half a byte per weight, and TE makes the column-wise "
                   "copies after the gather"},
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
};

}  // namespace

std::span<const KeyInfo> training_keys() { return kRows; }

}  // namespace stepsim::schema_rows
