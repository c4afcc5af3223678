#include "step_timeline.hpp"

#include <algorithm>
#include <cstdio>
#include <string>

namespace stepsim::sim {

namespace {

std::string bytes_text(std::int64_t bytes) {
  char buf[48];
  const double b = static_cast<double>(bytes);
  if (b >= 1024.0 * 1024.0) {
    std::snprintf(buf, sizeof buf, "%.1f MiB", b / (1024.0 * 1024.0));
  } else if (b >= 1024.0) {
    std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024.0);
  } else {
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(bytes));
  }
  return buf;
}

SliceKind kind_of(const Op& op) {
  switch (op.stream) {
    case Stream::kTensorComm: return SliceKind::kTensorComm;
    case Stream::kPipelineComm: return SliceKind::kPipelineComm;
    case Stream::kDataComm: return SliceKind::kDataComm;
    case Stream::kContextComm: return SliceKind::kContextComm;
    case Stream::kCompute: break;
  }
  if (std::holds_alternative<CollectiveOp>(op.shape)) {
    return std::get<CollectiveOp>(op.shape).group == CommGroup::kTensor ? SliceKind::kTensorComm
                                                                         : SliceKind::kDataComm;
  }
  switch (op.phase) {
    case Phase::kForward: return SliceKind::kForward;
    case Phase::kBackwardInput: return SliceKind::kBackwardInput;
    case Phase::kBackwardWeight: return SliceKind::kBackwardWeight;
    case Phase::kRecompute: return SliceKind::kRecompute;
    case Phase::kStep: return SliceKind::kOptimizer;
  }
  return SliceKind::kForward;
}

std::string action_prefix(const Action& a) {
  return std::string(a.type == ActionType::kForward ? "F" : "B") + " mb" +
         std::to_string(a.microbatch) + " c" + std::to_string(a.chunk);
}

}  // namespace

std::string describe_shape(const OpShape& shape) {
  return std::visit(
      [](const auto& s) -> std::string {
        using T = std::decay_t<decltype(s)>;
        if constexpr (std::is_same_v<T, GemmOp>) {
          std::string out = "m=" + std::to_string(s.m) + " n=" + std::to_string(s.n) +
                            " k=" + std::to_string(s.k);
          if (s.batch != 1) out += " batch=" + std::to_string(s.batch);
          return out + " " + std::string(to_string(s.dtype));
        } else if constexpr (std::is_same_v<T, AttentionOp>) {
          return "flash b=" + std::to_string(s.batch) + " heads=" + std::to_string(s.heads) +
                 " kv=" + std::to_string(s.kv_heads) + " s=" + std::to_string(s.seq) +
                 (s.seq_kv > 0 ? " s_kv=" + std::to_string(s.seq_kv) : std::string()) +
                 (s.causal ? "" : " full") +
                 " d=" + std::to_string(s.head_dim) + (s.backward ? " bwd" : " fwd");
        } else if constexpr (std::is_same_v<T, MemoryBoundOp>) {
          return bytes_text(s.bytes) + " moved";
        } else if constexpr (std::is_same_v<T, CollectiveOp>) {
          return std::string(to_string(s.kind)) + " " + std::string(to_string(s.group)) + " x" +
                 std::to_string(s.group_size) + " " + bytes_text(s.bytes) +
                 (s.nodes_spanned > 1 ? " across " + std::to_string(s.nodes_spanned) + " nodes"
                                      : "");
        } else {
          return bytes_text(s.bytes) + (s.inter_node ? " inter-node" : " intra-node");
        }
      },
      shape);
}

void expand_slices(const BuiltStep& step, const EngineResult& run, const WorkloadPlan& plan,
                   Timeline& out) {
  const auto& tasks = step.graph.tasks();
  // Slices starting together on one lane keep the order their rank issued them in: the
  // transfers of one batched call by the rank's post order, everything else by task order.
  std::vector<std::int64_t> issue;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const Task& task = tasks[i];
    const TaskTiming& when = run.timings[i];
    if (task.kind == TaskKind::kCompute) {
      const ActionRef& ref = step.actions[static_cast<std::size_t>(task.payload)];
      const ChunkPlan& chunk = plan.stages[static_cast<std::size_t>(ref.rank)]
                                   .chunks[static_cast<std::size_t>(ref.action.chunk)];
      const auto& ops = ref.action.type == ActionType::kForward ? chunk.forward : chunk.backward;
      const ChunkTemplate& tmpl = step.templates[static_cast<std::size_t>(ref.template_index)];
      const std::string prefix = action_prefix(ref.action);
      for (std::size_t k = 0; k < ops.size(); ++k) {
        const Op& op = ops[k];
        Slice s;
        s.rank = ref.rank;
        s.stream = op.stream;
        s.kind = kind_of(op);
        s.start_s = when.start_s + tmpl.ops[k].start_s;
        s.end_s = when.start_s + tmpl.ops[k].end_s;
        s.microbatch = ref.action.microbatch;
        s.chunk = ref.action.chunk;
        s.layer = op.layer;
        s.name = prefix + (op.layer >= 0 ? " L" + std::to_string(op.layer) : "") + " " + op.name;
        s.op = op.name;
        s.detail = describe_shape(op.shape);
        s.phase = op.phase;
        out.slices.push_back(std::move(s));
        issue.push_back(static_cast<std::int64_t>(i));
      }
    } else if (task.kind == TaskKind::kTransfer) {
      // One simulated transfer, drawn on both ranks' P2P lanes.
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
        s.name = s.op + " mb" + std::to_string(tr.microbatch) + (send ? " to " : " from ") +
                 "stage " + std::to_string(send ? ref.receiver : ref.sender);
        s.detail = describe_shape(P2POp{ref.bytes, ref.inter_node});
        out.slices.push_back(std::move(s));
        issue.push_back(send ? ref.sender_post : ref.receiver_post);
      }
    } else if (task.kind == TaskKind::kCollective || task.kind == TaskKind::kStepOp) {
      const StepOpRef& ref = step.step_ops[static_cast<std::size_t>(task.payload)];
      Slice s;
      s.rank = ref.rank;
      s.stream = task.stream;
      s.kind = kind_of(*ref.op);
      if (task.kind == TaskKind::kStepOp) s.kind = SliceKind::kOptimizer;
      s.start_s = when.start_s;
      s.end_s = when.end_s;
      s.chunk = ref.chunk;
      s.op = ref.op->name;
      s.phase = ref.op->phase;
      s.name = (ref.chunk >= 0 ? "c" + std::to_string(ref.chunk) + " " : std::string()) +
               (ref.bucket >= 0 ? "b" + std::to_string(ref.bucket) + " " : std::string()) +
               ref.op->name;
      s.detail = describe_shape(ref.op->shape);
      out.slices.push_back(std::move(s));
      issue.push_back(static_cast<std::int64_t>(i));
    }
  }
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

}  // namespace stepsim::sim
