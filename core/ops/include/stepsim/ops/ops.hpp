#pragma once
// The vocabulary of work: what one representative GPU executes. Shapes are per rank (after
// tensor-parallel slicing). Durations are not here: a CostModel turns an op into seconds.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "stepsim/base/dtype.hpp"

namespace stepsim {

enum class Phase : std::uint8_t {
  kForward,
  kBackwardInput,   ///< input-gradient (dgrad) work
  kBackwardWeight,  ///< weight-gradient (wgrad) work
  kRecompute,       ///< forward work re-done in backward
  kStep,            ///< once per step: gradient reduction, optimizer
};

/// The cuBLAS operand layout a GEMM runs in, as Transformer Engine names it (cuBLAS's
/// column-major op(A), op(B)): TE runs a linear's forward "TN", its input gradient "NN" and
/// its weight gradient "NT" (transformer_engine/pytorch/module/linear.py: general_gemm's
/// default layout "TN"; the backward's dgrad layout="NN", wgrad layout="NT"), and every FP8
/// GEMM "TN" on Hopper (cuBLASLt's only FP8 layout there: TE casts transposed copies
/// instead). In cuBLAS's terms TE's product is D[n x m] = op(A) op(B) for a GemmOp of m x n
/// (tokens are cuBLAS's n). kUnspecified: not a linear layer's GEMM (attention's batched
/// products) or a sample whose layout was not recorded (public data).
enum class GemmLayout : std::uint8_t { kUnspecified, kTN, kNN, kNT };

/// The layout Transformer Engine runs a linear layer's GEMM of `phase` in (see GemmLayout).
GemmLayout te_linear_layout(Phase phase, DType dtype);

/// How an FP8 GEMM's operands are scaled. kTensor: one fp32 scale per tensor (delayed and
/// per-tensor current scaling; every GEMM that is not FP8). Transformer Engine's
/// Float8BlockScaling ("blockwise") runs its GEMMs through cuBLASLt with a scale per block:
/// kBlock128x128 for fprop and dgrad (the weight per 128x128 block,
/// CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F, the other operand per 1x128 tile, VEC128_32F)
/// and kBlock1x128 for wgrad (both operands per 1x128 tile along the tokens), other kernels
/// than per-tensor scaling's (transformer_engine/common/gemm/cublaslt_gemm.cu). Its
/// MXFP8BlockScaling ("mxfp8", Blackwell) scales both operands of every GEMM per 32
/// consecutive elements along k with E8M0 exponents (CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0):
/// kMx1x32, in the layouts of 16-bit GEMMs (each operand's row- or column-wise copy).
/// NVFP4BlockScaling (Blackwell, DType::kFp4): an E4M3 scale per 16 consecutive elements along
/// k (CUBLASLT_MATMUL_MATRIX_SCALE_VEC16_UE4M3) and a per-tensor fp32 scale folded into alpha:
/// kNv1x16, TN only.
enum class GemmScaling : std::uint8_t { kTensor, kBlock128x128, kBlock1x128, kMx1x32, kNv1x16 };

/// C[m,n] = A[m,k] * B[k,n], `batch` independent products (batched GEMM for attention).
struct GemmOp {
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t batch = 1;
  DType dtype = DType::kBf16;
  GemmLayout layout = GemmLayout::kUnspecified;
  GemmScaling scaling = GemmScaling::kTensor;
  /// FP8 with cuBLASLt's fast accumulation (CUBLASLT_MATMUL_DESC_FAST_ACCUM = 1), which
  /// Transformer Engine asks for in fprop under delayed and per-tensor current scaling
  /// (use_split_accumulator false: module/base.py _2X_ACC_FPROP, recipe fp8_gemm_fprop);
  /// dgrad, wgrad and block scaling accumulate split (the default, false).
  bool fast_accum = false;
  /// > 1: one of that many equal chunks (of n) of one cuBLAS atomic GEMM (Transformer
  /// Engine's atomic_gemm_overlap_rs): the kernel runs the whole GEMM, n * atomic_chunks wide,
  /// and this chunk's share of it is the whole's time over atomic_chunks (CostModel::shape_s).
  std::int64_t atomic_chunks = 1;
  double flops() const { return 2.0 * static_cast<double>(batch * m) * static_cast<double>(n * k); }
  bool operator==(const GemmOp&) const = default;
};

/// A fused (flash) attention kernel over `batch` sequences and `heads` query heads on this rank.
struct AttentionOp {
  std::int64_t batch = 0;
  std::int64_t heads = 0;     ///< query heads on this rank
  std::int64_t kv_heads = 0;  ///< key/value heads (query groups) on this rank
  std::int64_t seq = 0;       ///< query positions per sequence
  std::int64_t head_dim = 0;
  bool causal = true;
  bool backward = false;
  DType dtype = DType::kBf16;
  /// Key/value positions per sequence; 0 = seq (self-attention over one block). A
  /// context-parallel step attends seq queries to another block of keys.
  std::int64_t seq_kv = 0;
  /// FLOP accounting only (model and hardware FLOPs, MFU/HFU): the score-matrix entries per
  /// head and sequence this kernel stands for in Megatron's count, which ignores the causal
  /// mask; 0 = seq * kv_seq(). Context-parallel kernels that skip fully masked half-chunks
  /// (Transformer Engine's ring sections, its all-gather steps) stand for the whole rows of
  /// the score matrix their queries own, so counted FLOPs do not depend on the parallel layout.
  std::int64_t counted_scores = 0;
  /// Value head dim; 0 = head_dim. Multi-latent attention's keys are wider than its values
  /// (query/key head_dim = qk_head_dim + qk_pos_emb_head_dim, values v_head_dim).
  std::int64_t v_head_dim = 0;
  /// Sliding-window attention (Megatron's --window-size (window - 1, 0), causal self-attention
  /// only): each query attends to at most this many keys, itself and the window - 1 before it;
  /// 0 = no window. Transformer Engine's fused kernels skip the score tiles outside the band.
  std::int64_t window = 0;

