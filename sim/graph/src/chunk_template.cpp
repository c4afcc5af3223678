#include "stepsim/graph/chunk_template.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "stepsim/base/assert.hpp"
#include "stepsim/cost/profile.hpp"
#include "stepsim/cost/spread.hpp"

namespace stepsim::sim {

namespace {

enum class Role : std::uint8_t { kOther, kCompute, kNccl, kSmHolder };

// Compute kernels on the compute stream and NCCL kernels (TP and CP collectives and ring
// exchanges) interfere when they run together; a communication kernel that holds SMs for its
// whole run (DeepEP's, CollectiveOp::compute_share < 1) leaves compute beside it the rest of
// the SMs; everything else runs at its own speed.
Role role_of(const Op& op) {
  if (const auto* c = std::get_if<CollectiveOp>(&op.shape)) {
    if (c->compute_share < 1) return Role::kSmHolder;
    return c->nccl ? Role::kNccl : Role::kOther;
  }
  if (const auto* p = std::get_if<P2POp>(&op.shape)) return p->nccl ? Role::kNccl : Role::kOther;
  return op.stream == Stream::kCompute ? Role::kCompute : Role::kOther;
}

// An op the host issues only after a device-to-host synchronisation (Op::host_waits_for): it
// starts no earlier than that op's end plus the host's wake and one launch. 0 when the host
// is not modelled or the op has no such wait.
double host_wait_s(const Op& op, const HostCosts* host) {
  if (host == nullptr || op.host_waits_for < 0) return 0.0;
  const bool backward = op.phase == Phase::kBackwardInput || op.phase == Phase::kBackwardWeight;
  return host->sync_s + (backward ? host->backward_op_issue_s : host->forward_op_issue_s);
}

// Stream order and deps with fixed durations (list scheduling). `lag`: a posted op's wait for
// its thread (Interference::*_post_latency_s) when the thread was idle at its post; the wait
// ends early when the host blocks (the core is then free).
void list_schedule(const std::vector<Op>& ops, const std::vector<double>& duration,
                   const std::vector<double>& lag, bool serial, bool async_ring,
                   const HostCosts* host, std::vector<OpTiming>& out) {
  std::array<double, kStreamCount> stream_end{};  // last end per Stream
  double last_end = 0;                            // serial: where the host is
  double posted_end = 0;                          // serial: the posted ops' queue
  // Posted ops whose start is not settled yet (their thread may still be waiting for a core):
  // op index and post time, in posting order.
  std::vector<std::pair<std::size_t, double>> pending;
  std::vector<bool> is_pending(serial && async_ring ? ops.size() : 0, false);
  // The host blocks at `h`: the pending ops' threads get the core by then at the latest.
  const auto settle = [&](double h) {
    for (const auto& [i, post] : pending) {
      const bool idle = post >= posted_end;
      const double start = std::max(post, posted_end);
      const double run = idle ? std::min(post + lag[i], std::max(h, post)) : posted_end;
      out[i] = OpTiming{start, run + duration[i]};
      posted_end = out[i].end_s;
      is_pending[i] = false;
    }
    pending.clear();
  };
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    const auto stream = static_cast<std::size_t>(op.stream);
    // A posted op (a ring step, a userbuffers exchange or collective): it starts once the
    // host reached it and the op posted before it is done (one queue, in order), first
    // waiting for its thread if that was idle; the host goes on (a ring step is posted once
    // the ring's previous step is done: TE waits for it before sending the received block
    // on), and only the ops that depend on it wait for its end.
    const bool posted = serial && async_ring && posted_when_serial(op);
    const bool ring = posted && op.stream == Stream::kContextComm;
    if (!pending.empty()) {
      bool blocks = ring;
      for (const std::int32_t d : op.deps)
        blocks = blocks || is_pending[static_cast<std::size_t>(d)];
      if (blocks) settle(last_end);
    }
    double start = serial ? last_end : stream_end[stream];
    for (const std::int32_t d : op.deps) {
      STEPSIM_ASSERT(d >= 0 && static_cast<std::size_t>(d) < i);
      start = std::max(start, out[static_cast<std::size_t>(d)].end_s);
    }
    if (const double wait = host_wait_s(op, host); wait > 0) {
      start = std::max(start, out[static_cast<std::size_t>(op.host_waits_for)].end_s + wait);
    }
    if (posted) {
      pending.emplace_back(i, ring ? std::max(start, posted_end) : start);
      is_pending[i] = true;
      if (ring) last_end = pending.back().second;
      continue;
    }
    out[i] = OpTiming{start, start + duration[i]};
    stream_end[stream] = start + duration[i];
    last_end = std::max(last_end, start + duration[i]);
  }
  settle(last_end);  // the next action's first op waits for them
}

// Whether a compute kernel and an NCCL kernel ever run at the same time.
bool interferes(const std::vector<Op>& ops, const std::vector<OpTiming>& t,
                const std::vector<Role>& role) {
  std::vector<OpTiming> compute;  // in stream order: sorted by start and by end
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (role[i] == Role::kCompute && t[i].end_s > t[i].start_s) compute.push_back(t[i]);
  }
  if (compute.empty()) return false;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if ((role[i] != Role::kNccl && role[i] != Role::kSmHolder) || t[i].end_s <= t[i].start_s) {
      continue;
    }
    // The first compute kernel ending after this one starts.
    const auto it = std::upper_bound(compute.begin(), compute.end(), t[i].start_s,
                                     [](double s, const OpTiming& c) { return s < c.end_s; });
    if (it != compute.end() && it->start_s < t[i].end_s) return true;
  }
  return false;
}

