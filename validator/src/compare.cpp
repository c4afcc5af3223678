// Predicted vs measured timelines: step time, per-stage figures, per-op-kind errors.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <tuple>
#include <utility>

#include "stepsim/validator/validate.hpp"

namespace stepsim::calib {

sim::SimulateOptions validation_simulate_options(bool async_p2p, bool async_grad_reduce) {
  sim::SimulateOptions o;
  o.keep_timeline = true;
  o.serialize_streams = true;
  o.async_p2p = async_p2p;
  o.async_grad_reduce = async_grad_reduce;
  return o;
}

double relative_error(double predicted, double measured) {
  if (measured == 0) return predicted == 0 ? 0.0 : 1.0;
  return (predicted - measured) / measured;
}

namespace {

using Interval = std::pair<double, double>;

/// Total length of the union of `v` (sorted in place).
double union_length(std::vector<Interval>& v) {
  std::sort(v.begin(), v.end());
  double total = 0;
  double cur_start = 0;
  double cur_end = -1;
  bool open = false;
  for (const auto& [s, e] : v) {
    if (!open || s > cur_end) {
      if (open) total += cur_end - cur_start;
      cur_start = s;
      cur_end = e;
      open = true;
    } else {
      cur_end = std::max(cur_end, e);
    }
  }
  if (open) total += cur_end - cur_start;
  return total;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The simulator puts serialised per-step work on the compute stream, so the stream is not
// part of a slice's identity (sim::SliceIdentity); names are for people, never matched.
using SliceKey = sim::SliceIdentity;

}  // namespace

double backend_step_s(const std::vector<ExecTask>& tasks, const std::vector<TaskTiming>& timings) {
  const std::size_t n = std::min(tasks.size(), timings.size());
  double sum = 0;
  double host = n > 0 ? timings[0].start_s : 0.0;  // where the host's own work left off
  for (std::size_t i = 0; i < n; ++i) {
    const TaskTiming& t = timings[i];
    if (!tasks[i].waits.empty()) {
      double done = host;
      for (const ExecTask::Wait& w : tasks[i].waits) {
        const auto wi = static_cast<std::size_t>(w.task);
        if (wi < n) done = std::max(done, timings[wi].end_s);
      }
      sum += std::clamp(done, host, std::max(host, t.start_s)) - host;
    }
    // A posted call returns at once: the host goes on from its post.
    if (tasks[i].async) {
      host = std::max(host, t.start_s);
    } else {
      sum += t.op_s;
      host = std::max(host, t.end_s);
    }
  }
  return sum;
}

StageFigures stage_figures(const sim::Timeline& t, std::int32_t stage) {
  std::vector<Interval> compute;
  std::vector<Interval> communicating;
  std::vector<Interval> working;  // compute and communication
  std::vector<Interval> all;      // and waiting
  for (const auto& s : t.slices) {
    if (s.rank != stage) continue;
    all.emplace_back(s.start_s, s.end_s);
    if (s.kind == sim::SliceKind::kWait) continue;
    working.emplace_back(s.start_s, s.end_s);
    const bool comm = s.kind == sim::SliceKind::kTensorComm ||
                      s.kind == sim::SliceKind::kPipelineComm ||
                      s.kind == sim::SliceKind::kDataComm || s.kind == sim::SliceKind::kContextComm;
    (comm ? communicating : compute).emplace_back(s.start_s, s.end_s);
  }
  StageFigures f;
  f.busy_s = union_length(compute);
  const double work = union_length(working);
  const double any = union_length(all);
  f.comm_s = work - f.busy_s;
  // |compute and comm| = |compute| + |comm| - |either|, up to rounding.
  f.overlap_s = std::max(0.0, union_length(communicating) - f.comm_s);
  f.wait_s = any - work;
  f.idle_s = std::max(0.0, t.step_time_s - any);
  return f;
}

std::string busy_machine_note(const std::vector<double>& step_times_s) {
  if (step_times_s.size() < 2) return "";
  const auto [lo, hi] = std::minmax_element(step_times_s.begin(), step_times_s.end());
  const double mid = median(step_times_s);
  if (mid <= 0 || (*hi - *lo) / mid <= kBusySpread) return "";
  char text[256];
  std::snprintf(text, sizeof text,
                "the measured steps spread from %.3f to %.3f ms, %.0f%% of their median "
                "(more than %.0f%%): the machine was busy with other work, so the measurement "
                "(and its comparison) is unreliable; measure again on an idle machine",
                1e3 * *lo, 1e3 * *hi, 100.0 * (*hi - *lo) / mid, 100.0 * kBusySpread);
  return text;
}

namespace {

/// Whether any call ran beside the compute: only where the schedule has some
/// (overlap_p2p_comm, the context-parallel ring, Transformer Engine's userbuffers) does a
/// backend that runs them say anything about it.
bool any_posted(const Measurement& measured) {
  bool posted = false;
  for (const auto& tasks : measured.stage_tasks) {
    for (const ExecTask& t : tasks) {
      posted = posted || (t.async && (t.kind == ExecTask::Kind::kComm || posted_when_serial(t.op)));
    }
  }
  return posted;
}

/// The backend's own step time (the median step's slowest rank) and its error.
void compare_backend(const Measurement& measured, std::size_t median_index, ValidationReport& r) {
  const auto& step = measured.steps[median_index];
  for (std::size_t rank = 0; rank < step.size(); ++rank) {
    const auto& tasks = measured.stage_tasks.at(
        static_cast<std::size_t>(measured.layout.coord_of(static_cast<std::int32_t>(rank)).pp));
    r.measured_backend_step_time_s =
        std::max(r.measured_backend_step_time_s, backend_step_s(tasks, step[rank]));
  }
  r.backend_relative_error =
      relative_error(r.predicted_step_time_s, r.measured_backend_step_time_s);
}

/// Each stage's figures, predicted and measured (the median step), and the backend's
/// overhead on its compute ops.
void compare_stages(const sim::Timeline& predicted, const Measurement& measured,
                    std::size_t median_index, ValidationReport& r) {
  const sim::Timeline mt = measured_timeline(measured, median_index);
  for (std::int32_t s = 0; s < measured.layout.pp; ++s) {
    StageComparison st{s, stage_figures(predicted, s), stage_figures(mt, s), 0.0};
    const auto& tasks = measured.stage_tasks[static_cast<std::size_t>(s)];
    const auto& timings = measured.steps[median_index].at(
        static_cast<std::size_t>(measured.layout.global_rank(s, 0, 0)));
    for (std::size_t i = 0; i < tasks.size() && i < timings.size(); ++i) {
      if (tasks[i].stream != Stream::kCompute || tasks[i].kind != ExecTask::Kind::kOp) continue;
      st.measured_backend_overhead_s +=
          std::max(0.0, timings[i].end_s - timings[i].start_s - timings[i].op_s);
    }
    r.stages.push_back(st);
  }
}

/// The identity of each slice a task of stage `s` draws: itself, or each of its transfers.
std::vector<std::pair<SliceKey, std::string>> slice_keys(const ExecTask& task, std::int32_t s,
                                                         std::int32_t pp) {
  std::vector<std::pair<SliceKey, std::string>> keys;
  if (task.kind == ExecTask::Kind::kComm) {
    for (std::size_t k = 0; k < task.transfers.size(); ++k) {
      keys.emplace_back(sim::transfer_identity(s, task.transfers[k], pp), task.transfer_names[k]);
    }
  } else {
    keys.emplace_back(SliceKey{.rank = s,
                               .phase = task.op.phase,
                               .microbatch = task.microbatch,
                               .chunk = task.chunk,
                               .layer = task.layer,
                               .op = task.op_name},
                      task.name);
  }
  return keys;
}

/// A task's measured time over the steps: the medians of its op time and of its wall time,
/// each less its wait for its last peer (waiting, not communication: peers_ready).
struct TaskTimes {
  double op_s = 0;
  double wall_s = 0;
};

TaskTimes measured_times(const Measurement& measured,
                         const std::vector<std::vector<std::vector<double>>>& ready,
                         std::int32_t s, std::size_t rep, std::size_t i) {
  std::vector<double> durations;
  std::vector<double> walls;
  for (std::size_t k = 0; k < measured.steps.size(); ++k) {
    const auto& rank = measured.steps[k].at(rep);
    if (i >= rank.size()) continue;
    const auto& ready_of = ready[k][static_cast<std::size_t>(s)];
    const double waited = i < ready_of.size() ? ready_of[i] - rank[i].start_s : 0.0;
    durations.push_back(std::max(0.0, rank[i].op_s - waited));
    walls.push_back(rank[i].end_s - rank[i].start_s - waited);
  }
  return TaskTimes{.op_s = median(durations), .wall_s = median(walls)};
}

/// Every measured slice matched with the predicted one of its identity (in start order):
/// the figures per op kind, the largest deviations, what has no counterpart.
void match_slices(const sim::Timeline& predicted, const Measurement& measured,
                  std::size_t max_deviations, ValidationReport& r) {
  // Predicted slices per key, in start order (the timeline is sorted by start).
  std::map<SliceKey, std::vector<const sim::Slice*>> predicted_by_key;
  for (const auto& s : predicted.slices) {
    predicted_by_key[sim::identity_of(s)].push_back(&s);
  }
  std::map<SliceKey, std::size_t> used;
  std::array<OpKindComparison, kOpCategories> kinds{};
  std::vector<Deviation> deviations;
  std::int64_t measured_total = 0;
  std::vector<std::vector<std::vector<double>>> ready;  // [step][stage][task]
  for (std::size_t k = 0; k < measured.steps.size(); ++k) ready.push_back(peers_ready(measured, k));
  for (std::int32_t s = 0; s < measured.layout.pp; ++s) {
    const auto& tasks = measured.stage_tasks[static_cast<std::size_t>(s)];
    const auto rep = static_cast<std::size_t>(measured.layout.global_rank(s, 0, 0));
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      const auto& task = tasks[i];
      const std::vector<std::pair<SliceKey, std::string>> keys =
          slice_keys(task, s, measured.layout.pp);
      const TaskTimes times = measured_times(measured, ready, s, rep, i);
      const double meas = times.op_s;
      for (const auto& [key, name] : keys) {
        ++measured_total;
        auto it = predicted_by_key.find(key);
        std::size_t& n = used[key];
        if (it == predicted_by_key.end() || n >= it->second.size()) continue;
        const sim::Slice& ps = *it->second[n++];
        const double pred = ps.end_s - ps.start_s;
        const double rel = relative_error(pred, meas);
        auto& k = kinds[static_cast<std::size_t>(task.category)];
        k.category = task.category;
        ++k.count;
        k.predicted_total_s += pred;
        k.measured_total_s += meas;
        k.measured_wall_total_s += times.wall_s;
        k.mean_relative_error += rel;
        k.mean_abs_relative_error += std::abs(rel);
        deviations.push_back(Deviation{s, name, task.detail, task.category, pred, meas, rel});
        ++r.matched_slices;
      }
    }
  }
  r.unmatched_measured = measured_total - r.matched_slices;
  r.unmatched_predicted = static_cast<std::int64_t>(predicted.slices.size()) - r.matched_slices;
  for (auto& k : kinds) {
    if (k.count == 0) continue;
    k.mean_relative_error /= static_cast<double>(k.count);
    k.mean_abs_relative_error /= static_cast<double>(k.count);
    r.ops.push_back(k);
  }
  std::stable_sort(
      deviations.begin(), deviations.end(), [](const Deviation& a, const Deviation& b) {
        return std::abs(a.predicted_s - a.measured_s) > std::abs(b.predicted_s - b.measured_s);
      });
  if (deviations.size() > max_deviations) deviations.resize(max_deviations);
  r.largest_deviations = std::move(deviations);
}

}  // namespace

ValidationReport compare(const sim::Prediction& prediction, const sim::Timeline& predicted,
                         const Measurement& measured, std::size_t max_deviations) {
  ValidationReport r;
  r.world_size = measured.layout.world_size();
  r.steps = static_cast<std::int32_t>(measured.step_times_s.size());
  r.measured_step_times_s = measured.step_times_s;
  r.predicted_step_time_s = prediction.step_time_s;
  r.complete = measured.complete;
  r.failure = measured.failure;
  r.async_p2p = measured.async_p2p && any_posted(measured);
  r.async_grad_reduce = measured.async_grad_reduce;
  r.device_timed = measured.device_timed;
  if (measured.step_times_s.empty()) {
    r.notes.push_back("no measured step completed");
    return r;
  }
  r.measured_step_time_s = median(measured.step_times_s);
  r.relative_error = relative_error(r.predicted_step_time_s, r.measured_step_time_s);
  if (const std::string busy = busy_machine_note(measured.step_times_s); !busy.empty()) {
    r.notes.push_back(busy);
  }
  const std::size_t median_index = median_step(measured);
  compare_backend(measured, median_index, r);
  compare_stages(predicted, measured, median_index, r);
  match_slices(predicted, measured, max_deviations, r);
  if (r.unmatched_predicted != 0 || r.unmatched_measured != 0) {
    r.notes.push_back(std::to_string(r.unmatched_predicted) + " predicted and " +
                      std::to_string(r.unmatched_measured) +
                      " measured slices have no counterpart (matched by stage, phase, micro-batch, "
                          "chunk, layer and op)");
  }
  return r;
}

}  // namespace stepsim::calib
