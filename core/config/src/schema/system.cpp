// The scenario schema's rows for system files (and inline systems)
// (see schema.hpp; rows.hpp has the macros).

#include "rows.hpp"

namespace stepsim::schema_rows {
namespace {

// The ranges of a system file's figures. The lower bounds keep every time computed from a
// figure finite: a peak of 1e-300 FLOP/s would make each GEMM take longer than a double can
// hold. A rate below them (1 GFLOP/s, 1 MB/s, 1% efficiency) is no accelerator or link
// stepsim models. A peak of 0 says the GPU lacks that dtype.
constexpr double kMinFlops = 1e9;
constexpr double kMinBandwidth = 1e6;
constexpr double kMinEfficiency = 0.01;
constexpr double kHuge = 1e30;  // upper bound for rates: anything above is a typo

const std::array kRows = {
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
            .doc = "GPUs per node",
            .int_max = 65536,
            .int_max_why = "the NCCL model (nccl_model.cpp) holds GPUs per node as int and "
                       "multiplies them with NICs; no node is built with more (DGX 8, NVL72 72)"},
    KeyInfo{STEPSIM_INT("system.nvlink_domain_size", system.nvlink_domain_size),
            .sweep = Sweep::kListed, .default_text = "gpus_per_node (one node's GPUs)",
            .check = "a multiple of gpus_per_node; cited when given",
            .doc = "GPUs that share one NVLink fabric (NVSwitch domain; multi-node NVLink: 72 "
                   "on GB200/GB300 NVL72): groups inside it talk over NVLink "
                   "(system.intra_node), groups across domains over the NICs "
                   "(system.inter_node); NCCL counts domains as its nodes",
            .int_max = 65536,
            .int_max_why = "like gpus_per_node: NCCL's model holds GPUs per domain as int; "
                       "the largest NVLink domain built is NVLink Switch's 576 GPUs"},
    KeyInfo{STEPSIM_INT("system.nics_per_node", system.nics_per_node), .required = true,
            .sweep = Sweep::kListed, .default_text = "must be given", .check = kCited,
            .doc = "compute-fabric NICs per node",
            .int_max = 256,
            .int_max_why = "the NCCL model (nccl_model.cpp) casts NICs per node to int and "
                       "multiplies them by channels per NIC in int; no node has more (DGX: 8)"},
    KeyInfo{STEPSIM_INT("system.sm_count", system.sm_count), .sweep = Sweep::kListed,
            .default_text = "0 (not given)", .check = "> 0; cited when given",
            .doc = "streaming multiprocessors per GPU; training.tp_comm_overlap needs it",
            .int_max = 65536,
            .int_max_why = "int in the NCCL channel and SM-margin arithmetic; a GPU has hundreds "
                       "(H100 132, B200 148)"},
    KeyInfo{STEPSIM_INT("system.compute_capability", system.compute_capability),
            .sweep = Sweep::kListed, .default_text = "0 (not given)",
            .check = "in [10, 1000]; cited when given",
            .doc = "CUDA compute capability, major * 10 + minor as NCCL's cudaCompCap (80 A100, "
                   "90 H100/H200, 100 B200); training.fp8_recipe \"mxfp8\" needs 100 or more, "
                   "the Hopper recipes below 100",
            .int_max = 1000,
            .int_max_why = "major * 10 + minor: 1000 is compute capability 100.0"},
    KeyInfo{STEPSIM_INT("system.memory_bytes", system.memory_bytes), .required = true,
            .sweep = Sweep::kListed, .default_text = "must be given", .check = kCited,
            .doc = "device memory per GPU, bytes",
            .int_max = std::int64_t{1} << 50,
            .int_max_why = "bytes (1 PiB): per-GPU byte totals are summed in int64 and doubles; "
                       "a calibration profile's bytes have the same bound"},
    KeyInfo{STEPSIM_REAL("system.peak_flops_fp32", system.peak_flops_fp32), .required = true,
            .sweep = Sweep::kListed, .default_text = "must be given",
            .check = "one of the three peaks > 0; cited",
            .doc = "dense peak of the fp32 GEMM path (TF32 tensor cores where there are); 0 if "
                   "unsupported",
            .zero_allowed = true, .min = kMinFlops, .max = kHuge, .unit = "FLOP/s"},
    KeyInfo{STEPSIM_REAL("system.peak_flops_fp16", system.peak_flops_fp16), .required = true,
            .sweep = Sweep::kListed, .default_text = "must be given", .check = "cited",
            .doc = "dense FP16 tensor-core peak; 0 if unsupported", .zero_allowed = true,
            .min = kMinFlops, .max = kHuge, .unit = "FLOP/s"},
    KeyInfo{STEPSIM_REAL("system.peak_flops_bf16", system.peak_flops_bf16), .required = true,
            .sweep = Sweep::kListed, .default_text = "must be given", .check = "cited",
            .doc = "dense BF16 tensor-core peak; 0 if unsupported", .zero_allowed = true,
            .min = kMinFlops, .max = kHuge, .unit = "FLOP/s"},
    KeyInfo{STEPSIM_REAL("system.peak_flops_fp8", system.peak_flops_fp8), .sweep = Sweep::kListed,
            .default_text = "0 (no FP8 tensor cores)", .check = "cited when given",
            .doc = "dense FP8 (E4M3/E5M2) tensor-core peak; training.fp8 needs it",
            .zero_allowed = true, .min = kMinFlops, .max = kHuge, .unit = "FLOP/s"},
    KeyInfo{STEPSIM_REAL("system.peak_flops_fp4", system.peak_flops_fp4), .sweep = Sweep::kListed,
            .default_text = "0 (no FP4 tensor cores)", .check = "cited when given",
            .doc = "dense NVFP4 (E2M1 with E4M3 scales per 16 values) tensor-core peak; "
                   "training.fp4 needs it",
            .zero_allowed = true, .min = kMinFlops, .max = kHuge, .unit = "FLOP/s"},
    KeyInfo{STEPSIM_REAL("system.hbm_bandwidth_Bps", system.hbm_bandwidth_bytes_per_s),
            .required = true, .sweep = Sweep::kListed, .default_text = "must be given",
            .check = "cited", .doc = "device memory bandwidth", .min = kMinBandwidth, .max = kHuge,
            .unit = "bytes/s"},
    KeyInfo{
        STEPSIM_REAL("system.intra_node.bandwidth_Bps", system.intra_node.bandwidth_bytes_per_s),
        .required = true, .sweep = Sweep::kListed, .default_text = "must be given",
        .check = "cited", .doc = "per GPU, one direction (NVLink/NVSwitch)", .min = kMinBandwidth,
        .max = kHuge, .unit = "bytes/s"},
    KeyInfo{STEPSIM_REAL("system.intra_node.latency_s", system.intra_node.latency_s),
            .required = true, .sweep = Sweep::kListed, .default_text = "must be given",
            .check = "cited", .doc = "one ring step / one-way small message inside a node",
            .zero_allowed = true, .min = 0, .max = 1, .unit = "seconds"},
    KeyInfo{
        STEPSIM_REAL("system.inter_node.bandwidth_Bps", system.inter_node.bandwidth_bytes_per_s),
        .required = true, .sweep = Sweep::kListed, .default_text = "must be given",
        .check = "cited", .doc = "per NIC, one direction", .min = kMinBandwidth, .max = kHuge,
        .unit = "bytes/s"},
    KeyInfo{STEPSIM_REAL("system.inter_node.latency_s", system.inter_node.latency_s),
            .required = true, .sweep = Sweep::kListed, .default_text = "must be given",
            .check = "cited", .doc = "one ring step / one-way small message across nodes",
            .zero_allowed = true, .min = 0, .max = 1, .unit = "seconds"},
    KeyInfo{STEPSIM_REAL("system.efficiency.gemm_max", system.efficiency.gemm_max),
            .required = true, .sweep = Sweep::kListed, .default_text = "must be given",
            .check = "cited",
            .doc = "share of dense peak large GEMMs reach (matmul microbenchmarks)",
            .min = kMinEfficiency, .max = 1, .unit = "fraction"},
    KeyInfo{STEPSIM_REAL("system.efficiency.gemm_half_flops", system.efficiency.gemm_half_flops),
            .required = true, .sweep = Sweep::kListed, .default_text = "must be given",
            .check = "cited", .doc = "GEMM size reaching half of gemm_max; 0 = no size dependence",
            .zero_allowed = true, .min = 0, .max = kHuge, .unit = "FLOPs"},
    KeyInfo{STEPSIM_REAL("system.efficiency.memory_max", system.efficiency.memory_max),
            .required = true, .sweep = Sweep::kListed, .default_text = "must be given",
            .check = "cited", .doc = "share of HBM bandwidth streaming kernels reach",
            .min = kMinEfficiency, .max = 1, .unit = "fraction"},
    KeyInfo{STEPSIM_REAL("system.efficiency.kernel_launch_s", system.efficiency.kernel_launch_s),
            .required = true, .sweep = Sweep::kListed, .default_text = "must be given",
            .check = "cited", .doc = "fixed cost per kernel", .zero_allowed = true, .min = 0,
            .max = 1, .unit = "seconds"},
    KeyInfo{STEPSIM_REAL("system.efficiency.link_max", system.efficiency.link_max),
            .required = true, .sweep = Sweep::kListed, .default_text = "must be given",
            .check = "cited", .doc = "NCCL bus bandwidth over link bandwidth",
            .min = kMinEfficiency, .max = 1, .unit = "fraction"},
    KeyInfo{
        STEPSIM_REAL("system.interference.compute_slowdown", system.interference.compute_slowdown),
        .sweep = Sweep::kListed, .default_text = "1 (no interference)", .check = "cited when given",
        .doc = "compute kernels' time factor while an NCCL kernel runs beside them", .min = 1,
        .max = 10, .unit = "factor"},
    KeyInfo{STEPSIM_REAL("system.interference.collective_slowdown",
                         system.interference.collective_slowdown),
            .sweep = Sweep::kListed, .default_text = "1 (no interference)",
            .check = "cited when given",
            .doc = "an NCCL kernel's time factor while compute kernels run beside it", .min = 1,
            .max = 10, .unit = "factor"},

};

}  // namespace

std::span<const KeyInfo> system_keys() { return kRows; }

}  // namespace stepsim::schema_rows