// Stream order and deps with rates: while a compute kernel and an NCCL kernel run together,
// the compute kernel progresses at 1 / compute_slowdown of its speed alone and the NCCL kernel
// at 1 / collective_slowdown. Rates change only when an op starts or ends. `serial_host`
// (time_ops' serial with async_ring): every op but the posted ones (posted_when_serial) runs in
// list order on one host queue; the posted ones run in list order on a queue of their own, each
// starting once the host reached it (the host ops before it ended); the host goes on, past a
// context-parallel ring step once it started.
class RateScheduler {
 public:
  RateScheduler(const std::vector<Op>& ops, const std::vector<double>& duration,
                const std::vector<double>& lag, const std::vector<Role>& role,
                const Interference& k, bool serial_host, const HostCosts* host,
                std::vector<OpTiming>& out)
      : ops_(ops),
        lag_(lag),
        role_(role),
        k_(k),
        serial_host_(serial_host),
        host_(host),
        out_(out),
        n_(ops.size()),
        prev_host_(n_, -1),
        prev_ring_(n_, -1),
        prev_posted_(n_, -1),
        waiting_(n_, 0.0),
        left_(duration),
        done_(n_, false),
        began_(n_, false) {
    running_.fill(-1);
    queue_streams();
  }

  void run() {
    while (finished_ < n_) {
      const double wake = start_ready();
      if (serial_host_ && running_[static_cast<std::size_t>(Stream::kCompute)] < 0) {
        // The host blocks (or is done): the core is free, the posted calls' threads have it.
        for (const std::int64_t r : running_) {
          if (r >= 0) waiting_[static_cast<std::size_t>(r)] = 0;
        }
      }
      set_rates();
      double next = std::numeric_limits<double>::infinity();
      for (const std::int64_t r : running_) {
        if (r < 0) continue;
        const auto i = static_cast<std::size_t>(r);
        next = std::min(next, now_ + (waiting_[i] > 0 ? waiting_[i] : left_[i] / rate(i)));
      }
      next = std::min(next, wake);
      if (finished_ == n_) break;
      STEPSIM_ASSERT(next < std::numeric_limits<double>::infinity());
      advance_to(next);
      now_ = next;
    }
  }

