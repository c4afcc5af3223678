// The per-rank task list of the validator: the simulator's program, flattened, named and
// described in the simulator's own vocabulary (stepsim/sim/op_vocabulary.hpp).

#include <algorithm>
#include <map>
#include <span>
#include <sstream>
#include <tuple>
#include <type_traits>
#include <variant>

#include "stepsim/validator/executor.hpp"
#include "stepsim/base/assert.hpp"
#include "stepsim/graph/ddp_buckets.hpp"
#include "stepsim/graph/op_vocabulary.hpp"

namespace stepsim::calib {

RankLayout layout_of(const Workload& w) {
  const TrainingConfig& t = w.training;
  const bool moe = w.model.moe();
  // TE runs a level of size 1 as the plain form over the whole CP group.
  const std::vector<std::int64_t>& levels = t.hierarchical_context_parallel_sizes;
  const bool hierarchical =
      t.cp_comm_type == CpCommType::kA2aP2p && levels.size() == 2 && levels[0] > 1 && levels[1] > 1;
  return RankLayout{.tp = static_cast<std::int32_t>(t.tensor_model_parallel_size),
                    .pp = static_cast<std::int32_t>(t.pipeline_model_parallel_size),
                    .dp = static_cast<std::int32_t>(t.data_parallel_size),
                    .ep = moe ? static_cast<std::int32_t>(t.expert_model_parallel_size) : 1,
                    .etp = moe ? static_cast<std::int32_t>(t.expert_tensor_parallel()) : 1,
                    .moe = moe,
                    .cp = static_cast<std::int32_t>(t.context_parallel_size),
                    .cp_a2a = hierarchical ? static_cast<std::int32_t>(levels[0]) : 1};
}

RingPeers ring_peers(std::int32_t position, std::int32_t size, std::int32_t peer_step) {
  STEPSIM_ASSERT(size > 0 && position >= 0 && position < size && peer_step >= 0);
  if (peer_step == 0) {
    const std::int32_t partner = position ^ 1;
    STEPSIM_ASSERT(partner < size);  // an even ring (the aggregated exchange's rule)
    return RingPeers{partner, partner};
  }
  const std::int32_t step = peer_step % size;
  return RingPeers{(position + step) % size, (position + size - step) % size};
}

std::string_view to_string(OpCategory c) {
  switch (c) {
    case OpCategory::kGemm:
      return "gemm";
    case OpCategory::kAttention:
      return "attention";
    case OpCategory::kMemoryBound:
      return "memory_bound";
    case OpCategory::kAllReduce:
      return "all_reduce";
    case OpCategory::kAllGather:
      return "all_gather";
    case OpCategory::kReduceScatter:
      return "reduce_scatter";
    case OpCategory::kAllToAll:
      return "all_to_all";
    case OpCategory::kP2P:
      return "p2p";
  }
  return "?";
}

std::int32_t p2p_tag(const sim::Transfer& t, std::int32_t virtual_stages) {
  // MPI guarantees tags up to 32767; micro-batch * virtual stages * 2 stays far below it for
  // the scenarios a validation runs (and tags only need to be unique between two peers
  // within one step, since MPI keeps message order per (peer, tag)).
  const std::int32_t kind = t.tensor == sim::TensorKind::kActivation ? 0 : 1;
  return (t.microbatch * virtual_stages + t.producer_virtual_stage) * 2 + kind;
}

namespace {

OpCategory category_of(const Op& op) {
  return std::visit(
      [](const auto& s) -> OpCategory {
        using T = std::decay_t<decltype(s)>;
        if constexpr (std::is_same_v<T, GemmOp>) {
          return OpCategory::kGemm;
        } else if constexpr (std::is_same_v<T, AttentionOp>) {
          return OpCategory::kAttention;
        } else if constexpr (std::is_same_v<T, MemoryBoundOp>) {
          return OpCategory::kMemoryBound;
        } else if constexpr (std::is_same_v<T, CollectiveOp>) {
          switch (s.kind) {
            case CollectiveKind::kAllReduce:
              return OpCategory::kAllReduce;
            case CollectiveKind::kAllGather:
              return OpCategory::kAllGather;
            case CollectiveKind::kReduceScatter:
              return OpCategory::kReduceScatter;
            case CollectiveKind::kAllToAll:
            case CollectiveKind::kDeepEpDispatch:
            case CollectiveKind::kDeepEpCombine:
              return OpCategory::kAllToAll;
          }
          return OpCategory::kAllReduce;
        } else {
          return OpCategory::kP2P;
        }
      },
      op.shape);
}

ExecTask op_task(const Op& op, std::int32_t microbatch, std::int32_t chunk) {
  ExecTask t;
  t.kind = ExecTask::Kind::kOp;
  t.op = op;
  t.category = category_of(op);
  t.stream = op.stream;
  t.slice_kind = sim::slice_kind_of(op);
  t.microbatch = microbatch;
  t.chunk = chunk;
  t.layer = op.layer;
  t.name = sim::op_slice_name(op, microbatch, chunk);
  t.op_name = op.name;
  t.detail = sim::describe_shape(op.shape);
  return t;
}

/// Bytes of a pipeline tensor: an activation is the output of its producer virtual stage;
/// a gradient is the gradient of its producer's input, i.e. the previous stage's output.
std::int64_t transfer_bytes(const WorkloadPlan& plan, const sim::Transfer& tr, std::int32_t p) {
  const std::int32_t vs = tr.tensor == sim::TensorKind::kActivation ? tr.producer_virtual_stage
                                                                    : tr.producer_virtual_stage - 1;
  STEPSIM_ASSERT(vs >= 0);
  const auto& stage = plan.stages.at(static_cast<std::size_t>(vs % p));
  return stage.chunks.at(static_cast<std::size_t>(vs / p)).p2p_bytes;
}

ExecTask comm_task(const WorkloadPlan& plan, const sim::RankProgram& program,
                   const sim::CommCall& call, std::int32_t p) {
  ExecTask t;
  t.kind = ExecTask::Kind::kComm;
  const std::span<const sim::Transfer> transfers = program.transfers_of(call);
  t.transfers.assign(transfers.begin(), transfers.end());
  t.category = OpCategory::kP2P;
  t.stream = Stream::kPipelineComm;
  t.slice_kind = sim::SliceKind::kPipelineComm;
  t.op_name = call.name;
  std::ostringstream detail;
  for (const auto& tr : transfers) {
    const std::int64_t bytes = transfer_bytes(plan, tr, p);
    t.transfer_bytes.push_back(bytes);
    t.transfer_names.push_back(sim::transfer_slice_name(tr));
    if (detail.tellp() > 0) detail << "; ";
    detail << (tr.send ? "send " : "recv ")
           << (tr.tensor == sim::TensorKind::kActivation ? "activation" : "gradient") << " mb"
           << tr.microbatch << " vs" << tr.producer_virtual_stage << (tr.send ? " to " : " from ")
           << tr.peer << " bytes=" << bytes;
  }
  if (!transfers.empty()) t.microbatch = transfers.front().microbatch;
  t.name = call.name;
  t.detail = detail.str();
  return t;
}

void append_grad_sync(const ChunkPlan& chunk, std::vector<ExecTask>& tasks) {
  for (const auto& op : chunk.grad_sync) tasks.push_back(op_task(op, -1, chunk.chunk));
}

/// The tasks of one stage built in program order, with the waits each task carries.
class StageTaskBuilder {
 public:
  StageTaskBuilder(const Workload& w, const WorkloadPlan& plan, const sim::Schedule& schedule,
                   std::int32_t stage, bool async_p2p, bool async_grad_reduce)
      : w_(w),
        plan_(plan),
        program_(schedule.ranks.at(static_cast<std::size_t>(stage))),
        stage_plan_(plan.stages.at(static_cast<std::size_t>(stage))),
        p_(static_cast<std::int32_t>(w.training.pipeline_model_parallel_size)),
        async_p2p_(async_p2p),
        // overlap_grad_reduce beside the backward (async_grad_reduce): each bucket's reduction
        // posted where Megatron issues it (the simulator's grad_sync_launches), all of them
        // waited for before the step's ops (finish_grad_sync).
        grad_async_(async_grad_reduce && w.training.overlap_grad_reduce) {
    plan_grad_sync(stage);
  }

