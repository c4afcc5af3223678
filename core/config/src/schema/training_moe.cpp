// The scenario schema's rows for training: expert parallelism and the MoE layer (see schema.hpp;
// rows.hpp has the macros).

#include "rows.hpp"

namespace stepsim::schema_rows {
namespace {

const std::array kRows = {
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
    KeyInfo{STEPSIM_BOOL("training.overlap_moe_expert_parallel_comm",
                         training.overlap_moe_expert_parallel_comm),
            .sweep = Sweep::kListed, .flags = "--overlap-moe-expert-parallel-comm=true",
            .default_text = "false",
            .check = "expert_model_parallel_size > 1, moe_token_dispatcher_type \"alltoall\" or "
                     "\"flex\", bf16 or fp16, no full recompute, no \"moe\" in "
                     "recompute_modules, moe_shared_expert_overlap off, mtp_num_layers <= 1 "
                     "(transformer_config.py); not modelled yet with "
                     "pipeline_model_parallel_size > 1 "
                     "(the interleaved combined schedule), the flex dispatcher, mtp_num_layers, "
                     "cuda_graph_impl or defer_embedding_wgrad_compute",
            .doc = "EP communication overlap: from the second micro-batch on, a forward and the "
                   "previous micro-batch's backward run as one combined step, forward layer i "
                   "beside backward layer n-1-i, each one's dispatch and combine all-to-alls "
                   "on the communication stream while the other computes "
                   "(combined_1f1b_schedule_for_no_pipelining); the first forward and the last "
                   "backward run alone"},
    KeyInfo{STEPSIM_BOOL("training.delay_wgrad_compute", training.delay_wgrad_compute),
            .sweep = Sweep::kListed, .flags = "--delay-wgrad-compute=true",
            .default_text = "false",
            .check = "overlap_moe_expert_parallel_comm must be enabled when enabling "
                     "delay_wgrad_compute",
            .doc = "in the combined steps, the backward's weight-gradient GEMMs run after its "
                   "dgrad (the experts' beside the dispatch backward, the attention's at the "
                   "end of the layer pair), and the all-to-alls wait only for the dgrad"},
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

}  // namespace

std::span<const KeyInfo> training_moe_keys() { return kRows; }

}  // namespace stepsim::schema_rows
