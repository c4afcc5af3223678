#pragma once
// RooflineCostModel: durations from a system file's peak FLOP/s and bandwidths, shaped by
// efficiency curves, with collectives costed by NCCL's ring algorithm in nccl-tests'
// bus-bandwidth terms.

#include <string>

#include "stepsim/cost/cost_model.hpp"
#include "stepsim/config/scenario.hpp"

namespace stepsim {

class RooflineCostModel final : public CostModel {
 public:
  explicit RooflineCostModel(SystemConfig system) : system_(std::move(system)) {}

  double gemm_s(const GemmOp& op) const override;
  double attention_s(const AttentionOp& op) const override;
  double memory_bound_s(const MemoryBoundOp& op) const override;
  double collective_s(const CollectiveOp& op) const override;
  double p2p_s(const P2POp& op) const override;
  std::string describe() const override;
  /// Every kernel from the roofline; collectives from NCCL's model where NCCL runs.
  Provenance provenance() const override;

  /// Bus bandwidth (bytes/s) a collective of `group_size` reaches when spanning
  /// `nodes_spanned` nodes: the slowest link class on the ring.
  double bus_bandwidth_bytes_per_s(std::int64_t group_size, std::int64_t nodes_spanned) const;

 private:
  SystemConfig system_;
  ProvenanceRecorder used_;  ///< what the ops priced so far came from (provenance())
};

/// nccl-tests' factor from algorithm to bus bandwidth: 2(n-1)/n for all-reduce, (n-1)/n for
/// all-gather and reduce-scatter.
double bus_factor(CollectiveKind kind, std::int64_t group_size);

/// The part of an all-to-all's buffer each member sends to members on other nodes: (n-k)/n
/// with k = group_size / nodes_spanned members per node (0 inside one node). The rest of
/// bus_factor's (n-1)/n, (k-1)/n, goes to the members of its own node.
double all_to_all_off_node_fraction(std::int64_t group_size, std::int64_t nodes_spanned);

}  // namespace stepsim
