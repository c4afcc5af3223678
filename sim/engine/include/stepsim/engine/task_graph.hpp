#pragma once
// TaskGraph: the simulated step as tasks on (rank, stream) with finish-to-start dependencies,
// stored as a Boost.Graph compressed sparse row graph. Stream order is not implicit: the
// builder adds an edge from each task to the next one issued on the same stream, exactly as
// CUDA streams serialise their work, and explicit edges for cross-stream waits.
// Tasks that share a rendezvous id start together once all of them are ready and end
// together (collectives over several simulated ranks, both sides of a P2P transfer).

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include <boost/graph/compressed_sparse_row_graph.hpp>

#include "stepsim/base/assert.hpp"
#include "stepsim/ops/ops.hpp"

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
  kHost,        ///< the host issuing kernels or waking from a synchronisation (holds nothing)
};

/// A resource of one simulated GPU (see sim/engine/include/stepsim/engine/resource_model.hpp). Each direction of its
/// NVLink/NVSwitch port and of its NIC rail is a resource of its own (full duplex).
enum class ResourceKind : std::uint8_t { kSm, kNvlinkTx, kNvlinkRx, kNicTx, kNicRx };
inline constexpr std::uint32_t kResourceKinds = 5;

struct ResourceRef {
  std::int32_t gpu = -1;  ///< the simulated rank whose resource it is; -1: none
  ResourceKind kind = ResourceKind::kSm;
  bool operator==(const ResourceRef&) const = default;
};

/// What a task holds while it runs. Compute (actions, step ops) holds its GPU's SMs; a
/// transfer the sending direction of the sender's link and the receiving one of the
/// receiver's; a collective both directions of its rank's link and, as an NCCL kernel, a
/// share of its GPU's SMs (interference with the compute beside it). Empty: holds nothing
/// and runs in its duration whatever else runs (joins, delays, --no-contention).
struct TaskResources {
  std::int32_t compute_gpu = -1;  ///< runs compute kernels on this GPU's SMs
  std::int32_t nccl_gpu = -1;     ///< runs an NCCL kernel on this GPU's SMs
  std::array<ResourceRef, 4> links{};  ///< link directions it moves bytes over
  std::uint8_t link_count = 0;
  bool empty() const { return compute_gpu < 0 && nccl_gpu < 0 && link_count == 0; }
  bool operator==(const TaskResources&) const = default;
};

struct Task {
  std::int32_t rank = 0;
  Stream stream = Stream::kCompute;
  TaskKind kind = TaskKind::kCompute;
  double duration_s = 0;  ///< alone on its resources (the cost model's time)
  std::int32_t rendezvous = -1;  ///< tasks with the same id >= 0 start and end together
  std::int32_t payload = -1;     ///< builder-defined index (action, op) for reporting
  TaskResources resources{};
};

class TaskGraph {
 public:
  /// 32-bit task and edge indices (a step has well under 2^32 of either): the engine walks
  /// every task's out-edges once, and 4-byte targets halve what it reads.
  using Csr =
      boost::compressed_sparse_row_graph<boost::directedS, boost::no_property, boost::no_property,
                                         boost::no_property, std::uint32_t, std::uint32_t>;

  // add_task and add_edge run once per task and edge of a step (hundreds of thousands):
  // inline.
  TaskId add_task(const Task& task) {
    STEPSIM_ASSERT(!finalized_);
    tasks_.push_back(task);
    return TaskId{static_cast<std::uint32_t>(tasks_.size() - 1)};
  }
  /// Appends a default task for the caller to fill in place: on hot paths, cheaper than a
  /// Task built on the stack and copied in (whose narrow stores stall the wide loads of the
  /// copy). Its id is size() - 1.
  Task& emplace_task() {
    STEPSIM_ASSERT(!finalized_);
    return tasks_.emplace_back();
  }
  /// Capacity hints for the tasks and edges to come.
  void reserve(std::size_t tasks, std::size_t edges);
  /// `to` starts only after `from` ended.
  void add_edge(TaskId from, TaskId to) {
    STEPSIM_ASSERT(!finalized_);
    STEPSIM_ASSERT(from.value < tasks_.size() && to.value < tasks_.size() &&
                   from.value != to.value);
    edges_.emplace_back(from.value, to.value);
  }
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
