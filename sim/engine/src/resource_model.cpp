#include "stepsim/engine/resource_model.hpp"

#include <algorithm>
#include <limits>

#include "stepsim/base/assert.hpp"

namespace stepsim::sim {

namespace {

// A resource counts as saturated when less than this share of its capacity is left, and a
// flow as at its bound within this share of it: progressive filling subtracts, so exact
// zeros are not to be expected.
constexpr double kSaturated = 1e-12;

// Progressive filling over one component. `uses(i)` gives flow i's uses with resources
// renumbered 0..capacity.size()-1 by the caller; writes rate[i].
template <class Uses>
void fill(std::size_t flows, const std::vector<double>& capacity, Uses&& uses,
          const std::vector<double>& bound, std::vector<double>& rate, std::vector<double>& left,
          std::vector<double>& weight_sum) {
  rate.assign(flows, 0.0);
  left = capacity;
  std::vector<bool> fixed(flows, false);  // components are small: a few flows
  std::size_t unfixed = flows;
  double level = 0;  // the common rate of every unfixed flow
  while (unfixed > 0) {
    weight_sum.assign(capacity.size(), 0.0);
    for (std::size_t i = 0; i < flows; ++i) {
      if (fixed[i]) continue;
      for (const FlowUse& u : uses(i)) weight_sum[u.resource] += static_cast<double>(u.weight);
    }
    // How far every unfixed rate can rise: to the first resource to saturate or the first
    // bound to be reached.
    double step = std::numeric_limits<double>::infinity();
    for (std::size_t r = 0; r < capacity.size(); ++r) {
      if (weight_sum[r] > 0) step = std::min(step, std::max(0.0, left[r]) / weight_sum[r]);
    }
    for (std::size_t i = 0; i < flows; ++i) {
      if (!fixed[i]) step = std::min(step, bound[i] - level);
    }
    step = std::max(0.0, step);
    level += step;
    for (std::size_t r = 0; r < capacity.size(); ++r) left[r] -= step * weight_sum[r];
    bool progress = false;
    for (std::size_t i = 0; i < flows; ++i) {
      if (fixed[i]) continue;
      bool fix = level >= bound[i] * (1 - kSaturated);
      for (const FlowUse& u : uses(i)) {
        if (u.weight > 0 && left[u.resource] <= kSaturated * capacity[u.resource]) fix = true;
      }
      if (fix) {
        fixed[i] = true;
        rate[i] = std::min(level, bound[i]);
        --unfixed;
        progress = true;
      }
    }
    STEPSIM_ASSERT(progress);  // each round saturates a resource or reaches a bound
  }
}

}  // namespace

ResourceModel::ResourceModel(std::vector<double> capacity, std::vector<bool> is_sm,
                             Interference coefficients, std::size_t max_flows)
    : capacity_(std::move(capacity)), is_sm_(std::move(is_sm)), coefficients_(coefficients) {
  STEPSIM_ASSERT(capacity_.size() == is_sm_.size());
  const std::size_t n = capacity_.size();
  users_.resize(n);
  compute_count_.assign(n, 0);
  nccl_count_.assign(n, 0);
  touched_.assign(n, false);
  resource_mark_.assign(n, 0);
  local_index_.assign(n, 0);
  slot_of_.assign(max_flows, kNoSlot);
}

void ResourceModel::touch(std::uint32_t resource) {
  if (touched_[resource]) return;
  touched_[resource] = true;
  touched_list_.push_back(resource);
}

double ResourceModel::add_flow(std::uint32_t flow, std::span<const FlowUse> uses, double bound,
                               bool report_alone) {
  STEPSIM_ASSERT(flow < slot_of_.size() && slot_of_[flow] == kNoSlot && uses.size() <= 0xffff &&
                 bound > 0);
  std::uint32_t slot = 0;
  if (free_slots_.empty()) {
    slot = static_cast<std::uint32_t>(slots_.size());
    slots_.emplace_back();
  } else {
    slot = free_slots_.back();
    free_slots_.pop_back();
  }
  slot_of_[flow] = slot;
  FlowState& fs = slots_[slot];
  fs.uses = uses.data();
  if (uses.size() <= kInlineUses) {
    // A loop, not std::copy: that calls memmove for a runtime count, at every start.
    for (std::size_t i = 0; i < uses.size(); ++i) fs.inline_uses[i] = uses[i];
  }
  fs.use_count = static_cast<std::uint16_t>(uses.size());
  fs.flow = flow;
  fs.bound = bound;
  fs.rate = 0;
  fs.added = true;
  // A flow on resources nobody else uses is a component of its own: no other flow's rate
  // changes (no sharing, and no interference, which needs a flow of the other kind on the
  // same SMs), and its own rate is what solve_component's one-flow case gives. It is solved
  // here and reported at the next update, without touching its resources; should another
  // flow join one of them before that update, the search from that flow's resources finds
  // both and solves them together.
  bool alone = true;
  for (const FlowUse& u : uses) {
    STEPSIM_ASSERT(u.resource < capacity_.size());
    alone = alone && users_[u.resource].empty();
  }
  for (const FlowUse& u : uses) {
    users_[u.resource].push_back(slot);
    if (!alone) touch(u.resource);
    if (!is_sm_[u.resource]) continue;
    // The first compute flow (or NCCL kernel) on a GPU changes the bounds of the other kind:
    // their components are touched through this resource.
    if (u.nccl_kernel) ++nccl_count_[u.resource];
    if (u.weight > 0) ++compute_count_[u.resource];
  }
  if (!alone) return 0;
  fs.rate = lone_rate(slot);
  // A rate of 0 (a capacity of 0) is for the update to report, like a shared start's.
  if (report_alone || !(fs.rate > 0)) {
    fresh_.push_back(flow);
  } else {
    fs.added = false;  // as if reported: a re-solve reports it only when its rate changes
  }
  return fs.rate;
}

double ResourceModel::lone_rate(std::uint32_t slot) const {
  double rate = bound_of(slot);
  for (const FlowUse& u : uses_of(slot)) {
    if (u.weight > 0) rate = std::min(rate, capacity_[u.resource] / static_cast<double>(u.weight));
  }
  return rate;
}

void ResourceModel::remove_flow(std::uint32_t flow) {
  STEPSIM_ASSERT(flow < slot_of_.size() && slot_of_[flow] != kNoSlot);
  const std::uint32_t slot = slot_of_[flow];
  slot_of_[flow] = kNoSlot;
  free_slots_.push_back(slot);
  for (const FlowUse& u : uses_of(slot)) {
    auto& users = users_[u.resource];
    const auto it = std::find(users.begin(), users.end(), slot);
    STEPSIM_ASSERT(it != users.end());
    users.erase(it);  // keeps the remaining users in start order (deterministic)
    // A resource left unused has no component to re-solve.
    if (!users.empty()) touch(u.resource);
    if (!is_sm_[u.resource]) continue;
    if (u.nccl_kernel) --nccl_count_[u.resource];
    if (u.weight > 0) --compute_count_[u.resource];
  }
}

double ResourceModel::bound_of(std::uint32_t slot) const {
  const double own = slots_[slot].bound;
  double bound = own;
  for (const FlowUse& u : uses_of(slot)) {
    if (!is_sm_[u.resource]) continue;
    if (u.nccl_kernel && compute_count_[u.resource] > 0) {
      bound = std::min(bound, own / coefficients_.collective_slowdown);
    }
    if (u.weight > 0 && nccl_count_[u.resource] > 0) {
      bound = std::min(bound, own / coefficients_.compute_slowdown);
    }
  }
  return bound;
}

void ResourceModel::solve_touched() {
  for (const std::uint32_t start : touched_list_) {
    touched_[start] = false;
    if (resource_mark_[start] == generation_ + 1) continue;  // already in a component
    // The component: flows and resources reachable from `start` through active flows.
    component_flows_.clear();
    component_resources_.clear();
    stack_.assign(1, start);
    resource_mark_[start] = generation_ + 1;
    while (!stack_.empty()) {
      const std::uint32_t r = stack_.back();
      stack_.pop_back();
      component_resources_.push_back(r);
      for (const std::uint32_t f : users_[r]) {
        if (slots_[f].mark == generation_ + 1) continue;
        slots_[f].mark = generation_ + 1;
        component_flows_.push_back(f);
        for (const FlowUse& u : uses_of(f)) {
          if (resource_mark_[u.resource] == generation_ + 1) continue;
          resource_mark_[u.resource] = generation_ + 1;
          stack_.push_back(u.resource);
        }
      }
    }
    if (!component_flows_.empty()) solve_component(component_flows_, component_resources_);
  }
  touched_list_.clear();
  ++generation_;
  // Flows added alone and not re-solved with another since: their rate is new.
  for (const std::uint32_t f : fresh_) {
    if (slot_of_[f] == kNoSlot) continue;  // ended since
    FlowState& fs = slots_[slot_of_[f]];
    if (!fs.added) continue;
    fs.added = false;
    changed_.push_back(f);
  }
  fresh_.clear();
  std::sort(changed_.begin(), changed_.end());
}

void ResourceModel::solve_component(const std::vector<std::uint32_t>& slots,
                                    const std::vector<std::uint32_t>& resources) {
  const auto report = [&](std::uint32_t slot, double rate) {
    FlowState& fs = slots_[slot];
    if (rate != fs.rate || fs.added) {
      fs.rate = rate;
      fs.added = false;
      changed_.push_back(fs.flow);
    }
  };
  // The fast path: one flow alone takes its bound unless a resource caps it.
  if (slots.size() == 1) {
    report(slots[0], lone_rate(slots[0]));
    return;
  }
  // Renumber the component's resources 0..n-1 for the filling (scratch kept across calls:
  // this runs at every contended event).
  local_capacity_.resize(resources.size());
  for (std::size_t j = 0; j < resources.size(); ++j) {
    local_capacity_[j] = capacity_[resources[j]];
    local_index_[resources[j]] = static_cast<std::uint32_t>(j);
  }
  local_uses_.clear();
  local_begin_.assign(1, 0);
  local_bound_.resize(slots.size());
  for (std::size_t i = 0; i < slots.size(); ++i) {
    local_bound_[i] = bound_of(slots[i]);
    for (const FlowUse& u : uses_of(slots[i])) {
      local_uses_.push_back(FlowUse{.resource = local_index_[u.resource],
                                    .weight = u.weight,
                                    .nccl_kernel = u.nccl_kernel});
    }
    local_begin_.push_back(static_cast<std::uint32_t>(local_uses_.size()));
  }
  fill(
      slots.size(), local_capacity_,
      [&](std::size_t i) {
        return std::span<const FlowUse>(local_uses_.data() + local_begin_[i],
                                        local_begin_[i + 1] - local_begin_[i]);
      },
      local_bound_, local_rate_, left_, weight_sum_);
  for (std::size_t i = 0; i < slots.size(); ++i) report(slots[i], local_rate_[i]);
}

std::vector<double> max_min_rates(const std::vector<double>& capacity,
                                  const std::vector<std::vector<FlowUse>>& uses,
                                  const std::vector<double>& bound) {
  STEPSIM_ASSERT(uses.size() == bound.size());
  std::vector<double> rate, left, weight_sum;
  fill(uses.size(), capacity,
       [&](std::size_t i) { return std::span<const FlowUse>(uses[i].data(), uses[i].size()); },
       bound, rate, left, weight_sum);
  return rate;
}

}  // namespace stepsim::sim