  std::vector<ExecTask> build() {
    std::int32_t backward = 0;  // ordinal of the next backward action
    for (const auto& item : program_.items) {
      if (item.kind == sim::ProgramItem::Kind::kComm) {
        add_comm(item.comm);
        continue;
      }
      add_action(item.action, backward);
      if (item.action.type == sim::ActionType::kBackward) ++backward;
    }
    add_step_end();
    return std::move(tasks_);
  }

 private:
  /// With overlap_grad_reduce posted: each chunk's DDP buckets and where their reductions launch.
  void plan_grad_sync(std::int32_t stage) {
    const auto v = static_cast<std::int32_t>(stage_plan_.chunks.size());
    buckets_.resize(static_cast<std::size_t>(v));
    if (!grad_async_) return;
    for (std::int32_t c = 0; c < v; ++c) {
      auto made =
          sim::ddp_buckets(w_, stage_plan_.chunks[static_cast<std::size_t>(c)],
                           sim::ddp_bucket_size(w_.training, stage_plan_.parameters, stage, c));
      STEPSIM_ASSERT(made.ok());  // the prediction built the same buckets first
      buckets_[static_cast<std::size_t>(c)] = std::move(made).value();
    }
    launches_ = sim::grad_sync_launches(program_, v, true, buckets_);
  }

