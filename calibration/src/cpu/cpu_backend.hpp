#pragma once
// CpuBackend: Eigen fp32 GEMMs and attention, a streaming memory-bound kernel, MPI
// collectives and point-to-point. One process per rank; Eigen may use several threads.
// Every GEMM runs in fp32 whatever the op's dtype (Eigen has no fast bf16/fp16 GEMM).

#include <Eigen/Core>
#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bench_math.hpp"
#include "mpi/mpi_world.hpp"
#include "stepsim/calibration/backend.hpp"

namespace stepsim::calib {

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(const BackendOptions& options);
  ~CpuBackend() override;
  CpuBackend(const CpuBackend&) = delete;
  CpuBackend& operator=(const CpuBackend&) = delete;

  std::string name() const override { return "cpu"; }
  std::string device_name() const override { return device_name_; }
  std::int32_t world_rank() const override { return world_.rank(); }
  std::int32_t world_size() const override { return world_.size(); }

  Result<GroupId> split(std::int32_t color, std::int32_t key, const CommOptions& options) override;
  std::int32_t group_size(GroupId g) const override { return world_.group_size(g); }

  Result<double> gemm(const GemmOp& op) override;
  Result<double> attention(const AttentionOp& op) override;
  Result<double> memory_bound(const MemoryBoundOp& op) override;
  Result<double> collective(const CollectiveOp& op, GroupId group) override;
  Result<double> p2p(const std::vector<P2PRequest>& requests) override;
  /// With MPI_THREAD_MULTIPLE: non-blocking calls posted here (MPI_Isend/MPI_Irecv on the
  /// caller's thread) are progressed by a thread of this backend, which polls MPI_Testall
  /// every few tens of microseconds and sleeps in between, so that it takes next to nothing
  /// from the rank's compute on the same core (a blocking MPI wait would spin on it).
  bool async_p2p() const override { return thread_multiple_; }
  Result<P2PHandle> post_p2p(const std::vector<P2PRequest>& requests) override;
  Result<P2PCompletion> wait_p2p(P2PHandle h) override;
  /// With MPI_THREAD_MULTIPLE: posted collectives run one after another, in posting order, on
  /// a thread of this backend, as blocking MPI collectives on a duplicate of the group's
  /// communicator (made at the group's first post, by every member in the same order), as
  /// NCCL runs them on its own stream. That thread shares the rank's core with its compute,
  /// as NCCL's kernels share the SMs: what each costs the other is what calibration's
  /// interference microbenchmark measures.
  bool async_collectives() const override { return thread_multiple_; }
  Result<CollectiveHandle> post_collective(const CollectiveOp& op, GroupId group) override;
  Result<P2PCompletion> wait_collective(CollectiveHandle h) override;

  Result<double> barrier(GroupId group) override { return world_.barrier(group); }
  double now_s() const override { return world_.now_s(); }
  Result<double> align_clocks() override { return world_.align_clocks(); }
  Result<std::vector<std::vector<double>>> gather_to_root(
      const std::vector<double>& values) override {
    return world_.gather_to_root(values);
  }

  /// Element (i, j) of product `b` of the last GEMM (for tests).
  float last_gemm_output(std::int64_t b, std::int64_t i, std::int64_t j) const;

 private:
  using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic>;
  /// Durations of `options_.repeats` timed runs of `body` after `options_.warmup` untimed
  /// ones. `flush`: with options_.flush_cache, evict the cache before each timed run (GEMM
  /// and attention operands were last used many kernels ago; an element-wise kernel's input
  /// is what the kernel before it just wrote). In calibration (options_.verify) the ranks
  /// start each timed run together.
  template <typename Body>
  std::vector<double> time_repeats(Body&& body, bool flush = true);

  BackendOptions options_;
  MpiWorld world_;
  std::string device_name_;
  std::vector<Matrix> a_, b_, c_;  ///< GEMM operands, one triple per batch entry

