#pragma once
// The discrete-event engine: runs a finalized TaskGraph in time order. A task is ready when
// all its predecessors ended; a rendezvous group starts when its last member is ready (its
// members progress together: one flow); a task ends when its work is done, and its end is
// the event that releases its successors.
//
// Work and rates: a task's work is its duration alone on its resources (Task::duration_s,
// the cost model's time). While it runs it holds the resources of Task::resources, shared
// with the other running tasks by the resource model (sim/engine/include/stepsim/engine/resource_model.hpp: max-min
// fair bandwidth sharing of NVLink ports and NIC rails, compute-communication interference
// on a GPU's SMs), which gives each its rate (1 = alone). Rates change only at events (a
// start or an end), and only the tasks connected to the resources an event touched are
// re-solved; a task's end is re-planned when its rate changes. A task holding nothing runs
// at rate 1 whatever else runs.
//
// Stream order and cross-stream waits are edges (the builder chains each stream's tasks), so
// resources arbitrate only between tasks the graph lets run together: DP collectives beside
// backward actions, P2P transfers beside both. Events at one instant are handled together
// (ends first, then the starts they release, then one re-solve), in task order: results are
// reproducible bit for bit. With contention off (or nothing ever sharing a resource) every
// task ends its duration after it starts, the longest-path times.

#include <cstdint>
#include <vector>

#include "stepsim/base/result.hpp"
#include "stepsim/config/scenario.hpp"
#include "stepsim/engine/task_graph.hpp"

namespace stepsim::sim {

struct TaskTiming {
  double start_s = 0;
  double end_s = 0;
  /// The predecessor (or rendezvous partner's predecessor) whose end released this task;
  /// kNone when it started at time zero. Walking these back gives the critical path.
  std::uint32_t critical_pred = kNone;
  /// It ran slower than alone at some point (end - start exceeds its duration).
  bool contended = false;
  static constexpr std::uint32_t kNone = 0xffffffffu;
  /// How much longer than its duration the task took: 1 unless contended. Stamped ops of a
  /// stretched action stretch in proportion.
  double stretch(double duration_s) const {
    return contended && duration_s > 0 ? (end_s - start_s) / duration_s : 1.0;
  }
};

struct EngineResult {
  std::vector<TaskTiming> timings;  ///< index = TaskId
  double makespan_s = 0;
  std::uint32_t last_task = TaskTiming::kNone;  ///< the task that ended last
  /// Tasks that ran slower than alone at some point (shared a link, or interfered).
  std::int64_t contended_tasks = 0;
};

struct EngineOptions {
  /// Tasks share the resources they hold and interfere on their GPU; false: every task runs
  /// in its duration (`predict --no-contention`).
  bool contention = true;
  Interference interference;
  /// Per GPU (a resource's gpu index): the bandwidth of its NIC rail, both directions, as a
  /// share of the costed one (0.5: a transfer alone on it takes twice as long); GPUs past
  /// the end, or an empty vector: 1. Only with `contention` (the link model).
  std::vector<double> nic_capacity;
};

/// Runs `graph`. Fails (as a bug report, not bad input) when tasks never become ready:
/// a dependency cycle or a rendezvous whose members wait on each other (deadlock).
Result<EngineResult> run_engine(const TaskGraph& graph, const EngineOptions& options = {});

}  // namespace stepsim::sim
