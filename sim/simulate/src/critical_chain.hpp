#pragma once
// The engine's critical chain: from the task that ended last back through the predecessors
// that released each task, as the report's summary and as the trace's links.

#include <cstdint>
#include <vector>

#include "stepsim/engine/engine.hpp"
#include "stepsim/engine/timeline.hpp"
#include "stepsim/graph/build_step.hpp"
#include "stepsim/simulate/simulate.hpp"

namespace stepsim::sim {

/// The chain's tasks that show on the timeline (not joins or delays, not zero-length), as
/// trace links.
std::vector<ChainLink> chain_links(const BuiltStep& step, const EngineResult& run);

/// The chain summarised: its time by kind and its longest stretches.
CriticalChain walk_critical_chain(const BuiltStep& step, const EngineResult& run);

}  // namespace stepsim::sim
