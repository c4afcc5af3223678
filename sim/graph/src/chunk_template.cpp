#include "stepsim/graph/chunk_template.hpp"

#include <algorithm>
#include <array>
#include <limits>

#include "stepsim/base/assert.hpp"
#include "stepsim/cost/profile.hpp"

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
void rate_schedule(const std::vector<Op>& ops, const std::vector<double>& duration,
                   const std::vector<double>& lag, const std::vector<Role>& role,
                   const Interference& k, bool serial_host, const HostCosts* host,
                   std::vector<OpTiming>& out) {
  const std::size_t n = ops.size();
  std::array<std::vector<std::size_t>, kStreamCount> queue;
  // serial_host: the host op, the ring step and the posted op last before each op in list
  // order.
  std::vector<std::int64_t> prev_host(n, -1);
  std::vector<std::int64_t> prev_ring(n, -1);
  std::vector<std::int64_t> prev_posted(n, -1);
  std::int64_t last_host = -1;
  std::int64_t last_ring = -1;
  std::int64_t last_posted = -1;
  for (std::size_t i = 0; i < n; ++i) {
    Stream stream = ops[i].stream;
    if (serial_host) {
      prev_host[i] = last_host;
      prev_ring[i] = last_ring;
      prev_posted[i] = last_posted;
      const bool posted = posted_when_serial(ops[i]);
      if (!posted) last_host = static_cast<std::int64_t>(i);
      if (posted && stream == Stream::kContextComm) last_ring = static_cast<std::int64_t>(i);
      if (posted) last_posted = static_cast<std::int64_t>(i);
      stream = posted ? Stream::kContextComm : Stream::kCompute;
    }
    queue[static_cast<std::size_t>(stream)].push_back(i);
  }
  // A posted op's wait for its idle thread, left: meanwhile it neither progresses nor
  // interferes; it ends early when the host blocks.
  std::vector<double> waiting(n, 0.0);
  std::array<std::size_t, kStreamCount> head{};
  std::array<std::int64_t, kStreamCount> running;
  running.fill(-1);
  std::vector<double> left(duration);
  std::vector<bool> done(n, false);
  std::vector<bool> began(n, false);
  std::size_t finished = 0;
  double now = 0;
  while (finished < n) {
    // Start every op whose stream is free and whose deps have ended, until none can; an op
    // the host issues after a synchronisation also waits for that (`wake`: the earliest).
    double wake = std::numeric_limits<double>::infinity();
    for (bool started = true; started;) {
      started = false;
      for (std::size_t s = 0; s < kStreamCount; ++s) {
        if (running[s] >= 0 || head[s] >= queue[s].size()) continue;
        const std::size_t i = queue[s][head[s]];
        bool ready = true;
        for (const std::int32_t d : ops[i].deps) ready = ready && done[static_cast<std::size_t>(d)];
        if (serial_host) {
          if (prev_host[i] >= 0) ready = ready && done[static_cast<std::size_t>(prev_host[i])];
          if (prev_ring[i] >= 0) ready = ready && began[static_cast<std::size_t>(prev_ring[i])];
        }
        if (const double wait = host_wait_s(ops[i], host); ready && wait > 0) {
          const auto w = static_cast<std::size_t>(ops[i].host_waits_for);
          ready = done[w];
          if (ready && now < out[w].end_s + wait) {
            wake = std::min(wake, out[w].end_s + wait);
            ready = false;
          }
        }
        if (!ready) continue;
        out[i].start_s = now;
        began[i] = true;
        ++head[s];
        if (!lag.empty() && lag[i] > 0) {
          // Its thread was idle if the op posted before it ended before the host got here; a
          // ring step is posted once the ring's previous step is done.
          const bool ring = ops[i].stream == Stream::kContextComm;
          double reached = 0;
          if (prev_host[i] >= 0) reached = out[static_cast<std::size_t>(prev_host[i])].end_s;
          if (prev_ring[i] >= 0) {
            reached = std::max(reached, out[static_cast<std::size_t>(prev_ring[i])].start_s);
          }
          const bool idle = ring || prev_posted[i] < 0 ||
                            out[static_cast<std::size_t>(prev_posted[i])].end_s <= reached;
          if (idle) waiting[i] = lag[i];
        }
        if (left[i] <= 0 && waiting[i] <= 0) {  // zero-time op
          out[i].end_s = now;
          done[i] = true;
          ++finished;
        } else {
          running[s] = static_cast<std::int64_t>(i);
        }
        started = true;
      }
    }
    if (serial_host && running[static_cast<std::size_t>(Stream::kCompute)] < 0) {
      // The host blocks (or is done): the core is free, the posted calls' threads have it.
      for (const std::int64_t r : running) {
        if (r >= 0) waiting[static_cast<std::size_t>(r)] = 0;
      }
    }
    bool compute = false, nccl = false;
    double share = 1.0;  // of the SMs left to compute by the SM-holding kernels running
    for (const std::int64_t r : running) {
      if (r < 0) continue;
      const auto i = static_cast<std::size_t>(r);
      if (waiting[i] > 0) continue;
      compute = compute || role[i] == Role::kCompute;
      nccl = nccl || role[i] == Role::kNccl;
      if (role[i] == Role::kSmHolder) {
        share = std::min(share, std::get<CollectiveOp>(ops[i].shape).compute_share);
      }
    }
    const auto rate = [&](std::size_t i) {
      if (role[i] == Role::kCompute) return share / (nccl ? k.compute_slowdown : 1.0);
      if (role[i] == Role::kNccl && compute) return 1.0 / k.collective_slowdown;
      return 1.0;
    };
    double next = std::numeric_limits<double>::infinity();
    for (const std::int64_t r : running) {
      if (r < 0) continue;
      const auto i = static_cast<std::size_t>(r);
      next = std::min(next, now + (waiting[i] > 0 ? waiting[i] : left[i] / rate(i)));
    }
    next = std::min(next, wake);
    if (finished == n) break;
    STEPSIM_ASSERT(next < std::numeric_limits<double>::infinity());
    for (auto& r : running) {
      if (r < 0) continue;
      const auto i = static_cast<std::size_t>(r);
      if (waiting[i] > 0) {
        // Its thread got a core: its work starts (at once, if there is none).
        waiting[i] = now + waiting[i] <= next ? 0.0 : waiting[i] - (next - now);
        if (waiting[i] > 0 || left[i] > 0) continue;
      }
      const double end = now + left[i] / rate(i);
      if (end <= next) {
        out[i].end_s = next;
        left[i] = 0;
        done[i] = true;
        ++finished;
        r = -1;
      } else {
        left[i] -= rate(i) * (next - now);
      }
    }
    now = next;
  }
}

}  // namespace

ChunkTemplate time_ops(const std::vector<Op>& ops, const CostModel& cost, bool serial,
                       const Interference& interference, bool async_ring) {
  ChunkTemplate t;
  const std::size_t n = ops.size();
  t.ops.resize(n);
  std::vector<double> duration(n);
  for (std::size_t i = 0; i < n; ++i) duration[i] = cost.op_s(ops[i]);
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
