// Runs the simulator's program on a real Backend and times every task.

#include "stepsim/validator/executor.hpp"

#include <algorithm>
#include <condition_variable>
#include <limits>
#include <mutex>
#include <optional>
#include <sstream>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

#include "peer_groups.hpp"
#include "watchdog.hpp"

namespace stepsim::calib {
namespace {

/// The tags of context-parallel and tensor-parallel ring messages: above every pipeline tag
/// (p2p_tag stays far below them), the last ones P2PRequest leaves to callers (32767 is the
/// backends' handshake).
constexpr std::int32_t kContextRingTag = 32766;
constexpr std::int32_t kTensorRingTag = 32765;

Error runtime_error(const std::string& message) {
  return Error{"", "", message, ErrorKind::kRuntime};
}

class Runner {
 public:
  Runner(const Workload& w, Backend& b, const ExecutorOptions& options, Measurement& m)
      : b_(b),
        training_(w.training),
        distributed_optimizer_(w.training.use_distributed_optimizer),
        options_(options),
        m_(m),
        me_(b.world_rank()),
        coord_(m.layout.coord_of(me_)),
        tasks_(m.stage_tasks.at(static_cast<std::size_t>(coord_.pp))),
        virtual_stages_(m.layout.pp * static_cast<std::int32_t>(
                                          w.training.virtual_pipeline_model_parallel_size)) {}

  Status run();

 private:
  Result<double> run_task(const ExecTask& t);
  /// The process group collective `s` of task `t` runs over, checked against the plan.
  Result<GroupId> group_of(const ExecTask& t, const CollectiveOp& s) const;
  std::vector<P2PRequest> requests_of(const ExecTask& t) const;
  /// One step of the context-parallel ring or of a userbuffers exchange in the TP group: the
  /// send, then the receive (their peers by P2POp::peer_step).
  Result<std::vector<P2PRequest>> ring_requests(const ExecTask& t, const P2POp& s) const;
  std::string describe(std::int32_t step, std::int64_t task, double idle_s) const;
  void fire(std::int32_t step, std::int64_t task, double idle_s);
  Status enter_task(std::size_t i);
  /// One step: its tasks in order, then (measured steps) its timings gathered.
  Status run_step(std::int32_t step);
  /// The waits task `i` carries on earlier posted calls; a call's timing ends with its last.
  Status wait_for(std::int32_t step, std::size_t i);
  /// Task `i` posted without blocking: a collective, or P2P transfers with a handle each.
  Status post_collective(std::size_t i, double start, bool deferred);
  Status post_p2p(std::size_t i, double start, bool deferred);
  /// A measured step's timings gathered at rank 0 (kept on the others).
  Status gather_step(std::int32_t step);
  /// Tells the watchdog where the rank is now.
  void enter(std::int32_t step, std::int64_t task) {
    if (dog_ != nullptr) dog_->enter(step, task);
  }

  Backend& b_;
  const TrainingConfig& training_;
  bool distributed_optimizer_;
  const ExecutorOptions& options_;
  Measurement& m_;
  std::int32_t me_;
  RankLayout::Coord coord_;
  const std::vector<ExecTask>& tasks_;
  std::int32_t virtual_stages_;
  Groups groups_;
  detail::Watchdog* dog_ = nullptr;  // run()'s, while it runs; none without on_timeout
  // The step's non-blocking calls: their transfers' handles, and what is left of each.
  struct AsyncCall {
    std::int32_t left = 0;   ///< transfers not waited for yet
    double completed_s = 0;  ///< the last completion seen
  };
  std::vector<std::vector<P2PHandle>> handles_;
  std::vector<CollectiveHandle> collectives_;
  std::vector<AsyncCall> calls_;
  Status timed_out_error(std::unique_lock<std::mutex>& lock);

