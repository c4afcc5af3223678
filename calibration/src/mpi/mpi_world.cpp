#include "mpi/mpi_world.hpp"

#include <chrono>
#include <cstdlib>
#include <limits>

#include "mpi/mpi_check.hpp"
#include "stepsim/base/assert.hpp"

namespace stepsim::calib {
namespace {

constexpr int kClockTag = 7001;
constexpr int kClockRounds = 20;

double steady_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

MpiWorld::MpiWorld() {
  MPI_Comm world = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &world);
  MPI_Comm_set_errhandler(world, MPI_ERRORS_RETURN);
  MPI_Comm_rank(world, &rank_);
  MPI_Comm_size(world, &size_);
  comms_.push_back(world);
}

MpiWorld::~MpiWorld() {
  int finalised = 0;
  MPI_Finalized(&finalised);
  if (finalised != 0) return;
  for (MPI_Comm& c : comms_) {
    if (c != MPI_COMM_NULL) MPI_Comm_free(&c);
  }
}

Result<GroupId> MpiWorld::split(std::int32_t color, std::int32_t key) {
  MPI_Comm out = MPI_COMM_NULL;
  const int rc = MPI_Comm_split(comms_[0], color, key, &out);
  if (rc != MPI_SUCCESS) return mpi_error("MPI_Comm_split", rc);
  MPI_Comm_set_errhandler(out, MPI_ERRORS_RETURN);
  comms_.push_back(out);
  return GroupId{static_cast<std::int32_t>(comms_.size() - 1)};
}

bool MpiWorld::valid(GroupId g) const {
  return g.value >= 0 && static_cast<std::size_t>(g.value) < comms_.size() &&
         comms_[static_cast<std::size_t>(g.value)] != MPI_COMM_NULL;
}

MPI_Comm MpiWorld::comm(GroupId g) const {
  STEPSIM_ASSERT(valid(g));
  return comms_[static_cast<std::size_t>(g.value)];
}

std::int32_t MpiWorld::group_size(GroupId g) const {
  if (!valid(g)) return 0;
  int n = 0;
  MPI_Comm_size(comm(g), &n);
  return n;
}

std::int32_t MpiWorld::group_rank(GroupId g) const {
  int r = 0;
  MPI_Comm_rank(comm(g), &r);
  return r;
}

std::vector<std::int32_t> MpiWorld::members(GroupId g) const {
  MPI_Group world_group = MPI_GROUP_NULL;
  MPI_Group group = MPI_GROUP_NULL;
  MPI_Comm_group(comms_[0], &world_group);
  MPI_Comm_group(comm(g), &group);
  const std::int32_t n = group_size(g);
  std::vector<int> in(static_cast<std::size_t>(n));
  std::vector<int> out(static_cast<std::size_t>(n));
  for (std::int32_t i = 0; i < n; ++i) in[static_cast<std::size_t>(i)] = i;
  MPI_Group_translate_ranks(group, n, in.data(), world_group, out.data());
  MPI_Group_free(&group);
  MPI_Group_free(&world_group);
  return {out.begin(), out.end()};
}

Result<double> MpiWorld::barrier(GroupId g) {
  if (!valid(g))
    return Error{"", "", "backend: unknown process group " + std::to_string(g.value),
                 ErrorKind::kRuntime};
  const double t0 = steady_s();
  const int rc = MPI_Barrier(comm(g));
  if (rc != MPI_SUCCESS) return mpi_error("MPI_Barrier", rc);
  return steady_s() - t0;
}

double MpiWorld::now_s() const { return steady_s() + offset_s_; }

Result<double> MpiWorld::align_clocks() {
  // Cristian's algorithm against rank 0, one rank at a time: the round trip with the
  // smallest delay bounds the offset best.
  offset_s_ = 0.0;
  const MPI_Comm world = comms_[0];
  for (std::int32_t peer = 1; peer < size_; ++peer) {
    if (rank_ == 0) {
      for (int round = 0; round < kClockRounds; ++round) {
        double dummy = 0.0;
        int rc = MPI_Recv(&dummy, 1, MPI_DOUBLE, peer, kClockTag, world, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) return mpi_error("MPI_Recv", rc);
        double t = steady_s();
        rc = MPI_Send(&t, 1, MPI_DOUBLE, peer, kClockTag, world);
        if (rc != MPI_SUCCESS) return mpi_error("MPI_Send", rc);
      }
    } else if (rank_ == peer) {
      double best_rtt = std::numeric_limits<double>::infinity();
      for (int round = 0; round < kClockRounds; ++round) {
        double root_t = 0.0;
        const double t1 = steady_s();
        int rc = MPI_Send(&t1, 1, MPI_DOUBLE, 0, kClockTag, world);
        if (rc != MPI_SUCCESS) return mpi_error("MPI_Send", rc);
        rc = MPI_Recv(&root_t, 1, MPI_DOUBLE, 0, kClockTag, world, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) return mpi_error("MPI_Recv", rc);
        const double t2 = steady_s();
        if (t2 - t1 < best_rtt) {
          best_rtt = t2 - t1;
          offset_s_ = root_t - 0.5 * (t1 + t2);
        }
      }
    }
  }
  const int rc = MPI_Barrier(world);
  if (rc != MPI_SUCCESS) return mpi_error("MPI_Barrier", rc);
  return offset_s_;
}

Result<std::vector<std::vector<double>>> MpiWorld::gather_to_root(
    const std::vector<double>& values) {
  const MPI_Comm world = comms_[0];
  int count = static_cast<int>(values.size());
  std::vector<int> counts(static_cast<std::size_t>(size_));
  int rc = MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, world);
  if (rc != MPI_SUCCESS) return mpi_error("MPI_Gather", rc);
  std::vector<int> displs(static_cast<std::size_t>(size_), 0);
  int total = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    displs[i] = total;
    total += counts[i];
  }
  std::vector<double> all(static_cast<std::size_t>(rank_ == 0 ? total : 0));
  rc = MPI_Gatherv(values.data(), count, MPI_DOUBLE, all.data(), counts.data(), displs.data(),
                   MPI_DOUBLE, 0, world);
  if (rc != MPI_SUCCESS) return mpi_error("MPI_Gatherv", rc);
  std::vector<std::vector<double>> out;
  if (rank_ != 0) return out;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    const auto first = all.begin() + displs[i];
    out.emplace_back(first, first + counts[i]);
  }
  return out;
}

Result<std::vector<double>> MpiWorld::max_over_group(const std::vector<double>& seconds,
                                                     GroupId g) {
  std::vector<double> out(seconds.size());
  const int rc = MPI_Allreduce(seconds.data(), out.data(), static_cast<int>(seconds.size()),
                               MPI_DOUBLE, MPI_MAX, comm(g));
  if (rc != MPI_SUCCESS) return mpi_error("MPI_Allreduce", rc);
  return out;
}

Status MpiWorld::handshake(const std::vector<std::int32_t>& peers) {
  constexpr int kHandshakeTag = 32767;
  std::vector<MPI_Request> requests(2 * peers.size(), MPI_REQUEST_NULL);
  for (std::size_t i = 0; i < peers.size(); ++i) {
    MPI_Isend(nullptr, 0, MPI_BYTE, peers[i], kHandshakeTag, comms_[0], &requests[2 * i]);
    MPI_Irecv(nullptr, 0, MPI_BYTE, peers[i], kHandshakeTag, comms_[0], &requests[2 * i + 1]);
  }
  const int rc =
      MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE);
  if (rc != MPI_SUCCESS) return mpi_error("MPI_Waitall", rc);
  return ok_status();
}

}  // namespace stepsim::calib
