#pragma once
// The idle stretches of each rank's compute stream in a simulated step: the bubble's parts
// and the exposed communication (Timeline::idle), for traces.

#include <vector>

#include "stepsim/engine/engine.hpp"
#include "stepsim/engine/timeline.hpp"
#include "stepsim/graph/build_step.hpp"
#include "stepsim/ops/plan.hpp"
#include "stepsim/simulate/simulate.hpp"

namespace stepsim::sim {

/// Every rank's idle stretches in [0, step_time_s], by (rank, start), with the accounting of
/// the stage summaries: a rank is busy inside its actions and step ops; inside an action the
/// stretches where no compute kernel runs are exposed communication (its TP or CP
/// collectives), outside them its transfers and then its collectives are; the rest of the
/// step is bubble, laid out as `parts` of its stage says: schedule first on the stretch
/// before its first work and the one after its last, then stage imbalance, then waits, each
/// on the stretches in time order.
std::vector<IdleSpan> idle_spans(const BuiltStep& step, const EngineResult& run,
                                 const WorkloadPlan& plan, double step_time_s,
                                 const std::vector<BubbleParts>& parts);

}  // namespace stepsim::sim
