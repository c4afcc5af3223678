#include "step_timeline.hpp"

#include <algorithm>
#include <string>

#include "stepsim/graph/op_vocabulary.hpp"

namespace stepsim::sim {

const std::vector<Op>& action_ops(const ActionRef& ref, const WorkloadPlan& plan) {
  const ChunkPlan& chunk = plan.stages[static_cast<std::size_t>(ref.rank)]
                               .chunks[static_cast<std::size_t>(ref.action.chunk)];
  return ref.action.type == ActionType::kForward ? chunk.forward
         : ref.wgrad_deferred                    ? chunk.backward_wgrad_deferred
                                                 : chunk.backward;
}

namespace {

/// The slices of the timeline and, for each, its place in its rank's issue order.
struct Expanded {
  Timeline& out;
  std::vector<std::int64_t>& issue;
};

/// An action's ops, stretched as the action was.
void add_action(const BuiltStep& step, const Task& task, const TaskTiming& when,
                const WorkloadPlan& plan, std::size_t i, Expanded e) {
  const ActionRef& ref = step.actions[static_cast<std::size_t>(task.payload)];
  const std::vector<Op>& ops = action_ops(ref, plan);
  const ChunkTemplate& tmpl = step.templates[static_cast<std::size_t>(ref.template_index)];
  const double stretch = when.stretch(tmpl.duration_s);
  for (std::size_t k = 0; k < ops.size(); ++k) {
    const Op& op = ops[k];
    Slice s;
    s.rank = ref.rank;
    s.stream = op.stream;
    s.kind = slice_kind_of(op);
    s.start_s = when.start_s + tmpl.ops[k].start_s * stretch;
    s.end_s = when.start_s + tmpl.ops[k].end_s * stretch;
    s.microbatch = ref.action.microbatch;
    s.chunk = ref.action.chunk;
    s.layer = op.layer;
    s.name = op_slice_name(op, ref.action.microbatch, ref.action.chunk);
    s.op = op.name;
    s.detail = describe_shape(op.shape);
    s.phase = op.phase;
    e.out.slices.push_back(std::move(s));
    e.issue.push_back(static_cast<std::int64_t>(i));
  }
}

/// One simulated transfer, drawn on both ranks' P2P lanes.
void add_transfer(const BuiltStep& step, const Task& task, const TaskTiming& when,
                  const WorkloadPlan& plan, Expanded e) {
  const TransferRef& ref = step.transfers[static_cast<std::size_t>(task.payload)];
  const Transfer& tr = ref.transfer;
  const auto ranks = static_cast<std::int32_t>(plan.stages.size());
  for (const bool send : {true, false}) {
    Transfer seen = tr;  // as the sender posts it; the receiver's side below
    seen.send = send;
    seen.peer = send ? ref.receiver : ref.sender;
    const SliceIdentity id = transfer_identity(send ? ref.sender : ref.receiver, seen, ranks);
    Slice s;
    s.rank = id.rank;
    s.stream = Stream::kPipelineComm;
    s.kind = SliceKind::kPipelineComm;
    s.start_s = when.start_s;
    s.end_s = when.end_s;
    s.microbatch = id.microbatch;
    s.chunk = id.chunk;
    s.phase = id.phase;
    s.op = id.op;
    s.name = transfer_slice_name(seen);
    s.detail = describe_shape(P2POp{ref.bytes, ref.inter_node});
    e.out.slices.push_back(std::move(s));
    e.issue.push_back(send ? ref.sender_post : ref.receiver_post);
  }
}

/// A collective or a step op.
void add_step_op(const BuiltStep& step, const Task& task, const TaskTiming& when, std::size_t i,
                 Expanded e) {
  const StepOpRef& ref = step.step_ops[static_cast<std::size_t>(task.payload)];
  Slice s;
  s.rank = ref.rank;
  s.stream = task.stream;
  s.kind = slice_kind_of(*ref.op);
  // Step ops are the optimizer's, except the drained output-layer wgrads (a backward phase).
  if (task.kind == TaskKind::kStepOp && ref.op->phase == Phase::kStep) {
    s.kind = SliceKind::kOptimizer;
  }
  s.start_s = when.start_s;
  s.end_s = when.end_s;
  s.chunk = ref.chunk;
  s.layer = ref.op->layer;  // per-layer step ops: FP8 weight casts
  s.op = ref.op->name;
  s.phase = ref.op->phase;
  s.name = op_slice_name(*ref.op, -1, ref.chunk, ref.bucket);
  s.detail = describe_shape(ref.op->shape);
  e.out.slices.push_back(std::move(s));
  e.issue.push_back(static_cast<std::int64_t>(i));
}

/// The slices by (start, rank, stream), then in the order their rank issued them.
void sort_slices(const std::vector<std::int64_t>& issue, Timeline& out) {
  std::vector<std::size_t> order(out.slices.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t ia, std::size_t ib) {
    const Slice& a = out.slices[ia];
    const Slice& b = out.slices[ib];
    if (a.start_s != b.start_s) return a.start_s < b.start_s;
    if (a.rank != b.rank) return a.rank < b.rank;
    if (a.stream != b.stream) return a.stream < b.stream;
    return issue[ia] < issue[ib];
  });
  std::vector<Slice> sorted;
  sorted.reserve(order.size());
  for (const std::size_t i : order) sorted.push_back(std::move(out.slices[i]));
  out.slices = std::move(sorted);
}

}  // namespace

void expand_slices(const BuiltStep& step, const EngineResult& run, const WorkloadPlan& plan,
                   Timeline& out) {
  const auto& tasks = step.graph.tasks();
  // Slices starting together on one lane keep the order their rank issued them in: the
  // transfers of one batched call by the rank's post order, everything else by task order.
  std::vector<std::int64_t> issue;
  const Expanded e{.out = out, .issue = issue};
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const Task& task = tasks[i];
    const TaskTiming& when = run.timings[i];
    if (task.kind == TaskKind::kCompute) {
      add_action(step, task, when, plan, i, e);
    } else if (task.kind == TaskKind::kTransfer) {
      add_transfer(step, task, when, plan, e);
    } else if (task.kind == TaskKind::kCollective || task.kind == TaskKind::kStepOp) {
      add_step_op(step, task, when, i, e);
    }
  }
  sort_slices(issue, out);
}

}  // namespace stepsim::sim
