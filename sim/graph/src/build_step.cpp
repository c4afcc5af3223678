#include "stepsim/graph/build_step.hpp"

#include <algorithm>
#include <array>
#include <string>

#include "step_builder.hpp"
#include "stepsim/graph/ep_overlap.hpp"
#include "stepsim/base/assert.hpp"
#include "stepsim/cost/profile.hpp"
#include "stepsim/layout/rank_layout.hpp"
#include "stepsim/graph/cost_memo.hpp"

namespace stepsim::sim {

namespace {

std::int64_t node_of_stage(const Workload& w, std::int32_t stage) {
  // Megatron's rank layout (RankGenerator, order tp-cp-ep-dp-pp). The representative rank of
  // a stage is its TP rank 0 of DP replica 0.
  const TrainingConfig& t = w.training;
  const RankGenerator ranks(ParallelSizes{.tp = t.tensor_model_parallel_size,
                                          .cp = t.context_parallel_size,
                                          .dp = std::max<std::int64_t>(1, t.data_parallel_size),
                                          .pp = t.pipeline_model_parallel_size});
  // Pipeline sends ride NVLink inside one NVLink domain, the NICs across domains.
  return ranks.rank(ParallelCoords{.pp = stage}) /
         std::max<std::int64_t>(1, w.system.nvlink_domain());
}

/// The cost model with compute kernels (GEMMs, attention, memory-bound) `factor` times as
/// long; collectives and transfers as they are.
class ScaledCompute final : public CostModel {
 public:
  ScaledCompute(const CostModel& base, double factor) : base_(base), factor_(factor) {}
  double gemm_s(const GemmOp& op) const override { return factor_ * base_.gemm_s(op); }
  double attention_s(const AttentionOp& op) const override {
    return factor_ * base_.attention_s(op);
  }
  double memory_bound_s(const MemoryBoundOp& op) const override {
    return factor_ * base_.memory_bound_s(op);
  }
  double collective_s(const CollectiveOp& op) const override { return base_.collective_s(op); }
  double p2p_s(const P2POp& op) const override { return base_.p2p_s(op); }
  std::string describe() const override { return base_.describe(); }
  const HostCosts* host() const override { return base_.host(); }  // the host is not slowed
  const MeasuredInterference* interference() const override { return base_.interference(); }
  const KernelSpread* spread() const override { return base_.spread(); }

 private:
  const CostModel& base_;
  double factor_;
};

}  // namespace

Result<BuiltStep> StepBuilder::build() {
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

void StepBuilder::build_templates() {
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
      // A serial executor posting non-blocking P2P (async_p2p) posts the CP ring's steps too.
      out_.templates[index] = time_ops(ops, cost, options_.serialize_streams, options_.interference,
                                       options_.async_p2p);
      timed.push_back(Timed{.ops = &ops, .scale = scale, .index = index});
    };
    for (std::int32_t c = 0; c < v_; ++c) {
      const ChunkPlan& chunk = stage.chunks[static_cast<std::size_t>(c)];
      time(chunk.forward, static_cast<std::size_t>(template_index(r, c, ActionType::kForward, v_)));
      time(chunk.backward,
           static_cast<std::size_t>(template_index(r, c, ActionType::kBackward, v_)));
      if (!chunk.backward_wgrad_deferred.empty()) {
        deferred_template_ = static_cast<std::int32_t>(out_.templates.size());
        out_.templates.emplace_back();
        time(chunk.backward_wgrad_deferred, out_.templates.size() - 1);
      }
    }
    if (pairs_combined()) build_pair_templates(cost);
  }
}

void StepBuilder::build_pair_templates(const CostModel& cost) {
  const ChunkPlan& chunk = plan_.stages.front().chunks.front();
  const PairedOps paired = pair_ops(chunk.forward, chunk.backward, w_.training.delay_wgrad_compute);
  const ChunkTemplate merged = time_ops(paired.ops, cost, options_.serialize_streams,
                                        options_.interference, options_.async_p2p);
  const auto alone = [&](ActionType type) -> const ChunkTemplate& {
    return out_.templates[static_cast<std::size_t>(template_index(0, 0, type, v_))];
  };
  PairedTemplates parts =
      split_pair(paired, merged, alone(ActionType::kForward), alone(ActionType::kBackward));
  paired_forward_template_ = static_cast<std::int32_t>(out_.templates.size());
  out_.templates.push_back(std::move(parts.forward));
  paired_backward_template_ = static_cast<std::int32_t>(out_.templates.size());
  out_.templates.push_back(std::move(parts.backward));
}

