#pragma once
// Expands a simulated step into op-level timeline slices (for traces and the viewer).

#include "stepsim/graph/build_step.hpp"
#include "stepsim/ops/plan.hpp"
#include "stepsim/engine/engine.hpp"
#include "stepsim/engine/timeline.hpp"

namespace stepsim::sim {

/// The ops `ref` runs, in the order of its template's timings.
const std::vector<Op>& action_ops(const ActionRef& ref, const WorkloadPlan& plan);

/// Appends every op of every task of `step` to `out.slices`, sorted by (start, rank, stream).
void expand_slices(const BuiltStep& step, const EngineResult& run, const WorkloadPlan& plan,
                   Timeline& out);

}  // namespace stepsim::sim
