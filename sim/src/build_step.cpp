#include "build_step.hpp"

#include <algorithm>
#include <array>
#include <string>

#include "stepsim/core/assert.hpp"

namespace stepsim::sim {

namespace {

constexpr std::int32_t kNoTask = -1;

std::int64_t node_of_stage(const Workload& w, std::int32_t stage) {
  // Megatron's layout: TP fastest, then DP, then PP. The representative rank of a stage is
  // its TP rank 0 of DP replica 0.
  const TrainingConfig& t = w.training;
  const std::int64_t global = stage * t.tensor_model_parallel_size * t.data_parallel_size;
  return global / std::max<std::int64_t>(1, w.system.gpus_per_node);
}

class Builder {
 public:
  Builder(const Workload& w, const WorkloadPlan& plan, const Schedule& schedule,
          const CostModel& cost, const BuildOptions& options)
      : w_(w), plan_(plan), schedule_(schedule), cost_(cost), options_(options) {
    p_ = schedule.params.pipeline_size;
    v_ = schedule.params.virtual_size;
    m_ = schedule.params.microbatches;
    out_.chunks_per_rank = v_;
    const auto keys = static_cast<std::size_t>(2 * p_ * v_ * m_);
    transfer_of_key_.assign(keys, kNoTask);
    posts_.assign(static_cast<std::size_t>(p_), 0);
  }

  Result<BuiltStep> build() {
    if (static_cast<std::int32_t>(plan_.stages.size()) != p_) {
      return Error{"", "", "plan has " + std::to_string(plan_.stages.size()) +
                               " stages but the schedule " + std::to_string(p_)};
    }
    build_templates();
    cost_boundaries();
    reserve_for_schedule();
    std::vector<std::int32_t> end_of_program(static_cast<std::size_t>(p_), kNoTask);
    std::vector<std::vector<std::int32_t>> last_backward(static_cast<std::size_t>(p_));
    for (const RankProgram& program : schedule_.ranks) {
      add_program(program, end_of_program, last_backward);
    }
    if (Result<bool> ok = add_data_dependencies(); !ok.ok()) return ok.errors();
    for (std::int32_t r = 0; r < p_; ++r) {
      const auto ri = static_cast<std::size_t>(r);
      add_step_work(r, end_of_program[ri], last_backward[ri]);
    }
    if (Result<bool> ok = match_embedding_group(); !ok.ok()) return ok.errors();
    out_.graph.finalize();
    return std::move(out_);
  }

 private:
  void build_templates() {
    out_.templates.resize(static_cast<std::size_t>(p_ * v_ * 2));
    for (std::int32_t r = 0; r < p_; ++r) {
      const StagePlan& stage = plan_.stages[static_cast<std::size_t>(r)];
      STEPSIM_ASSERT(static_cast<std::int32_t>(stage.chunks.size()) == v_);
      for (std::int32_t c = 0; c < v_; ++c) {
        const ChunkPlan& chunk = stage.chunks[static_cast<std::size_t>(c)];
        out_.templates[static_cast<std::size_t>(template_index(r, c, ActionType::kForward, v_))] =
            time_ops(chunk.forward, cost_, options_.serialize_streams);
        out_.templates[static_cast<std::size_t>(template_index(r, c, ActionType::kBackward, v_))] =
            time_ops(chunk.backward, cost_, options_.serialize_streams);
      }
    }
  }

  // Sizes known up front: growing these vectors by doubling would copy and page-fault them
  // several times over on large pipelines.
  void reserve_for_schedule() {
    std::size_t items = 0, actions = 0;
    for (const RankProgram& program : schedule_.ranks) {
      items += program.items.size();
      actions += program.actions.size();
    }
    const std::size_t transfers = 2 * static_cast<std::size_t>(p_ * v_ * m_);
    out_.actions.reserve(actions);
    out_.transfers.reserve(transfers);
    data_deps_.reserve(actions);
    out_.graph.reserve(actions + transfers + 4 * static_cast<std::size_t>(p_), 3 * items);
  }

  /// What every transfer across one pipeline boundary shares, costed once per boundary
  /// rather than once per micro-batch.
  struct Boundary {
    std::int64_t bytes = 0;
    bool inter_node = false;
    double duration_s = 0;
  };

