#pragma once
// OpList appends ops to one list of a ChunkPlan and writes their cross-stream waits the way
// PyTorch orders work: a collective waits for the compute issued before it (the NCCL stream
// syncs with the current stream when the collective is enqueued), and compute issued after
// a handle.wait() waits for that collective. Internal to stepsim_core.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "stepsim/base/assert.hpp"
#include "stepsim/ops/ops.hpp"
#include "stepsim/layout/workload_dims.hpp"

namespace stepsim::detail {

class OpList {
 public:
  OpList(std::vector<Op>& ops, const Dims& dims) : ops_(ops), dims_(dims) {}

  const Dims& dims() const { return dims_; }

  /// Appends a compute-stream op; it waits for every collective passed to wait() since the
  /// previous compute op. Returns its index.
  std::int32_t compute(std::string_view name, std::int32_t layer, Phase phase, OpShape shape,
                       std::int64_t workspace_bytes = 0) {
    Op& op = push(name, layer, phase, Stream::kCompute, std::move(shape));
    op.workspace_bytes = workspace_bytes;
    if (pending_count_ > 0) {
      op.deps.assign(pending_.begin(), pending_.begin() + pending_count_);
      pending_count_ = 0;
    }
    last_compute_ = static_cast<std::int32_t>(ops_.size()) - 1;
    return last_compute_;
  }

  std::int32_t memory(std::string_view name, std::int32_t layer, Phase phase,
                      std::int64_t bytes) {
    return compute(name, layer, phase, MemoryBoundOp{bytes});
  }

  /// A Transformer Engine norm kernel (LayerNorm/RMSNorm, forward or backward by `phase`)
  /// moving `norm_bytes`, on the SMs NVTE_{FWD,BWD}_LAYERNORM_SM_MARGIN leaves it
  /// (Op::sm_share). `other_bytes`: memory traffic of a full-GPU kernel charged to the same op
  /// (autograd's add of the residual gradient after a norm backward); the op's share then
  /// weighs the two by bytes, so that only the norm's bytes move at the reduced rate.
  std::int32_t norm(std::string_view name, std::int32_t layer, Phase phase, std::int64_t norm_bytes,
                    std::int64_t other_bytes = 0) {
    const bool forward = phase == Phase::kForward || phase == Phase::kRecompute;
    const double share = forward ? dims_.norm_share_fwd : dims_.norm_share_bwd;
    const std::int32_t i = memory(name, layer, phase, norm_bytes + other_bytes);
    if (share < 1.0) {
      const auto n = static_cast<double>(norm_bytes);
      const auto o = static_cast<double>(other_bytes);
      ops_[static_cast<std::size_t>(i)].sm_share = (n + o) / (n / share + o);
    }
    return i;
  }

  /// A linear layer's GEMM (or `batch` of them: grouped experts) in the params dtype, in the
  /// layout Transformer Engine runs `phase` in.
  std::int32_t gemm(std::string_view name, std::int32_t layer, Phase phase, std::int64_t m,
                    std::int64_t n, std::int64_t k, std::int64_t batch = 1,
                    std::int64_t workspace_bytes = 0) {
    return compute(name, layer, phase,
                   GemmOp{.m = m, .n = n, .k = k, .batch = batch, .dtype = dims_.dtype,
                          .layout = te_linear_layout(phase, dims_.dtype)},
                   workspace_bytes);
  }

  /// A batched product of unfused attention (torch.baddbmm/bmm of Megatron's local core
  /// attention): no linear layer's layout.
  std::int32_t attention_gemm(std::string_view name, std::int32_t layer, Phase phase,
                              std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch) {
    return compute(name, layer, phase,
                   GemmOp{.m = m, .n = n, .k = k, .batch = batch, .dtype = dims_.dtype});
  }