 private:
  /// Each op on its stream's queue; with serial_host, on the host's or the posted ones', with
  /// the host op, the ring step and the posted op last before it in list order.
  void queue_streams() {
    std::int64_t last_host = -1;
    std::int64_t last_ring = -1;
    std::int64_t last_posted = -1;
    for (std::size_t i = 0; i < n_; ++i) {
      Stream stream = ops_[i].stream;
      if (serial_host_) {
        prev_host_[i] = last_host;
        prev_ring_[i] = last_ring;
        prev_posted_[i] = last_posted;
        const bool posted = posted_when_serial(ops_[i]);
        if (!posted) last_host = static_cast<std::int64_t>(i);
        if (posted && stream == Stream::kContextComm) last_ring = static_cast<std::int64_t>(i);
        if (posted) last_posted = static_cast<std::int64_t>(i);
        stream = posted ? Stream::kContextComm : Stream::kCompute;
      }
      queue_[static_cast<std::size_t>(stream)].push_back(i);
    }
  }

  /// Whether op `i` may start now; an op the host issues after a synchronisation also waits
  /// for that (`wake`: the earliest such time).
  bool ready(std::size_t i, double& wake) const {
    bool ready = true;
    for (const std::int32_t d : ops_[i].deps) ready = ready && done_[static_cast<std::size_t>(d)];
    if (serial_host_) {
      if (prev_host_[i] >= 0) ready = ready && done_[static_cast<std::size_t>(prev_host_[i])];
      if (prev_ring_[i] >= 0) ready = ready && began_[static_cast<std::size_t>(prev_ring_[i])];
    }
    if (const double wait = host_wait_s(ops_[i], host_); ready && wait > 0) {
      const auto w = static_cast<std::size_t>(ops_[i].host_waits_for);
      ready = done_[w];
      if (ready && now_ < out_[w].end_s + wait) {
        wake = std::min(wake, out_[w].end_s + wait);
        ready = false;
      }
    }
    return ready;
  }

  /// Starts every op whose stream is free and whose deps have ended, until none can; returns
  /// when the next op held back by a synchronisation may start.
  double start_ready() {
    double wake = std::numeric_limits<double>::infinity();
    for (bool started = true; started;) {
      started = false;
      for (std::size_t s = 0; s < kStreamCount; ++s) {
        if (running_[s] >= 0 || head_[s] >= queue_[s].size()) continue;
        const std::size_t i = queue_[s][head_[s]];
        if (!ready(i, wake)) continue;
        start(s, i);
        started = true;
      }
    }
    return wake;
  }

  void start(std::size_t s, std::size_t i) {
    out_[i].start_s = now_;
    began_[i] = true;
    ++head_[s];
    if (!lag_.empty() && lag_[i] > 0) {
      // Its thread was idle if the op posted before it ended before the host got here; a
      // ring step is posted once the ring's previous step is done.
      const bool ring = ops_[i].stream == Stream::kContextComm;
      double reached = 0;
      if (prev_host_[i] >= 0) reached = out_[static_cast<std::size_t>(prev_host_[i])].end_s;
      if (prev_ring_[i] >= 0) {
        reached = std::max(reached, out_[static_cast<std::size_t>(prev_ring_[i])].start_s);
      }
      const bool idle = ring || prev_posted_[i] < 0 ||
                        out_[static_cast<std::size_t>(prev_posted_[i])].end_s <= reached;
      if (idle) waiting_[i] = lag_[i];
    }
    if (left_[i] <= 0 && waiting_[i] <= 0) {  // zero-time op
      out_[i].end_s = now_;
      done_[i] = true;
      ++finished_;
    } else {
      running_[s] = static_cast<std::int64_t>(i);
    }
  }