  void cost_boundaries() {
    const std::int32_t stages = p_ * v_;
    boundaries_.assign(static_cast<std::size_t>(2 * stages), Boundary{});
    for (std::int32_t vs = 0; vs < stages; ++vs) {
      for (const TensorKind tensor : {TensorKind::kActivation, TensorKind::kGradient}) {
        // Activations go to the next virtual stage; a gradient travels back to the stage
        // before its producer and has the shape of that stage's activation.
        const bool act = tensor == TensorKind::kActivation;
        const std::int32_t peer_vs = act ? vs + 1 : vs - 1;
        if (peer_vs < 0 || peer_vs >= stages) continue;
        Boundary& b = boundaries_[static_cast<std::size_t>(2 * vs + (act ? 0 : 1))];
        b.bytes = chunk_at(act ? vs : vs - 1).p2p_bytes;
        b.inter_node = node_of_stage(w_, vs % p_) != node_of_stage(w_, peer_vs % p_);
        b.duration_s = cost_.p2p_s(P2POp{b.bytes, b.inter_node});
      }
    }
  }

  const Boundary& boundary(TensorKind tensor, std::int32_t producer) const {
    return boundaries_[static_cast<std::size_t>(2 * producer +
                                                (tensor == TensorKind::kActivation ? 0 : 1))];
  }

  std::size_t key_of(TensorKind tensor, std::int32_t microbatch, std::int32_t producer) const {
    return static_cast<std::size_t>(
        ((static_cast<std::int32_t>(tensor) * p_ * v_) + producer) * m_ + microbatch);
  }

  const ChunkPlan& chunk_at(std::int32_t virtual_stage) const {
    return plan_.stages[static_cast<std::size_t>(virtual_stage % p_)]
        .chunks[static_cast<std::size_t>(virtual_stage / p_)];
  }

  TaskId add(const Task& task) { return out_.graph.add_task(task); }

  void add_program(const RankProgram& program, std::vector<std::int32_t>& end_of_program,
                   std::vector<std::vector<std::int32_t>>& last_backward) {
    const std::int32_t r = program.rank;
    // The tasks the rank's next item waits for: the last compute, or every transfer of the
    // last blocking call, plus the transfers of Megatron's handle.wait() calls.
    std::vector<std::int32_t> cursor;
    cursor.reserve(8);
    std::vector<std::int32_t>& last_b = last_backward[static_cast<std::size_t>(r)];
    last_b.assign(static_cast<std::size_t>(v_), kNoTask);
    for (const ProgramItem& item : program.items) {
      if (item.kind == ProgramItem::Kind::kCompute) {
        const Action& a = item.action;
        const std::int32_t ti = template_index(r, a.chunk, a.type, v_);
        const auto payload = static_cast<std::int32_t>(out_.actions.size());
        out_.actions.push_back(ActionRef{r, a, ti});
        const TaskId id = add(Task{r, Stream::kCompute, TaskKind::kCompute,
                                   out_.templates[static_cast<std::size_t>(ti)].duration_s, -1,
                                   payload});
        add_edges(cursor, id);
        const std::int32_t vs = a.chunk * p_ + r;
        if (a.type == ActionType::kForward && vs > 0) {
          add_data_dependency(id, key_of(TensorKind::kActivation, a.microbatch, vs - 1), cursor);
        }
        if (a.type == ActionType::kBackward && vs < p_ * v_ - 1) {
          add_data_dependency(id, key_of(TensorKind::kGradient, a.microbatch, vs + 1), cursor);
        }
        cursor.assign(1, static_cast<std::int32_t>(id.value));
        if (a.type == ActionType::kBackward) last_b[static_cast<std::size_t>(a.chunk)] = cursor[0];
        continue;
      }
      const CommCall& call = item.comm;
      for (const Transfer& tr : call.waits) {
        // Megatron's handle.wait() on transfers this rank posted earlier without blocking.
        const std::int32_t t =
            transfer_of_key_[key_of(tr.tensor, tr.microbatch, tr.producer_virtual_stage)];
        STEPSIM_ASSERT(t != kNoTask);
        cursor.push_back(t);
      }
      if (call.transfers.empty()) continue;
      posted_.clear();
      for (const Transfer& tr : call.transfers) posted_.push_back(post_transfer(r, tr, cursor));
      // With serialised streams a non-blocking call completes where it is issued, as on the
      // validator's single host thread (calibration/executor.hpp).
      if (call.blocking || options_.serialize_streams) cursor.assign(posted_.begin(), posted_.end());
    }
    const TaskId end = add(Task{r, Stream::kCompute, TaskKind::kJoin, 0.0, -1, -1});
    add_edges(cursor, end);
    end_of_program[static_cast<std::size_t>(r)] = static_cast<std::int32_t>(end.value);
  }

