#include "critical_chain.hpp"

#include <algorithm>
#include <string>

// The engine's critical chain read back into the step's words.

namespace stepsim::sim {

namespace {

std::string action_label(const Action& a) {
  return std::string(a.type == ActionType::kForward ? "F" : "B") + " mb" +
         std::to_string(a.microbatch) + " c" + std::to_string(a.chunk);
}

const char* chain_kind(TaskKind kind) {
  switch (kind) {
    case TaskKind::kCompute: return "compute";
    case TaskKind::kTransfer: return "p2p";
    case TaskKind::kCollective: return "dp_comm";
    case TaskKind::kStepOp: return "optimizer";
    case TaskKind::kDelay: return "wait";
    case TaskKind::kHost:
      return "host";
    case TaskKind::kJoin: break;
  }
  return "";
}

std::string chain_label(const BuiltStep& step, const Task& task) {
  switch (task.kind) {
    case TaskKind::kCompute:
      return action_label(step.actions[static_cast<std::size_t>(task.payload)].action);
    case TaskKind::kTransfer: {
      const TransferRef& ref = step.transfers[static_cast<std::size_t>(task.payload)];
      return std::string(ref.transfer.tensor == TensorKind::kActivation ? "act" : "grad") +
             " mb" + std::to_string(ref.transfer.microbatch) + " stage " +
             std::to_string(ref.sender) + ">" + std::to_string(ref.receiver);
    }
    case TaskKind::kCollective:
    case TaskKind::kStepOp: {
      const StepOpRef& ref = step.step_ops[static_cast<std::size_t>(task.payload)];
      return (ref.chunk >= 0 ? "c" + std::to_string(ref.chunk) + " " : std::string()) +
             (ref.bucket >= 0 ? "b" + std::to_string(ref.bucket) + " " : std::string()) +
             ref.op->name;
    }
    case TaskKind::kDelay: return "delay";
    case TaskKind::kHost:
      return "host";
    case TaskKind::kJoin: break;
  }
  return "";
}

/// The engine's critical chain: from the task that ended last back through the
/// predecessors that released each task, returned first to last.
std::vector<std::uint32_t> chain_tasks(const EngineResult& run) {
  std::vector<std::uint32_t> chain;
  for (std::uint32_t u = run.last_task; u != TaskTiming::kNone; u = run.timings[u].critical_pred) {
    chain.push_back(u);
  }
  std::reverse(chain.begin(), chain.end());
  return chain;
}

}  // namespace

/// The chain's tasks that show on the timeline (not joins or delays, not zero-length), as
/// trace links.
std::vector<ChainLink> chain_links(const BuiltStep& step, const EngineResult& run) {
  std::vector<ChainLink> links;
  for (const std::uint32_t u : chain_tasks(run)) {
    const Task& task = step.graph.tasks()[u];
    const TaskTiming& t = run.timings[u];
    if (task.kind == TaskKind::kJoin || task.kind == TaskKind::kDelay ||
        task.kind == TaskKind::kHost || !(t.end_s > t.start_s)) {
      continue;
    }
    links.push_back(ChainLink{.rank = task.rank, .stream = task.stream, .start_s = t.start_s,
                              .end_s = t.end_s});
  }
  return links;
}

CriticalChain walk_critical_chain(const BuiltStep& step, const EngineResult& run) {
  CriticalChain out;
  const std::vector<std::uint32_t> chain = chain_tasks(run);
  out.tasks = static_cast<std::int64_t>(chain.size());
  struct Span {
    std::uint32_t first, last;
    std::int64_t tasks;
  };
  std::vector<Span> spans;  // consecutive chain tasks of one kind on one rank
  const auto& tasks = step.graph.tasks();
  for (const std::uint32_t u : chain) {
    const Task& task = tasks[u];
    const double d = run.timings[u].end_s - run.timings[u].start_s;
    switch (task.kind) {
      case TaskKind::kCompute: {
        const ActionRef& ref = step.actions[static_cast<std::size_t>(task.payload)];
        const ChunkTemplate& t = step.templates[static_cast<std::size_t>(ref.template_index)];
        const double busy = t.compute_busy_s * run.timings[u].stretch(t.duration_s);
        out.compute_s += busy;
        out.tp_comm_s += std::max(0.0, d - busy);
        break;
      }
      case TaskKind::kTransfer: out.p2p_s += d; break;
      case TaskKind::kCollective: out.dp_comm_s += d; break;
      case TaskKind::kStepOp:
        (step.step_ops[static_cast<std::size_t>(task.payload)].op->phase == Phase::kStep
             ? out.optimizer_s
             : out.compute_s) += d;
        break;
      case TaskKind::kDelay: out.wait_s += d; break;
      case TaskKind::kHost:
        out.host_s += d;
        break;
      case TaskKind::kJoin: continue;
    }
    if (!spans.empty()) {
      const Task& prev = tasks[spans.back().last];
      if (prev.rank == task.rank && prev.kind == task.kind) {
        spans.back().last = u;
        ++spans.back().tasks;
        continue;
      }
    }
    spans.push_back(Span{u, u, 1});
  }
  const auto length = [&](const Span& s) {
    return run.timings[s.last].end_s - run.timings[s.first].start_s;
  };
  // Longest first; ties in chain order (stable), so the output is deterministic.
  std::stable_sort(spans.begin(), spans.end(),
                   [&](const Span& a, const Span& b) { return length(a) > length(b); });
  if (spans.size() > 5) spans.resize(5);
  for (const Span& span : spans) {
    const Task& first = tasks[span.first];
    std::string what = chain_label(step, first);
    if (span.last != span.first) what += " .. " + chain_label(step, tasks[span.last]);
    out.longest.push_back(ChainSegment{.rank = first.rank,
                                       .kind = chain_kind(first.kind),
                                       .what = std::move(what),
                                       .tasks = span.tasks,
                                       .start_s = run.timings[span.first].start_s,
                                       .end_s = run.timings[span.last].end_s});
  }
  return out;
}

}  // namespace stepsim::sim
