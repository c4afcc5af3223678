#pragma once
// The discrete-event engine: runs a finalized TaskGraph in time order.
// Details: docs/models.md, "The discrete-event engine".

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