  // Everything the watchdog thread reads is guarded by mutex_ and copied under it: fire()
  // hands on_timeout a snapshot, so the rank's own thread, when it is slow and not hung,
  // goes on recording timings and appending steps while the caller reads the snapshot.
  std::mutex mutex_;
  std::condition_variable reported_cv_;
  // The step in progress; the watchdog copies the first done_in_step_ entries.
  std::vector<TaskTiming> timings_;
  std::size_t done_in_step_ = 0;
  /// Deferred timing: gives timings_ the device's times of the step just run.
  void place_on_device(const std::vector<Backend::DeviceTiming>& device);
  bool measuring_ = false;
  bool timed_out_ = false;  // the watchdog fired; m_.failure says why
  bool reported_ = false;   // on_timeout returned
};

std::vector<P2PRequest> Runner::requests_of(const ExecTask& t) const {
  std::vector<P2PRequest> requests;
  for (std::size_t i = 0; i < t.transfers.size(); ++i) {
    const auto& tr = t.transfers[i];
    requests.push_back(P2PRequest{tr.send, t.transfer_bytes[i],
                                  m_.layout.global_rank(tr.peer, coord_.dp, coord_.tp, coord_.cp),
                                  p2p_tag(tr, virtual_stages_)});
  }
  return requests;
}

Result<GroupId> Runner::group_of(const ExecTask& t, const CollectiveOp& s) const {
  const GroupId g = groups_.of(s.group);
  if (b_.group_size(g) != s.group_size) {
    return Error{"", "",
                 t.name + ": " + std::string(to_string(s.group)) + " group of rank " +
                     std::to_string(me_) + " has " + std::to_string(b_.group_size(g)) +
                     " ranks, the plan expects " + std::to_string(s.group_size),
                 ErrorKind::kRuntime};
  }
  return g;
}

Result<double> Runner::run_task(const ExecTask& t) {
  if (t.kind == ExecTask::Kind::kComm) {
    const std::vector<P2PRequest> requests = requests_of(t);
    if (requests.empty()) return 0.0;
    return b_.p2p(requests);
  }
  return std::visit(
      [this, &t](const auto& s) -> Result<double> {
        using T = std::decay_t<decltype(s)>;
        if constexpr (std::is_same_v<T, GemmOp>) {
          return b_.gemm(s);
        } else if constexpr (std::is_same_v<T, AttentionOp>) {
          return b_.attention(s);
        } else if constexpr (std::is_same_v<T, MemoryBoundOp>) {
          if (s.kernels <= 1) return b_.memory_bound(s);
          // Its launches one after the other, each moving its share of the bytes, as the cost
          // models price them (CostModel::shape_s).
          const MemoryBoundOp each{.bytes = (s.bytes + s.kernels - 1) / s.kernels};
          double seconds = 0;
          for (std::int64_t k = 0; k < s.kernels; ++k) {
            auto r = b_.memory_bound(each);
            if (!r.ok()) return r;
            seconds += r.value();
          }
          return seconds;
        } else if constexpr (std::is_same_v<T, CollectiveOp>) {
          if (s.group == CommGroup::kContext && m_.layout.cp <= 1) {
            return runtime_error(t.name + ": a context-parallel collective without context "
                                          "parallelism");
          }
          if (s.group == CommGroup::kContextA2a && m_.layout.cp_a2a <= 1) {
            return runtime_error(t.name +
                                 ": a hierarchical context-parallel all-to-all "
                                 "without cp_comm_type a2a+p2p");
          }
          const bool expert = s.group == CommGroup::kExpert ||
                              s.group == CommGroup::kExpertTensor ||
                              s.group == CommGroup::kExpertTensorExpert ||
                              s.group == CommGroup::kExpertData;
          if (expert && !m_.layout.moe) {
            return runtime_error(t.name + ": an expert-parallel collective in a model without "
                                          "experts");
          }
          auto g = group_of(t, s);
          if (!g) return g.errors();
          return b_.collective(s, *g);
        } else {
          auto requests = ring_requests(t, s);
          if (!requests) return requests.errors();
          return b_.p2p(*requests);
        }
      },
      t.op.shape);
}

Result<std::vector<P2PRequest>> Runner::ring_requests(const ExecTask& t, const P2POp& s) const {
  // A step of a ring: send this rank's block to one member of its group, receive one from
  // another. Every member posts the same sequence of steps, and MPI/NCCL keep the order of
  // messages per peer and tag, so one tag per ring serves every step.
  if (t.op.stream == Stream::kTensorComm && m_.layout.tp > 1) {
    // Transformer Engine's userbuffers exchanges (comm_gemm_overlap.cpp: _next_rank /
    // _prev_rank over the TP group, the aggregated exchange's pair swap and steps of two, the
    // ring-exchange reduce-scatter's send_rank / recv_rank).
    const RingPeers peers = ring_peers(coord_.tp, m_.layout.tp, s.peer_step);
    return std::vector<P2PRequest>{
        P2PRequest{true, s.bytes,
                   m_.layout.global_rank(coord_.pp, coord_.dp, peers.send_to, coord_.cp),
                   kTensorRingTag},
        P2PRequest{false, s.bytes,
                   m_.layout.global_rank(coord_.pp, coord_.dp, peers.recv_from, coord_.cp),
                   kTensorRingTag}};
  }
  if (t.op.stream != Stream::kContextComm || m_.layout.cp <= 1) {
    return runtime_error(t.name +
                         ": a P2P op inside a chunk's op list that is not a step of the "
                         "context-parallel ring or of a tensor-parallel exchange; pipeline "
                         "transfers come from the schedule's CommCalls");
  }
  // Transformer Engine's p2p attention. With a2a+p2p the ring is the hierarchical level 1:
  // every cp_a2a-th CP rank, as AttnFuncWithCPAndKVP2P's send_dst = cp_global_ranks[(rank + 1)
  // % cp_size * cp_size_a2a + rank_a2a].
  const std::int32_t a2a = m_.layout.cp_a2a;
  const RingPeers peers = ring_peers(coord_.cp / a2a, m_.layout.cp / a2a, s.peer_step);
  const std::int32_t next = peers.send_to * a2a + coord_.cp % a2a;
  const std::int32_t prev = peers.recv_from * a2a + coord_.cp % a2a;
  return std::vector<P2PRequest>{
      P2PRequest{true, s.bytes, m_.layout.global_rank(coord_.pp, coord_.dp, coord_.tp, next),
                 kContextRingTag},
      P2PRequest{false, s.bytes, m_.layout.global_rank(coord_.pp, coord_.dp, coord_.tp, prev),
                 kContextRingTag}};
}

std::string Runner::describe(std::int32_t step, std::int64_t task, double idle_s) const {
  std::ostringstream s;
  s << "rank " << me_ << " (pipeline stage " << coord_.pp << ", data-parallel rank " << coord_.dp
    << ", tensor-parallel rank " << coord_.tp << ") made no progress for " << idle_s
    << " s (--timeout " << options_.timeout_s << ") in step " << step + options_.first_step << ", ";
  if (task == -1) return s.str() + "waiting in the barrier that starts the step";
  if (task == -2) return s.str() + "gathering the step's timings at rank 0";
  if (task == -3) return s.str() + "setting up process groups and clocks";
  if (task == -4) return s.str() + "waiting for the step's kernels on the device";
  const auto& t = tasks_.at(static_cast<std::size_t>(task));
  s << "task " << task << " '" << t.name << "' (" << t.detail << ")";
  if (t.kind == ExecTask::Kind::kComm) {
    std::vector<std::int32_t> peers;
    for (const auto& tr : t.transfers) {
      peers.push_back(m_.layout.global_rank(tr.peer, coord_.dp, coord_.tp, coord_.cp));
    }
    s << ", waiting for rank(s) " << join_ranks(peers, me_);
  } else if (const auto* c = std::get_if<CollectiveOp>(&t.op.shape)) {
    s << ", waiting for rank(s) " << join_ranks(members_of(c->group, m_.layout, me_, distributed_optimizer_), me_);
  }
  return s.str();
}

void Runner::fire(std::int32_t step, std::int64_t task, double idle_s) {
  const std::string message = describe(step, task, idle_s);
  Measurement snapshot;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    m_.complete = false;
    m_.failure = message;
    timed_out_ = true;
    snapshot = m_;
    if (measuring_) {
      snapshot.unfinished_step.assign(
          timings_.begin(), timings_.begin() + static_cast<std::ptrdiff_t>(done_in_step_));
    }
  }
  // The caller decides what follows: this rank's thread may be blocked for good in the
  // backend, so it normally stops the job from here. It reads only its snapshot: a slow rank
  // may record timings and append a step meanwhile, but it returns the timeout only once
  // on_timeout has returned (the caller's report comes first).
  options_.on_timeout(message, snapshot);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    reported_ = true;
  }
  reported_cv_.notify_all();
}

