// The idle stretches of each rank's compute stream (idle_spans.hpp).

#include "idle_spans.hpp"

#include <algorithm>
#include <array>

#include "step_timeline.hpp"
#include "stepsim/engine/intervals.hpp"

namespace stepsim::sim {

std::vector<BubbleParts> stage_bubble_parts(const std::vector<StageSummary>& stages,
                                            const ScheduleParams& schedule) {
  std::vector<BubbleParts> out;
  if (stages.empty()) return out;
  const auto heaviest = std::max_element(
      stages.begin(), stages.end(),
      [](const StageSummary& a, const StageSummary& c) { return a.busy_s < c.busy_s; });
  // The schedule's own bubble on equal stages: (p-1) micro-batch slots of forward and
  // backward at the start and end of the step out of m (v*m with virtual stages).
  const double slots = static_cast<double>(schedule.virtual_size) * schedule.microbatches;
  const double per_microbatch_work = heaviest->busy_s - heaviest->optimizer_s;
  const double ideal =
      slots > 0 ? (schedule.pipeline_size - 1) * per_microbatch_work / slots : 0.0;
  for (const StageSummary& s : stages) {
    BubbleParts p;
    double idle = s.bubble_s;
    p.schedule_s = std::min(idle, ideal);
    idle -= p.schedule_s;
    p.imbalance_s = std::min(idle, heaviest->busy_s - s.busy_s);
    p.waits_s = idle - p.imbalance_s;
    out.push_back(p);
  }
  return out;
}

namespace {

using Spans = std::vector<Interval>;
using StreamSpans = std::array<Spans, kStreamCount>;

/// One rank's time, as the stage summaries account it (simulate.cpp account_ranks).
struct RankSpans {
  Spans busy;        ///< its actions and step ops, whole
  Spans kernels;     ///< compute kernels: the compute stream's ops and the step ops
  StreamSpans comm;  ///< communication inside its actions, by stream
  Spans transfers;   ///< its P2P transfers, sent or received
  StreamSpans collectives;  ///< its step-level collectives, by stream
};

void add_action(const BuiltStep& step, const Task& task, const TaskTiming& when,
                const WorkloadPlan& plan, RankSpans& r) {
  const ActionRef& ref = step.actions[static_cast<std::size_t>(task.payload)];
  const std::vector<Op>& ops = action_ops(ref, plan);
  const ChunkTemplate& tmpl = step.templates[static_cast<std::size_t>(ref.template_index)];
  const double stretch = when.stretch(tmpl.duration_s);
  r.busy.push_back({when.start_s, when.end_s});
  for (std::size_t k = 0; k < ops.size(); ++k) {
    const Interval span{when.start_s + tmpl.ops[k].start_s * stretch,
                        when.start_s + tmpl.ops[k].end_s * stretch};
    if (ops[k].stream == Stream::kCompute) {
      r.kernels.push_back(span);
    } else {
      r.comm[static_cast<std::size_t>(ops[k].stream)].push_back(span);
    }
  }
}

std::vector<RankSpans> rank_spans(const BuiltStep& step, const EngineResult& run,
                                  const WorkloadPlan& plan) {
  std::vector<RankSpans> out(plan.stages.size());
  const auto& tasks = step.graph.tasks();
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const Task& task = tasks[i];
    const TaskTiming& when = run.timings[i];
    RankSpans& r = out[static_cast<std::size_t>(task.rank)];
    const Interval span{when.start_s, when.end_s};
    switch (task.kind) {
      case TaskKind::kCompute: add_action(step, task, when, plan, r); break;
      case TaskKind::kStepOp:
        r.busy.push_back(span);
        r.kernels.push_back(span);
        break;
      case TaskKind::kTransfer: {
        const TransferRef& ref = step.transfers[static_cast<std::size_t>(task.payload)];
        r.transfers.push_back(span);
        out[static_cast<std::size_t>(ref.receiver)].transfers.push_back(span);
        break;
      }
      case TaskKind::kCollective:
        r.collectives[static_cast<std::size_t>(task.stream)].push_back(span);
        break;
      case TaskKind::kJoin:
      case TaskKind::kDelay:
      case TaskKind::kHost:
        break;
    }
  }
  for (RankSpans& r : out) {
    for (Spans* s : {&r.busy, &r.kernels, &r.transfers}) merge_intervals(*s);
    for (Spans& s : r.comm) merge_intervals(s);
    for (Spans& s : r.collectives) merge_intervals(s);
  }
  return out;
}

/// The length of `span` that merged `spans` cover.
double overlap(const Spans& spans, const Interval& span) {
  auto it = std::upper_bound(spans.begin(), spans.end(), span.start_s,
                             [](double t, const Interval& s) { return t < s.end_s; });
  double total = 0;
  for (; it != spans.end() && it->start_s < span.end_s; ++it) {
    total += std::min(it->end_s, span.end_s) - std::max(it->start_s, span.start_s);
  }
  return total;
}

/// Each of `pieces` as exposed communication of the stream of `by` that covers most of it.
void add_exposed(std::int32_t rank, const Spans& pieces, const StreamSpans& by,
                 std::vector<IdleSpan>& out) {
  for (const Interval& piece : pieces) {
    std::size_t best = 0;
    double most = -1;
    for (std::size_t k = 0; k < kStreamCount; ++k) {
      const double o = overlap(by[k], piece);
      if (o > most) {
        most = o;
        best = k;
      }
    }
    out.push_back({rank, IdleKind::kExposedComm, static_cast<Stream>(best), piece.start_s,
                   piece.end_s});
  }
}

/// The bubble's stretches labelled with its parts: the schedule's on the stretch from the
/// step's start and the one to its end first, then imbalance, then waits, in time order.
void add_bubble(std::int32_t rank, const Spans& stretches, double step_time_s,
                const BubbleParts& parts, std::vector<IdleSpan>& out) {
  std::vector<Interval> order;
  const double eps = 1e-12 * std::max(1.0, step_time_s);
  for (const Interval& s : stretches) {
    if (s.start_s <= eps) order.push_back(s);
  }
  for (const Interval& s : stretches) {
    if (s.start_s > eps && s.end_s >= step_time_s - eps) order.push_back(s);
  }
  for (const Interval& s : stretches) {
    if (s.start_s > eps && s.end_s < step_time_s - eps) order.push_back(s);
  }
  const std::array<std::pair<IdleKind, double>, 2> budgets{
      {{IdleKind::kScheduleBubble, parts.schedule_s},
       {IdleKind::kStageImbalance, parts.imbalance_s}}};
  std::size_t b = 0;
  double left = budgets[0].second;
  for (const Interval& s : order) {
    double at = s.start_s;
    while (at < s.end_s) {
      while (b < budgets.size() && left <= 0) {
        ++b;
        left = b < budgets.size() ? budgets[b].second : 0;
      }
      const IdleKind kind = b < budgets.size() ? budgets[b].first : IdleKind::kWait;
      const double end = b < budgets.size() ? std::min(s.end_s, at + left) : s.end_s;
      if (end <= at) {  // a budget's rounding crumb, shorter than a tick at `at`
        left = 0;
        continue;
      }
      out.push_back({rank, kind, Stream::kCompute, at, end});
      left -= end - at;
      at = end;
    }
  }
}

}  // namespace

