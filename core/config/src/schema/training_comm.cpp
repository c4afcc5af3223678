// The scenario schema's rows for training: TP-communication overlap, Transformer Engine's norm
// kernels and NCCL (see schema.hpp; rows.hpp has the macros).

#include "rows.hpp"

namespace stepsim::schema_rows {
namespace {

const std::array kRows = {
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
    // NCCL's algorithm and protocol restrictions (nccl_env.cpp; nccl_model.cpp
    // nccl_tuning_factor; simulate.cpp)
    KeyInfo{.key = "training.nccl_algo",
            .kind = KnobKind::kString,
            .env = "NCCL_ALGO",
            .default_text = "none (NCCL's choice among all)",
            .check = "NCCL's syntax (src/graph/tuning.cc parseList): names of Tree, Ring, "
                     "CollNetDirect, CollNetChain, NVLS, NVLSTree, PAT separated by ',' (any "
                     "case), \"^\" first to disable them instead, and \";Function:list\" "
                     "entries per function (AllGather, ReduceScatter, AllReduce, Broadcast, "
                     "Reduce); a collective of the job left no algorithm is an error (NCCL "
                     "stops); needs a system NCCL's tuning model knows",
            .doc = "the algorithms NCCL's tuning may pick (Megatron's --deterministic-mode "
                   "sets Ring): the others get no bandwidth, as in NCCL; a profile's "
                   "collective, measured at NCCL's default, is scaled by NCCL's model of the "
                   "restricted choice over the default one. CollNet stays off (NCCL's "
                   "default without NCCL_COLLNET_ENABLE)"},
    KeyInfo{.key = "training.nccl_proto",
            .kind = KnobKind::kString,
            .env = "NCCL_PROTO",
            .default_text = "none (NCCL's choice among all)",
            .check = "as nccl_algo, with the protocols LL, LL128, Simple",
            .doc = "the protocols NCCL's tuning may pick, priced as nccl_algo is"},
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
};

}  // namespace

std::span<const KeyInfo> training_comm_keys() { return kRows; }

}  // namespace stepsim::schema_rows
