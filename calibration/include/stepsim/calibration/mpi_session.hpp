#pragma once
// MPI for the commands that measure (calibrate, validate): initialised once by the command
// that needs it, finalised when the session object goes away. Other commands never touch MPI.
// Also the few world-wide exchanges the runner needs beside a Backend (node layout, flags).

#include <cstdint>
#include <memory>
#include <vector>

#include "stepsim/base/result.hpp"

namespace stepsim::calib {

/// RAII MPI_Init_thread / MPI_Finalize. Movable-only; at most one alive at a time.
class MpiSession {
 public:
  /// Initialises MPI (MPI_THREAD_FUNNELED). A process started without mpirun becomes a
  /// one-rank world (MPI singleton). Errors: MPI already initialised, MPI_Init failed.
  static Result<std::unique_ptr<MpiSession>> start(int* argc, char*** argv);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  std::int32_t world_rank() const { return rank_; }
  std::int32_t world_size() const { return size_; }
  /// Stops every rank of the job with exit status `code` (MPI_Abort): for the program's
  /// fault handling (a rank that timed out or failed while its peers may wait on it
  /// forever). The libraries report failures to their caller and never call it.
  [[noreturn]] void abort_all(int code) const;

 private:
  MpiSession(std::int32_t rank, std::int32_t size) : rank_(rank), size_(size) {}
  std::int32_t rank_ = 0;
  std::int32_t size_ = 1;
};

/// For every world rank, the id of the node (shared-memory domain) it runs on: the lowest
/// world rank on that node, so ids are equal exactly for ranks sharing a node. Collective
/// over MPI_COMM_WORLD.
Result<std::vector<std::int32_t>> world_node_ids();

/// Rank 0's `bytes` on every rank (MPI_Bcast over the world, size first). Collective.
Result<std::vector<std::uint8_t>> broadcast_bytes_from_root(const std::vector<std::uint8_t>& bytes);

/// Element-wise maximum of `values` over every world rank (MPI_Allreduce). Collective.
Result<std::vector<double>> max_over_world(const std::vector<double>& values);

/// This rank's local rank on its node (OMPI_COMM_WORLD_LOCAL_RANK's meaning, computed with
/// MPI_Comm_split_type so it works under any launcher). Collective.
Result<std::int32_t> node_local_rank();

}  // namespace stepsim::calib