  /// A GEMM of a transformer layer's linear (QKV, projection, FC1, FC2): FP8 operands under
  /// Transformer Engine's FP8 autocast (the output stays 16-bit), else the params dtype.
  /// Block scaling (fp8_recipe "blockwise"): wgrad scales both operands per 1x128 tile, fprop
  /// and dgrad the weight per 128x128 block (GemmScaling); MXFP8 scales every GEMM's operands
  /// per 1x32 block in the 16-bit layouts. Delayed and current per-tensor
  /// scaling run fprop with fast accumulation (GemmOp::fast_accum). `batch` > 1: a grouped GEMM
  /// of that many products (the routed experts' GroupedLinear).
  std::int32_t linear_gemm(std::string_view name, std::int32_t layer, Phase phase, std::int64_t m,
                           std::int64_t n, std::int64_t k, std::int64_t batch = 1) {
    const DType dtype = dims_.fp4 ? DType::kFp4 : dims_.fp8 ? DType::kFp8 : dims_.dtype;
    GemmScaling scaling = GemmScaling::kTensor;
    GemmLayout layout = te_linear_layout(phase, dtype);
    if (dims_.fp4) {
      // NVFP4 (cublaslt_gemm.cu): VEC16_UE4M3 scales on both operands, TN only.
      scaling = GemmScaling::kNv1x16;
    } else if (dims_.fp8_mx) {
      // MXFP8 on Blackwell (cublaslt_gemm.cu CanonicalizeGemmInput): each operand's row-wise
      // or column-wise copy, picked by its transpose, in the layouts of 16-bit GEMMs.
      scaling = GemmScaling::kMx1x32;
      layout = te_linear_layout(phase, DType::kBf16);
    } else if (dims_.fp8_block) {
      scaling =
          phase == Phase::kBackwardWeight ? GemmScaling::kBlock1x128 : GemmScaling::kBlock128x128;
    }
    const bool fprop = phase == Phase::kForward || phase == Phase::kRecompute;
    if ((dims_.fp8_mx_params || dims_.fp4_params) && phase != Phase::kBackwardWeight) {
      // A primary MXFP8 or NVFP4 weight keeps unswizzled scales (base.py
      // _enable_weight_preswizzle: not for primary FP8 weights): gemm.cpp swizzles the copy
      // fprop or dgrad reads, its n x k / 32 (NVFP4: / 16) scales read and written, before
      // every such GEMM.
      std::string swizzle(name);
      swizzle += "_weight_swizzle";
      memory(swizzle, layer, phase, 2 * (batch * n * k / (dims_.fp4 ? 16 : 32)));
    }
    return compute(name, layer, phase,
                   GemmOp{.m = m,
                          .n = n,
                          .k = k,
                          .batch = batch,
                          .dtype = dtype,
                          .layout = layout,
                          .scaling = scaling,
                          .fast_accum = dims_.fp8 && !dims_.fp8_block && fprop});
  }

  /// Issues a tensor-parallel collective of `bytes` (nccl-tests size) after the last compute.
  std::int32_t tp_collective(CollectiveKind kind, std::int32_t layer, Phase phase,
                             std::int64_t bytes) {
    return collective(tp_name(kind), layer, phase, Stream::kTensorComm,
                      CollectiveOp{kind, CommGroup::kTensor, bytes, dims_.t, dims_.tp_nodes});
  }

  /// Issues a context-parallel collective (all-to-all, all-gather, reduce-scatter) of `bytes`
  /// (nccl-tests size) on the CP stream after the last compute.
  std::int32_t cp_collective(std::string_view name, CollectiveKind kind, std::int32_t layer,
                             Phase phase, std::int64_t bytes) {
    return collective(name, layer, phase, Stream::kContextComm,
                      CollectiveOp{kind, CommGroup::kContext, bytes, dims_.cp, dims_.cp_nodes});
  }

  /// Issues an all-to-all of `bytes` (nccl-tests size) over the a2a level of hierarchical
  /// context parallelism on the CP stream after the last compute.
  std::int32_t cp_a2a_collective(std::string_view name, std::int32_t layer, Phase phase,
                                 std::int64_t bytes) {
    return collective(name, layer, phase, Stream::kContextComm,
                      CollectiveOp{CollectiveKind::kAllToAll, CommGroup::kContextA2a, bytes,
                                   dims_.cp_a2a, dims_.cp_a2a_nodes});
  }

  /// Issues a collective of the MoE layer's token dispatcher (all-to-all over EP, all-gather or
  /// reduce-scatter over the expert TP or expert TP x EP group) of `bytes` (nccl-tests size)
  /// after the last compute. Megatron waits for each at once (the compute stream consumes the
  /// tokens), so they share the TP communication stream.
  std::int32_t expert_collective(std::string_view name, CollectiveKind kind, CommGroup group,
                                 std::int32_t layer, Phase phase, std::int64_t bytes) {
    std::int64_t size = dims_.ep;
    std::int64_t nodes = dims_.ep_nodes;
    if (group == CommGroup::kExpertTensor) {
      size = dims_.etp;
      nodes = dims_.etp_nodes;
    } else if (group == CommGroup::kExpertTensorExpert) {
      size = dims_.etp * dims_.ep;
      nodes = dims_.tp_ep_nodes;
    }
    STEPSIM_ASSERT(group == CommGroup::kExpert || group == CommGroup::kExpertTensor ||
                   group == CommGroup::kExpertTensorExpert);
    return collective(name, layer, phase, Stream::kTensorComm,
                      CollectiveOp{kind, group, bytes, size, nodes});
  }

  /// Issues one step of the context-parallel ring on the CP stream after the last compute:
  /// every CP rank sends `bytes` to the next and receives as many from the previous (a
  /// batched send/recv pair; across nodes when the CP group spans several).
  std::int32_t cp_ring_step(std::string_view name, std::int32_t layer, Phase phase,
                            std::int64_t bytes) {
    // The ring runs over the whole CP group, or over the p2p level of hierarchical CP.
    const std::int64_t ring_nodes =
        dims_.cp_comm == CpCommType::kA2aP2p ? dims_.cp_p2p_nodes : dims_.cp_nodes;
    return collective_like(name, layer, phase, Stream::kContextComm,
                           P2POp{bytes, ring_nodes > 1});
  }

