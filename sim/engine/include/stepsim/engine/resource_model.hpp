#pragma once
// The resource model, apart from the event kernel (as SimGrid splits resources from its
// solver): SMs, NVLink and NIC directions shared max-min fairly.
// Details: docs/models.md, "The resource model".

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "stepsim/config/scenario.hpp"

namespace stepsim::sim {

/// One flow's use of one resource.
struct FlowUse {
  std::uint32_t resource = 0;
  /// Capacity units per unit of the flow's rate; 0 with `nccl_kernel`: the flow holds none
  /// of the resource's capacity but runs an NCCL kernel on that GPU's SMs (interference).
  /// A float (the engine's are 0 and 1, exact in any width): 12 bytes a use rather than 24,
  /// and the engine reads a flow's uses at each start and end.
  float weight = 1;
  bool nccl_kernel = false;
};

class ResourceModel {
 public:
  /// `capacity[r]` of each resource; `is_sm[r]`: resource r is a GPU's SMs (where compute
  /// flows and NCCL kernels interfere).
  ResourceModel(std::vector<double> capacity, std::vector<bool> is_sm, Interference coefficients,
                std::size_t max_flows);

  /// Flow `flow` (< max_flows) starts using `uses` with maximum rate `bound`. The model copies
  /// up to two uses and keeps a view of more: those must outlive the flow (until
  /// remove_flow). Returns its rate (> 0) when it starts alone on its resources (no other
  /// flow's rate changes), else 0 (a double, not an optional: the optional's flag, stored a
  /// byte and reloaded a word, stalled every start). With `report_alone` false, update()
  /// reports a flow that started alone only if a flow joining it before then changes its
  /// rate: the caller plans it at the returned rate itself.
  double add_flow(std::uint32_t flow, std::span<const FlowUse> uses, double bound,
                  bool report_alone = true);
  /// Flow `flow`, added alone with `report_alone` false, is reported at the next update after
  /// all (the caller does not plan it itself).
  void report_at_update(std::uint32_t flow) {
    slots_[slot_of_[flow]].added = true;
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
    for (const std::uint32_t f : changed_) changed(f, slots_[slot_of_[f]].rate);
    changed_.clear();
  }
  /// Asks for flow `flow`'s state ahead of its add_flow or remove_flow: the engine knows
  /// which tasks start and end next, and their states lie far apart in memory.
  void prefetch(std::uint32_t flow) const { __builtin_prefetch(&slot_of_[flow]); }
  double rate(std::uint32_t flow) const { return active(flow) ? slots_[slot_of_[flow]].rate : 0.0; }
  bool active(std::uint32_t flow) const { return slot_of_[flow] != kNoSlot; }

 private:
  void touch(std::uint32_t resource);
  void solve_touched();
  // The private interface names flows by their slots (below).
  void solve_component(const std::vector<std::uint32_t>& slots,
                       const std::vector<std::uint32_t>& resources);
  double bound_of(std::uint32_t slot) const;
  /// The rate of the flow in `slot` alone in its component.
  double lone_rate(std::uint32_t slot) const;
  std::span<const FlowUse> uses_of(std::uint32_t slot) const {
    const FlowState& fs = slots_[slot];
    return {fs.use_count <= kInlineUses ? fs.inline_uses.data() : fs.uses, fs.use_count};
  }

  std::vector<double> capacity_;
  std::vector<bool> is_sm_;
  Interference coefficients_;
  // Per resource: the slots of the active flows using it, in start order; counts of compute flows
  // (weight > 0 on an SM resource) and NCCL kernels on it; touched since the last update.
  std::vector<std::vector<std::uint32_t>> users_;
  std::vector<std::uint32_t> compute_count_;
  std::vector<std::uint32_t> nccl_count_;
  std::vector<bool> touched_;
  std::vector<std::uint32_t> touched_list_;
  // An active flow's state, in a slot of a small pool reused as flows end: a few dozen flows
  // run at once among tens of thousands, and a pool that stays in cache costs no miss at
  // each start, end and solve (a state per flow did, one per start).
  static constexpr std::uint16_t kInlineUses = 2;
  struct alignas(64) FlowState {
    double bound = 1;
    double rate = 0;
    // Its uses: up to kInlineUses copied here (a compute task's one, a transfer's two: no
    // miss on the caller's at its end and at each solve), more the caller's (add_flow).
    const FlowUse* uses = nullptr;
    std::array<FlowUse, kInlineUses> inline_uses{};
    std::uint32_t flow = 0;       // its id
    std::uint32_t mark = 0;       // component-search generation
    std::uint16_t use_count = 0;  // a rendezvous flow: every member's uses
    bool added = false;  // added since the last update: reported even if its rate is 0->x
  };
  static constexpr std::uint32_t kNoSlot = 0xffffffffu;
  std::vector<std::uint32_t> slot_of_;  // per flow id: its slot, kNoSlot when not active
  std::vector<FlowState> slots_;
  std::vector<std::uint32_t> free_slots_;  // last freed first (deterministic)
  std::uint32_t generation_ = 0;
  std::vector<std::uint32_t> changed_;
  std::vector<std::uint32_t> fresh_;  // added alone since the last update (add_flow)
  // Scratch for solve_component.
  std::vector<std::uint32_t> component_flows_, component_resources_, stack_;  // slots, resources
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
