#include "build_step.hpp"

#include <algorithm>
#include <array>
#include <string>

#include "ddp_buckets.hpp"
#include "stepsim/core/assert.hpp"
#include "stepsim/core/profile.hpp"
#include "stepsim/core/rank_layout.hpp"
#include "stepsim/sim/cost_memo.hpp"

namespace stepsim::sim {

namespace {

constexpr std::int32_t kNoTask = -1;
constexpr std::size_t kNoKey = static_cast<std::size_t>(-1);

std::int64_t node_of_stage(const Workload& w, std::int32_t stage) {
  // Megatron's rank layout (RankGenerator, order tp-cp-ep-dp-pp). The representative rank of
  // a stage is its TP rank 0 of DP replica 0.
  const TrainingConfig& t = w.training;
  const RankGenerator ranks(ParallelSizes{.tp = t.tensor_model_parallel_size,
                                           .cp = t.context_parallel_size,
                                           .dp = std::max<std::int64_t>(1, t.data_parallel_size),
                                           .pp = t.pipeline_model_parallel_size});
  return ranks.rank(ParallelCoords{.pp = stage}) /
         std::max<std::int64_t>(1, w.system.gpus_per_node);
}

/// total * part / whole (part <= whole) without overflowing 64 bits: exact whenever the
/// product fits, as before; past that (a 400B model's parameter gather times a chunk's
/// parameters) the quotient's remainder is scaled in long double.
std::int64_t share_of(std::int64_t total, std::int64_t part, std::int64_t whole) {
  std::int64_t product = 0;
  if (!__builtin_mul_overflow(total, part, &product)) return product / whole;
  const std::int64_t remainder = total % whole;
  return total / whole * part + static_cast<std::int64_t>(static_cast<long double>(remainder) *
                                                          static_cast<long double>(part) /
                                                          static_cast<long double>(whole));
}

/// The cost model with compute kernels (GEMMs, attention, memory-bound) `factor` times as
/// long; collectives and transfers as they are.
class ScaledCompute final : public CostModel {
 public:
  ScaledCompute(const CostModel& base, double factor) : base_(base), factor_(factor) {}
  double gemm_s(const GemmOp& op) const override { return factor_ * base_.gemm_s(op); }
  double attention_s(const AttentionOp& op) const override { return factor_ * base_.attention_s(op); }
  double memory_bound_s(const MemoryBoundOp& op) const override {
    return factor_ * base_.memory_bound_s(op);
  }
  double collective_s(const CollectiveOp& op) const override { return base_.collective_s(op); }
  double p2p_s(const P2POp& op) const override { return base_.p2p_s(op); }
  std::string describe() const override { return base_.describe(); }
  const HostCosts* host() const override { return base_.host(); }  // the host is not slowed

 private:
  const CostModel& base_;
  double factor_;
};

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
    backward_tasks_.resize(static_cast<std::size_t>(p_));
    last_backward_preds_.resize(static_cast<std::size_t>(p_ * v_));
    last_backward_key_.assign(static_cast<std::size_t>(p_ * v_), kNoKey);
    dp_stream_last_.assign(static_cast<std::size_t>(p_), kNoTask);
    host_ = options.serialize_streams ? nullptr : cost.host();
    host_last_.assign(static_cast<std::size_t>(p_), kNoTask);
  }

  Result<BuiltStep> build() {
    if (static_cast<std::int32_t>(plan_.stages.size()) != p_) {
      return Error{"", "",
                   "plan has " + std::to_string(plan_.stages.size()) + " stages but the schedule " +
                       std::to_string(p_),
                   ErrorKind::kInternal};
    }
    build_templates();
    if (Status ok = make_buckets(); !ok.ok()) return ok.errors();
    cost_boundaries();
    reserve_for_schedule();
    std::vector<std::int32_t> end_of_program(static_cast<std::size_t>(p_), kNoTask);
    for (const RankProgram& program : schedule_.ranks) add_program(program, end_of_program);
    if (Status ok = add_data_dependencies(); !ok.ok()) return ok.errors();
    for (std::int32_t r = 0; r < p_; ++r) {
      Status ok = add_step_work(r, end_of_program[static_cast<std::size_t>(r)]);
      if (!ok.ok()) return ok.errors();
    }
    if (Status ok = match_embedding_group(); !ok.ok()) return ok.errors();
    if (Status ok = match_grad_stats_group(); !ok.ok()) return ok.errors();
    out_.graph.finalize();
    return std::move(out_);
  }

