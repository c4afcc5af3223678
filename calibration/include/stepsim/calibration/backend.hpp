#pragma once
// Backend: what a device must do for calibration and for the validator. Every call runs the
// work for real on real buffers, blocks until it is done, and returns its duration measured
// with the backend's own clock (CUDA events; std::chrono::steady_clock on CPUs).
// Implementations: CpuBackend (Eigen + MPI), CudaBackend (cuBLASLt + NCCL, bootstrapped over
// MPI like nccl-tests). Collective calls are made by every member of the group.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "stepsim/ops/ops.hpp"
#include "stepsim/base/result.hpp"

namespace stepsim::calib {

/// A non-blocking point-to-point call in flight (Backend::post_p2p).
struct P2PHandle {
  std::int64_t value = -1;
  bool operator==(const P2PHandle&) const = default;
};

/// A collective posted without blocking (Backend::post_collective).
struct CollectiveHandle {
  std::int64_t value = -1;
  bool operator==(const CollectiveHandle&) const = default;
};

/// When a non-blocking call (point-to-point or collective) was posted and when it was seen
/// done, on the aligned clock (Backend::now_s), seconds.
struct P2PCompletion {
  double posted_s = 0;
  double completed_s = 0;
  bool operator==(const P2PCompletion&) const = default;
};

/// NCCL's options of one process group (ncclConfig_t, from Megatron's
/// --nccl-communicator-config-path; core/cost/include/stepsim/cost/nccl_model.hpp
/// nccl_group_options): 0 or -1 = NCCL's default. The cpu backend's MPI has no such settings.
struct CommOptions {
  std::int64_t min_ctas = 0;
  std::int64_t max_ctas = 0;
  std::int64_t cga_cluster_size = -1;
  bool operator==(const CommOptions&) const = default;
};

/// A process group made by Backend::split; 0 is the world.
struct GroupId {
  std::int32_t value = 0;
  bool operator==(const GroupId&) const = default;
};

/// One leg of a batched point-to-point exchange (Megatron's batch_isend_irecv).
struct P2PRequest {
  bool send = true;
  std::int64_t bytes = 0;
  std::int32_t peer = 0;  ///< world rank
  std::int32_t tag = 0;   ///< 0..32766 (32767 is the backends' own handshake)
  bool operator==(const P2PRequest&) const = default;
};

/// The run-to-run spread of the repeats behind a backend's last measurement.
struct RepeatSpread {
  double cv = 0;     ///< standard deviation / mean of the timed repeats
  int repeats = 0;   ///< 0: not observed (the backend does not say)
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string name() const = 0;         ///< "cpu" | "cuda"
  virtual std::string device_name() const = 0;  ///< e.g. "NVIDIA H100 80GB HBM3", CPU model
  /// Driver and library versions the measurements depend on, one line; empty if none.
  virtual std::string versions() const { return {}; }
  /// Runs FP8 GEMMs with Transformer Engine's block scaling (GemmOp::scaling) as the GPU
  /// does: the cuda backend on Hopper with cuBLASLt 12.9 or newer. Otherwise calibration
  /// measures a block-scaled shape with per-tensor scales and says so.
  virtual bool runs_block_scaled_fp8() const { return false; }
  /// Runs FP8 GEMMs with Transformer Engine's MXFP8 scaling (GemmScaling::kMx1x32) as the
  /// GPU does: the cuda backend on Blackwell (compute capability 10.0+) with cuBLASLt 12.8 or
  /// newer. Otherwise calibration measures an MXFP8 shape with per-tensor scales, TN, and
  /// says so.
  virtual bool runs_mxfp8() const { return false; }
  virtual std::int32_t world_rank() const = 0;
  virtual std::int32_t world_size() const = 0;

  /// Collective over the world, like MPI_Comm_split: ranks with equal `color` form a group,
  /// ordered by `key`, its NCCL communicator made with `options` (the cuda backend's).
  virtual Result<GroupId> split(std::int32_t color, std::int32_t key,
                                const CommOptions& options) = 0;
  virtual std::int32_t group_size(GroupId g) const = 0;

  virtual Result<double> gemm(const GemmOp& op) = 0;
  virtual Result<double> attention(const AttentionOp& op) = 0;
  virtual Result<double> memory_bound(const MemoryBoundOp& op) = 0;
  /// All members of `group` call this with the same op; checks the result's correctness.
  virtual Result<double> collective(const CollectiveOp& op, GroupId group) = 0;
  /// Posts all requests at once and waits for all of them.
  virtual Result<double> p2p(const std::vector<P2PRequest>& requests) = 0;
  /// The spread of the repeats behind the last gemm, attention, memory_bound, collective or
  /// p2p result (a collective's: of its group's slowest per repeat), for the profile's
  /// KernelSpread. Default: not observed.
  virtual RepeatSpread last_spread() const { return {}; }