void StepBuilder::reserve_for_schedule() {
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

void StepBuilder::cost_boundaries() {
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

void StepBuilder::add_program(const RankProgram& program,
                              std::vector<std::int32_t>& end_of_program) {
  const std::int32_t r = program.rank;
  const auto ri = static_cast<std::size_t>(r);
  ProgramState st;
  // The first rank without interleaving dispatches its buckets inside its last backward,
  // which needs that backward's predecessors (bucket_ready).
  st.record_preds = grad_reduce_overlapped() && v_ == 1 && r == 0;
  st.gather = plan_param_gather(program);
  st.cursor.reserve(8);
  if (st.gather.on && st.gather.aligned) {
    // align_param_gather: chunks 0 and 1 are gathered when the step's schedule starts.
    for (const std::int32_t c : {0, 1}) dispatch_param_gather(r, c, st.cursor, st.gather);
  }
  {
    // The rank's gradient reductions, in Megatron's issue order: launched from the host
    // inside their backward here (issue_grad_launches), added to the DP stream in
    // add_step_work.
    std::vector<std::vector<DdpBucket>> buckets(static_cast<std::size_t>(v_));
    for (std::int32_t c = 0; c < v_; ++c) buckets[static_cast<std::size_t>(c)] = buckets_of(r, c);
    grad_launches_[ri] = grad_sync_launches(program, v_, grad_reduce_overlapped(), buckets);
    grad_launch_issued_[ri].assign(grad_launches_[ri].size(), kNoTask);
  }
  const auto& items = program.items;
  for (std::size_t k = 0; k < items.size(); ++k) {
    const ProgramItem& item = items[k];
    if (item.kind != ProgramItem::Kind::kCompute) {
      add_call(program, item.comm, st.cursor);
      continue;
    }
    // The steady state's F(i) then B(i - 1): one combined step; the warm-up F0 and the
    // last backward run alone.
    const bool pair = pairs_combined() && item.action.type == ActionType::kForward &&
                      k + 1 < items.size() && items[k + 1].kind == ProgramItem::Kind::kCompute &&
                      items[k + 1].action.type == ActionType::kBackward &&
                      items[k + 1].action.microbatch < item.action.microbatch;
    if (!pair) {
      add_action(r, item.action, st);
      continue;
    }
    const std::vector<std::int32_t> before = st.cursor;
    pair_template_ = paired_forward_template_;
    add_action(r, item.action, st);
    const std::int32_t forward = st.cursor.front();
    st.cursor = before;
    // The host issues the two interleaved: the backward's first kernel goes out with the
    // forward's first, not after all of them.
    if (last_issued_ != kNoTask) st.cursor.push_back(last_issued_);
    pair_template_ = paired_backward_template_;
    pair_backward_ = true;
    add_action(r, items[k + 1].action, st);
    pair_template_ = -1;
    pair_backward_ = false;
    st.cursor.push_back(forward);
    ++k;
  }
  std::vector<std::int32_t>& cursor = st.cursor;
  if (host_last_[ri] != kNoTask) cursor.push_back(host_last_[ri]);
  if (r == p_ - 1 && deferred_ > 0) add_wgrad_drain(r, cursor);
  const TaskId end = add(Task{.rank = r, .stream = Stream::kCompute, .kind = TaskKind::kJoin});
  add_edges(cursor, end);
  end_of_program[static_cast<std::size_t>(r)] = static_cast<std::int32_t>(end.value);
}

void StepBuilder::add_action(std::int32_t r, const Action& a, ProgramState& st) {
  std::vector<std::int32_t>& cursor = st.cursor;
  ParamGather& gather = st.gather;
  std::int32_t ti = pair_template_ >= 0 ? pair_template_ : template_index(r, a.chunk, a.type, v_);
  bool wgrad_deferred = false;
  if (pair_template_ < 0 && deferred_template_ >= 0 && a.type == ActionType::kBackward &&
      r == p_ - 1 &&
      a.chunk == v_ - 1 && defers_next_wgrad()) {
    // LinearWithGradAccumulationAndAsyncCommunication: the first wgrad_deferral_limit
    // backwards (all with 0) append their logits gradient to the buffer.
    ti = deferred_template_;
    wgrad_deferred = true;
    ++deferred_;
  }
  std::int32_t wait_gather = kNoTask;
  if (gather.on && a.type == ActionType::kForward) {
    const auto k = static_cast<std::size_t>(st.forward_index++);
    if (gather.dispatch_at[k] >= 0)
      dispatch_param_gather(r, gather.dispatch_at[k], cursor, gather);
    if (gather.first_forward[static_cast<std::size_t>(a.chunk)] == k) {
      // Megatron's forward pre-hook: dispatch the gather if nobody has yet, then wait.
      wait_gather = dispatch_param_gather(r, a.chunk, cursor, gather);
    }
  }
  // The host issues the action's kernels one after another: its first kernel can
  // start once issued, and the host goes on to the next item only after the last.
  const std::int32_t issued_here = issue_action(r, a, ti);
  last_issued_ = issued_here;
  // A pair's backward waits for the forward's first issue (in the cursor), not its own.
  const std::int32_t issued = pair_backward_ ? kNoTask : issued_here;
  const auto payload = static_cast<std::int32_t>(out_.actions.size());
  out_.actions.push_back(ActionRef{r, a, ti, wgrad_deferred});
  Task& task = out_.graph.emplace_task();  // in place: one per action, a hot path
  task.rank = r;
  task.kind = TaskKind::kCompute;
  task.duration_s = out_.templates[static_cast<std::size_t>(ti)].duration_s;
  const ChunkTemplate& timed = out_.templates[static_cast<std::size_t>(ti)];
  replica_variance_[static_cast<std::size_t>(r)] += timed.spread_variance_s2;
  out_.replica_variance_s2[static_cast<std::size_t>(r)] += timed.spread_variance_s2;
  out_.compute_busy_s[static_cast<std::size_t>(r)] += timed.compute_busy_s;
  task.payload = payload;
  task.resources.compute_gpu = pair_backward_ ? -1 : r;
  const TaskId id{static_cast<std::uint32_t>(out_.graph.size() - 1)};
  add_edges(cursor, id);
  if (wait_gather != kNoTask)
    out_.graph.add_edge(TaskId{static_cast<std::uint32_t>(wait_gather)}, id);
  if (issued != kNoTask) {
    out_.graph.add_edge(TaskId{static_cast<std::uint32_t>(issued)}, id);
    cursor.push_back(issued);  // for the bucket points below: same predecessors
  }
  const std::int32_t vs = a.chunk * p_ + r;
  if (a.type == ActionType::kForward && vs > 0) {
    add_data_dependency(id, key_of(TensorKind::kActivation, a.microbatch, vs - 1), cursor);
  }
  if (a.type == ActionType::kBackward) {
    std::vector<std::int32_t>& backward = backward_tasks_[static_cast<std::size_t>(r)];
    std::size_t key = kNoKey;
    if (vs < p_ * v_ - 1) {
      key = key_of(TensorKind::kGradient, a.microbatch, vs + 1);
      add_data_dependency(id, key, cursor);
    }
    backward.push_back(static_cast<std::int32_t>(id.value));
    if (host_ != nullptr)
      issue_grad_launches(r, static_cast<std::int32_t>(backward.size()) - 1);
    if (st.record_preds) {
      const auto slot = static_cast<std::size_t>(r * v_ + a.chunk);
      last_backward_preds_[slot] = cursor;
      last_backward_key_[slot] = key;
    }
  }
  cursor.assign(1, static_cast<std::int32_t>(id.value));
}

void StepBuilder::add_call(const RankProgram& program, const CommCall& call,
                           std::vector<std::int32_t>& cursor) {
  const std::int32_t r = program.rank;
  const auto ri = static_cast<std::size_t>(r);
  for (const Transfer& tr : program.waits_of(call)) {
    // Megatron's handle.wait() on transfers this rank posted earlier without blocking.
    const std::int32_t t =
        transfer_of_key_[key_of(tr.tensor, tr.microbatch, tr.producer_virtual_stage)];
    STEPSIM_ASSERT(t != kNoTask);
    cursor.push_back(t);
  }
  if (call.transfer_count == 0) return;
  const std::int32_t issued =
      full_iteration_graph() ? kNoTask : issue_on_host(r, 1, host_ ? host_->op_issue_s : 0);
  if (issued != kNoTask) cursor.push_back(issued);
  posted_.clear();
  for (const Transfer& tr : program.transfers_of(call)) {
    posted_.push_back(post_transfer(r, tr, cursor));
  }
  // With serialised streams a non-blocking call completes where it is issued, as on the
  // validator's single host thread (calibration/executor.hpp), unless the executor's
  // backend progresses it on a thread of its own (async_p2p).
  if (call.blocking || (options_.serialize_streams && !options_.async_p2p)) {
    cursor.assign(posted_.begin(), posted_.end());
  }
  if (host_ != nullptr && call.blocking && !schedule_.params.overlap_p2p_comm &&
      !full_iteration_graph()) {
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

void StepBuilder::issue_grad_launches(std::int32_t r, std::int32_t backward) {
  if (full_iteration_graph()) return;  // the hooks' launches replay inside the graph
  const auto ri = static_cast<std::size_t>(r);
  const std::vector<GradSyncLaunch>& launches = grad_launches_[ri];
  for (std::size_t i = 0; i < launches.size(); ++i) {
    if (launches[i].backward != backward) continue;
    const ChunkPlan& chunk = plan_.stages[ri].chunks[static_cast<std::size_t>(launches[i].chunk)];
    // After the action's own kernels: the hook fires inside the backward, and the host's
    // next action waits for these launches as for the action's kernels.
    for (std::size_t k = 0; k < chunk.grad_sync.size(); ++k) {
      const std::int32_t issued = issue_on_host(r, 1, host_->op_issue_s);
      if (k == 0) grad_launch_issued_[ri][i] = issued;
    }
  }
}

std::int32_t StepBuilder::issue_action(std::int32_t r, const Action& a, std::int32_t ti) {
  const auto t = static_cast<std::size_t>(ti);
  const std::size_t kernels = out_.templates[t].ops.size();
  if (host_ == nullptr) return issue_on_host(r, kernels, 0.0);
  const bool forward = a.type == ActionType::kForward;
  const double per_kernel = forward ? host_->forward_op_issue_s : host_->backward_op_issue_s;
  const CudaGraphImpl impl = w_.training.cuda_graph_impl;
  if (impl == CudaGraphImpl::kNone) return issue_on_host(r, kernels, per_kernel);
  // A graph replay costs the host what one eager call does (the graphed callable's Python
  // and cudaGraphLaunch): the profile's op_issue_s.
  if (impl == CudaGraphImpl::kFullIteration) {
    const auto ri = static_cast<std::size_t>(r);
    if (graph_replayed_.empty()) graph_replayed_.assign(static_cast<std::size_t>(p_), false);
    if (graph_replayed_[ri]) return kNoTask;
    graph_replayed_[ri] = true;
    return issue_on_host(r, 1, host_->op_issue_s);
  }
  if (graph_issue_.size() < out_.templates.size()) {
    graph_issue_.resize(out_.templates.size());
    graph_issue_known_.resize(out_.templates.size(), false);
  }
  if (!graph_issue_known_[t]) {
    const ChunkPlan& chunk =
        plan_.stages[static_cast<std::size_t>(r)].chunks[static_cast<std::size_t>(a.chunk)];
    graph_issue_[t] = graph_issue_of(forward ? chunk.forward : chunk.backward, w_, !forward);
    graph_issue_known_[t] = true;
  }
  const GraphIssue& g = graph_issue_[t];
  const double first = g.first_is_graph ? host_->op_issue_s : per_kernel;
  const double total = static_cast<double>(g.eager_kernels) * per_kernel +
                       static_cast<double>(g.graph_launches) * host_->op_issue_s;
  return issue_costs(r, first, total - first);
}

std::int32_t StepBuilder::issue_costs(std::int32_t r, double first_s, double rest_s) {
  const auto ri = static_cast<std::size_t>(r);
  const TaskId first = add(Task{
      .rank = r, .stream = Stream::kCompute, .kind = TaskKind::kHost, .duration_s = first_s});
  if (host_last_[ri] != kNoTask)
    out_.graph.add_edge(TaskId{static_cast<std::uint32_t>(host_last_[ri])}, first);
  host_last_[ri] = static_cast<std::int32_t>(first.value);
  if (rest_s > 0) {
    const TaskId rest = add(Task{
        .rank = r, .stream = Stream::kCompute, .kind = TaskKind::kHost, .duration_s = rest_s});
    out_.graph.add_edge(first, rest);
    host_last_[ri] = static_cast<std::int32_t>(rest.value);
  }
  return static_cast<std::int32_t>(first.value);
}

std::int32_t StepBuilder::issue_on_host(std::int32_t r, std::size_t kernels, double per_kernel) {
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

void StepBuilder::add_wgrad_drain(std::int32_t r, std::vector<std::int32_t>& cursor) {
  const std::int32_t c = v_ - 1;
  const ChunkPlan& chunk =
      plan_.stages[static_cast<std::size_t>(r)].chunks[static_cast<std::size_t>(c)];
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

std::int32_t StepBuilder::post_transfer(std::int32_t r, const Transfer& tr,
                                        const std::vector<std::int32_t>& cursor) {
  const std::size_t key = key_of(tr.tensor, tr.microbatch, tr.producer_virtual_stage);
  std::int32_t& task = transfer_of_key_[key];
  if (task == kNoTask) {
    const std::int32_t sender = tr.send ? r : tr.peer;
    const std::int32_t receiver = tr.send ? tr.peer : r;
    const Boundary& b = boundary(tr.tensor, tr.producer_virtual_stage);
    const auto payload = static_cast<std::int32_t>(out_.transfers.size());
    // Filled in place, field by field: a TransferRef assembled on the stack and copied in
    // stalled on store forwarding (a tenth of a sweep's time in perf).
    TransferRef& ref = out_.transfers.emplace_back();
    ref.sender = sender;
    ref.receiver = receiver;
    ref.transfer.tensor = tr.tensor;
    ref.transfer.send = true;  // as the sender posts it
    ref.transfer.microbatch = tr.microbatch;
    ref.transfer.producer_virtual_stage = tr.producer_virtual_stage;
    ref.transfer.peer = receiver;
    ref.bytes = b.bytes;
    ref.inter_node = b.inter_node;
    // The task likewise, in place.
    Task& t = out_.graph.emplace_task();
    t.rank = sender;
    t.stream = Stream::kPipelineComm;
    t.kind = TaskKind::kTransfer;
    t.duration_s = b.duration_s;
    t.payload = payload;
    set_transfer_resources(t.resources, sender, receiver, b.inter_node);
    task = static_cast<std::int32_t>(out_.graph.size() - 1);
  }
  add_edges(cursor, TaskId{static_cast<std::uint32_t>(task)});
  TransferRef& ref = out_.transfers[static_cast<std::size_t>(
      out_.graph.task(TaskId{static_cast<std::uint32_t>(task)}).payload)];
  (tr.send ? ref.sender_post : ref.receiver_post) = posts_[static_cast<std::size_t>(r)]++;
  return task;
}

Status StepBuilder::add_data_dependencies() {
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

void StepBuilder::set_transfer_resources(TaskResources& out, std::int32_t sender,
                                         std::int32_t receiver, bool inter_node) {
  out.links[0] = ResourceRef{sender, inter_node ? ResourceKind::kNicTx : ResourceKind::kNvlinkTx};
  out.links[1] = ResourceRef{receiver, inter_node ? ResourceKind::kNicRx : ResourceKind::kNvlinkRx};
  out.link_count = 2;
}

std::int32_t template_index(std::int32_t stage, std::int32_t chunk, ActionType type,
                            std::int32_t chunks_per_rank) {
  return (stage * chunks_per_rank + chunk) * 2 + (type == ActionType::kForward ? 0 : 1);
}

Result<BuiltStep> build_step(const Workload& w, const WorkloadPlan& plan, const Schedule& schedule,
                             const CostModel& cost, const BuildOptions& options) {
  return StepBuilder(w, plan, schedule, cost, options).build();
}

}  // namespace stepsim::sim