  void add_edges(const std::vector<std::int32_t>& from, TaskId to) {
    for (const std::int32_t f : from) out_.graph.add_edge(TaskId{static_cast<std::uint32_t>(f)}, to);
  }

  // One task per transfer: it starts once both its sender and its receiver have posted it
  // (NCCL's send and receive complete together) and both ranks' later work may wait on it.
  std::int32_t post_transfer(std::int32_t r, const Transfer& tr,
                             const std::vector<std::int32_t>& cursor) {
    const std::size_t key = key_of(tr.tensor, tr.microbatch, tr.producer_virtual_stage);
    std::int32_t& task = transfer_of_key_[key];
    if (task == kNoTask) {
      const std::int32_t sender = tr.send ? r : tr.peer;
      const std::int32_t receiver = tr.send ? tr.peer : r;
      Transfer seen_by_sender = tr;
      seen_by_sender.send = true;
      seen_by_sender.peer = receiver;
      const Boundary& b = boundary(tr.tensor, tr.producer_virtual_stage);
      TransferRef ref;
      ref.sender = sender;
      ref.receiver = receiver;
      ref.transfer = seen_by_sender;
      ref.bytes = b.bytes;
      ref.inter_node = b.inter_node;
      const double duration = b.duration_s;
      const auto payload = static_cast<std::int32_t>(out_.transfers.size());
      out_.transfers.push_back(ref);
      task = static_cast<std::int32_t>(
          add(Task{sender, Stream::kPipelineComm, TaskKind::kTransfer, duration, -1, payload})
              .value);
    }
    add_edges(cursor, TaskId{static_cast<std::uint32_t>(task)});
    TransferRef& ref = out_.transfers[static_cast<std::size_t>(out_.graph.task(TaskId{
        static_cast<std::uint32_t>(task)}).payload)];
    (tr.send ? ref.sender_post : ref.receiver_post) = posts_[static_cast<std::size_t>(r)]++;
    return task;
  }

  // A compute waits for the transfer that brings its input. After a blocking receive that
  // transfer is already in the cursor, and a second edge would only cost the engine time.
  void add_data_dependency(TaskId compute, std::size_t key, const std::vector<std::int32_t>& cursor) {
    const std::int32_t t = transfer_of_key_[key];
    if (t != kNoTask && std::find(cursor.begin(), cursor.end(), t) != cursor.end()) return;
    data_deps_.push_back({compute, key});
  }

  Result<bool> add_data_dependencies() {
    for (const auto& [task, key] : data_deps_) {
      const std::int32_t recv = transfer_of_key_[key];
      if (recv == kNoTask) {
        const Task& t = out_.graph.task(task);
        return Error{"", "", "schedule bug: rank " + std::to_string(t.rank) +
                                 " computes with a tensor it never receives"};
      }
      out_.graph.add_edge(TaskId{static_cast<std::uint32_t>(recv)}, task);
    }
    return true;
  }

  TaskId add_op_task(std::int32_t r, std::int32_t chunk, const Op& op) {
    const auto payload = static_cast<std::int32_t>(out_.step_ops.size());
    out_.step_ops.push_back(StepOpRef{r, chunk, &op});
    const bool comm = std::holds_alternative<CollectiveOp>(op.shape);
    const Stream stream = options_.serialize_streams ? Stream::kCompute : op.stream;
    return add(Task{r, stream, comm ? TaskKind::kCollective : TaskKind::kStepOp, cost_.op_s(op),
                    -1, payload});
  }

