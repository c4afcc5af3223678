#pragma once
// The simulated memory timeline of a step: static memory from the start, each chunk's
// stored activations from the end of its forward to the end of its backward, recompute
// buffers during backward, and transient op workspaces (logits, gathered inputs) while their
// op runs.

#include <cstdint>
#include <vector>

#include "stepsim/graph/build_step.hpp"
#include "stepsim/ops/plan.hpp"
#include "stepsim/engine/engine.hpp"
#include "stepsim/engine/timeline.hpp"

namespace stepsim::sim {

struct StepMemory {
  std::vector<std::int64_t> peak_bytes;           ///< per rank
  std::vector<std::vector<MemoryPoint>> curves;   ///< per rank, when asked for
};

StepMemory simulate_memory(const BuiltStep& step, const EngineResult& run,
                           const WorkloadPlan& plan, bool keep_curves);

}  // namespace stepsim::sim
