// CudaBackend's communication: NCCL sub-communicators (ncclCommSplit), collectives and
// grouped send/recv timed with CUDA events, each result checked on the device like
// nccl-tests do (calibration; the validator's stream mode is in cuda_stream.cpp).

#include <string>

#include "bench_math.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/cuda_check.hpp"
#include "mpi/mpi_check.hpp"

namespace stepsim::calib {

Result<GroupId> CudaBackend::split(std::int32_t color, std::int32_t key,
                                   const CommOptions& options) {
  auto g = world_.split(color, key);
  if (!g.ok()) return g;
  ncclComm_t comm = nullptr;
  // The group's ncclConfig_t, as Megatron makes it from --nccl-communicator-config-path
  // (PyTorch's ProcessGroupNCCL.Options.config); unset fields keep NCCL's defaults.
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  if (options.min_ctas > 0) config.minCTAs = static_cast<int>(options.min_ctas);
  if (options.max_ctas > 0) config.maxCTAs = static_cast<int>(options.max_ctas);
  if (options.cga_cluster_size >= 0) {
    config.cgaClusterSize = static_cast<int>(options.cga_cluster_size);
  }
  STEPSIM_NCCL_TRY(ncclCommSplit(nccl_[0], color, key, &comm, &config));
  nccl_.push_back(comm);
  STEPSIM_ASSERT(static_cast<std::size_t>(g.value().value) == nccl_.size() - 1);
  return g;
}

Result<double> CudaBackend::collective(const CollectiveOp& op, GroupId group) {
  if (!world_.valid(group)) {
    return Error{"", "", "cuda backend: unknown process group " + std::to_string(group.value),
                 ErrorKind::kRuntime};
  }
  if (!options_.verify) return collective_enqueued(op, group);
  const std::int64_t n = world_.group_size(group);
  const std::int64_t g = world_.group_rank(group);
  const CollectiveCounts counts = collective_counts(op.kind, op.bytes, n, 4);
  auto in = send_.reserve(counts.in * 4, "the collective's input");
  auto out = recv_.reserve(counts.out * 4, "the collective's output");
  auto wrong_dev = counter_.reserve(sizeof(unsigned long long), "the result check");
  if (!in.ok()) return in.errors();
  if (!out.ok()) return out.errors();
  if (!wrong_dev.ok()) return wrong_dev.errors();
  auto* send = static_cast<float*>(in.value());
  auto* recv = static_cast<float*>(out.value());
  STEPSIM_CUDA_TRY(cuda::fill_collective_input(send, counts.in, g, stream_));
  STEPSIM_CUDA_TRY(cudaMemsetAsync(recv, 0xff, static_cast<std::size_t>(counts.out * 4), stream_));
  const ncclComm_t comm = nccl_[static_cast<std::size_t>(group.value)];
  const auto per = static_cast<std::size_t>(counts.per_rank);

  std::vector<double> times;
  for (int i = 0; i < options_.warmup + options_.repeats; ++i) {
    // Members start together, so the time is the collective's and not the wait for a late one.
    STEPSIM_CUDA_TRY(cudaStreamSynchronize(stream_));
    const int rc = MPI_Barrier(world_.comm(group));
    if (rc != MPI_SUCCESS) return mpi_error("MPI_Barrier", rc);
    STEPSIM_CUDA_TRY(cudaEventRecord(start_, stream_));
    if (auto r = issue_collective(op.kind, send, recv, per, n, comm, stream_); !r.ok())
      return r.errors();
    STEPSIM_CUDA_TRY(cudaEventRecord(stop_, stream_));
    STEPSIM_CUDA_TRY(cudaEventSynchronize(stop_));
    float ms = 0.0F;
    STEPSIM_CUDA_TRY(cudaEventElapsedTime(&ms, start_, stop_));
    if (i >= options_.warmup) times.push_back(static_cast<double>(ms) * 1e-3);
  }
  auto* wrong = static_cast<unsigned long long*>(wrong_dev.value());
  STEPSIM_CUDA_TRY(cudaMemsetAsync(wrong, 0, sizeof(unsigned long long), stream_));
  STEPSIM_CUDA_TRY(cuda::count_collective_errors(recv, counts.out, static_cast<int>(op.kind), g, n,
                                                 counts.per_rank, wrong, stream_));
  unsigned long long wrong_here = 0;
  STEPSIM_CUDA_TRY(
      cudaMemcpyAsync(&wrong_here, wrong, sizeof wrong_here, cudaMemcpyDeviceToHost, stream_));
  STEPSIM_CUDA_TRY(cudaStreamSynchronize(stream_));
  unsigned long long wrong_total = 0;
  const int rc = MPI_Allreduce(&wrong_here, &wrong_total, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM,
                               world_.comm(group));
  if (rc != MPI_SUCCESS) return mpi_error("MPI_Allreduce", rc);
  if (wrong_total != 0) {
    return Error{"", "",
                 "cuda backend: " + std::string(to_string(op.kind)) + " of " +
                     std::to_string(op.bytes) + " bytes over " + std::to_string(n) + " GPUs gave " +
                     std::to_string(wrong_total) + " wrong elements",
                 ErrorKind::kRuntime};
  }
  auto maxima = world_.max_over_group(times, group);
  if (!maxima.ok()) return maxima.errors();
  last_spread_ = RepeatSpread{coefficient_of_variation(maxima.value()),
                              static_cast<int>(maxima.value().size())};
  return median(maxima.value());
}

Result<double> CudaBackend::p2p(const std::vector<P2PRequest>& requests) {
  std::int64_t total = 0;
  std::vector<std::int64_t> offsets;
  for (const P2PRequest& q : requests) {
    if (q.peer < 0 || q.peer >= world_.size() || q.peer == world_.rank()) {
      return Error{"", "",
                   "cuda backend: point-to-point peer " + std::to_string(q.peer) +
                       " is not another rank of the world of " + std::to_string(world_.size()),
                   ErrorKind::kRuntime};
    }
    if (q.bytes <= 0)
      return Error{"", "", "cuda backend: point-to-point message needs bytes > 0",
                   ErrorKind::kRuntime};
    offsets.push_back(total);
    total += (q.bytes + 255) / 256 * 256;
  }
  if (!options_.verify) return p2p_enqueued(requests);
  auto buf = send_.reserve(total, "point-to-point messages");
  auto wrong_dev = counter_.reserve(sizeof(unsigned long long), "the message check");
  if (!buf.ok()) return buf.errors();
  if (!wrong_dev.ok()) return wrong_dev.errors();
  auto* base = static_cast<std::uint8_t*>(buf.value());
  for (std::size_t r = 0; r < requests.size(); ++r) {
    if (!requests[r].send) continue;
    STEPSIM_CUDA_TRY(cuda::fill_message(base + offsets[r], requests[r].bytes, world_.rank(),
                                        requests[r].tag, stream_));
  }
  const std::vector<std::int32_t> peers = distinct_peers(requests);
  std::vector<double> times;
  for (int i = 0; i < options_.warmup + options_.repeats; ++i) {
    STEPSIM_CUDA_TRY(cudaStreamSynchronize(stream_));
    auto shake = world_.handshake(peers);
    if (!shake.ok()) return shake.errors();
    STEPSIM_CUDA_TRY(cudaEventRecord(start_, stream_));
    if (auto r = issue_p2p(requests, base, offsets, stream_); !r.ok()) return r.errors();
    STEPSIM_CUDA_TRY(cudaEventRecord(stop_, stream_));
    STEPSIM_CUDA_TRY(cudaEventSynchronize(stop_));
    float ms = 0.0F;
    STEPSIM_CUDA_TRY(cudaEventElapsedTime(&ms, start_, stop_));
    if (i >= options_.warmup) times.push_back(static_cast<double>(ms) * 1e-3);
  }
  auto* wrong = static_cast<unsigned long long*>(wrong_dev.value());
  STEPSIM_CUDA_TRY(cudaMemsetAsync(wrong, 0, sizeof(unsigned long long), stream_));
  for (std::size_t r = 0; r < requests.size(); ++r) {
    if (requests[r].send) continue;
    STEPSIM_CUDA_TRY(cuda::count_message_errors(base + offsets[r], requests[r].bytes,
                                                requests[r].peer, requests[r].tag, wrong, stream_));
  }
  unsigned long long wrong_here = 0;
  STEPSIM_CUDA_TRY(
      cudaMemcpyAsync(&wrong_here, wrong, sizeof wrong_here, cudaMemcpyDeviceToHost, stream_));
  STEPSIM_CUDA_TRY(cudaStreamSynchronize(stream_));
  if (wrong_here != 0) {
    return Error{
        "", "",
        "cuda backend: received messages have " + std::to_string(wrong_here) + " wrong bytes"};
  }
  last_spread_ = RepeatSpread{coefficient_of_variation(times), static_cast<int>(times.size())};
  return median(times);
}

Status CudaBackend::issue_collective(CollectiveKind kind, const float* send, float* recv,
                                     std::size_t per, std::int64_t n, ncclComm_t comm,
                                     cudaStream_t stream) {
  switch (kind) {
    case CollectiveKind::kAllReduce:
      STEPSIM_NCCL_TRY(ncclAllReduce(send, recv, per, ncclFloat, ncclSum, comm, stream));
      break;
    case CollectiveKind::kAllGather:
      STEPSIM_NCCL_TRY(ncclAllGather(send, recv, per, ncclFloat, comm, stream));
      break;
    case CollectiveKind::kReduceScatter:
      STEPSIM_NCCL_TRY(ncclReduceScatter(send, recv, per, ncclFloat, ncclSum, comm, stream));
      break;
    case CollectiveKind::kAllToAll:
      // NCCL has no all-to-all call: grouped sends and receives, one pair per member, as
      // nccl-tests' alltoall and Megatron's MoE dispatcher run it.
      STEPSIM_NCCL_TRY(ncclGroupStart());
      for (std::int64_t peer = 0; peer < n; ++peer) {
        const std::size_t at = static_cast<std::size_t>(peer) * per;
        STEPSIM_NCCL_TRY(ncclSend(send + at, per, ncclFloat, static_cast<int>(peer), comm, stream));
        STEPSIM_NCCL_TRY(ncclRecv(recv + at, per, ncclFloat, static_cast<int>(peer), comm, stream));
      }
      STEPSIM_NCCL_TRY(ncclGroupEnd());
      break;
    case CollectiveKind::kDeepEpDispatch:  // DeepEP is not NCCL (validate refuses flex)
    case CollectiveKind::kDeepEpCombine:
      STEPSIM_UNREACHABLE("DeepEP's kernels are not run by the CUDA backend");
      break;
  }
  return ok_status();
}

Status CudaBackend::issue_p2p(const std::vector<P2PRequest>& requests, std::uint8_t* base,
                              const std::vector<std::int64_t>& offsets, cudaStream_t stream) {
  // NCCL has no tags: messages between two ranks match in the order they are posted.
  const ncclComm_t comm = nccl_[0];
  STEPSIM_NCCL_TRY(ncclGroupStart());
  for (std::size_t r = 0; r < requests.size(); ++r) {
    const P2PRequest& q = requests[r];
    const auto count = static_cast<std::size_t>(q.bytes);
    if (q.send) {
      STEPSIM_NCCL_TRY(ncclSend(base + offsets[r], count, ncclUint8, q.peer, comm, stream));
    } else {
      STEPSIM_NCCL_TRY(ncclRecv(base + offsets[r], count, ncclUint8, q.peer, comm, stream));
    }
  }
  STEPSIM_NCCL_TRY(ncclGroupEnd());
  return ok_status();
}

}  // namespace stepsim::calib