  /// Megatron's non-blocking batch_isend_irecv (overlap_p2p_comm): whether post_p2p and
  /// wait_p2p run the transfers beside the caller's own work, as NCCL's kernels run on a
  /// communication stream. The CPU backend progresses them on a thread of its own when MPI
  /// gives MPI_THREAD_MULTIPLE. false: the executor completes such calls where they are issued
  /// (p2p), and the prediction compared with it does the same.
  virtual bool async_p2p() const { return false; }
  /// Posts `requests` (unverified, buffers of its own) and returns at once; the transfers
  /// progress while the caller goes on. Needs async_p2p().
  virtual Result<P2PHandle> post_p2p(const std::vector<P2PRequest>& /*requests*/) {
    return Error{"", "", name() + " backend: no non-blocking point-to-point path",
                 ErrorKind::kInternal};
  }
  /// Blocks until every transfer of `h` is done; each handle is waited for once.
  virtual Result<P2PCompletion> wait_p2p(P2PHandle /*h*/) {
    return Error{"", "", name() + " backend: no non-blocking point-to-point path",
                 ErrorKind::kInternal};
  }

  /// Megatron's overlapped gradient reduction (overlap_grad_reduce: DDP's buckets reduced with
  /// async_op=True on NCCL's stream while the backward goes on): whether post_collective and
  /// wait_collective run a collective beside the caller's own work. The CPU backend runs them,
  /// in posting order, on a thread of its own when MPI gives MPI_THREAD_MULTIPLE. false: the
  /// executor runs such collectives where the serialised order puts them.
  virtual bool async_collectives() const { return false; }
  /// Posts collective `op` over `group` (unverified, buffers of its own) and returns at once.
  /// Every member posts the group's collectives in the same order. Needs async_collectives().
  virtual Result<CollectiveHandle> post_collective(const CollectiveOp& /*op*/, GroupId /*group*/) {
    return Error{"", "", name() + " backend: no non-blocking collective path",
                 ErrorKind::kInternal};
  }
  /// Blocks until collective `h` is done; each handle is waited for once.
  virtual Result<P2PCompletion> wait_collective(CollectiveHandle /*h*/) {
    return Error{"", "", name() + " backend: no non-blocking collective path",
                 ErrorKind::kInternal};
  }

  /// Stream-ordered execution (the CUDA backend as the validator runs it, verify = false):
  /// gemm, attention, memory_bound, collective and p2p enqueue their kernels on the device's
  /// stream with an event on either side and return 0 at once, as Megatron's host runs ahead
  /// of its GPU; end_step() waits for the step's kernels and gives each task its time on the
  /// device. false: every call returns its own measured seconds when it is done.
  virtual bool deferred_timing() const { return false; }
  /// Starts a step's device clock: waits for the device to be idle and pins now_s() to it.
  virtual Status begin_step() { return ok_status(); }
  /// The task the following calls belong to (an index into the executor's task list).
  virtual void tag(std::int64_t /*task*/) {}
  /// One task's kernels on the device, on now_s()'s clock: from the first kernel's start to
  /// the last one's end, and the sum of the kernels' own times.
  struct DeviceTiming {
    std::int64_t task = 0;
    double start_s = 0, end_s = 0, busy_s = 0;
  };
  /// Waits for every kernel enqueued since begin_step() and returns the tasks' device times,
  /// in the order of their first kernel.
  virtual Result<std::vector<DeviceTiming>> end_step() { return std::vector<DeviceTiming>{}; }

  /// Blocks until every rank of `group` arrived.
  virtual Result<double> barrier(GroupId group) = 0;
  /// Seconds on a clock shared by all ranks after align_clocks() (steady clock + offset).
  virtual double now_s() const = 0;
  /// Estimates this rank's clock offset to rank 0 (ping-pong over the world).
  virtual Result<double> align_clocks() = 0;
  /// Gathers `values` from every rank at rank 0 (others get an empty vector).
  virtual Result<std::vector<std::vector<double>>> gather_to_root(
      const std::vector<double>& values) = 0;
  /// Frees the operand and message buffers kept between calls, so that another backend of
  /// the same process (validate --calibrate holds two on one GPU) has the device's memory.
  virtual void release_buffers() {}
};

struct BackendOptions {
  int cpu_threads = 1;  ///< Eigen threads per rank (cpu)
  /// Flush the last-level cache (a GPU's L2, a CPU's L3) before each timed GEMM (cuda) or
  /// each timed GEMM and attention kernel (cpu), so that operands come from memory as they
  /// do in a step, where the rest of the step's working set (and, on a CPU, the other
  /// ranks' on the same socket) streamed through that cache since an operand was last used.
  /// Element-wise kernels are timed warm: their input is what the kernel before just wrote.
  bool flush_cache = false;
  int warmup = 2;   ///< untimed repeats before measuring
  int repeats = 5;  ///< timed repeats; the median is returned
  /// Calibration (true): fresh operands for every call, members synchronised before a timed
  /// collective or message, and every result checked, as nccl-tests do. The validator
  /// (false) runs ops as training does: operands made once per shape and reused, no
  /// synchronisation beyond the op itself (a late peer's wait is part of the step), no
  /// checks: what it times is the work the simulator predicts, not the harness.
  bool verify = true;
  /// Folder holding the CUDA backend plugin (libstepsim_cuda_backend.so); empty: the running
  /// executable's folder if the plugin is there, else the build's bin/ folder.
  std::string plugin_dir;
};

/// Makes the backend called `name` ("cpu" or "cuda"); MPI must already be initialised.
/// Errors: unknown name, CUDA backend not built or its plugin not loadable, no device.
Result<std::unique_ptr<Backend>> make_backend(const std::string& name, const BackendOptions& o);

}  // namespace stepsim::calib