void Runner::place_on_device(const std::vector<Backend::DeviceTiming>& device) {
  // The tasks' times are their kernels' on the device; a task that ran none (a call with
  // nothing to send) sits, empty, where the device had got to when it was issued.
  std::vector<bool> placed(timings_.size(), false);
  double at = std::numeric_limits<double>::max();
  for (const Backend::DeviceTiming& d : device) {
    const auto i = static_cast<std::size_t>(d.task);
    if (i >= timings_.size()) continue;
    timings_[i] = TaskTiming{d.start_s, d.end_s, d.busy_s};
    placed[i] = true;
    at = std::min(at, d.start_s);
  }
  if (at == std::numeric_limits<double>::max()) return;  // no kernels: the host's times stand
  for (std::size_t i = 0; i < timings_.size(); ++i) {
    if (placed[i]) {
      at = std::max(at, timings_[i].end_s);
    } else {
      timings_[i] = TaskTiming{at, at, 0.0};
    }
  }
}

Status Runner::timed_out_error(std::unique_lock<std::mutex>& lock) {
  reported_cv_.wait(lock, [this] { return reported_; });
  return runtime_error(m_.failure);
}

Status Runner::enter_task(std::size_t i) {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    if (timed_out_) return timed_out_error(lock);
  }
  if (options_.before_task) options_.before_task(tasks_[i]);
  return ok_status();
}

