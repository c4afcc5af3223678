#pragma once
// The discrete-event engine: runs a finalized TaskGraph. A task is ready when all its
// predecessors ended; a rendezvous group starts when its last member is ready; a task ends
// its duration after it starts, and its end is the event that releases its successors.
//
// Resources are modelled as edges: the builder serialises each stream by chaining its
// tasks, so no two tasks ever compete for anything the graph does not show. A task's start
// is therefore fully determined by its predecessors' ends, and the engine releases tasks
// in dependency order (completions are handled in the order tasks started, not sorted by
// time): the times are exactly those a time-ordered event queue produces, at a fraction of
// the cost, which sweeps of thousands of configurations need. Ties are broken by that
// deterministic order, so results are reproducible bit for bit. A resource model that
// arbitrates between ready tasks (bandwidth sharing, say) would need the time-ordered
// queue back.

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