  /// What runs together now: compute, NCCL, and the SMs left to compute.
  void set_rates() {
    compute_ = false;
    nccl_ = false;
    share_ = 1.0;
    for (const std::int64_t r : running_) {
      if (r < 0) continue;
      const auto i = static_cast<std::size_t>(r);
      if (waiting_[i] > 0) continue;
      compute_ = compute_ || role_[i] == Role::kCompute;
      nccl_ = nccl_ || role_[i] == Role::kNccl;
      if (role_[i] == Role::kSmHolder) {
        share_ = std::min(share_, std::get<CollectiveOp>(ops_[i].shape).compute_share);
      }
    }
  }

  double rate(std::size_t i) const {
    if (role_[i] == Role::kCompute) return share_ / (nccl_ ? k_.compute_slowdown : 1.0);
    if (role_[i] == Role::kNccl && compute_) return 1.0 / k_.collective_slowdown;
    return 1.0;
  }

  /// The running ops progressed to `next`; those that end by then, ended.
  void advance_to(double next) {
    for (auto& r : running_) {
      if (r < 0) continue;
      const auto i = static_cast<std::size_t>(r);
      if (waiting_[i] > 0) {
        // Its thread got a core: its work starts (at once, if there is none).
        waiting_[i] = now_ + waiting_[i] <= next ? 0.0 : waiting_[i] - (next - now_);
        if (waiting_[i] > 0 || left_[i] > 0) continue;
      }
      const double end = now_ + left_[i] / rate(i);
      if (end <= next) {
        out_[i].end_s = next;
        left_[i] = 0;
        done_[i] = true;
        ++finished_;
        r = -1;
      } else {
        left_[i] -= rate(i) * (next - now_);
      }
    }
  }

  const std::vector<Op>& ops_;
  const std::vector<double>& lag_;
  const std::vector<Role>& role_;
  const Interference& k_;
  const bool serial_host_;
  const HostCosts* host_;
  std::vector<OpTiming>& out_;
  const std::size_t n_;
  std::array<std::vector<std::size_t>, kStreamCount> queue_;
  std::vector<std::int64_t> prev_host_;
  std::vector<std::int64_t> prev_ring_;
  std::vector<std::int64_t> prev_posted_;
  // A posted op's wait for its idle thread, left: meanwhile it neither progresses nor
  // interferes; it ends early when the host blocks.
  std::vector<double> waiting_;
  std::array<std::size_t, kStreamCount> head_{};
  std::array<std::int64_t, kStreamCount> running_;
  std::vector<double> left_;
  std::vector<bool> done_;
  std::vector<bool> began_;
  std::size_t finished_ = 0;
  double now_ = 0;
  bool compute_ = false, nccl_ = false;
  double share_ = 1.0;  // of the SMs left to compute by the SM-holding kernels running
};

void rate_schedule(const std::vector<Op>& ops, const std::vector<double>& duration,
                   const std::vector<double>& lag, const std::vector<Role>& role,
                   const Interference& k, bool serial_host, const HostCosts* host,
                   std::vector<OpTiming>& out) {
  RateScheduler(ops, duration, lag, role, k, serial_host, host, out).run();
}

/// Whether `op` makes the ranks of its group wait for one another inside an action, and how
/// many they are: a collective over its group, a point-to-point step over its two ends.
std::int64_t sync_group(const Op& op) {
  if (const auto* c = std::get_if<CollectiveOp>(&op.shape)) return c->group_size;
  if (std::holds_alternative<P2POp>(op.shape)) return 2;
  return 1;
}

}  // namespace

