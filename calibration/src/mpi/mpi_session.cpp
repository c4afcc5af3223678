#include "stepsim/calibration/mpi_session.hpp"

#include <mpi.h>

#include <cstdlib>
#include <string>

#include "mpi/mpi_check.hpp"

namespace stepsim::calib {

Result<std::unique_ptr<MpiSession>> MpiSession::start(int* argc, char*** argv) {
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (initialised != 0)
    return Error{"", "", "MPI: already initialised in this process", ErrorKind::kRuntime};
  // Open MPI's progress loops spin while a call waits, unless told to yield the core when
  // idle. A rank here runs its compute on one thread and its posted calls on the backend's
  // progress and collective threads; spinning, those threads took the cores the compute
  // needed (on 2 vCPUs, tp2-sp-overlap's waits for posted calls added 21-46 ms a step, in
  // 0.5-11 ms stretches). Open MPI's mpirun sets this itself when it oversubscribes ranks,
  // not threads. A value the user set wins (no overwrite); other MPIs ignore it.
  setenv("OMPI_MCA_mpi_yield_when_idle", "1", /*overwrite=*/0);
  int provided = 0;
  // MPI_THREAD_MULTIPLE: the CPU backend progresses Megatron's non-blocking point-to-point
  // calls on a thread of its own while the rank computes (Backend::async_p2p); with less it
  // completes them where they are issued.
  const int rc = MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
  if (rc != MPI_SUCCESS) return mpi_error("MPI_Init_thread", rc);
  // Errors are returned, not fatal, so that a failed call becomes a message and exit 1.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return std::unique_ptr<MpiSession>(new MpiSession(rank, size));
}

void MpiSession::abort_all(int code) const {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::abort();  // MPI_Abort does not return
}

MpiSession::~MpiSession() {
  int finalised = 0;
  MPI_Finalized(&finalised);
  if (finalised == 0) MPI_Finalize();
}

Result<std::vector<std::int32_t>> world_node_ids() {
  MPI_Comm node = MPI_COMM_NULL;
  int world_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  int rc =
      MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, world_rank, MPI_INFO_NULL, &node);
  if (rc != MPI_SUCCESS) return mpi_error("MPI_Comm_split_type", rc);
  // The node's lowest world rank names the node: rank 0 of the node communicator (keys are
  // world ranks) broadcasts its world rank.
  int leader = world_rank;
  rc = MPI_Bcast(&leader, 1, MPI_INT, 0, node);
  MPI_Comm_free(&node);
  if (rc != MPI_SUCCESS) return mpi_error("MPI_Bcast", rc);
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::vector<std::int32_t> ids(static_cast<std::size_t>(size));
  rc = MPI_Allgather(&leader, 1, MPI_INT, ids.data(), 1, MPI_INT, MPI_COMM_WORLD);
  if (rc != MPI_SUCCESS) return mpi_error("MPI_Allgather", rc);
  return ids;
}

Result<std::vector<std::uint8_t>> broadcast_bytes_from_root(
    const std::vector<std::uint8_t>& bytes) {
  long long count = static_cast<long long>(bytes.size());
  int rc = MPI_Bcast(&count, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  if (rc != MPI_SUCCESS) return mpi_error("MPI_Bcast", rc);
  std::vector<std::uint8_t> out = bytes;
  out.resize(static_cast<std::size_t>(count));
  if (count == 0) return out;
  rc = MPI_Bcast(out.data(), static_cast<int>(count), MPI_BYTE, 0, MPI_COMM_WORLD);
  if (rc != MPI_SUCCESS) return mpi_error("MPI_Bcast", rc);
  return out;
}

Result<std::vector<double>> max_over_world(const std::vector<double>& values) {
  std::vector<double> out(values.size());
  const int rc = MPI_Allreduce(values.data(), out.data(), static_cast<int>(values.size()),
                               MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  if (rc != MPI_SUCCESS) return mpi_error("MPI_Allreduce", rc);
  return out;
}

Result<std::int32_t> node_local_rank() {
  MPI_Comm node = MPI_COMM_NULL;
  int world_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  const int rc =
      MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, world_rank, MPI_INFO_NULL, &node);
  if (rc != MPI_SUCCESS) return mpi_error("MPI_Comm_split_type", rc);
  int local = 0;
  MPI_Comm_rank(node, &local);
  MPI_Comm_free(&node);
  return local;
}

}  // namespace stepsim::calib
