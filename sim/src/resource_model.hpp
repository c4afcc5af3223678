#pragma once
// The resource model, apart from the event kernel (engine.cpp), as SimGrid splits its
// resources/actions (src/kernel/resource/) from its LMM solver (src/kernel/lmm/):
//
// - Resources have a capacity: per simulated GPU its SMs (compute), its NVLink/NVSwitch port
//   and its NIC rail, each direction of a port or rail a resource of its own (the links are
//   full duplex).
// - Flows (the engine's running tasks) hold shares of the resources they use, `weight` units
//   of capacity per unit of rate, and have a maximum rate (`bound`).
// - Concurrent flows share the resources max-min fairly, by progressive filling: all rates
//   rise together until a resource saturates (the bottleneck); its flows are fixed there and
//   the others rise on, bottleneck after bottleneck.
// - Compute-communication interference on one GPU: an NCCL kernel takes SMs and HBM
//   bandwidth from the compute kernels running beside it. While a GPU runs both a compute
//   flow and an NCCL flow, the compute flow's bound is divided by
//   `Interference::compute_slowdown` and the NCCL flow's by `collective_slowdown`.
//
// The engine uses capacities and bounds of 1 (a flow's rate is the fraction of its own
// uncontended speed: a task alone runs in its cost-model duration) and weights of 1 (a
// collective or a transfer alone uses the whole bandwidth of the links it holds, as NCCL's
// bandwidth-bound messages do), so two transfers on one NIC each run at half speed.
//
// update() re-solves only the flows connected (through shared resources) to a resource that
// a start or an end touched since the last call; a flow alone on its resources takes its
// bound without any filling, and one that starts on resources nobody uses, or ends leaving
// a resource unused, touches nothing (no other flow's rate can change).

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "stepsim/core/scenario.hpp"

namespace stepsim::sim {

/// One flow's use of one resource.
struct FlowUse {
  std::uint32_t resource = 0;
  /// Capacity units per unit of the flow's rate; 0 with `nccl_kernel`: the flow holds none
  /// of the resource's capacity but runs an NCCL kernel on that GPU's SMs (interference).
  double weight = 1;
  bool nccl_kernel = false;
};

class ResourceModel {
 public:
  /// `capacity[r]` of each resource; `is_sm[r]`: resource r is a GPU's SMs (where compute
  /// flows and NCCL kernels interfere).
  ResourceModel(std::vector<double> capacity, std::vector<bool> is_sm, Interference coefficients,
                std::size_t max_flows);

  /// Flow `flow` (< max_flows) starts using `uses` with maximum rate `bound`. Returns its
  /// rate when it starts alone on its resources (no other flow's rate changes), else none. With
  /// `report_alone` false, update() reports a flow that started alone only if a flow joining
  /// it before then changes its rate: the caller plans it at the returned rate itself.
  std::optional<double> add_flow(std::uint32_t flow, std::span<const FlowUse> uses, double bound,
                                 bool report_alone = true);
  /// Flow `flow`, added alone with `report_alone` false, is reported at the next update after
  /// all (the caller does not plan it itself).
  void report_at_update(std::uint32_t flow) {
    flows_[flow].added = true;
    fresh_.push_back(flow);
  }
  /// Flow `flow` ends and releases its resources.
  void remove_flow(std::uint32_t flow);
  /// Re-solves every component touched since the last call. Calls `changed(flow, rate)` for
  /// each active flow of those components whose rate changed or that was added since, in
  /// increasing flow order (deterministic).
  template <class F>
  void update(F&& changed) {
    solve_touched();
    for (const std::uint32_t f : changed_) changed(f, flows_[f].rate);
    changed_.clear();
  }
  /// Asks for flow `flow`'s state ahead of its add_flow or remove_flow: the engine knows
  /// which tasks start and end next, and their states lie far apart in memory.
  void prefetch(std::uint32_t flow) const { __builtin_prefetch(&flows_[flow]); }
  double rate(std::uint32_t flow) const { return flows_[flow].rate; }
  bool active(std::uint32_t flow) const { return flows_[flow].active; }

 private:
  void touch(std::uint32_t resource);
  void solve_touched();
  void solve_component(const std::vector<std::uint32_t>& flows,
                       const std::vector<std::uint32_t>& resources);
  double bound_of(std::uint32_t flow) const;
  /// The rate of `flow` alone in its component.
  double lone_rate(std::uint32_t flow) const;
  std::span<const FlowUse> uses_of(std::uint32_t flow) const {
    return {uses_.data() + flows_[flow].use_begin, flows_[flow].use_count};
  }

  std::vector<double> capacity_;
  std::vector<bool> is_sm_;
  Interference coefficients_;
  // Per resource: active flows using it; counts of compute flows (weight > 0 on an SM
  // resource) and NCCL kernels on it; touched since the last update.
  std::vector<std::vector<std::uint32_t>> users_;
  std::vector<std::uint32_t> compute_count_;
  std::vector<std::uint32_t> nccl_count_;
  std::vector<bool> touched_;
  std::vector<std::uint32_t> touched_list_;
  // Per flow, kept together (one cache line per flow at each start, end and solve).
  struct FlowState {
    double bound = 1;
    double rate = 0;
    std::uint32_t use_begin = 0;  // into uses_
    std::uint32_t mark = 0;       // component-search generation
    std::uint16_t use_count = 0;  // a rendezvous flow: every member's uses
    bool active = false;
    bool added = false;  // added since the last update: reported even if its rate is 0->x
  };
  std::vector<FlowUse> uses_;  // every flow's uses, appended at add_flow
  std::vector<FlowState> flows_;
  std::uint32_t generation_ = 0;
  std::vector<std::uint32_t> changed_;
  std::vector<std::uint32_t> fresh_;  // added alone since the last update (add_flow)
  // Scratch for solve_component.
  std::vector<std::uint32_t> component_flows_, component_resources_, stack_;
  std::vector<std::uint32_t> resource_mark_;
  std::vector<double> left_, weight_sum_;
  std::vector<std::uint32_t> local_index_;  // per resource: its index in the component
  std::vector<double> local_capacity_, local_bound_, local_rate_;
  std::vector<FlowUse> local_uses_;
  std::vector<std::uint32_t> local_begin_;
};

/// Max-min fair rates by progressive filling, for tests and for anyone solving one system
/// outright: flow i uses resources `uses[i]` and may not exceed `bound[i]`.
std::vector<double> max_min_rates(const std::vector<double>& capacity,
                                  const std::vector<std::vector<FlowUse>>& uses,
                                  const std::vector<double>& bound);

}  // namespace stepsim::sim
