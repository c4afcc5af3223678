#include "stepsim/sim/task_graph.hpp"

#include "stepsim/core/assert.hpp"

namespace stepsim::sim {

TaskId TaskGraph::add_task(const Task& task) {
  STEPSIM_ASSERT(!finalized_);
  tasks_.push_back(task);
  return TaskId{static_cast<std::uint32_t>(tasks_.size() - 1)};
}

void TaskGraph::reserve(std::size_t tasks, std::size_t edges) {
  tasks_.reserve(tasks);
  edges_.reserve(edges);
}

void TaskGraph::add_edge(TaskId from, TaskId to) {
  STEPSIM_ASSERT(!finalized_);
  STEPSIM_ASSERT(from.value < tasks_.size() && to.value < tasks_.size() && from.value != to.value);
  edges_.emplace_back(from.value, to.value);
}

void TaskGraph::set_rendezvous(TaskId task, std::int32_t id) {
  STEPSIM_ASSERT(!finalized_ && id >= 0 && id < rendezvous_count_);
  tasks_[task.value].rendezvous = id;
}

void TaskGraph::finalize() {
  STEPSIM_ASSERT(!finalized_);
  csr_ = Csr(boost::edges_are_unsorted_multi_pass, edges_.begin(), edges_.end(), tasks_.size());
  edges_.clear();
  edges_.shrink_to_fit();
  finalized_ = true;
}

}  // namespace stepsim::sim
