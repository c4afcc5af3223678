#include "stepsim/engine/task_graph.hpp"

#include "stepsim/base/assert.hpp"

namespace stepsim::sim {

void TaskGraph::reserve(std::size_t tasks, std::size_t edges) {
  tasks_.reserve(tasks);
  edges_.reserve(edges);
}

void TaskGraph::set_rendezvous(TaskId task, std::int32_t id) {
  STEPSIM_ASSERT(!finalized_ && id >= 0 && id < rendezvous_count_);
  tasks_[task.value].rendezvous = id;
}

void TaskGraph::finalize() {
  STEPSIM_ASSERT(!finalized_ && tasks_.size() < 0xffffffffu && edges_.size() < 0xffffffffu);
  csr_ = Csr(boost::edges_are_unsorted_multi_pass, edges_.begin(), edges_.end(),
             static_cast<Csr::vertices_size_type>(tasks_.size()));
  edges_.clear();
  edges_.shrink_to_fit();
  finalized_ = true;
}

}  // namespace stepsim::sim