  std::int64_t kv_seq() const { return seq_kv > 0 ? seq_kv : seq; }
  std::int64_t v_dim() const { return v_head_dim > 0 ? v_head_dim : head_dim; }
  /// Score entries the kernel computes: the causal band (causal_band_scores) with a window,
  /// otherwise the seq x kv_seq() rectangle (causal masking not exploited, as Megatron counts).
  double scores() const;
  /// Matmul FLOPs of scores(): what cost models price.
  double flops() const;
  /// FLOPs this kernel adds to the step's count: counted_scores, or the seq x kv_seq()
  /// rectangle, window or not (Megatron's num_floating_point_operations ignores the window).
  double counted_flops() const;
  bool operator==(const AttentionOp&) const = default;
};

/// A kernel bound by memory traffic: layer norm, dropout, bias+GeLU, softmax, optimizer.
struct MemoryBoundOp {
  std::int64_t bytes = 0;  ///< bytes read plus bytes written
  /// Launches the op takes, each moving bytes / kernels (a multi-tensor kernel that needs
  /// several launches, or one kernel per tensor); cost models price one launch of that size
  /// `kernels` times (CostModel::shape_s).
  std::int64_t kernels = 1;
  bool operator==(const MemoryBoundOp&) const = default;
};

/// kAllToAll: every member sends 1/n of its buffer to each other member (context parallelism's
/// Ulysses exchange; NCCL runs it as grouped sends and receives). kDeepEpDispatch and
/// kDeepEpCombine: DeepEP's normal (high-throughput) dispatch and combine kernels over the
/// expert TP x EP group, not NCCL: a token crosses RDMA once per destination node and NVLink
/// to each destination GPU (CollectiveOp::bytes and rdma_bytes; deepep_cost.hpp prices them).
enum class CollectiveKind : std::uint8_t {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kAllToAll,
  kDeepEpDispatch,
  kDeepEpCombine
};
/// kData: Megatron's data-parallel group with context parallelism (dp * cp ranks: gradients
/// are reduced and the distributed optimizer sharded over it). kTensorData: the tensor- and
/// data-parallel ranks of one pipeline stage together (Megatron's amax reduction group, over
/// which FP8 delayed scaling reduces its amaxes). kContext: the context-parallel group.
/// Mixture of experts (Megatron's expert rank generator, order tp-ep-dp-pp): kExpert, the
/// expert-parallel group (the alltoall dispatcher's all-to-all); kExpertTensor, the experts'
/// tensor-parallel group; kExpertTensorExpert, the two together (the allgather dispatcher's
/// group); kExpertData, the expert data-parallel group over which the experts' gradients are
/// reduced and their optimizer states sharded. kContextA2a: the all-to-all level of
/// hierarchical context parallelism (cp_comm_type a2a+p2p; Megatron's
/// _HIERARCHICAL_CONTEXT_PARALLEL_GROUPS[0], consecutive ranks of the CP group). kGradStats:
/// the optimizer's grad_stats_parallel_group, over which the gradient norm is summed: the
/// world with the distributed optimizer (its intra_dist_opt_group), Megatron's model-parallel
/// group ("tp-pp", every pipeline stage) otherwise.
enum class CommGroup : std::uint8_t {
  kTensor,
  kData,
  kEmbedding,
  kTensorData,
  kContext,
  kExpert,
  kExpertTensor,
  kExpertTensorExpert,
  kExpertData,
  kContextA2a,
  kGradStats,
  kTensorContext
};

/// A collective over a process group. `bytes` is nccl-tests' "size": the full buffer
/// (all-reduce: the reduced tensor; all-gather: the gathered output; reduce-scatter: the
/// unscattered input).
struct CollectiveOp {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  CommGroup group = CommGroup::kTensor;
  std::int64_t bytes = 0;
  std::int64_t group_size = 1;
  std::int64_t nodes_spanned = 1;  ///< nodes the group's members live on (1 = NVLink only)
  /// An NCCL kernel, which takes SMs and HBM bandwidth from the compute beside it (the
  /// engine's interference, sim/engine/include/stepsim/engine/resource_model.hpp); false: an implementation whose SM
  /// cost is in its own duration (Transformer Engine's userbuffers), not interfered again.
  bool nccl = true;
  /// kDeepEp*: the bytes this rank's tokens put on RDMA (`bytes`: on NVLink), as DeepEP's
  /// tests count them (tests/legacy/test_internode.py: tokens x distinct destination nodes,
  /// its own included; received tokens for NVLink).
  std::int64_t rdma_bytes = 0;
  /// Share of the GPU's SMs left to compute kernels while this runs: < 1 for kernels that hold
  /// SMs for their whole run (DeepEP's num_sms of sm_count); 1: NCCL's interference or none.
  double compute_share = 1.0;
  bool operator==(const CollectiveOp&) const = default;
};

/// One pipeline message between adjacent stages, or one step of a ring inside a group: the
/// context-parallel ring (every CP rank sends its block to the next and receives one from the
/// previous) or a Transformer Engine userbuffers exchange of the tensor-parallel group.
struct P2POp {
  std::int64_t bytes = 0;
  bool inter_node = false;
  bool nccl = true;  ///< as CollectiveOp::nccl
  /// A ring step's peers: send to the group position + peer_step and receive from position -
  /// peer_step (modulo the ring); 0: swap with the pair partner (position ^ 1, the first step
  /// of TE's aggregated ring exchange). Pipeline messages take their peers from the schedule.
  std::int32_t peer_step = 1;
  bool operator==(const P2POp&) const = default;
};

using OpShape = std::variant<GemmOp, AttentionOp, MemoryBoundOp, CollectiveOp, P2POp>;


/// Where an op is issued, like a CUDA stream. kContextComm: context-parallel exchanges of
/// keys and values (Transformer Engine's cp_stream and NCCL's stream for the CP group).
enum class Stream : std::uint8_t { kCompute, kTensorComm, kPipelineComm, kDataComm, kContextComm };
inline constexpr std::size_t kStreamCount = 5;

/// One op of a plan. Ops of a list run on their stream in list order; `deps` add explicit
/// cross-stream waits on earlier ops of the same list.
struct Op {
  std::string name;       ///< stable short name, e.g. "qkv_gemm", "attn_softmax"
  std::int32_t layer = -1;  ///< global transformer layer index, -1 outside layers
  Phase phase = Phase::kForward;
  Stream stream = Stream::kCompute;
  OpShape shape;
  std::vector<std::int32_t> deps;  ///< indices of earlier ops in the same list
  std::int64_t workspace_bytes = 0;  ///< transient memory held while the op runs
  /// Share of the GPU's SMs a compute op runs on: < 1 for a GEMM that Transformer Engine
  /// launches with an SM margin beside a userbuffers communication kernel (set_sm_margin:
  /// sm_count - num_sm SMs). CostModel::op_s prices it as the full-GPU time / sm_share.
  double sm_share = 1.0;
  /// Memory a step op allocates and keeps to the end of the step: the optimizer's fp32 copy
  /// of its bf16 gradient shard (grad_reduce_in_bf16), freed by the next step's zero_grad.
  std::int64_t held_bytes = 0;
  /// The host blocks before issuing this op until op `host_waits_for` (an earlier op of the
  /// same list) has ended on the GPU, wakes and only then issues it: the device-to-host
  /// synchronisation of Megatron-Core's alltoall token dispatcher (token_dispatcher.py,
  /// d2h_event.synchronize() at its cuda_sync_point). -1: no such wait. Priced with the
  /// profile's host costs (CostModel::host), where the host is modelled.
  std::int32_t host_waits_for = -1;