  void add_step_work(std::int32_t r, std::int32_t end_of_program,
                     const std::vector<std::int32_t>& last_backward) {
    const StagePlan& stage = plan_.stages[static_cast<std::size_t>(r)];
    // Gradient reduction: chunk by chunk in the order their last backward ends. With
    // overlap_grad_reduce each starts as soon as its chunk's gradients are final; else all
    // start after the rank's last backward.
    std::vector<std::int32_t> order(static_cast<std::size_t>(v_));
    for (std::int32_t c = 0; c < v_; ++c) order[static_cast<std::size_t>(c)] = c;
    std::sort(order.begin(), order.end(), [&](std::int32_t a, std::int32_t b) {
      return last_backward[static_cast<std::size_t>(a)] < last_backward[static_cast<std::size_t>(b)];
    });
    const bool overlap = w_.training.overlap_grad_reduce && !options_.serialize_streams;
    std::int32_t stream_prev = end_of_program;
    std::int32_t last_grad_task = kNoTask;
    for (const std::int32_t c : order) {
      const ChunkPlan& chunk = stage.chunks[static_cast<std::size_t>(c)];
      for (const Op& op : chunk.grad_sync) {
        const TaskId id = add_op_task(r, c, op);
        const std::int32_t gate = overlap ? last_backward[static_cast<std::size_t>(c)] : end_of_program;
        if (gate != kNoTask) out_.graph.add_edge(TaskId{static_cast<std::uint32_t>(gate)}, id);
        if (stream_prev != kNoTask && stream_prev != gate) {
          out_.graph.add_edge(TaskId{static_cast<std::uint32_t>(stream_prev)}, id);
        }
        stream_prev = static_cast<std::int32_t>(id.value);
        last_grad_task = stream_prev;
      }
    }
    // Step ops wait for the end of the program and every gradient reduction.
    const TaskId gate = add(Task{r, Stream::kCompute, TaskKind::kJoin, 0.0, -1, -1});
    if (end_of_program != kNoTask) {
      out_.graph.add_edge(TaskId{static_cast<std::uint32_t>(end_of_program)}, gate);
    }
    if (last_grad_task != kNoTask) {
      out_.graph.add_edge(TaskId{static_cast<std::uint32_t>(last_grad_task)}, gate);
    }
    std::array<std::int32_t, 4> last_on_stream;
    last_on_stream.fill(static_cast<std::int32_t>(gate.value));
    std::vector<TaskId> ids;
    for (const Op& op : stage.step_ops) {
      const TaskId id = add_op_task(r, -1, op);
      const Task& t = out_.graph.task(id);
      auto& prev = last_on_stream[static_cast<std::size_t>(t.stream)];
      out_.graph.add_edge(TaskId{static_cast<std::uint32_t>(prev)}, id);
      for (const std::int32_t d : op.deps) {
        STEPSIM_ASSERT(d >= 0 && static_cast<std::size_t>(d) < ids.size());
        out_.graph.add_edge(ids[static_cast<std::size_t>(d)], id);
      }
      prev = static_cast<std::int32_t>(id.value);
      ids.push_back(id);
      const auto* coll = std::get_if<CollectiveOp>(&op.shape);
      if (coll != nullptr && coll->group == CommGroup::kEmbedding) embedding_tasks_.push_back(id);
    }
  }

  // The tied-embedding gradient all-reduce is one collective over the first and last stage:
  // a rendezvous of their two tasks.
  Result<bool> match_embedding_group() {
    if (embedding_tasks_.empty()) return true;
    if (embedding_tasks_.size() != 2) {
      return Error{"", "", "plan bug: " + std::to_string(embedding_tasks_.size()) +
                               " stages take part in the embedding-group all-reduce, expected 2"};
    }
    const std::int32_t id = out_.graph.new_rendezvous();
    for (const TaskId t : embedding_tasks_) out_.graph.set_rendezvous(t, id);
    return true;
  }

  const Workload& w_;
  const WorkloadPlan& plan_;
  const Schedule& schedule_;
  const CostModel& cost_;
  BuildOptions options_;
  std::int32_t p_ = 1, v_ = 1, m_ = 1;
  BuiltStep out_;
  std::vector<std::int32_t> transfer_of_key_;
  std::vector<std::int32_t> posted_;  // scratch: the transfers of the call being added
  std::vector<std::int64_t> posts_;   // per rank: transfers posted so far
  std::vector<Boundary> boundaries_;  // [2 * producer virtual stage + (0 act, 1 grad)]  // one task per (tensor, microbatch, producer)
  std::vector<std::pair<TaskId, std::size_t>> data_deps_;
  std::vector<TaskId> embedding_tasks_;
};

}  // namespace

std::int32_t template_index(std::int32_t stage, std::int32_t chunk, ActionType type,
                            std::int32_t chunks_per_rank) {
  return (stage * chunks_per_rank + chunk) * 2 + (type == ActionType::kForward ? 0 : 1);
}

Result<BuiltStep> build_step(const Workload& w, const WorkloadPlan& plan, const Schedule& schedule,
                             const CostModel& cost, const BuildOptions& options) {
  return Builder(w, plan, schedule, cost, options).build();
}

}  // namespace stepsim::sim