  std::int32_t collective(std::string_view name, std::int32_t layer, Phase phase,
                          Stream stream, const CollectiveOp& c) {
    Op& op = push(name, layer, phase, stream, c);
    if (last_compute_ >= 0) op.deps.push_back(last_compute_);
    return static_cast<std::int32_t>(ops_.size()) - 1;
  }

  /// A communication op of any shape after the last compute (NCCL's stream waits for the
  /// stream that enqueues it).
  std::int32_t collective_like(std::string_view name, std::int32_t layer, Phase phase,
                               Stream stream, OpShape shape) {
    Op& op = push(name, layer, phase, stream, std::move(shape));
    if (last_compute_ >= 0) op.deps.push_back(last_compute_);
    return static_cast<std::int32_t>(ops_.size()) - 1;
  }

  /// A communication op whose only explicit wait is op `after` (-1: none), not the last
  /// compute: a side stream started before compute that was issued after it (Transformer
  /// Engine's userbuffers ring exchange beside its GEMM chunks).
  std::int32_t comm_after(std::string_view name, std::int32_t layer, Phase phase, Stream stream,
                          OpShape shape, std::int32_t after) {
    Op& op = push(name, layer, phase, stream, std::move(shape));
    if (after >= 0) op.deps.push_back(after);
    return static_cast<std::int32_t>(ops_.size()) - 1;
  }

  /// The op at `index` of the list, to adjust what the appenders do not set (Op::sm_share).
  Op& at(std::int32_t index) { return ops_[static_cast<std::size_t>(index)]; }

  /// The last compute op appended (-1: none yet).
  std::int32_t last_compute() const { return last_compute_; }

  /// The host blocks before issuing the next op until op `index` has ended on the GPU
  /// (Op::host_waits_for: a device-to-host synchronisation).
  void host_waits_before_next(std::int32_t index) { host_wait_ = index; }

  /// The next compute op waits for op `index` (a collective's handle.wait()).
  void wait(std::int32_t index) {
    STEPSIM_ASSERT(pending_count_ < pending_.size());
    pending_[pending_count_++] = index;
  }

  /// Waits a side stream's work left for whoever consumes its result.
  struct Waits {
    std::array<std::int32_t, 4> index{};
    std::size_t count = 0;
  };
  void wait(const Waits& waits) {
    for (std::size_t i = 0; i < waits.count; ++i) wait(waits.index[i]);
  }

  /// Ops appended until end_side_stream() are a side stream's (Megatron's SharedExpertMLP.stream
  /// beside the token dispatcher): its compute is timed on the compute stream (the SMs are one
  /// resource, so two streams' kernels take as long together as one after the other), but it
  /// does not take the main stream's pending waits, and communication issued after the side
  /// stream ends waits only for the main stream's last compute, not for the side stream's.
  void begin_side_stream() {
    STEPSIM_ASSERT(!side_);
    side_ = true;
    main_pending_ = pending_;
    main_pending_count_ = pending_count_;
    pending_count_ = 0;
    main_last_compute_ = last_compute_;
  }
  /// Ends the side stream; returns the waits it left pending (its consumer takes them).
  Waits end_side_stream() {
    STEPSIM_ASSERT(side_);
    side_ = false;
    Waits left{.index = pending_, .count = pending_count_};
    pending_ = main_pending_;
    pending_count_ = main_pending_count_;
    last_compute_ = main_last_compute_;
    return left;
  }

 private:
  static std::string_view tp_name(CollectiveKind kind) {
    switch (kind) {
      case CollectiveKind::kAllReduce: return "tp_all_reduce";
      case CollectiveKind::kAllGather: return "tp_all_gather";
      case CollectiveKind::kReduceScatter: return "tp_reduce_scatter";
      case CollectiveKind::kAllToAll:
      case CollectiveKind::kDeepEpDispatch:
      case CollectiveKind::kDeepEpCombine:
        break;
    }
    return "tp_collective";
  }

  Op& push(std::string_view name, std::int32_t layer, Phase phase, Stream stream,
           OpShape shape) {
    Op& op = ops_.emplace_back();
    op.name.assign(name);
    op.layer = layer;
    op.phase = phase;
    op.stream = stream;
    op.shape = std::move(shape);
    op.host_waits_for = host_wait_;
    host_wait_ = -1;
    return op;
  }

  std::vector<Op>& ops_;
  const Dims& dims_;
  std::int32_t last_compute_ = -1;
  std::array<std::int32_t, 4> pending_{};
  std::size_t pending_count_ = 0;
  bool side_ = false;  // between begin_side_stream and end_side_stream
  std::array<std::int32_t, 4> main_pending_{};
  std::size_t main_pending_count_ = 0;
  std::int32_t main_last_compute_ = -1;
  std::int32_t host_wait_ = -1;  // host_waits_before_next
};

}  // namespace stepsim::detail
