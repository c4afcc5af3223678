#include "step_memory.hpp"

#include <algorithm>

namespace stepsim::sim {

namespace {

struct MemoryEvent {
  double time_s;
  std::int64_t delta;
  std::uint32_t seq;
};

}  // namespace

StepMemory simulate_memory(const BuiltStep& step, const EngineResult& run,
                           const WorkloadPlan& plan, bool keep_curves) {
  const std::size_t ranks = plan.stages.size();
  std::vector<std::vector<MemoryEvent>> events(ranks);
  std::uint32_t seq = 0;
  const auto& tasks = step.graph.tasks();
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const Task& task = tasks[i];
    if (task.kind == TaskKind::kStepOp) {
      // A deferred output-layer wgrad of the drain frees its micro-batch's buffers.
      const StepOpRef& op = step.step_ops[static_cast<std::size_t>(task.payload)];
      // The optimizer's fp32 copy of bf16 gradients, held to the end of the step.
      if (op.op->held_bytes > 0) {
        events[static_cast<std::size_t>(op.rank)].push_back(
            {run.timings[i].start_s, op.op->held_bytes, seq++});
      }
      if (op.frees_bytes > 0) {
        events[static_cast<std::size_t>(op.rank)].push_back(
            {run.timings[i].end_s, -op.frees_bytes, seq++});
      }
      continue;
    }
    if (task.kind != TaskKind::kCompute) continue;
    const ActionRef& ref = step.actions[static_cast<std::size_t>(task.payload)];
    const ChunkPlan& chunk = plan.stages[static_cast<std::size_t>(ref.rank)]
                                 .chunks[static_cast<std::size_t>(ref.action.chunk)];
    const TaskTiming& when = run.timings[i];
    // Pushed in time order (a rank's actions run one after another): start, workspaces, end.
    auto& ev = events[static_cast<std::size_t>(ref.rank)];
    const bool forward = ref.action.type == ActionType::kForward;
    if (!forward) ev.push_back({when.start_s, chunk.recompute_activation_bytes, seq++});
    const ChunkTemplate& tmpl = step.templates[static_cast<std::size_t>(ref.template_index)];
    const double stretch = when.stretch(tmpl.duration_s);
    for (const auto& [op, bytes] : tmpl.workspace_ops) {
      const OpTiming& at = tmpl.ops[static_cast<std::size_t>(op)];
      ev.push_back({when.start_s + at.start_s * stretch, bytes, seq++});
      ev.push_back({when.start_s + at.end_s * stretch, -bytes, seq++});
    }
    if (ref.wgrad_deferred) ev.push_back({when.end_s, chunk.deferred_wgrad_bytes, seq++});
    ev.push_back(forward ? MemoryEvent{when.end_s, chunk.stored_activation_bytes, seq++}
                         : MemoryEvent{when.end_s,
                                       -(chunk.stored_activation_bytes +
                                         chunk.recompute_activation_bytes),
                                       seq++});
  }
  StepMemory out;
  out.peak_bytes.resize(ranks);
  if (keep_curves) out.curves.resize(ranks);
  for (std::size_t r = 0; r < ranks; ++r) {
    auto& ev = events[r];
    // At equal times, frees come first: a buffer released as the next one is allocated is
    // not held twice.
    const auto before = [](const MemoryEvent& a, const MemoryEvent& b) {
      if (a.time_s != b.time_s) return a.time_s < b.time_s;
      if ((a.delta < 0) != (b.delta < 0)) return a.delta < 0;
      return a.seq < b.seq;
    };
    if (!std::is_sorted(ev.begin(), ev.end(), before)) std::sort(ev.begin(), ev.end(), before);
    std::int64_t in_use = plan.stages[r].static_bytes;
    std::int64_t peak = in_use;
    if (keep_curves) out.curves[r].push_back({0.0, in_use});
    for (const MemoryEvent& e : ev) {
      in_use += e.delta;
      peak = std::max(peak, in_use);
      if (keep_curves) {
        auto& curve = out.curves[r];
        if (!curve.empty() && curve.back().time_s == e.time_s) {
          curve.back().bytes = in_use;
        } else {
          curve.push_back({e.time_s, in_use});
        }
      }
    }
    out.peak_bytes[r] = peak;
  }
  return out;
}

}  // namespace stepsim::sim