std::vector<IdleSpan> idle_spans(const BuiltStep& step, const EngineResult& run,
                                 const WorkloadPlan& plan, double step_time_s,
                                 const std::vector<BubbleParts>& parts) {
  std::vector<IdleSpan> out;
  const std::vector<RankSpans> ranks = rank_spans(step, run, plan);
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const RankSpans& r = ranks[i];
    const auto rank = static_cast<std::int32_t>(i);
    add_exposed(rank, difference_of(r.busy, r.kernels), r.comm, out);
    StreamSpans p2p;
    p2p[static_cast<std::size_t>(Stream::kPipelineComm)] = r.transfers;
    add_exposed(rank, difference_of(r.transfers, r.busy), p2p, out);
    Spans collectives;
    for (const Spans& s : r.collectives) collectives = union_of(collectives, s);
    const Spans worked = union_of(r.busy, r.transfers);
    add_exposed(rank, difference_of(collectives, worked), r.collectives, out);
    const Spans idle = difference_of({{0.0, step_time_s}}, union_of(worked, collectives));
    add_bubble(rank, idle, step_time_s, i < parts.size() ? parts[i] : BubbleParts{}, out);
  }
  std::stable_sort(out.begin(), out.end(), [](const IdleSpan& a, const IdleSpan& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.start_s < b.start_s;
  });
  return out;
}

}  // namespace stepsim::sim