  /// Appends `t`, carrying the waits named since the last task.
  void push(ExecTask t) {
    t.waits = std::move(waits_);
    waits_.clear();
    tasks_.push_back(std::move(t));
  }

  /// The reductions launched at (backward, after_op), posted without blocking.
  void post_grad_sync(std::int32_t backward, std::int32_t after_op) {
    for (const sim::GradSyncLaunch& l : launches_) {
      if (l.backward != backward || l.after_op != after_op) continue;
      const auto& chunk = stage_plan_.chunks.at(static_cast<std::size_t>(l.chunk));
      const auto& chunk_buckets = buckets_[static_cast<std::size_t>(l.chunk)];
      const bool split = chunk_buckets.size() > 1;
      for (Op op : chunk.grad_sync) {
        auto* coll = std::get_if<CollectiveOp>(&op.shape);
        STEPSIM_ASSERT(coll != nullptr);
        if (split) {
          coll->bytes = sim::bucket_bytes(coll->bytes, chunk_buckets,
                                          static_cast<std::size_t>(l.bucket), chunk.parameters);
        }
        ExecTask t = op_task(op, -1, l.chunk);
        t.name = sim::op_slice_name(op, -1, l.chunk, split ? l.bucket : -1);
        t.async = true;
        grad_posted_.push_back(
            ExecTask::Wait{.task = static_cast<std::int32_t>(tasks_.size()), .transfer = -1});
        push(std::move(t));
      }
    }
  }

  /// A P2P call of the schedule, and the waits on earlier non-blocking calls it names.
  void add_comm(const sim::CommCall& comm) {
    // Megatron's waits on earlier non-blocking calls carry no transfer of their own: with
    // async_p2p the next task waits for the calls that posted them; without, every call
    // completes where it is issued (streams serialised) and there is nothing to wait for.
    for (const auto& tr : program_.waits_of(comm)) {
      const auto it = posted_.find({tr.tensor, tr.microbatch, tr.producer_virtual_stage, tr.send});
      if (it == posted_.end()) continue;  // waited for already
      waits_.push_back(it->second);
      posted_.erase(it);
    }
    if (comm.transfer_count == 0) return;
    ExecTask t = comm_task(plan_, program_, comm, p_);
    t.async = async_p2p_ && !comm.blocking;
    if (t.async) {
      for (std::size_t k = 0; k < t.transfers.size(); ++k) {
        const auto& tr = t.transfers[k];
        posted_[{tr.tensor, tr.microbatch, tr.producer_virtual_stage, tr.send}] =
            ExecTask::Wait{.task = static_cast<std::int32_t>(tasks_.size()),
                           .transfer = static_cast<std::int32_t>(k)};
      }
    }
    push(std::move(t));
  }

  /// A forward or backward action's ops. The ops Megatron's Transformer Engine runs on side
  /// streams and waits for where their result is needed (posted_when_serial: the
  /// context-parallel ring's steps, the userbuffers exchanges and collectives): with async_p2p
  /// each is posted and the ops that depend on it wait for it and for every one posted before
  /// it (they complete in the order they were posted, as on their stream). A ring step is
  /// posted once the ring's previous step is done (TE waits for it before sending the received
  /// block on).
  void add_action(const sim::Action& a, std::int32_t backward) {
    const auto& chunk = stage_plan_.chunks.at(static_cast<std::size_t>(a.chunk));
    const auto& ops = a.type == sim::ActionType::kForward ? chunk.forward : chunk.backward;
    const bool is_backward = a.type == sim::ActionType::kBackward;
    std::vector<Posted> in_flight;  // posted and not waited for yet, in list order
    for (std::size_t o = 0; o < ops.size(); ++o) {
      const bool post = async_p2p_ && posted_when_serial(ops[o]);
      const bool context_ring = post && ops[o].stream == Stream::kContextComm;
      std::size_t through = 0;
      for (std::size_t j = 0; j < in_flight.size(); ++j) {
        const auto& deps = ops[o].deps;
        if (std::find(deps.begin(), deps.end(), in_flight[j].op) != deps.end() ||
            (context_ring && in_flight[j].context_ring)) {
          through = j + 1;
        }
      }
      wait_through(in_flight, through);
      ExecTask t = op_task(ops[o], a.microbatch, a.chunk);
      if (post) {
        in_flight.push_back(Posted{.op = static_cast<std::int32_t>(o),
                                   .task = static_cast<std::int32_t>(tasks_.size()),
                                   .p2p = std::holds_alternative<P2POp>(ops[o].shape),
                                   .context_ring = context_ring});
        t.async = true;
      }
      push(std::move(t));
      if (is_backward && grad_async_) post_grad_sync(backward, static_cast<std::int32_t>(o));
    }
    wait_through(in_flight, in_flight.size());  // the next task carries them
    if (is_backward && grad_async_) post_grad_sync(backward, -1);
  }

