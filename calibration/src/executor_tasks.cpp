// The per-rank task list of the validator: the simulator's program, flattened.

#include <algorithm>
#include <map>
#include <sstream>
#include <type_traits>
#include <variant>

#include "stepsim/calibration/executor.hpp"
#include "stepsim/core/assert.hpp"

namespace stepsim::calib {

RankLayout layout_of(const Workload& w) {
  return RankLayout{static_cast<std::int32_t>(w.training.tensor_model_parallel_size),
                    static_cast<std::int32_t>(w.training.pipeline_model_parallel_size),
                    static_cast<std::int32_t>(w.training.data_parallel_size)};
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
              break;  // context parallelism: rejected by check_world_size
          }
          return OpCategory::kAllReduce;
        } else {
          return OpCategory::kP2P;
        }
      },
      op.shape);
}

std::string detail_of(const Op& op) {
  std::ostringstream d;
  std::visit(
      [&d](const auto& s) {
        using T = std::decay_t<decltype(s)>;
        if constexpr (std::is_same_v<T, GemmOp>) {
          d << "m=" << s.m << " n=" << s.n << " k=" << s.k;
          if (s.batch != 1) d << " batch=" << s.batch;
          d << ' ' << to_string(s.dtype);
        } else if constexpr (std::is_same_v<T, AttentionOp>) {
          d << "b=" << s.batch << " heads=" << s.heads << " kv_heads=" << s.kv_heads
            << " s=" << s.seq << " d=" << s.head_dim << (s.backward ? " backward " : " ")
            << to_string(s.dtype);
        } else if constexpr (std::is_same_v<T, MemoryBoundOp>) {
          d << "bytes=" << s.bytes;
        } else if constexpr (std::is_same_v<T, CollectiveOp>) {
          d << to_string(s.kind) << ' ' << to_string(s.group) << " x" << s.group_size
            << " bytes=" << s.bytes;
        } else {
          d << "bytes=" << s.bytes;
        }
      },
      op.shape);
  return d.str();
}

sim::SliceKind slice_kind_of(const Op& op) {
  switch (op.stream) {
    case Stream::kTensorComm:
      return sim::SliceKind::kTensorComm;
    case Stream::kPipelineComm:
      return sim::SliceKind::kPipelineComm;
    case Stream::kDataComm:
      return sim::SliceKind::kDataComm;
    case Stream::kContextComm:
      return sim::SliceKind::kContextComm;
    case Stream::kCompute:
      break;
  }
  switch (op.phase) {
    case Phase::kForward:
      return sim::SliceKind::kForward;
    case Phase::kBackwardInput:
      return sim::SliceKind::kBackwardInput;
    case Phase::kBackwardWeight:
      return sim::SliceKind::kBackwardWeight;
    case Phase::kRecompute:
      return sim::SliceKind::kRecompute;
    case Phase::kStep:
      return sim::SliceKind::kOptimizer;
  }
  return sim::SliceKind::kForward;
}

/// The simulator's slice names (sim/src/step_timeline.cpp): "F mb3 c1 L12 qkv_gemm" inside
/// an action (recompute, dgrad and wgrad ops all under "B"), "c0 grad_all_reduce" for a
/// chunk's gradient reduction, the op's name for step ops.
std::string slice_name(const Op& op, std::int32_t microbatch, std::int32_t chunk) {
  std::ostringstream n;
  if (microbatch >= 0) {
    n << (op.phase == Phase::kForward ? "F" : "B") << " mb" << microbatch << " c" << chunk << ' ';
    if (op.layer >= 0) n << 'L' << op.layer << ' ';
  } else if (chunk >= 0) {
    n << 'c' << chunk << ' ';
  }
  n << op.name;
  return n.str();
}

