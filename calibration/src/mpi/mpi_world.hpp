#pragma once
// Internal: the world-level services both backends get from MPI: communicator splits,
// barriers, a clock aligned to rank 0, gathering to rank 0, abort.

#include <mpi.h>

#include <cstdint>
#include <vector>

#include "stepsim/calibration/backend.hpp"

namespace stepsim::calib {

class MpiWorld {
 public:
  /// Duplicates MPI_COMM_WORLD (group 0). MPI must be initialised.
  MpiWorld();
  ~MpiWorld();
  MpiWorld(const MpiWorld&) = delete;
  MpiWorld& operator=(const MpiWorld&) = delete;

  std::int32_t rank() const { return rank_; }
  std::int32_t size() const { return size_; }

  /// MPI_Comm_split of the world; the new group's id is returned.
  Result<GroupId> split(std::int32_t color, std::int32_t key);
  bool valid(GroupId g) const;
  MPI_Comm comm(GroupId g) const;  ///< requires valid(g)
  std::int32_t group_size(GroupId g) const;
  std::int32_t group_rank(GroupId g) const;
  /// World ranks of the members of `g`, in group-rank order.
  std::vector<std::int32_t> members(GroupId g) const;

  Result<double> barrier(GroupId g);
  double now_s() const;
  Result<double> align_clocks();
  Result<std::vector<std::vector<double>>> gather_to_root(const std::vector<double>& values);
  /// Per repeat, the largest duration over the members of `g` (a collective ends for the
  /// group when its last member is done).
  Result<std::vector<double>> max_over_group(const std::vector<double>& seconds, GroupId g);
  /// A zero-byte exchange with every peer (world ranks), posted at once: after it, each
  /// peer has arrived here too. Used before timing a message so that the time is the
  /// transfer's, not the wait for a late peer. Tag 32767 (P2PRequest tags stay below).
  Status handshake(const std::vector<std::int32_t>& peers);

 private:
  std::int32_t rank_ = 0;
  std::int32_t size_ = 1;
  double offset_s_ = 0.0;        ///< add to the local steady clock to get rank 0's
  std::vector<MPI_Comm> comms_;  ///< index = GroupId::value
};

}  // namespace stepsim::calib
