// The step builder's step work (step_builder.hpp): Megatron's DDP buckets and when they
// become ready, the parameter all-gather and its dispatch, each stage's gradient collectives
// and optimizer ops, and the collectives every stage meets in (tied embeddings, grad stats).

#include <algorithm>
#include <cmath>
#include <string>

#include "step_builder.hpp"
#include "stepsim/base/assert.hpp"
#include "stepsim/cost/spread.hpp"

namespace stepsim::sim {

const Op* StepBuilder::param_gather_op(std::int32_t r) const {
  // Apex DistributedFusedAdam gathers per chunk (ChunkPlan::param_gather), the first
  // chunk's group inside the step (its step ops).
  if (w_.training.optimizer_impl == OptimizerImpl::kApexDistributedFusedAdam) return nullptr;
  for (const Op& op : plan_.stages[static_cast<std::size_t>(r)].step_ops) {
    const auto* coll = std::get_if<CollectiveOp>(&op.shape);
    if (coll != nullptr && coll->kind == CollectiveKind::kAllGather &&
        coll->group == CommGroup::kData) {
      return &op;
    }
  }
  return nullptr;
}

bool StepBuilder::param_gather_overlapped(std::int32_t r) const {
  const TrainingConfig& t = w_.training;
  if (t.optimizer_impl == OptimizerImpl::kApexDistributedFusedAdam) {
    return t.overlap_param_gather && !options_.serialize_streams;
  }
  return t.overlap_param_gather && t.use_distributed_optimizer && !options_.serialize_streams &&
         param_gather_op(r) != nullptr;
}

StepBuilder::ParamGather StepBuilder::plan_param_gather(const RankProgram& program) {
  ParamGather g;
  const std::int32_t r = program.rank;
  if (!param_gather_overlapped(r)) return g;
  g.on = true;
  // Apex DistributedFusedAdam under NeMo: Megatron-Core's param_sync_func (MS 664-666,
  // 719-729) starts each chunk's group, as with align_param_gather.
  g.aligned = v_ > 1 && (w_.training.align_param_gather ||
                         w_.training.optimizer_impl == OptimizerImpl::kApexDistributedFusedAdam);
  g.op = param_gather_op(r);
  std::vector<std::int32_t> chunk_of_forward;
  for (const Action& a : program.actions) {
    if (a.type == ActionType::kForward) chunk_of_forward.push_back(a.chunk);
  }
  const std::size_t n = chunk_of_forward.size();
  g.first_forward.assign(static_cast<std::size_t>(v_), n);
  for (std::size_t k = n; k-- > 0;)
    g.first_forward[static_cast<std::size_t>(chunk_of_forward[k])] = k;
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

std::int32_t StepBuilder::dispatch_param_gather(std::int32_t r, std::int32_t c,
                                                const std::vector<std::int32_t>& cursor,
                                                ParamGather& g) {
  std::int32_t& done = g.done[static_cast<std::size_t>(c)];
  if (done != kNoTask) return done;
  const auto ri = static_cast<std::size_t>(r);
  const StagePlan& stage = plan_.stages[ri];
  const ChunkPlan& chunk = stage.chunks[static_cast<std::size_t>(c)];
  // A model chunk without parameters (an empty stage of an uneven layout) has no buckets.
  if (chunk.parameters == 0) return kNoTask;
  if (g.op == nullptr) {
    // Apex DistributedFusedAdam: the chunk's group, its buckets in order (none for the first
    // chunk, gathered inside the step before).
    for (std::size_t b = 0; b < chunk.param_gather.size(); ++b) {
      done = static_cast<std::int32_t>(
          enqueue_gather(r, c, chunk.param_gather[b], static_cast<std::int32_t>(b), cursor).value);
    }
    return done;
  }
  // The chunk's share of the stage's gather, then cut into its buckets.
  Op& chunk_op = out_.bucket_ops.emplace_back(*g.op);
  auto& coll = std::get<CollectiveOp>(chunk_op.shape);
  coll.bytes =
      stage.parameters > 0 ? scaled_share(coll.bytes, chunk.parameters, stage.parameters) : 0;
  const std::vector<DdpBucket>& buckets = buckets_of(r, c);
  std::vector<std::size_t> order(buckets.size());
  for (std::size_t b = 0; b < order.size(); ++b) order[b] = b;
  if (!g.aligned) std::reverse(order.begin(), order.end());
  const ChunkTemplate& tmpl =
      out_.templates[static_cast<std::size_t>(template_index(r, c, ActionType::kForward, v_))];
  double end = 0, start_after = 0;
  std::int32_t last = kNoTask;
  for (const std::size_t b : order) {
    const Op& op =
        buckets.size() > 1 ? bucket_op(chunk_op, chunk.parameters, buckets, b) : chunk_op;
    const TaskId id =
        enqueue_gather(r, c, op, buckets.size() > 1 ? static_cast<std::int32_t>(b) : -1, cursor);
    last = static_cast<std::int32_t>(id.value);
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

TaskId StepBuilder::enqueue_gather(std::int32_t r, std::int32_t c, const Op& op,
                                   std::int32_t bucket, const std::vector<std::int32_t>& cursor) {
  const TaskId id = add_op_task(r, c, op, bucket);
  add_edges(cursor, id);
  // The host launches each bucket's all-gather (start_param_sync), in dispatch order.
  // (Under a full_iteration graph the pre-hook's launches replay inside it.)
  if (const std::int32_t issued = full_iteration_graph()
                                      ? kNoTask
                                      : issue_on_host(r, 1, host_ ? host_->op_issue_s : 0);
      issued != kNoTask) {
    out_.graph.add_edge(TaskId{static_cast<std::uint32_t>(issued)}, id);
  }
  std::int32_t& prev = dp_stream_last_[static_cast<std::size_t>(r)];
  if (prev != kNoTask) out_.graph.add_edge(TaskId{static_cast<std::uint32_t>(prev)}, id);
  prev = static_cast<std::int32_t>(id.value);
  return id;
}

double StepBuilder::replica_wait(std::int32_t r, const Op& op) {
  const auto* coll = std::get_if<CollectiveOp>(&op.shape);
  double& variance = replica_variance_[static_cast<std::size_t>(r)];
  if (coll == nullptr || variance <= 0 || !options_.replica_waits) return 0.0;
  const double wait = sync_wait_s(coll->group_size, std::sqrt(variance));
  variance = 0;  // the reduction synchronises the replicas
  return wait;
}

TaskId StepBuilder::add_op_task(std::int32_t r, std::int32_t chunk, const Op& op,
                                std::int32_t bucket, bool own_stream, double wait_s) {
  const auto payload = static_cast<std::int32_t>(out_.step_ops.size());
  out_.step_ops.push_back(StepOpRef{.rank = r, .chunk = chunk, .bucket = bucket, .op = &op});
  const auto* coll = std::get_if<CollectiveOp>(&op.shape);
  const Stream stream = options_.serialize_streams && !own_stream ? Stream::kCompute : op.stream;
  const double seconds =
      (coll != nullptr ? cost_.op_s(op) : scale_of(r) * cost_.op_s(op)) + wait_s;
  return add(Task{.rank = r,
                  .stream = stream,
                  .kind = coll != nullptr ? TaskKind::kCollective : TaskKind::kStepOp,
                  .duration_s = seconds,
                  .payload = payload,
                  .resources = coll != nullptr ? collective_resources(r, *coll)
                                               : TaskResources{.compute_gpu = r}});
}

TaskResources StepBuilder::collective_resources(std::int32_t r, const CollectiveOp& op) {
  TaskResources out;
  const bool nic = op.nodes_spanned > 1;
  out.links[0] = ResourceRef{r, nic ? ResourceKind::kNicTx : ResourceKind::kNvlinkTx};
  out.links[1] = ResourceRef{r, nic ? ResourceKind::kNicRx : ResourceKind::kNvlinkRx};
  out.link_count = 2;
  if (op.nccl) out.nccl_gpu = r;
  return out;
}

Status StepBuilder::make_buckets() {
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

Status StepBuilder::add_step_work(std::int32_t r, std::int32_t end_of_program) {
  const auto ri = static_cast<std::size_t>(r);
  const StagePlan& stage = plan_.stages[ri];
  const bool overlap = grad_reduce_overlapped();
  const std::vector<GradSyncLaunch>& launches = grad_launches_[ri];  // add_program's
  std::int32_t stream_prev = dp_stream_last_[ri];  // after the parameter gathers
  for (std::size_t li = 0; li < launches.size(); ++li) {
    const GradSyncLaunch& l = launches[li];
    const ChunkPlan& chunk = stage.chunks[static_cast<std::size_t>(l.chunk)];
    if (chunk.grad_sync.empty()) continue;
    const std::vector<DdpBucket>& chunk_buckets = buckets_of(r, l.chunk);
    const auto b = static_cast<std::size_t>(l.bucket);
    const std::int32_t gate = l.after_op >= 0 ? bucket_ready(r, l.chunk, chunk_buckets[b])
                              : l.backward >= 0
                                  ? backward_tasks_[ri][static_cast<std::size_t>(l.backward)]
                                  : end_of_program;
    // Launched from the host: inside its backward (add_program), or here after the program
    // (finish_grad_sync), one launch per collective.
    std::int32_t launch = host_ != nullptr ? grad_launch_issued_[ri][li] : kNoTask;
    for (const Op& op : chunk.grad_sync) {
      const Op* what = &op;
      if (chunk_buckets.size() > 1) what = &bucket_op(op, chunk.parameters, chunk_buckets, b);
      const TaskId id = add_op_task(r, l.chunk, *what, chunk_buckets.size() > 1 ? l.bucket : -1,
                                    overlap, replica_wait(r, *what));
      if (gate != kNoTask) out_.graph.add_edge(TaskId{static_cast<std::uint32_t>(gate)}, id);
      // finalize_model_grads runs inside forward_backward_func: in a full_iteration graph.
      if (host_ != nullptr && !full_iteration_graph()) {
        if (l.backward < 0 || launch == kNoTask) {
          launch = issue_on_host(r, 1, host_->op_issue_s);
        } else if (&op != &chunk.grad_sync.front()) {
          ++launch;  // issue_grad_launches: one host task per collective, in order
        }
        STEPSIM_ASSERT(out_.graph.task(TaskId{static_cast<std::uint32_t>(launch)}).kind ==
                       TaskKind::kHost);
        out_.graph.add_edge(TaskId{static_cast<std::uint32_t>(launch)}, id);
      }
      if (stream_prev != kNoTask && stream_prev != gate) {
        out_.graph.add_edge(TaskId{static_cast<std::uint32_t>(stream_prev)}, id);
      }
      stream_prev = static_cast<std::int32_t>(id.value);
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

std::int32_t StepBuilder::bucket_ready(std::int32_t r, std::int32_t c, const DdpBucket& bucket) {
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

const Op& StepBuilder::bucket_op(const Op& op, std::int64_t parameters,
                                 const std::vector<DdpBucket>& buckets, std::size_t b) {
  Op& out = out_.bucket_ops.emplace_back(op);
  auto* coll = std::get_if<CollectiveOp>(&out.shape);
  STEPSIM_ASSERT(coll != nullptr && parameters > 0);
  coll->bytes = bucket_bytes(coll->bytes, buckets, b, parameters);
  return out;
}

Status StepBuilder::match_embedding_group() {
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

Status StepBuilder::match_grad_stats_group() {
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

}  // namespace stepsim::sim
