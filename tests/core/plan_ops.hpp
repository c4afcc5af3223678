#pragma once
// Finding ops in a decomposed plan, for the decomposition tests.

#include <cstdint>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "stepsim/core/decompose.hpp"

namespace stepsim::testing {

/// Keeps a plan alive for the rest of the test program, so that pointers `named` returns into
/// it stay valid (a temporary plan would be freed at the end of the full expression).
inline const WorkloadPlan& kept(WorkloadPlan plan) {
  static std::deque<WorkloadPlan> plans;
  return plans.emplace_back(std::move(plan));
}

/// The ops of `ops` called `name` on layer `layer`, in order.
inline std::vector<const Op*> named(const std::vector<Op>& ops, const std::string& name,
                                    std::int32_t layer = 0) {
  std::vector<const Op*> out;
  for (const Op& op : ops) {
    if (op.name == name && op.layer == layer) out.push_back(&op);
  }
  return out;
}

}  // namespace stepsim::testing