 private:
  void build_templates() {
    out_.templates.resize(static_cast<std::size_t>(p_ * v_ * 2));
    // Every chunk prices the same few shapes again (each layer's GEMMs, attention and
    // collectives), and a calibrated model's query searches its samples: ask it once per
    // shape. The answers are the model's own (CostMemo), so the templates are unchanged. A
    // sweep hands in its worker's memo already.
    const CostMemo memo(cost_);
    const CostModel& priced = dynamic_cast<const CostMemo*>(&cost_) != nullptr ? cost_ : memo;
    // The middle stages' chunks are mostly the same layers (other indices): an op list timed
    // alike as one timed before, on a stage of the same speed, takes a copy of its template.
    struct Timed {
      const std::vector<Op>* ops;
      double scale;
      std::size_t index;  // into out_.templates
    };
    std::vector<Timed> timed;
    for (std::int32_t r = 0; r < p_; ++r) {
      const StagePlan& stage = plan_.stages[static_cast<std::size_t>(r)];
      STEPSIM_ASSERT(static_cast<std::int32_t>(stage.chunks.size()) == v_);
      const double scale = scale_of(r);
      const ScaledCompute scaled(priced, scale);
      const CostModel& cost = scale == 1.0 ? priced : scaled;
      const auto time = [&](const std::vector<Op>& ops, std::size_t index) {
        for (const Timed& t : timed) {
          if (t.scale == scale && same_timing(*t.ops, ops)) {
            out_.templates[index] = out_.templates[t.index];
            return;
          }
        }
        out_.templates[index] =
            time_ops(ops, cost, options_.serialize_streams, options_.interference);
        timed.push_back(Timed{.ops = &ops, .scale = scale, .index = index});
      };
      for (std::int32_t c = 0; c < v_; ++c) {
        const ChunkPlan& chunk = stage.chunks[static_cast<std::size_t>(c)];
        time(chunk.forward,
             static_cast<std::size_t>(template_index(r, c, ActionType::kForward, v_)));
        time(chunk.backward,
             static_cast<std::size_t>(template_index(r, c, ActionType::kBackward, v_)));
        if (!chunk.backward_wgrad_deferred.empty()) {
          deferred_template_ = static_cast<std::int32_t>(out_.templates.size());
          out_.templates.emplace_back();
          time(chunk.backward_wgrad_deferred, out_.templates.size() - 1);
        }
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

  double scale_of(std::int32_t r) const {
    const auto ri = static_cast<std::size_t>(r);
    return ri < options_.compute_scale.size() ? options_.compute_scale[ri] : 1.0;
  }

  void add_program(const RankProgram& program, std::vector<std::int32_t>& end_of_program) {
    const std::int32_t r = program.rank;
    const auto ri = static_cast<std::size_t>(r);
    // The first rank without interleaving dispatches its buckets inside its last backward,
    // which needs that backward's predecessors (bucket_ready).
    const bool record_preds = w_.training.overlap_grad_reduce && !options_.serialize_streams &&
                              v_ == 1 && r == 0;
    ParamGather gather = plan_param_gather(program);
    // The tasks the rank's next item waits for: the last compute, or every transfer of the
    // last blocking call, plus the transfers of Megatron's handle.wait() calls.
    std::vector<std::int32_t> cursor;
    cursor.reserve(8);
    std::vector<std::int32_t>& backward = backward_tasks_[ri];
    if (gather.on && gather.aligned) {
      // align_param_gather: chunks 0 and 1 are gathered when the step's schedule starts.
      for (const std::int32_t c : {0, 1}) dispatch_param_gather(r, c, cursor, gather);
    }
    std::int32_t forward_index = 0;
    for (const ProgramItem& item : program.items) {
      if (item.kind == ProgramItem::Kind::kCompute) {
        const Action& a = item.action;
        std::int32_t ti = template_index(r, a.chunk, a.type, v_);
        bool wgrad_deferred = false;
        if (deferred_template_ >= 0 && a.type == ActionType::kBackward && r == p_ - 1 &&
            a.chunk == v_ - 1 && defers_next_wgrad()) {
          // LinearWithGradAccumulationAndAsyncCommunication: the first wgrad_deferral_limit
          // backwards (all with 0) append their logits gradient to the buffer.
          ti = deferred_template_;
          wgrad_deferred = true;
          ++deferred_;
        }
        std::int32_t wait_gather = kNoTask;
        if (gather.on && a.type == ActionType::kForward) {
          const auto k = static_cast<std::size_t>(forward_index++);
          if (gather.dispatch_at[k] >= 0) dispatch_param_gather(r, gather.dispatch_at[k], cursor, gather);
          if (gather.first_forward[static_cast<std::size_t>(a.chunk)] == k) {
            // Megatron's forward pre-hook: dispatch the gather if nobody has yet, then wait.
            wait_gather = dispatch_param_gather(r, a.chunk, cursor, gather);
          }
        }
        // The host issues the action's kernels one after another: its first kernel can
        // start once issued, and the host goes on to the next item only after the last.
        const std::int32_t issued =
            issue_on_host(r, out_.templates[static_cast<std::size_t>(ti)].ops.size(),
                          host_ == nullptr                 ? 0.0
                          : a.type == ActionType::kForward ? host_->forward_op_issue_s
                                                           : host_->backward_op_issue_s);
        const auto payload = static_cast<std::int32_t>(out_.actions.size());
        out_.actions.push_back(ActionRef{r, a, ti, wgrad_deferred});
        const TaskId id =
            add(Task{.rank = r,
                     .stream = Stream::kCompute,
                     .kind = TaskKind::kCompute,
                     .duration_s = out_.templates[static_cast<std::size_t>(ti)].duration_s,
                     .payload = payload,
                     .resources = {.compute_gpu = r}});
        add_edges(cursor, id);
        if (wait_gather != kNoTask) out_.graph.add_edge(TaskId{static_cast<std::uint32_t>(wait_gather)}, id);
        if (issued != kNoTask) {
          out_.graph.add_edge(TaskId{static_cast<std::uint32_t>(issued)}, id);
          cursor.push_back(issued);  // for the bucket points below: same predecessors
        }
        const std::int32_t vs = a.chunk * p_ + r;
        if (a.type == ActionType::kForward && vs > 0) {
          add_data_dependency(id, key_of(TensorKind::kActivation, a.microbatch, vs - 1), cursor);
        }
        if (a.type == ActionType::kBackward) {
          std::size_t key = kNoKey;
          if (vs < p_ * v_ - 1) {
            key = key_of(TensorKind::kGradient, a.microbatch, vs + 1);
            add_data_dependency(id, key, cursor);
          }
          backward.push_back(static_cast<std::int32_t>(id.value));
          if (record_preds) {
            const auto slot = static_cast<std::size_t>(r * v_ + a.chunk);
            last_backward_preds_[slot] = cursor;
            last_backward_key_[slot] = key;
          }
        }
        cursor.assign(1, static_cast<std::int32_t>(id.value));
        continue;
      }
      const CommCall& call = item.comm;
      for (const Transfer& tr : program.waits_of(call)) {
        // Megatron's handle.wait() on transfers this rank posted earlier without blocking.
        const std::int32_t t =
            transfer_of_key_[key_of(tr.tensor, tr.microbatch, tr.producer_virtual_stage)];
        STEPSIM_ASSERT(t != kNoTask);
        cursor.push_back(t);
      }
      if (call.transfer_count == 0) continue;
      const std::int32_t issued = issue_on_host(r, 1, host_ ? host_->op_issue_s : 0);
      if (issued != kNoTask) cursor.push_back(issued);
      posted_.clear();
      for (const Transfer& tr : program.transfers_of(call)) {
        posted_.push_back(post_transfer(r, tr, cursor));
      }
      // With serialised streams a non-blocking call completes where it is issued, as on the
      // validator's single host thread (calibration/executor.hpp).
      if (call.blocking || options_.serialize_streams) cursor.assign(posted_.begin(), posted_.end());
      if (host_ != nullptr && call.blocking && !schedule_.params.overlap_p2p_comm) {
        // p2p_communication.py, _communicate: with batch_p2p_comm (Megatron sets it to
        // `not overlap_p2p_comm`) and batch_p2p_sync (default True) the call ends in
        // torch.cuda.synchronize(): the host waits for all the GPU work it issued, then
        // issues the next kernels into an empty queue. The call's transfers already wait for
        // its launch and the rank's last action (the cursor they were posted after); the DP
        // stream's gathers are the only work they do not wait for.
        const TaskId drained =
            add(Task{.rank = r, .stream = Stream::kCompute, .kind = TaskKind::kJoin});
        add_edges(posted_, drained);
        if (dp_stream_last_[ri] != kNoTask) {
          out_.graph.add_edge(TaskId{static_cast<std::uint32_t>(dp_stream_last_[ri])}, drained);
        }
        const TaskId woken = add(Task{.rank = r,
                                      .stream = Stream::kCompute,
                                      .kind = TaskKind::kHost,
                                      .duration_s = host_->sync_s});
        out_.graph.add_edge(drained, woken);
        host_last_[ri] = static_cast<std::int32_t>(woken.value);
      }
    }
    if (host_last_[ri] != kNoTask) cursor.push_back(host_last_[ri]);
    if (r == p_ - 1 && deferred_ > 0) add_wgrad_drain(r, cursor);
    const TaskId end = add(Task{.rank = r, .stream = Stream::kCompute, .kind = TaskKind::kJoin});
    add_edges(cursor, end);
    end_of_program[static_cast<std::size_t>(r)] = static_cast<std::int32_t>(end.value);
  }

  // The host issuing `kernels` launches at `per_kernel` seconds each on rank `r`, after what
  // it issued before: returns the task that ends when the first launch is issued (what the
  // GPU work waits for), and leaves the host busy until the last one. kNoTask without host
  // costs (no measured host, or the validator's serialised executor).
  std::int32_t issue_on_host(std::int32_t r, std::size_t kernels, double per_kernel) {
    if (host_ == nullptr) return kNoTask;
    const auto ri = static_cast<std::size_t>(r);
    const std::int32_t before = host_last_[ri];
    const TaskId first = add(Task{
        .rank = r, .stream = Stream::kCompute, .kind = TaskKind::kHost, .duration_s = per_kernel});
    if (before != kNoTask) out_.graph.add_edge(TaskId{static_cast<std::uint32_t>(before)}, first);
    host_last_[ri] = static_cast<std::int32_t>(first.value);
    if (kernels > 1) {
      const TaskId rest = add(Task{.rank = r,
                                   .stream = Stream::kCompute,
                                   .kind = TaskKind::kHost,
                                   .duration_s = per_kernel * static_cast<double>(kernels - 1)});
      out_.graph.add_edge(first, rest);
      host_last_[ri] = static_cast<std::int32_t>(rest.value);
    }
    return static_cast<std::int32_t>(first.value);
  }

  bool defers_next_wgrad() const {
    const std::int64_t limit = w_.training.wgrad_deferral_limit;
    return limit == 0 || deferred_ < limit;
  }

  /// finish_embedding_wgrad_compute (schedules.py) at the end of the last stage's program,
  /// before finalize_model_grads: drain_embedding_wgrad_compute (megatron/core/utils.py)
  /// all-gathers the first deferred input synchronously, then for each deferred micro-batch
  /// i issues the all-gather of input i + 1 (NCCL's stream waits for the compute issued
  /// before it: wgrad i - 1) and runs wgrad i (after gather i); the last wgrad after.
  void add_wgrad_drain(std::int32_t r, std::vector<std::int32_t>& cursor) {
    const std::int32_t c = v_ - 1;
    const ChunkPlan& chunk = plan_.stages[static_cast<std::size_t>(r)].chunks[static_cast<std::size_t>(c)];
    const Op& gemm = chunk.deferred_wgrad.back();
    const Op* gather = chunk.deferred_wgrad.size() > 1 ? &chunk.deferred_wgrad.front() : nullptr;
    const auto edge = [this](std::int32_t from, TaskId to) {
      if (from != kNoTask) out_.graph.add_edge(TaskId{static_cast<std::uint32_t>(from)}, to);
    };
    std::int32_t gathered = kNoTask;
    if (gather != nullptr) {
      const TaskId g = add_op_task(r, c, *gather, -1);
      add_edges(cursor, g);
      gathered = static_cast<std::int32_t>(g.value);
    }
    std::int32_t prev_gemm = kNoTask;
    for (std::int64_t i = 0; i < deferred_; ++i) {
      std::int32_t next_gathered = kNoTask;
      if (gather != nullptr && i + 1 < deferred_) {
        const TaskId g = add_op_task(r, c, *gather, -1);
        edge(gathered, g);
        edge(prev_gemm, g);
        if (prev_gemm == kNoTask) add_edges(cursor, g);
        next_gathered = static_cast<std::int32_t>(g.value);
      }
      const TaskId id = add_op_task(r, c, gemm, -1);
      out_.step_ops.back().frees_bytes = chunk.deferred_wgrad_bytes;
      if (gathered != kNoTask) {
        edge(gathered, id);
      } else if (prev_gemm == kNoTask) {
        add_edges(cursor, id);
      }
      edge(prev_gemm, id);
      prev_gemm = static_cast<std::int32_t>(id.value);
      gathered = next_gathered;
    }
    cursor.assign(1, prev_gemm);
  }

  /// Where one rank gathers its parameters with overlap_param_gather (Megatron's
  /// distributed optimizer; the gather of this step's parameters happens in the next step's
  /// forward, so a simulated steady-state step starts with it).
  struct ParamGather {
    bool on = false;
    /// align_param_gather with interleaving: the schedule dispatches the gathers (Megatron's
    /// param_sync_func); otherwise each chunk's forward pre-hook does.
    bool aligned = false;
    const Op* op = nullptr;  ///< the stage's dp_param_all_gather step op (all its chunks)
    /// Per forward action of the rank (in program order): the chunk whose gather Megatron
    /// dispatches before it (align_param_gather, interleaved), or -1.
    std::vector<std::int32_t> dispatch_at;
    std::vector<std::size_t> first_forward;  ///< per chunk: index of its first forward
    std::vector<std::int32_t> done;          ///< per chunk: the task the forward waits for
  };

  const Op* param_gather_op(std::int32_t r) const {
    for (const Op& op : plan_.stages[static_cast<std::size_t>(r)].step_ops) {
      const auto* coll = std::get_if<CollectiveOp>(&op.shape);
      if (coll != nullptr && coll->kind == CollectiveKind::kAllGather &&
          coll->group == CommGroup::kData) {
        return &op;
      }
    }
    return nullptr;
  }

  bool param_gather_overlapped(std::int32_t r) const {
    const TrainingConfig& t = w_.training;
    return t.overlap_param_gather && t.use_distributed_optimizer && !options_.serialize_streams &&
           param_gather_op(r) != nullptr;
  }

  ParamGather plan_param_gather(const RankProgram& program) {
    ParamGather g;
    const std::int32_t r = program.rank;
    if (!param_gather_overlapped(r)) return g;
    g.on = true;
    g.aligned = v_ > 1 && w_.training.align_param_gather;
    g.op = param_gather_op(r);
    std::vector<std::int32_t> chunk_of_forward;
    for (const Action& a : program.actions) {
      if (a.type == ActionType::kForward) chunk_of_forward.push_back(a.chunk);
    }
    const std::size_t n = chunk_of_forward.size();
    g.first_forward.assign(static_cast<std::size_t>(v_), n);
    for (std::size_t k = n; k-- > 0;) g.first_forward[static_cast<std::size_t>(chunk_of_forward[k])] = k;
    g.dispatch_at.assign(n, -1);
    g.done.assign(static_cast<std::size_t>(v_), kNoTask);
    if (g.aligned) {
      // schedules.py, forward_step_helper_preprocess: before forward virtual micro-batch k,
      // if k + rank is the first micro-batch of chunk c, gather chunk c + 1 (when 1 < c + 1 < v).
      for (std::size_t k = 0; k + static_cast<std::size_t>(r) < n; ++k) {
        const std::size_t id = k + static_cast<std::size_t>(r);
        const std::int32_t c = chunk_of_forward[id];
        if (g.first_forward[static_cast<std::size_t>(c)] != id) continue;
        if (1 < c + 1 && c + 1 < v_) g.dispatch_at[k] = c + 1;
      }
    }
    return g;
  }

  // Dispatches chunk `c`'s parameter all-gathers (once) after `cursor`, one per DDP bucket
  // on the rank's DP stream, and returns the task that chunk's first forward waits for.
  // Interleaved (align_param_gather): every bucket is dispatched at once in bucket order
  // (the one nearest the output first), so the first module waits for all of them: the
  // last. Without interleaving (align_param_gather is off): the forward pre-hook of the
  // first module dispatches the bucket it needs and waits; each wait dispatches the next
  // bucket in forward order, so the gathers run back to back while the forward computes;
  // each module waits for its own bucket. The forward then starts `max_j(end_j - use_j)`
  // after the dispatch, with end_j the j-th gather's end and use_j the offset into the
  // forward of the first op using bucket j (a delay task, exact with fixed durations).
  std::int32_t dispatch_param_gather(std::int32_t r, std::int32_t c,
                                     const std::vector<std::int32_t>& cursor, ParamGather& g) {
    std::int32_t& done = g.done[static_cast<std::size_t>(c)];
    if (done != kNoTask) return done;
    const auto ri = static_cast<std::size_t>(r);
    const StagePlan& stage = plan_.stages[ri];
    const ChunkPlan& chunk = stage.chunks[static_cast<std::size_t>(c)];
    // A model chunk without parameters (an empty stage of an uneven layout) has no buckets.
    if (chunk.parameters == 0) return kNoTask;
    // The chunk's share of the stage's gather, then cut into its buckets.
    Op& chunk_op = out_.bucket_ops.emplace_back(*g.op);
    auto& coll = std::get<CollectiveOp>(chunk_op.shape);
    coll.bytes =
        stage.parameters > 0 ? share_of(coll.bytes, chunk.parameters, stage.parameters) : 0;
    const std::vector<DdpBucket>& buckets = buckets_of(r, c);
    std::vector<std::size_t> order(buckets.size());
    for (std::size_t b = 0; b < order.size(); ++b) order[b] = b;
    if (!g.aligned) std::reverse(order.begin(), order.end());
    const ChunkTemplate& tmpl =
        out_.templates[static_cast<std::size_t>(template_index(r, c, ActionType::kForward, v_))];
    double end = 0, start_after = 0;
    std::int32_t last = kNoTask;
    for (const std::size_t b : order) {
      const Op& op = buckets.size() > 1 ? bucket_op(chunk_op, chunk.parameters, buckets, b) : chunk_op;
      const TaskId id = add_op_task(r, c, op, buckets.size() > 1 ? static_cast<std::int32_t>(b) : -1);
      add_edges(cursor, id);
      std::int32_t& prev = dp_stream_last_[ri];
      if (prev != kNoTask) out_.graph.add_edge(TaskId{static_cast<std::uint32_t>(prev)}, id);
      prev = last = static_cast<std::int32_t>(id.value);
      end += out_.graph.task(id).duration_s;
      const auto use = static_cast<std::size_t>(std::max(0, buckets[b].first_use_op));
      STEPSIM_ASSERT(use < tmpl.ops.size());
      start_after = std::max(start_after, end - tmpl.ops[use].start_s);
    }
    done = last;
    if (!g.aligned && buckets.size() > 1) {
      const TaskId delay = add(Task{.rank = r,
                                    .stream = Stream::kCompute,
                                    .kind = TaskKind::kDelay,
                                    .duration_s = start_after});
      add_edges(cursor, delay);
      done = static_cast<std::int32_t>(delay.value);
    }
    return done;
  }

  const std::vector<DdpBucket>& buckets_of(std::int32_t r, std::int32_t c) {
    const auto slot = static_cast<std::size_t>(r * v_ + c);
    return buckets_[slot];
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
      task = static_cast<std::int32_t>(add(Task{.rank = sender,
                                                .stream = Stream::kPipelineComm,
                                                .kind = TaskKind::kTransfer,
                                                .duration_s = duration,
                                                .payload = payload,
                                                .resources = transfer_resources(
                                                    sender, receiver, b.inter_node)})
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

  Status add_data_dependencies() {
    for (const auto& [task, key] : data_deps_) {
      const std::int32_t recv = transfer_of_key_[key];
      if (recv == kNoTask) {
        const Task& t = out_.graph.task(task);
        return Error{"", "",
                     "schedule bug: rank " + std::to_string(t.rank) +
                         " computes with a tensor it never receives",
                     ErrorKind::kInternal};
      }
      out_.graph.add_edge(TaskId{static_cast<std::uint32_t>(recv)}, task);
    }
    return ok_status();
  }

  TaskId add_op_task(std::int32_t r, std::int32_t chunk, const Op& op, std::int32_t bucket) {
    const auto payload = static_cast<std::int32_t>(out_.step_ops.size());
    out_.step_ops.push_back(StepOpRef{.rank = r, .chunk = chunk, .bucket = bucket, .op = &op});
    const auto* coll = std::get_if<CollectiveOp>(&op.shape);
    const Stream stream = options_.serialize_streams ? Stream::kCompute : op.stream;
    const double seconds = coll != nullptr ? cost_.op_s(op) : scale_of(r) * cost_.op_s(op);
    return add(Task{.rank = r,
                    .stream = stream,
                    .kind = coll != nullptr ? TaskKind::kCollective : TaskKind::kStepOp,
                    .duration_s = seconds,
                    .payload = payload,
                    .resources = coll != nullptr ? collective_resources(r, *coll)
                                                 : TaskResources{.compute_gpu = r}});
  }

  // A P2P transfer moves its bytes out of the sender's NIC rail (across nodes) or NVLink
  // port and into the receiver's. NCCL's send/receive kernels take one or two CTAs: no
  // interference with compute is modelled for them.
  static TaskResources transfer_resources(std::int32_t sender, std::int32_t receiver,
                                          bool inter_node) {
    TaskResources out;
    out.links[0] = ResourceRef{sender, inter_node ? ResourceKind::kNicTx : ResourceKind::kNvlinkTx};
    out.links[1] = ResourceRef{receiver, inter_node ? ResourceKind::kNicRx : ResourceKind::kNvlinkRx};
    out.link_count = 2;
    return out;
  }

  // A collective's ring sends and receives on every member: both directions of the rank's NIC
  // rail when its group spans nodes, of its NVLink port otherwise; as an NCCL kernel it
  // interferes with the compute on its GPU (unless it is not NCCL's: CollectiveOp::nccl).
  static TaskResources collective_resources(std::int32_t r, const CollectiveOp& op) {
    TaskResources out;
    const bool nic = op.nodes_spanned > 1;
    out.links[0] = ResourceRef{r, nic ? ResourceKind::kNicTx : ResourceKind::kNvlinkTx};
    out.links[1] = ResourceRef{r, nic ? ResourceKind::kNicRx : ResourceKind::kNvlinkRx};
    out.link_count = 2;
    if (op.nccl) out.nccl_gpu = r;
    return out;
  }

  // Megatron's gradient reduction (the DDP of each model chunk, bucketed as in
  // ddp_buckets.hpp), dispatched where Megatron dispatches it:
  // - without overlap_grad_reduce: every bucket synchronously in finalize_model_grads, chunk
  //   by chunk, after the rank's whole program;
  // - with it, interleaved (align_grad_reduce, Megatron's default): a chunk's buckets all at
  //   once after the backward whose virtual micro-batch id is the chunk's last one plus the
  //   pipeline rank (schedules.py, backward_step_helper_postprocess), so that every pipeline
  //   rank launches together; chunks never reached that way after the program;
  // - with it, without interleaving: the first pipeline rank's buckets each as soon as the
  //   last backward has made its gradients final (the backward hooks, grad sync enabled for
  //   the last micro-batch); later ranks after their program ("launch any remaining grad
  //   reductions"), since align_grad_reduce keeps their hooks from dispatching.
  // The reductions share the rank's DP stream in dispatch order.
  Status make_buckets() {
    buckets_.resize(static_cast<std::size_t>(p_ * v_));
    for (std::int32_t r = 0; r < p_; ++r) {
      const std::int64_t stage_parameters = plan_.stages[static_cast<std::size_t>(r)].parameters;
      for (std::int32_t c = 0; c < v_; ++c) {
        const ChunkPlan& chunk =
            plan_.stages[static_cast<std::size_t>(r)].chunks[static_cast<std::size_t>(c)];
        Result<std::vector<DdpBucket>> made =
            ddp_buckets(w_, chunk, ddp_bucket_size(w_.training, stage_parameters, r, c));
        if (!made.ok()) return made.errors();
        buckets_[static_cast<std::size_t>(r * v_ + c)] = std::move(made).value();
      }
    }
    return ok_status();
  }

  Status add_step_work(std::int32_t r, std::int32_t end_of_program) {
    const auto ri = static_cast<std::size_t>(r);
    const StagePlan& stage = plan_.stages[ri];
    const bool overlap = w_.training.overlap_grad_reduce && !options_.serialize_streams;
    std::vector<std::pair<std::int32_t, std::int32_t>> launches;  // (gate task, chunk)
    bool per_bucket = false;
    if (!overlap) {
      for (std::int32_t c = 0; c < v_; ++c) launches.emplace_back(end_of_program, c);
    } else if (v_ > 1) {
      const std::vector<std::int32_t>& bw = backward_tasks_[ri];
      std::vector<std::size_t> last(static_cast<std::size_t>(v_), 0);
      for (std::size_t j = 0; j < bw.size(); ++j) last[static_cast<std::size_t>(chunk_of(bw[j]))] = j;
      std::vector<bool> launched(static_cast<std::size_t>(v_), false);
      for (std::size_t k = ri; k < bw.size(); ++k) {
        const std::size_t j = k - ri;  // grad_sync_virtual_microbatch_id
        const std::int32_t c = chunk_of(bw[j]);
        if (last[static_cast<std::size_t>(c)] != j) continue;
        launches.emplace_back(bw[k], c);
        launched[static_cast<std::size_t>(c)] = true;
      }
      for (std::int32_t c = 0; c < v_; ++c) {
        if (!launched[static_cast<std::size_t>(c)]) launches.emplace_back(end_of_program, c);
      }
    } else if (r == 0) {
      per_bucket = true;
      launches.emplace_back(kNoTask, 0);
    } else {
      launches.emplace_back(end_of_program, 0);
    }

    std::int32_t stream_prev = dp_stream_last_[ri];  // after the parameter gathers
    for (const auto& [launch_gate, c] : launches) {
      const ChunkPlan& chunk = stage.chunks[static_cast<std::size_t>(c)];
      if (chunk.grad_sync.empty()) continue;
      const std::vector<DdpBucket>& buckets = buckets_of(r, c);
      for (std::size_t b = 0; b < buckets.size(); ++b) {
        const std::int32_t gate = per_bucket ? bucket_ready(r, c, buckets[b]) : launch_gate;
        for (const Op& op : chunk.grad_sync) {
          const Op* what = &op;
          if (buckets.size() > 1) what = &bucket_op(op, chunk.parameters, buckets, b);
          const TaskId id = add_op_task(r, c, *what, buckets.size() > 1 ? static_cast<std::int32_t>(b) : -1);
          if (gate != kNoTask) out_.graph.add_edge(TaskId{static_cast<std::uint32_t>(gate)}, id);
          if (stream_prev != kNoTask && stream_prev != gate) {
            out_.graph.add_edge(TaskId{static_cast<std::uint32_t>(stream_prev)}, id);
          }
          stream_prev = static_cast<std::int32_t>(id.value);
        }
      }
    }
    const std::int32_t last_grad_task = stream_prev;
    // Step ops wait for the end of the program and every gradient reduction.
    const TaskId gate = add(Task{.rank = r, .stream = Stream::kCompute, .kind = TaskKind::kJoin});
    if (end_of_program != kNoTask) {
      out_.graph.add_edge(TaskId{static_cast<std::uint32_t>(end_of_program)}, gate);
    }
    if (last_grad_task != kNoTask) {
      out_.graph.add_edge(TaskId{static_cast<std::uint32_t>(last_grad_task)}, gate);
    }
    // The host issues the optimizer after it has issued the whole program; the gradient
    // norm's .item() (clip_grads.py, get_grad_norm_fp32) makes it wait for the norm's
    // all-reduce before it issues the clipping and the optimizer's kernels.
    // (end_of_program already waits for the host's last issue.)
    std::int32_t host_gate = kNoTask;
    std::array<std::int32_t, 4> last_on_stream;
    last_on_stream.fill(static_cast<std::int32_t>(gate.value));
    std::vector<TaskId> ids;
    std::size_t grad_stats = 0;  // the stage's grad-stats all-reduces so far
    const Op* gathered_in_forward = param_gather_overlapped(r) ? param_gather_op(r) : nullptr;
    for (const Op& op : stage.step_ops) {
      if (&op == gathered_in_forward) continue;  // in the next step's forward (add_program)
      const TaskId id = add_op_task(r, -1, op, -1);
      const Task& t = out_.graph.task(id);
      auto& prev = last_on_stream[static_cast<std::size_t>(t.stream)];
      out_.graph.add_edge(TaskId{static_cast<std::uint32_t>(prev)}, id);
      for (const std::int32_t d : op.deps) {
        STEPSIM_ASSERT(d >= 0 && static_cast<std::size_t>(d) < ids.size());
        out_.graph.add_edge(ids[static_cast<std::size_t>(d)], id);
      }
      prev = static_cast<std::int32_t>(id.value);
      ids.push_back(id);
      if (host_gate != kNoTask) {
        out_.graph.add_edge(TaskId{static_cast<std::uint32_t>(host_gate)}, id);
      }
      const auto* coll = std::get_if<CollectiveOp>(&op.shape);
      if (host_ != nullptr && coll != nullptr && coll->group == CommGroup::kGradStats) {
        const TaskId woken = add(Task{.rank = r,
                                      .stream = Stream::kCompute,
                                      .kind = TaskKind::kHost,
                                      .duration_s = host_->sync_s + host_->op_issue_s});
        out_.graph.add_edge(id, woken);
        host_gate = static_cast<std::int32_t>(woken.value);
      }
      if (coll != nullptr && coll->group == CommGroup::kEmbedding) embedding_tasks_.push_back(id);
      if (coll != nullptr && coll->group == CommGroup::kGradStats) {
        if (grad_stats_tasks_.size() <= grad_stats) grad_stats_tasks_.emplace_back();
        grad_stats_tasks_[grad_stats++].push_back(id);
      }
    }
    return ok_status();
  }

  std::int32_t chunk_of(std::int32_t compute_task) const {
    const Task& t = out_.graph.task(TaskId{static_cast<std::uint32_t>(compute_task)});
    return out_.actions[static_cast<std::size_t>(t.payload)].action.chunk;
  }

  // The moment a bucket's gradients become final inside chunk `c`'s last backward: a delay
  // task that starts with that backward (same predecessors) and lasts until the end of the
  // bucket's ready op in the backward's template.
  std::int32_t bucket_ready(std::int32_t r, std::int32_t c, const DdpBucket& bucket) {
    const auto slot = static_cast<std::size_t>(r * v_ + c);
    const ChunkTemplate& tmpl =
        out_.templates[static_cast<std::size_t>(template_index(r, c, ActionType::kBackward, v_))];
    STEPSIM_ASSERT(bucket.ready_op >= 0 &&
                   static_cast<std::size_t>(bucket.ready_op) < tmpl.ops.size());
    const double offset = tmpl.ops[static_cast<std::size_t>(bucket.ready_op)].end_s;
    const TaskId id = add(
        Task{.rank = r, .stream = Stream::kCompute, .kind = TaskKind::kDelay, .duration_s = offset});
    for (const std::int32_t p : last_backward_preds_[slot]) {
      out_.graph.add_edge(TaskId{static_cast<std::uint32_t>(p)}, id);
    }
    const std::size_t key = last_backward_key_[slot];
    if (key != kNoKey) {
      const std::int32_t t = transfer_of_key_[key];
      STEPSIM_ASSERT(t != kNoTask);
      const auto& preds = last_backward_preds_[slot];
      if (std::find(preds.begin(), preds.end(), t) == preds.end()) {
        out_.graph.add_edge(TaskId{static_cast<std::uint32_t>(t)}, id);
      }
    }
    return static_cast<std::int32_t>(id.value);
  }

  // `op` (a gradient collective over the whole chunk) for bucket `b` alone: its bytes in
  // proportion to the bucket's parameters; the last bucket takes the rounding remainder.
  const Op& bucket_op(const Op& op, std::int64_t parameters, const std::vector<DdpBucket>& buckets,
                      std::size_t b) {
    Op& out = out_.bucket_ops.emplace_back(op);
    auto* coll = std::get_if<CollectiveOp>(&out.shape);
    STEPSIM_ASSERT(coll != nullptr && parameters > 0);
    const std::int64_t total = coll->bytes;
    std::int64_t before = 0;
    for (std::size_t i = 0; i < b; ++i)
      before += share_of(total, buckets[i].parameters, parameters);
    coll->bytes = b + 1 == buckets.size() ? total - before
                                          : share_of(total, buckets[b].parameters, parameters);
    return out;
  }

  // The tied-embedding gradient all-reduce is one collective over the first and last stage:
  // a rendezvous of their two tasks.
  Status match_embedding_group() {
    if (embedding_tasks_.empty()) return ok_status();
    if (embedding_tasks_.size() != 2) {
      return Error{"", "",
                   "plan bug: " + std::to_string(embedding_tasks_.size()) +
                       " stages take part in the embedding-group all-reduce, expected 2",
                   ErrorKind::kInternal};
    }
    const std::int32_t id = out_.graph.new_rendezvous();
    for (const TaskId t : embedding_tasks_) out_.graph.set_rendezvous(t, id);
    return ok_status();
  }

  // Each grad-stats all-reduce of the optimizer (the gradient norm; fp16's found-inf flag) is
  // one collective over every pipeline stage (the world, or the model-parallel group): a
  // rendezvous of the stages' tasks, so that every stage's optimizer waits for the slowest.
  Status match_grad_stats_group() {
    for (const std::vector<TaskId>& tasks : grad_stats_tasks_) {
      if (tasks.size() != static_cast<std::size_t>(p_)) {
        return Error{"", "",
                     "plan bug: " + std::to_string(tasks.size()) +
                         " stages take part in a grad-stats all-reduce, expected " +
                         std::to_string(p_),
                     ErrorKind::kInternal};
      }
      if (p_ == 1) continue;
      const std::int32_t id = out_.graph.new_rendezvous();
      for (const TaskId t : tasks) out_.graph.set_rendezvous(t, id);
    }
    return ok_status();
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
  std::vector<std::vector<TaskId>> grad_stats_tasks_;      // [k-th grad-stats all-reduce][stage]
  std::vector<std::vector<std::int32_t>> backward_tasks_;  // per rank, in program order
  // [rank * v + chunk]: the predecessors of the chunk's latest backward (recorded only where
  // bucket_ready needs them) and the gradient it receives (kNoKey: none).
  std::vector<std::vector<std::int32_t>> last_backward_preds_;
  std::vector<std::size_t> last_backward_key_;
  std::vector<std::vector<DdpBucket>> buckets_;  // [rank * v + chunk]
  std::vector<std::int32_t> dp_stream_last_;     // per rank: the last task on its DP stream
  // The host (CostModel::host(); null: not modelled): per rank, the task that ends when the
  // host has issued everything so far.
  const HostCosts* host_ = nullptr;
  std::vector<std::int32_t> host_last_;
  std::int32_t deferred_template_ = -1;  // the last stage's backward with the wgrad deferred
  std::int64_t deferred_ = 0;            // backwards whose output-layer wgrad was deferred
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