  /// Arithmetic of this op (GEMM/attention FLOPs); 0 for memory-bound and communication.
  double flops() const;
  bool operator==(const Op&) const = default;
};

/// Whether a serialised executor that runs non-blocking communication (the validator's CPU
/// backend: MPI calls on threads of their own) posts `op` and goes on: the context-parallel
/// ring's steps and Transformer Engine's userbuffers exchanges and collectives (the ops
/// Megatron's TE issues on side streams and waits for where their result is needed).
inline bool posted_when_serial(const Op& op) {
  if (std::holds_alternative<P2POp>(op.shape)) {
    return op.stream == Stream::kContextComm || op.stream == Stream::kTensorComm;
  }
  const auto* c = std::get_if<CollectiveOp>(&op.shape);
  return c != nullptr && op.stream == Stream::kTensorComm && c->group == CommGroup::kTensor &&
         !c->nccl;
}

std::string_view to_string(Phase p);
std::string_view to_string(Stream s);
std::string_view to_string(CollectiveKind k);
std::string_view to_string(CommGroup g);
std::string_view to_string(GemmLayout l);  ///< "TN" | "NN" | "NT" | "" (unspecified)
/// "TN" | "NN" | "NT"; nullopt otherwise.
std::optional<GemmLayout> parse_gemm_layout(std::string_view s);
std::string_view to_string(
    GemmScaling s);  ///< "tensor" | "block_128x128" | "block_1x128" | "mx_1x32"
/// "tensor" | "block_128x128" | "block_1x128" | "mx_1x32"; nullopt otherwise.
std::optional<GemmScaling> parse_gemm_scaling(std::string_view s);

}  // namespace stepsim
