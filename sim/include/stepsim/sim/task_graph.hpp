#pragma once
// TaskGraph: the simulated step as tasks on (rank, stream) with finish-to-start dependencies,
// stored as a Boost.Graph compressed sparse row graph. Stream order is not implicit: the
// builder adds an edge from each task to the next one issued on the same stream, exactly as
// CUDA streams serialise their work, and explicit edges for cross-stream waits.
// Tasks that share a rendezvous id start together once all of them are ready and end
// together (collectives over several simulated ranks, both sides of a P2P transfer).

#include <cstdint>
#include <utility>
#include <vector>

#include <boost/graph/compressed_sparse_row_graph.hpp>

#include "stepsim/core/ops.hpp"

namespace stepsim::sim {

/// Index of a task in its TaskGraph.
struct TaskId {
  std::uint32_t value = 0;
  bool operator==(const TaskId&) const = default;
};

enum class TaskKind : std::uint8_t {
  kCompute,     ///< a forward or backward action (a stamped chunk template)
  kTransfer,    ///< a P2P transfer: one task for both ranks (Task::rank is the sender)
  kJoin,        ///< zero-time join (a blocking call's completion)
  kCollective,  ///< a per-step collective (gradient reduction, embedding sync)
  kStepOp,      ///< a per-step compute op (optimizer)
  kDelay,       ///< a fixed wait holding nothing: marks a point inside another task (the
                ///< moment a DDP bucket's gradients become final inside a backward)
};

struct Task {
  std::int32_t rank = 0;
  Stream stream = Stream::kCompute;
  TaskKind kind = TaskKind::kCompute;
  double duration_s = 0;
  std::int32_t rendezvous = -1;  ///< tasks with the same id >= 0 start and end together
  std::int32_t payload = -1;     ///< builder-defined index (action, op) for reporting
};

class TaskGraph {
 public:
  using Csr = boost::compressed_sparse_row_graph<boost::directedS>;

  TaskId add_task(const Task& task);
  /// Capacity hints for the tasks and edges to come.
  void reserve(std::size_t tasks, std::size_t edges);
  /// `to` starts only after `from` ended.
  void add_edge(TaskId from, TaskId to);
  /// Freezes the edges into the CSR graph; no adds afterwards.
  void finalize();

  std::size_t size() const { return tasks_.size(); }
  const Task& task(TaskId id) const { return tasks_[id.value]; }
  const std::vector<Task>& tasks() const { return tasks_; }
  const Csr& graph() const { return csr_; }
  std::int32_t rendezvous_count() const { return rendezvous_count_; }
  /// A fresh rendezvous id.
  std::int32_t new_rendezvous() { return rendezvous_count_++; }
  /// Puts an already added task into rendezvous group `id` (before finalize()).
  void set_rendezvous(TaskId task, std::int32_t id);
  bool finalized() const { return finalized_; }

 private:
  std::vector<Task> tasks_;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> edges_;
  Csr csr_;
  std::int32_t rendezvous_count_ = 0;
  bool finalized_ = false;
};

}  // namespace stepsim::sim