  /// Without options_.verify, operands and buffers are made once per shape and reused.
  struct GemmOperands {
    std::vector<Matrix> a, b, c;
  };
  std::map<std::array<std::int64_t, 4>, GemmOperands> gemm_cache_;
  std::map<std::int64_t, std::pair<Eigen::ArrayXf, Eigen::ArrayXf>> stream_cache_;
  std::map<std::int64_t, std::vector<float>> float_cache_;        ///< collectives, by count
  std::map<std::int64_t, std::vector<std::uint8_t>> byte_cache_;  ///< messages, by bytes

  Result<double> gemm_reusing(const GemmOp& op);
  /// Evicts the last-level cache by streaming twice its size through a buffer of our own.
  void flush_cache() const;
  mutable std::vector<float> flush_buffer_;
  std::vector<float>& floats(std::int64_t count, int slot);
  Result<double> collective_unverified(const CollectiveOp& op, GroupId group);
  Result<double> p2p_unverified(const std::vector<P2PRequest>& requests);
  /// The group exists and the collective's buffers fit MPI's int counts: its counts.
  Result<CollectiveCounts> check_collective(const CollectiveOp& op, GroupId group) const;
  /// Every request's peer is another rank of the world and its size is in range.
  Status check_requests(const std::vector<P2PRequest>& requests) const;

  /// A non-blocking call in flight: its MPI requests and buffers, its own.
  struct InFlight {
    std::vector<MPI_Request> requests;
    std::vector<std::vector<std::uint8_t>> buffers;
    double posted_s = 0;
    double completed_s = -1;  ///< aligned clock; -1 until MPI_Testall says done
    int rc = MPI_SUCCESS;
    bool waiter_owns = false;  ///< wait_p2p drives it itself; the progress thread keeps off
  };
  void progress_loop();
  bool thread_multiple_ = false;      ///< MPI gave MPI_THREAD_MULTIPLE
  std::mutex async_mutex_;            ///< guards everything below
  std::condition_variable async_cv_;  ///< a call posted or completed, or stop
  std::map<std::int64_t, InFlight> in_flight_;
  std::int64_t next_handle_ = 0;
  bool stop_progress_ = false;
  /// The progress thread drives MPI's progress until then (a completion's aftermath).
  std::chrono::steady_clock::time_point linger_until_{};
  std::thread progress_;  ///< started by the first post_p2p, joined by the destructor

  /// A posted collective: run by collective_loop in handle order.
  struct PostedCollective {
    CollectiveOp op;
    MPI_Comm comm = MPI_COMM_NULL;  ///< the duplicate of its group's communicator
    std::int64_t group_size = 1;
    double posted_s = 0;
    double completed_s = -1;  ///< aligned clock; -1 until done
    int rc = MPI_SUCCESS;
  };
  void collective_loop();
  std::mutex coll_mutex_;            ///< guards everything below but the thread's buffers
  std::condition_variable coll_cv_;  ///< a collective posted or done, or stop
  std::map<std::int64_t, PostedCollective> coll_posted_;
  std::int64_t coll_next_ = 0;  ///< the next handle
  bool coll_stop_ = false;
  std::map<std::int32_t, MPI_Comm> coll_comms_;             ///< by GroupId: the duplicates
  std::map<std::int64_t, std::vector<float>> coll_floats_;  ///< the thread's, by count*2+slot
  std::thread coll_thread_;  ///< started by the first post_collective
};

template <typename Body>
std::vector<double> CpuBackend::time_repeats(Body&& body, bool flush) {
  using Clock = std::chrono::steady_clock;
  for (int i = 0; i < options_.warmup; ++i) body();
  std::vector<double> times;
  const int repeats = options_.repeats > 0 ? options_.repeats : 1;
  times.reserve(static_cast<std::size_t>(repeats));
  for (int i = 0; i < repeats; ++i) {
    if (flush && options_.flush_cache) flush_cache();
    if (options_.verify && world_.size() > 1) {
      // Calibration: every rank measures the point at once; start each repeat together, so
      // that it runs beside the other ranks' same op (as tensor-parallel peers run theirs in
      // a step), not beside their cache flush. A failed barrier means a lost peer, which
      // the calibration's agreement on the point's result reports.
      static_cast<void>(world_.barrier(GroupId{0}));
    }
    const Clock::time_point t0 = Clock::now();
    body();
    times.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return times;
}

}  // namespace stepsim::calib