Status Runner::run() {
  std::optional<detail::Watchdog> dog;
  if (options_.on_timeout) {
    dog.emplace(options_.timeout_s, [this](std::int32_t step, std::int64_t task, double idle_s) {
      fire(step, task, idle_s);
    });
  }
  dog_ = dog ? &*dog : nullptr;
  enter(0, -3);
  auto groups = make_groups(b_, m_.layout, me_, training_);
  if (!groups) return groups.errors();
  groups_ = *groups;
  if (auto a = b_.align_clocks(); !a) return a.errors();

  const std::int32_t total = options_.warmup_steps + options_.steps;
  handles_.assign(tasks_.size(), {});
  collectives_.assign(tasks_.size(), CollectiveHandle{});
  calls_.assign(tasks_.size(), AsyncCall{});
  {
    std::lock_guard<std::mutex> lock(mutex_);
    timings_.assign(tasks_.size(), TaskTiming{});
  }
  for (std::int32_t step = 0; step < total; ++step) {
    if (auto done = run_step(step); !done) return done;
  }
  std::unique_lock<std::mutex> lock(mutex_);
  measuring_ = false;
  if (timed_out_) return timed_out_error(lock);
  m_.complete = true;
  return ok_status();
}

Status Runner::run_step(std::int32_t step) {
  const bool measured = step >= options_.warmup_steps;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    measuring_ = measured;
    done_in_step_ = 0;
  }
  enter(step, -1);
  if (auto r = b_.barrier(GroupId{0}); !r) return r.errors();
  const bool deferred = b_.deferred_timing();
  if (deferred) {
    if (auto r = b_.begin_step(); !r) return r.errors();
  }
  for (std::size_t i = 0; i < tasks_.size(); ++i) {
    if (auto waited = wait_for(step, i); !waited) return waited;
    enter(step, static_cast<std::int64_t>(i));
    if (auto entered = enter_task(i); !entered) return entered;
    const double start = b_.now_s();
    if (tasks_[i].async && tasks_[i].kind == ExecTask::Kind::kOp &&
        !std::holds_alternative<P2POp>(tasks_[i].op.shape)) {
      if (auto posted = post_collective(i, start, deferred); !posted) return posted;
      continue;
    }
    if (tasks_[i].async) {
      if (auto posted = post_p2p(i, start, deferred); !posted) return posted;
      continue;
    }
    if (deferred) b_.tag(static_cast<std::int64_t>(i));
    auto r = run_task(tasks_[i]);
    const double end = b_.now_s();
    if (!r) return r.errors();
    std::lock_guard<std::mutex> lock(mutex_);
    timings_[i] = TaskTiming{start, end, *r};
    done_in_step_ = i + 1;
  }
  if (deferred) {
    enter(step, -4);
    auto device = b_.end_step();
    if (!device) return device.errors();
    std::lock_guard<std::mutex> lock(mutex_);
    place_on_device(*device);
  }
  if (options_.on_step_done) options_.on_step_done(step);
  if (!measured) return ok_status();
  return gather_step(step);
}

