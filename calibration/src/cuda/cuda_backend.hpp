#pragma once
// CudaBackend: one process per GPU (device = the rank's local rank on its node). GEMMs with
// cuBLASLt (bf16/fp16 operands, fp32 accumulation, the best heuristic algorithm, a
// workspace), attention as cuBLASLt batched GEMMs plus softmax kernels (the unfused path,
// not flash attention), a copy kernel for memory-bound work, and NCCL collectives and
// point-to-point on communicators bootstrapped over MPI as nccl-tests do. Every timing is
// the median of repeats measured with CUDA events after warm-up; every communication result
// is checked on the device.

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cuda/cuda_kernels.hpp"
#include "cuda/cuda_matmul.hpp"
#include "mpi/mpi_world.hpp"
#include "stepsim/calibration/backend.hpp"

namespace stepsim::calib {

/// Device memory that grows on demand (cudaMalloc; contents are not kept when it grows).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  /// At least `bytes` bytes; errors say how much was asked.
  Result<void*> reserve(std::int64_t bytes, const char* what);
  void* data() const { return ptr_; }
  std::int64_t capacity() const { return bytes_; }
  /// Gives the memory back (the next reserve allocates again).
  void release();

 private:
  void* ptr_ = nullptr;
  std::int64_t bytes_ = 0;
};

/// Makes the CUDA backend: "cuda backend: no CUDA device visible" without a GPU.
Result<std::unique_ptr<Backend>> make_cuda_backend(const BackendOptions& o);

class CudaBackend final : public Backend {
 public:
  CudaBackend(const BackendOptions& options, int device);
  ~CudaBackend() override;
  /// Creates the stream, events, cuBLASLt handle and the world NCCL communicator.
  Status init();

  std::string name() const override { return "cuda"; }
  std::string device_name() const override { return device_name_; }
  std::string versions() const override;
  bool runs_block_scaled_fp8() const override;
  bool runs_mxfp8() const override;
  void release_buffers() override;
  std::int32_t world_rank() const override { return world_.rank(); }
  std::int32_t world_size() const override { return world_.size(); }

  Result<GroupId> split(std::int32_t color, std::int32_t key, const CommOptions& options) override;
  std::int32_t group_size(GroupId g) const override { return world_.group_size(g); }

  Result<double> gemm(const GemmOp& op) override;
  Result<double> attention(const AttentionOp& op) override;
  Result<double> memory_bound(const MemoryBoundOp& op) override;
  Result<double> collective(const CollectiveOp& op, GroupId group) override;
  Result<double> p2p(const std::vector<P2PRequest>& requests) override;

  Result<double> barrier(GroupId group) override;
  bool deferred_timing() const override { return !options_.verify; }
  RepeatSpread last_spread() const override { return last_spread_; }
  /// Stream mode: a posted collective (overlap_grad_reduce's bucket reductions) runs on a
  /// communication stream of its own, after the work enqueued on the compute stream so far,
  /// as PyTorch runs an async_op=True NCCL call on its process group's stream; waiting for
  /// it makes the compute stream wait (handle.wait()), never the host.
  bool async_collectives() const override { return !options_.verify; }
  Result<CollectiveHandle> post_collective(const CollectiveOp& op, GroupId group) override;
  Result<P2PCompletion> wait_collective(CollectiveHandle h) override;
  /// Stream mode: the transfers one task posts (a Megatron P2P call, a context-parallel ring
  /// step, a userbuffers exchange) go out as one NCCL group on a point-to-point stream, as
  /// batch_isend_irecv posts a call's sends and receives together; the group is issued when
  /// the task's posting ends (the next call of any kind). Posted one NCCL call each, two
  /// ranks' crossed sends would wait for receives NCCL queues behind them (it runs a
  /// communicator's calls in issue order). A rank may post to itself (NCCL allows it).
  bool async_p2p() const override { return !options_.verify; }
  Result<P2PHandle> post_p2p(const std::vector<P2PRequest>& requests) override;
  Result<P2PCompletion> wait_p2p(P2PHandle h) override;
  Status begin_step() override;
  void tag(std::int64_t task) override { task_ = task; }
  Result<std::vector<DeviceTiming>> end_step() override;

  double now_s() const override { return world_.now_s(); }
  Result<double> align_clocks() override { return world_.align_clocks(); }
  Result<std::vector<std::vector<double>>> gather_to_root(
      const std::vector<double>& values) override {
    return world_.gather_to_root(values);
  }

 private:
  /// Plans a cuBLASLt product with this backend's handle and workspace.
  Result<std::unique_ptr<LtMatmul>> plan(const MatmulShape& s, cuda::ElemType t);
  /// Times `body` (enqueueing work on stream_) warmup + repeats times with events.
  template <typename Body>
  Result<std::vector<double>> time_repeats(Body&& body, bool flush_l2);
  Status flush_l2();
  /// Points a block-scaled or MXFP8 product's scales at scales_ (grown as needed, every scale
  /// 1.0, so its result is the unscaled product's; rewritten only when it grows or changes
  /// between fp32 and E8M0 scales, never inside a validator's step of one recipe); per-tensor
  /// products are left as they are.
  Status attach_block_scales(MatmulShape& s);
  /// How many back-to-back launches of a memory-bound kernel of `bytes` one timed repeat
  /// runs: enough for about 200 us, at least kMinTrain, at most kMaxTrain.
  static std::int64_t train_length(std::int64_t bytes);
  static constexpr std::int64_t kMinTrain = 2;
  static constexpr std::int64_t kMaxTrain = 64;