double add_sync_waits(const std::vector<Op>& ops, const KernelSpread& spread,
                      std::vector<double>& duration) {
  // Spread at synchronisations (stepsim/cost/spread.hpp): the compute a rank runs since its
  // last synchronisation deviates with variance sum (cv t)^2; the group leaves when its
  // slowest member arrives, sigma x E[max of N] after the mean. Since the other groups'
  // members (the data-parallel replicas) were each paced by their own slowest, what still
  // differs between replicas after the stretch has the variance of that maximum.
  double stretch = 0, replica = 0;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const double t = duration[i];
    const std::int64_t group = sync_group(ops[i]);
    if (group > 1) {
      duration[i] += sync_wait_s(group, std::sqrt(stretch));
      replica += stretch * variance_max_std_normal(group);
      stretch = 0;
    } else if (ops[i].stream == Stream::kCompute) {
      const double sd = spread_cv(spread, ops[i]) * t;
      stretch += sd * sd;
    }
  }
  return replica + stretch;
}

ChunkTemplate time_ops(const std::vector<Op>& ops, const CostModel& cost, bool serial,
                       const Interference& interference, bool async_ring) {
  ChunkTemplate t;
  const std::size_t n = ops.size();
  t.ops.resize(n);
  std::vector<double> duration(n);
  for (std::size_t i = 0; i < n; ++i) duration[i] = cost.op_s(ops[i]);
  if (const KernelSpread* spread = cost.spread()) {
    t.spread_variance_s2 = add_sync_waits(ops, *spread, duration);
  }
  // The host, where modelled: a serialised executor has none apart from its one thread.
  const HostCosts* host = serial ? nullptr : cost.host();
  // A serialised executor's posted calls first wait for their thread, if it was idle.
  std::vector<double> lag;  // empty: none (every op but a serialised executor's posted ones)
  if (serial && async_ring) lag.assign(n, 0.0);
  for (std::size_t i = 0; i < lag.size(); ++i) {
    if (!posted_when_serial(ops[i])) continue;
    lag[i] = std::holds_alternative<P2POp>(ops[i].shape) ? interference.p2p_post_latency_s
                                                         : interference.collective_post_latency_s;
  }
  list_schedule(ops, duration, lag, serial, async_ring, host, t.ops);
  bool rated = false;
  std::vector<Role> role(n);
  bool holders = false;
  for (std::size_t i = 0; i < n; ++i) {
    // A serialised executor's posted communication runs on the backend's threads, which take
    // the compute's cores as NCCL's kernels take its SMs: the profile's interference.
    const bool posted = serial && async_ring && posted_when_serial(ops[i]);
    role[i] = posted ? Role::kNccl : role_of(ops[i]);
    holders = holders || role[i] == Role::kSmHolder;
  }
  if ((!serial || async_ring) &&
      (holders || interference.compute_slowdown != 1 || interference.collective_slowdown != 1)) {
    // Fast path: nothing overlaps, so the fixed durations are the times.
    if (interferes(ops, t.ops, role)) {
      rate_schedule(ops, duration, lag, role, interference, serial && async_ring, host, t.ops);
      rated = true;
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    const Op& op = ops[i];
    const double took = rated ? t.ops[i].end_s - t.ops[i].start_s : duration[i];
    t.duration_s = std::max(t.duration_s, t.ops[i].end_s);
    const double flops = op.flops();
    t.hardware_flops += flops;
    if (op.phase == Phase::kRecompute) {
      t.recompute_s += took;
    } else {
      t.model_flops += flops;
    }
    if (op.stream == Stream::kCompute) t.compute_busy_s += took;
    if (op.workspace_bytes > 0) {
      t.workspace_ops.emplace_back(static_cast<std::int32_t>(i), op.workspace_bytes);
    }
  }
  t.exposed_comm_s = t.duration_s - t.compute_busy_s;
  return t;
}

bool same_timing(const std::vector<Op>& a, const std::vector<Op>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const Op& x, const Op& y) {
    return x.phase == y.phase && x.stream == y.stream && x.workspace_bytes == y.workspace_bytes &&
           x.sm_share == y.sm_share && x.deps == y.deps && x.shape == y.shape &&
           x.host_waits_for == y.host_waits_for;
  });
}

}  // namespace stepsim::sim