Status Runner::wait_for(std::int32_t step, std::size_t i) {
  for (const ExecTask::Wait& w : tasks_[i].waits) {
    // Megatron's handle.wait() on one transfer (or on a bucket's reduction,
    // finish_grad_sync): the watchdog names its call.
    enter(step, w.task);
    const auto wi = static_cast<std::size_t>(w.task);
    auto done = w.transfer < 0 ? b_.wait_collective(collectives_[wi])
                               : b_.wait_p2p(handles_[wi][static_cast<std::size_t>(w.transfer)]);
    if (!done) return done.errors();
    // The call is done when its last transfer is: it then gets its timing.
    AsyncCall& call = calls_[wi];
    call.completed_s = std::max(call.completed_s, done->completed_s);
    if (--call.left > 0) continue;
    std::lock_guard<std::mutex> lock(mutex_);
    timings_[wi] = TaskTiming{timings_[wi].start_s, call.completed_s,
                              call.completed_s - timings_[wi].start_s};
  }
  return ok_status();
}

Status Runner::post_collective(std::size_t i, double start, bool deferred) {
  // A bucket's gradient reduction or a userbuffers collective, posted: it runs beside
  // the tasks that follow, until one waits for it.
  const auto* coll = std::get_if<CollectiveOp>(&tasks_[i].op.shape);
  if (coll == nullptr) return runtime_error(tasks_[i].name + ": only a collective is posted");
  auto g = group_of(tasks_[i], *coll);
  if (!g) return g.errors();
  if (deferred) b_.tag(static_cast<std::int64_t>(i));  // its kernels are this task's
  auto h = b_.post_collective(*coll, *g);
  if (!h) return h.errors();
  collectives_[i] = *h;
  calls_[i] = AsyncCall{.left = 1, .completed_s = start};
  std::lock_guard<std::mutex> lock(mutex_);
  timings_[i] = TaskTiming{start, start, 0.0};
  done_in_step_ = i + 1;
  return ok_status();
}

