// What a Measurement says once taken: rounds appended, the median step, and that step as a
// timeline of the simulator's vocabulary (for the trace and the comparison).

#include <algorithm>
#include <limits>
#include <utility>

#include "stepsim/validator/executor.hpp"
#include "stepsim/base/assert.hpp"

namespace stepsim::calib {

void append_steps(Measurement& m, Measurement later) {
  if (m.stage_tasks.empty()) {
    m = std::move(later);
    return;
  }
  STEPSIM_ASSERT(m.layout == later.layout && m.stage_tasks.size() == later.stage_tasks.size());
  for (auto& step : later.steps) m.steps.push_back(std::move(step));
  m.step_times_s.insert(m.step_times_s.end(), later.step_times_s.begin(), later.step_times_s.end());
  m.unfinished_step = std::move(later.unfinished_step);
  m.complete = later.complete;
  m.failure = std::move(later.failure);
}

std::size_t median_step(const Measurement& m) {
  STEPSIM_ASSERT(!m.step_times_s.empty());
  std::vector<std::size_t> order(m.step_times_s.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&m](std::size_t a, std::size_t b) {
    return m.step_times_s[a] < m.step_times_s[b];
  });
  return order[(order.size() - 1) / 2];
}

sim::Timeline measured_timeline(const Measurement& m, std::size_t step) {
  sim::Timeline t;
  t.label = "measured";
  t.ranks = m.layout.pp;
  t.memory.resize(static_cast<std::size_t>(m.layout.pp));
  const auto& timings = m.steps.at(step);
  double t0 = std::numeric_limits<double>::max();
  for (const auto& rank : timings) {
    for (const auto& x : rank) t0 = std::min(t0, x.start_s);
  }
  t.step_time_s = m.step_times_s.at(step);
  const std::vector<std::vector<double>> ready_at = peers_ready(m, step);
  for (std::int32_t s = 0; s < m.layout.pp; ++s) {
    const auto& tasks = m.stage_tasks[static_cast<std::size_t>(s)];
    const auto& rank = timings.at(static_cast<std::size_t>(m.layout.global_rank(s, 0, 0)));
    const auto& ready_of = ready_at[static_cast<std::size_t>(s)];
    for (std::size_t i = 0; i < tasks.size() && i < rank.size(); ++i) {
      const auto& task = tasks[i];
      const double start = rank[i].start_s - t0;
      const double end = rank[i].end_s - t0;
      const double ready = ready_of[i] - t0;
      // Waiting for the last peer, on the track of the communication that follows it.
      const auto wait = [&](const sim::Slice& comm) {
        if (ready <= start) return;
        sim::Slice w = comm;
        w.kind = sim::SliceKind::kWait;
        w.start_s = start;
        w.end_s = ready;
        w.name = "wait: " + comm.name;
        w.detail = "for the last peer";
        t.slices.push_back(std::move(w));
      };
      if (task.kind == ExecTask::Kind::kOp) {
        // Only a collective waits (peers_ready gives any other op its own start).
        sim::Slice slice{.rank = s,
                         .stream = task.stream,
                         .kind = task.slice_kind,
                         .start_s = ready,
                         .end_s = end,
                         .microbatch = task.microbatch,
                         .chunk = task.chunk,
                         .layer = task.layer,
                         .name = task.name,
                         .op = task.op_name,
                         .detail = task.detail,
                         .phase = task.op.phase};
        wait(slice);
        t.slices.push_back(std::move(slice));
        continue;
      }
      // One slice per transfer, as the simulator draws them; all span the batched call from
      // the moment its last peer had posted.
      for (std::size_t k = 0; k < task.transfers.size(); ++k) {
        const sim::SliceIdentity id = sim::transfer_identity(s, task.transfers[k], m.layout.pp);
        sim::Slice slice{
            .rank = s,
            .stream = Stream::kPipelineComm,
            .kind = sim::SliceKind::kPipelineComm,
            .start_s = ready,
            .end_s = end,
            .microbatch = id.microbatch,
            .chunk = id.chunk,
            .layer = id.layer,
            .name = task.transfer_names[k],
            .op = id.op,
            .detail = task.op_name + " bytes=" + std::to_string(task.transfer_bytes[k]),
            .phase = id.phase};
        if (k == 0) wait(slice);
        t.slices.push_back(std::move(slice));
      }
    }
  }
  std::stable_sort(t.slices.begin(), t.slices.end(), [](const sim::Slice& a, const sim::Slice& b) {
    if (a.start_s != b.start_s) return a.start_s < b.start_s;
    if (a.rank != b.rank) return a.rank < b.rank;
    return a.stream < b.stream;
  });
  return t;
}

}  // namespace stepsim::calib