  /// An op of an action posted on a side stream.
  struct Posted {
    std::int32_t op = -1;
    std::int32_t task = -1;
    bool p2p = false;  // a send and a receive (transfers 0 and 1), else one collective
    bool context_ring = false;
  };

  /// Waits for the first `count` of `in_flight`, which the next task carries.
  void wait_through(std::vector<Posted>& in_flight, std::size_t count) {
    for (std::size_t j = 0; j < count; ++j) {
      const Posted& q = in_flight[j];
      if (!q.p2p) waits_.push_back(ExecTask::Wait{.task = q.task, .transfer = -1});
      for (std::int32_t k = 0; q.p2p && k < 2; ++k) {
        waits_.push_back(ExecTask::Wait{.task = q.task, .transfer = k});
      }
    }
    in_flight.erase(in_flight.begin(), in_flight.begin() + static_cast<std::ptrdiff_t>(count));
  }

  /// The end of the schedule: gradient reduction, the step's ops, Apex's parameter gathers.
  void add_step_end() {
    // Every non-blocking call is done before the gradient reduction (Megatron's last send
    // handles are waited for when the schedule returns).
    for (const auto& [key, wait] : posted_) waits_.push_back(wait);
    std::sort(waits_.begin(), waits_.end());
    // Gradient reduction after the program, chunk by chunk in model-chunk order, as Megatron's
    // finalize_model_grads and the simulator with serialised streams order it (with one host
    // thread there is nothing for overlap_grad_reduce to overlap with).
    std::vector<ExecTask> after;
    if (grad_async_) {
      // The rest of the reductions (Megatron's finish_grad_sync launches what no hook did),
      // then the step waits for every one of them.
      post_grad_sync(-1, -1);
      waits_.insert(waits_.end(), grad_posted_.begin(), grad_posted_.end());
    } else {
      for (const auto& chunk : stage_plan_.chunks) append_grad_sync(chunk, after);
    }
    for (const auto& op : stage_plan_.step_ops) after.push_back(op_task(op, -1, -1));
    // Apex DistributedFusedAdam's per-chunk parameter gathers (the next step's forward
    // dispatches them; here, as the distributed optimizer's gather, after the step's ops).
    for (const auto& chunk : stage_plan_.chunks) {
      for (const auto& op : chunk.param_gather) after.push_back(op_task(op, -1, chunk.chunk));
    }
    for (auto& t : after) push(std::move(t));
    STEPSIM_ASSERT(waits_.empty());  // the step always ends with its optimizer's ops
  }

  const Workload& w_;
  const WorkloadPlan& plan_;
  const sim::RankProgram& program_;
  const StagePlan& stage_plan_;
  const std::int32_t p_;
  const bool async_p2p_;
  const bool grad_async_;
  std::vector<std::vector<sim::DdpBucket>> buckets_;
  std::vector<sim::GradSyncLaunch> launches_;
  std::vector<ExecTask::Wait> grad_posted_;  // reductions posted and not waited for yet
  std::vector<ExecTask> tasks_;
  // Transfers posted without blocking (async_p2p) and not waited for yet, by what they move;
  // and the ones a wait just named, which the next task carries.
  using Key = std::tuple<sim::TensorKind, std::int32_t, std::int32_t, bool>;
  std::map<Key, ExecTask::Wait> posted_;
  std::vector<ExecTask::Wait> waits_;
};

}  // namespace

std::vector<ExecTask> build_stage_tasks(const Workload& w, const WorkloadPlan& plan,
                                        const sim::Schedule& schedule, std::int32_t stage,
                                        bool async_p2p, bool async_grad_reduce) {
  return StageTaskBuilder(w, plan, schedule, stage, async_p2p, async_grad_reduce).build();
}

}  // namespace stepsim::calib