Status Runner::post_p2p(std::size_t i, double start, bool deferred) {
  // Posted, one handle per transfer: a non-blocking pipeline call, or a step of the
  // context-parallel ring or of a userbuffers exchange (its send and its receive). It
  // completes beside the tasks that follow, up to the tasks that wait for its transfers
  // (until then its timing says posted, not done).
  std::vector<P2PRequest> requests;
  if (tasks_[i].kind == ExecTask::Kind::kComm) {
    requests = requests_of(tasks_[i]);
  } else {
    auto ring = ring_requests(tasks_[i], std::get<P2POp>(tasks_[i].op.shape));
    if (!ring) return ring.errors();
    requests = std::move(ring).value();
  }
  handles_[i].clear();
  if (deferred) b_.tag(static_cast<std::int64_t>(i));
  for (const P2PRequest& q : requests) {
    auto h = b_.post_p2p({q});
    if (!h) return h.errors();
    handles_[i].push_back(*h);
  }
  calls_[i] =
      AsyncCall{.left = static_cast<std::int32_t>(handles_[i].size()), .completed_s = start};
  std::lock_guard<std::mutex> lock(mutex_);
  timings_[i] = TaskTiming{start, start, 0.0};
  done_in_step_ = i + 1;
  return ok_status();
}

Status Runner::gather_step(std::int32_t step) {
  enter(step, -2);
  std::vector<double> flat;
  flat.reserve(3 * timings_.size());
  for (const auto& t : timings_) {
    flat.push_back(t.start_s);
    flat.push_back(t.end_s);
    flat.push_back(t.op_s);
  }
  auto gathered = b_.gather_to_root(flat);
  if (!gathered) return gathered.errors();
  if (me_ != 0) {
    std::lock_guard<std::mutex> lock(mutex_);
    m_.steps.push_back({timings_});
    return ok_status();
  }
  std::vector<std::vector<TaskTiming>> per_rank;
  double first = std::numeric_limits<double>::max();
  double last = std::numeric_limits<double>::lowest();
  for (const auto& values : *gathered) {
    std::vector<TaskTiming> rank_timings;
    for (std::size_t i = 0; i + 2 < values.size(); i += 3) {
      rank_timings.push_back(TaskTiming{values[i], values[i + 1], values[i + 2]});
      first = std::min(first, values[i]);
      last = std::max(last, values[i + 1]);
    }
    per_rank.push_back(std::move(rank_timings));
  }
  std::lock_guard<std::mutex> lock(mutex_);
  m_.steps.push_back(std::move(per_rank));
  m_.step_times_s.push_back(last > first ? last - first : 0.0);
  return ok_status();
}

}  // namespace

Status check_world_size(const Workload& w, const Backend& backend) {
  const std::int32_t want = layout_of(w).world_size();
  if (backend.world_size() == want) return ok_status();
  return Error{w.source_file, "training.world_size",
               "=" + std::to_string(want) + " but the validator runs " +
                   std::to_string(backend.world_size()) + " ranks (start it with mpirun -np " +
                   std::to_string(want) + ", one rank per device)"};
}

Result<Measurement> execute_schedule(const Workload& w, const WorkloadPlan& plan,
                                     const sim::Schedule& schedule, Backend& backend,
                                     const ExecutorOptions& options) {
  Measurement m;
  m.layout = layout_of(w);
  if (auto fits = check_world_size(w, backend); !fits) return fits.errors();
  if (options.steps < 1 || options.warmup_steps < 0) {
    return Error{"", "--steps", "must be at least 1 (and --warmup at least 0)"};
  }
  m.async_p2p = backend.async_p2p();
  m.async_grad_reduce = backend.async_collectives() && w.training.overlap_grad_reduce;
  m.device_timed = backend.deferred_timing();
  for (std::int32_t s = 0; s < m.layout.pp; ++s) {
    m.stage_tasks.push_back(
        build_stage_tasks(w, plan, schedule, s, m.async_p2p, m.async_grad_reduce));
  }
  Runner runner(w, backend, options, m);
  if (auto r = runner.run(); !r) return r.errors();
  return m;
}

}  // namespace stepsim::calib