  /// Unfused attention as planned products and softmax kernels over extra_ (Q, K, V, O, S;
  /// backward adds dO, dP, dQ, dK, dV).
  struct AttentionRun {
    std::vector<std::unique_ptr<LtMatmul>> mms;  ///< S, then O (forward) or dV, dP, dQ, dK
    void* S = nullptr;
    void* dP = nullptr;
    std::int64_t rows = 0, cols = 0;
    float scale = 1.0F;
    cuda::ElemType type = cuda::ElemType::kBf16;
    bool causal = false, backward = false;
  };
  /// Plans `op` over extra_; `fill`: write fresh operands first (calibration), else only
  /// when extra_ was (re)allocated (the validator's stream mode).
  Result<AttentionRun> plan_attention(const AttentionOp& op, bool fill);
  Status run_attention(const AttentionRun& r);

  // Stream mode (verify = false, the validator: cuda_stream.cpp). Every op is enqueued
  // between two events and timed when the step ends; products are planned once per shape and
  // operands written once per buffer, as a training step reuses its kernels' plans.
  Result<double> gemm_enqueued(const GemmOp& op);
  Result<double> attention_enqueued(const AttentionOp& op);
  Result<double> memory_bound_enqueued(const MemoryBoundOp& op);
  Result<double> collective_enqueued(const CollectiveOp& op, GroupId group);
  Result<double> p2p_enqueued(const std::vector<P2PRequest>& requests);
  /// Enqueues `body` between two events of the current task; returns 0 (timed at end_step).
  template <typename Body>
  Result<double> enqueue(Body&& body);
  /// Enqueues `body` on `stream` between two pooled events, timed as `task`'s at end_step;
  /// returns the second event's index.
  template <typename Body>
  Result<std::size_t> timed_on(cudaStream_t stream, std::int64_t task, Body&& body);
  Result<cudaEvent_t> pooled_event();
  /// Enqueues collective `kind` over `comm` on the stream (all-to-all as grouped sends and
  /// receives): `per` floats per rank, `n` ranks.
  Status issue_collective(CollectiveKind kind, const float* send, float* recv, std::size_t per,
                          std::int64_t n, ncclComm_t comm, cudaStream_t stream);
  /// Enqueues `requests` as one NCCL group over the world, message r at base + offsets[r].
  Status issue_p2p(const std::vector<P2PRequest>& requests, std::uint8_t* base,
                   const std::vector<std::int64_t>& offsets, cudaStream_t stream);
  /// Issues the posted transfers not issued yet (post_p2p) as one group; every call that
  /// enqueues work or waits does this first.
  Status flush_posted_p2p();
  /// Enqueues collective `op` over `group` on `stream` (a side stream, created on first use,
  /// after the compute stream's work so far) with operand buffers `send_role`/`recv_role`,
  /// timed as the current task's; returns its last event's index.
  Result<std::size_t> collective_on(const CollectiveOp& op, GroupId group, cudaStream_t& stream,
                                    int send_role, int recv_role);
  /// Makes `side` (created on first use) wait for the compute stream's work so far.
  Status after_compute(cudaStream_t& side);
  /// Operand buffer `role` of type `t` with at least `elems` elements, filled with operand
  /// values (seed) when it had to be allocated; seed 0: left as allocated.
  Result<void*> operand(int role, cuda::ElemType t, std::int64_t elems, std::uint32_t seed);

  BackendOptions options_;
  RepeatSpread last_spread_;  // of the last measurement's repeats
  int device_ = 0;
  MpiWorld world_;
  std::string device_name_;
  int cc_major_ = 0, cc_minor_ = 0;
  std::int64_t l2_bytes_ = 0;
  cudaStream_t stream_ = nullptr;
  cudaStream_t comm_stream_ = nullptr;  ///< stream mode's posted collectives, made on first use
  cudaStream_t p2p_stream_ = nullptr;   ///< stream mode's posted transfers, made on first use
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  cublasLtHandle_t lt_ = nullptr;
  std::vector<ncclComm_t> nccl_;  ///< index = GroupId::value, like world_'s communicators
  DeviceBuffer workspace_, a_, b_, c_, extra_, send_, recv_, flush_, counter_, scales_;
  bool scales_e8m0_ = false;  ///< scales_ holds E8M0 bytes (MXFP8), not fp32 ones

  // Stream mode's state.
  struct Pending {
    std::int64_t task = 0;
    std::size_t start = 0, stop = 0;  ///< indices into events_
  };
  std::int64_t task_ = 0;
  cudaEvent_t base_ = nullptr;  ///< recorded at begin_step, when now_s() was base_s_
  double base_s_ = 0;
  std::vector<cudaEvent_t> events_;
  std::size_t next_event_ = 0;
  std::vector<Pending> pending_;
  /// A posted collective, by CollectiveHandle::value: its last event (an index into
  /// events_; -1 once waited for) and now_s() when it was posted.
  struct Posted {
    std::int64_t stop = -1;
    double posted_s = 0;
  };
  std::vector<Posted> posted_;
  /// Posted transfers: by P2PHandle::value, the group each went out in (an index into
  /// p2p_groups_); the groups' Posted records; the requests of the group being posted.
  std::vector<std::size_t> p2p_handle_group_;
  std::vector<Posted> p2p_groups_;
  std::vector<P2PRequest> p2p_open_;
  std::int64_t p2p_open_task_ = -1;
  std::map<std::pair<int, cuda::ElemType>, DeviceBuffer> operands_;
  std::map<std::string, std::unique_ptr<LtMatmul>> gemm_plans_;
  std::map<std::string, AttentionRun> attention_plans_;
};

}  // namespace stepsim::calib
