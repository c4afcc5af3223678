#pragma once
// The discrete-event engine: runs a finalized TaskGraph. Events are task completions,
// processed in time order (ties in insertion order, so results are deterministic). A task
// becomes ready when all its predecessors ended; a rendezvous group starts when its last
// member is ready. There is no other resource model: streams are serialised by the graph's
// edges, as the builder issues them.

#include <cstdint>
#include <vector>

#include "stepsim/core/result.hpp"
#include "stepsim/sim/task_graph.hpp"

namespace stepsim::sim {

struct TaskTiming {
  double start_s = 0;
  double end_s = 0;
  /// The predecessor (or rendezvous partner's predecessor) whose end released this task;
  /// kNone when it started at time zero. Walking these back gives the critical path.
  std::uint32_t critical_pred = kNone;
  static constexpr std::uint32_t kNone = 0xffffffffu;
};

struct EngineResult {
  std::vector<TaskTiming> timings;  ///< index = TaskId
  double makespan_s = 0;
  std::uint32_t last_task = TaskTiming::kNone;  ///< the task that ended last
};

/// Runs `graph`. Fails (as a bug report, not bad input) when tasks never become ready:
/// a dependency cycle or a rendezvous whose members wait on each other (deadlock).
Result<EngineResult> run_engine(const TaskGraph& graph);

}  // namespace stepsim::sim