/// "send_act mb3 to stage 1", as the simulator names one transfer.
std::string transfer_name(const sim::Transfer& tr) {
  return std::string(tr.send ? "send_" : "recv_") +
         (tr.tensor == sim::TensorKind::kActivation ? "act" : "grad") + " mb" +
         std::to_string(tr.microbatch) + (tr.send ? " to " : " from ") + "stage " +
         std::to_string(tr.peer);
}

ExecTask op_task(const Op& op, std::int32_t microbatch, std::int32_t chunk) {
  ExecTask t;
  t.kind = ExecTask::Kind::kOp;
  t.op = op;
  t.category = category_of(op);
  t.stream = op.stream;
  t.slice_kind = slice_kind_of(op);
  t.microbatch = microbatch;
  t.chunk = chunk;
  t.layer = op.layer;
  t.name = slice_name(op, microbatch, chunk);
  t.op_name = op.name;
  t.detail = detail_of(op);
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

ExecTask comm_task(const WorkloadPlan& plan, const sim::CommCall& call, std::int32_t p) {
  ExecTask t;
  t.kind = ExecTask::Kind::kComm;
  t.comm = call;
  t.category = OpCategory::kP2P;
  t.stream = Stream::kPipelineComm;
  t.slice_kind = sim::SliceKind::kPipelineComm;
  t.op_name = call.name;
  std::ostringstream detail;
  for (const auto& tr : call.transfers) {
    const std::int64_t bytes = transfer_bytes(plan, tr, p);
    t.transfer_bytes.push_back(bytes);
    t.transfer_names.push_back(transfer_name(tr));
    if (detail.tellp() > 0) detail << "; ";
    detail << (tr.send ? "send " : "recv ")
           << (tr.tensor == sim::TensorKind::kActivation ? "activation" : "gradient") << " mb"
           << tr.microbatch << " vs" << tr.producer_virtual_stage << (tr.send ? " to " : " from ")
           << tr.peer << " bytes=" << bytes;
  }
  if (!call.transfers.empty()) t.microbatch = call.transfers.front().microbatch;
  t.name = call.name;
  t.detail = detail.str();
  return t;
}

void append_grad_sync(const ChunkPlan& chunk, std::vector<ExecTask>& tasks) {
  for (const auto& op : chunk.grad_sync) tasks.push_back(op_task(op, -1, chunk.chunk));
}

}  // namespace

std::vector<ExecTask> build_stage_tasks(const Workload& w, const WorkloadPlan& plan,
                                        const sim::Schedule& schedule, std::int32_t stage) {
  const auto p = static_cast<std::int32_t>(w.training.pipeline_model_parallel_size);
  const auto& program = schedule.ranks.at(static_cast<std::size_t>(stage));
  const auto& stage_plan = plan.stages.at(static_cast<std::size_t>(stage));

  std::vector<ExecTask> tasks;
  for (std::size_t i = 0; i < program.items.size(); ++i) {
    const auto& item = program.items[i];
    if (item.kind == sim::ProgramItem::Kind::kComm) {
      // Megatron's waits on earlier non-blocking calls carry no transfer of their own; the
      // executor completes every call where it is issued (streams serialised).
      if (!item.comm.transfers.empty()) tasks.push_back(comm_task(plan, item.comm, p));
      continue;
    }
    const auto& a = item.action;
    const auto& chunk = stage_plan.chunks.at(static_cast<std::size_t>(a.chunk));
    const auto& ops = a.type == sim::ActionType::kForward ? chunk.forward : chunk.backward;
    for (const auto& op : ops) tasks.push_back(op_task(op, a.microbatch, a.chunk));
  }
  // Gradient reduction after the program, chunk by chunk in model-chunk order, as Megatron's
  // finalize_model_grads and the simulator with serialised streams order it (with one host
  // thread there is nothing for overlap_grad_reduce to overlap with).
  for (const auto& chunk : stage_plan.chunks) append_grad_sync(chunk, tasks);
  for (const auto& op : stage_plan.step_ops) tasks.push_back(op_task(op, -1, -1));
  return tasks;
}

}  // namespace stepsim::calib
