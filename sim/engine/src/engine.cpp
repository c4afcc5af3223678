#include "stepsim/engine/engine.hpp"

#include <algorithm>
#include <optional>
#include <span>
#include <string>

#include "stepsim/engine/resource_model.hpp"
#include "stepsim/base/assert.hpp"

namespace stepsim::sim {

namespace {

struct Event {
  double time_s;  // when the task ends at its current rate
  std::uint32_t task;
  std::uint32_t version;  // stale when the task's rate changed since
};

// Earliest first; at one instant, in task order.
struct Later {
  bool operator()(const Event& a, const Event& b) const {
    if (a.time_s != b.time_s) return a.time_s > b.time_s;
    return a.task > b.task;
  }
};

// One task's engine state, kept together in one cache line: the event loop touches most of
// it at each start and end, and one line per task is much cheaper than a dozen parallel
// arrays (or a second read of the Task) on graphs of tens of thousands of tasks.
struct alignas(64) TaskState {
  double ready_s = 0;  // when its last predecessor ended
  // Its work left at `since`: before it starts, its duration (Task::duration_s). Contention
  // on: its rate.
  double remaining = 0;
  double rate = 1;
  double since = 0;
  std::uint32_t pending = 0;  // predecessors not yet ended
  std::uint32_t crit = TaskTiming::kNone;  // the predecessor that ended last
  std::uint32_t version = 0;  // of its planned end (contention on)
  std::int32_t rendezvous = -1;  // Task::rendezvous
  // Contention on, on a flow's task (a rendezvous group's first member): the flow's
  // resource uses in Engine::flow_uses_ (every member's, in task order); none: it holds
  // nothing.
  std::uint32_t use_begin = 0;
  std::uint16_t use_count = 0;
  bool started : 1 = false;
  bool model_flow : 1 = false;  // in the resource model
  bool slowed : 1 = false;      // ran below full speed at some point
};
static_assert(sizeof(TaskState) == 64);

std::uint32_t resource_index(const ResourceRef& r) {
  return static_cast<std::uint32_t>(r.gpu) * kResourceKinds + static_cast<std::uint32_t>(r.kind);
}

class Engine {
 public:
  using Vertex = boost::graph_traits<TaskGraph::Csr>::vertex_descriptor;

  Engine(const TaskGraph& graph, const EngineOptions& options) : graph_(graph), options_(options) {
    const std::size_t n = graph.size();
    state_.resize(n);
    result_.timings.resize(n);
    const auto& csr = graph.graph();
    const auto groups = static_cast<std::size_t>(graph.rendezvous_count());
    group_left_.assign(groups, 0);
    group_ready_s_.assign(groups, 0.0);
    group_crit_.assign(groups, TaskTiming::kNone);
    group_offsets_.assign(groups + 1, 0);
    // Predecessor counts, in an array of their own: counted into the 64-byte states, each
    // edge missed the cache.
    std::vector<std::uint32_t> predecessors(n, 0);
    for (std::uint32_t u = 0; u < n; ++u) {
      auto [e, end] = boost::out_edges(static_cast<Vertex>(u), csr);
      for (; e != end; ++e) ++predecessors[boost::target(*e, csr)];
    }
    // One pass over the tasks (tens of thousands of 72-byte records): rendezvous groups and,
    // with contention on, how many GPUs the resources span.
    std::vector<std::uint32_t> grouped;  // tasks in a rendezvous group, in task order
    std::int32_t gpus = 0;
    if (options.contention) flow_uses_.reserve(n);  // most flows use one resource
    for (std::uint32_t u = 0; u < n; ++u) {
      const Task& t = graph.tasks()[u];
      TaskState& s = state_[u];
      s.rendezvous = t.rendezvous;
      s.remaining = t.duration_s;
      s.pending = predecessors[u];
      if (t.rendezvous >= 0) {
        ++group_left_[static_cast<std::size_t>(t.rendezvous)];
        grouped.push_back(u);
      }
      if (options.contention) {
        const TaskResources& r = t.resources;
        gpus = std::max({gpus, r.compute_gpu + 1, r.nccl_gpu + 1});
        for (std::uint8_t i = 0; i < r.link_count; ++i) gpus = std::max(gpus, r.links[i].gpu + 1);
        if (t.rendezvous < 0) set_uses(s, &u, 1);
      }
    }
    for (std::size_t g = 0; g < groups; ++g) group_offsets_[g + 1] = group_offsets_[g] + group_left_[g];
    group_members_.resize(group_offsets_[groups]);
    std::vector<std::uint32_t> fill(group_offsets_.begin(), group_offsets_.end() - 1);
    for (const std::uint32_t u : grouped) {
      const auto g = static_cast<std::size_t>(state_[u].rendezvous);
      group_members_[fill[g]++] = u;
    }
    group_running_.assign(groups, 0);
    if (options.contention) {
      for (std::size_t g = 0; g < groups; ++g) {
        const std::uint32_t* members = &group_members_[group_offsets_[g]];
        set_uses(state_[members[0]], members, group_offsets_[g + 1] - group_offsets_[g]);
      }
      init_resources(gpus);
    }
    events_.reserve(n);
  }

  Result<EngineResult> run() {
    const std::size_t n = graph_.size();
    for (std::uint32_t u = 0; u < n; ++u) {
      if (state_[u].pending == 0) make_ready(u, 0.0);
    }
    settle(0.0);
    std::size_t finished = 0;
    while (!events_.empty()) {
      const double now = events_.front().time_s;
      // Every end at this instant (and the zero-time tasks they release), then one re-solve.
      while (!events_.empty() && events_.front().time_s <= now) {
        std::pop_heap(events_.begin(), events_.end(), Later{});
        const Event ev = events_.back();
        events_.pop_back();
        if (!events_.empty()) prefetch_task(events_.front().task);  // most likely next
        if (ev.version != version_of(ev.task)) continue;
        ++finished;
        finish(ev.task, now);
      }
      settle(now);
    }
    if (finished != n) {
      for (std::uint32_t u = 0; u < n; ++u) {
        if (state_[u].pending != 0 || !state_[u].started) {
          const Task& t = graph_.tasks()[u];
          return Error{"", "",
                       "simulation deadlock: " + std::to_string(n - finished) +
                           " tasks never ran (first: task " + std::to_string(u) + " on rank " +
                           std::to_string(t.rank) + ", stream " + std::string(to_string(t.stream)) +
                           "); the schedule's communication does not match up",
                       ErrorKind::kInternal};
        }
      }
    }
    if (model_) {
      for (std::size_t u = 0; u < n; ++u) {
        result_.timings[u].contended = state_[u].slowed;
        result_.contended_tasks += state_[u].slowed ? 1 : 0;
      }
    }
    return std::move(result_);
  }

 private:
  // ---- resources (contention on) ----

  // `gpus`: one more than the highest GPU any task's resources name.
  void init_resources(std::int32_t gpus) {
    const std::size_t count = static_cast<std::size_t>(gpus) * kResourceKinds;
    std::vector<bool> is_sm(count, false);
    for (std::size_t g = 0; g < static_cast<std::size_t>(gpus); ++g) {
      is_sm[g * kResourceKinds + static_cast<std::size_t>(ResourceKind::kSm)] = true;
    }
    const std::size_t n = graph_.size();
    std::vector<double> capacity(count, 1.0);
    const std::size_t slow = std::min(static_cast<std::size_t>(gpus), options_.nic_capacity.size());
    for (std::size_t g = 0; g < slow; ++g) {
      for (const ResourceKind k : {ResourceKind::kNicTx, ResourceKind::kNicRx}) {
        capacity[g * kResourceKinds + static_cast<std::size_t>(k)] = options_.nic_capacity[g];
      }
    }
    model_.emplace(std::move(capacity), std::move(is_sm), options_.interference, n);
  }

  std::uint32_t version_of(std::uint32_t u) const { return state_[u].version; }

  // What finishing task u reads first: its state and its timing.
  void prefetch_task(std::uint32_t u) const {
    __builtin_prefetch(&state_[u]);
    __builtin_prefetch(&result_.timings[u]);
    if (model_) model_->prefetch(u);
  }

  // The uses of the flow of `members` (one task, or a rendezvous group) onto its state `s`;
  // built once, here, in task order: the resource model keeps a view of them.
  void set_uses(TaskState& s, const std::uint32_t* members, std::size_t count) {
    const std::size_t begin = flow_uses_.size();
    for (std::size_t i = 0; i < count; ++i) {
      append_uses(graph_.tasks()[members[i]].resources, flow_uses_);
    }
    STEPSIM_ASSERT(flow_uses_.size() - begin <= 0xffff);
    s.use_begin = static_cast<std::uint32_t>(begin);
    s.use_count = static_cast<std::uint16_t>(flow_uses_.size() - begin);
  }

  static void append_uses(const TaskResources& r, std::vector<FlowUse>& out) {
    if (r.compute_gpu >= 0) {
      out.push_back(FlowUse{.resource = resource_index({r.compute_gpu, ResourceKind::kSm})});
    }
    if (r.nccl_gpu >= 0) {
      out.push_back(FlowUse{.resource = resource_index({r.nccl_gpu, ResourceKind::kSm}),
                            .weight = 0,
                            .nccl_kernel = true});
    }
    for (std::uint8_t i = 0; i < r.link_count; ++i) {
      out.push_back(FlowUse{.resource = resource_index(r.links[i])});
    }
  }

  // The tasks of flow `flow` (a rendezvous group's first member stands for the group).
  template <class F>
  void for_members(std::uint32_t flow, F&& f) {
    const std::int32_t g = state_[flow].rendezvous;
    if (g < 0) {
      f(flow);
      return;
    }
    const auto gi = static_cast<std::size_t>(g);
    for (std::uint32_t i = group_offsets_[gi]; i < group_offsets_[gi + 1]; ++i) f(group_members_[i]);
  }

  std::uint32_t flow_of(std::uint32_t u) const {
    const std::int32_t g = state_[u].rendezvous;
    return g < 0 ? u : group_members_[group_offsets_[static_cast<std::size_t>(g)]];
  }

  // Applies the rates the model re-solved: each changed flow's running members advance their
  // work at the old rate up to `now` and are re-planned at the new one.
  void settle(double now) {
    if (!model_) return;
    model_->update([&](std::uint32_t flow, double rate) {
      STEPSIM_ASSERT(rate > 0);
      for_members(flow, [&](std::uint32_t u) {
        if (!running(u)) return;
        TaskState& s = state_[u];
        s.remaining = std::max(0.0, s.remaining - s.rate * (now - s.since));
        s.since = now;
        s.rate = rate;
        if (rate < 1) s.slowed = true;
        ++s.version;
        push(Event{now + s.remaining / rate, u, s.version});
      });
    });
  }

  // A started task's end is -1 until it ends.
  bool running(std::uint32_t u) const { return state_[u].started && result_.timings[u].end_s < 0; }

  // ---- the event kernel ----

  void push(const Event& e) {
    events_.push_back(e);
    std::push_heap(events_.begin(), events_.end(), Later{});
  }

  void finish(std::uint32_t u, double now) {
    TaskTiming& t = result_.timings[u];
    t.end_s = now;
    if (result_.last_task == TaskTiming::kNone || now > result_.makespan_s) {
      result_.makespan_s = now;
      result_.last_task = u;
    }
    if (state_[u].model_flow) {
      const std::int32_t g = state_[u].rendezvous;
      if (g < 0 || --group_running_[static_cast<std::size_t>(g)] == 0) {
        model_->remove_flow(flow_of(u));
      }
    }
    const auto& csr = graph_.graph();
    auto [e, end] = boost::out_edges(static_cast<Vertex>(u), csr);
    // The successors' states and tasks are far apart in memory and read below one after
    // another: ask for all of them first, so that their cache misses overlap.
    for (auto p = e; p != end; ++p) {
      const auto v = static_cast<std::size_t>(boost::target(*p, csr));
      __builtin_prefetch(&state_[v]);
      if (model_) model_->prefetch(static_cast<std::uint32_t>(v));
    }
    for (; e != end; ++e) {
      const auto v = static_cast<std::uint32_t>(boost::target(*e, csr));
      TaskState& s = state_[v];
      if (s.crit == TaskTiming::kNone || now > s.ready_s) {
        s.ready_s = now;
        s.crit = u;
      }
      if (--s.pending == 0) make_ready(v, now);
    }
  }

  // Starts `members` (one task, or a whole rendezvous group) at `at`.
  void start_flow(const std::uint32_t* members, std::size_t count, double at, std::uint32_t crit) {
    const TaskState& head = state_[members[0]];  // the flow's task
    const bool holds = model_ && head.use_count > 0;
    for (std::size_t i = 0; i < count; ++i) {
      const std::uint32_t u = members[i];
      TaskTiming& t = result_.timings[u];
      t.start_s = at;
      t.end_s = -1;  // running
      t.critical_pred = crit;
      TaskState& s = state_[u];
      s.started = true;
      if (!holds) {
        push(Event{at + s.remaining, u, s.version});
        continue;
      }
      s.model_flow = true;
      s.since = at;
      s.rate = 1;
    }
    if (!holds) return;
    const std::int32_t g = head.rendezvous;
    if (g >= 0) group_running_[static_cast<std::size_t>(g)] = static_cast<std::uint32_t>(count);
    const double rate = model_->add_flow(
        members[0], std::span(flow_uses_.data() + head.use_begin, head.use_count), 1.0,
        /*report_alone=*/false);
    if (!(rate > 0)) return;  // shares a resource: the next re-solve plans it
    // Alone on its resources, it keeps this rate until another event, and its end is planned
    // here rather than at the next re-solve; unless an end falls at `at` itself, which the
    // re-solve after this instant's batch of ends must push (as for every other flow).
    for (std::size_t i = 0; i < count; ++i) {
      if (!(at + state_[members[i]].remaining / rate > at)) {
        model_->report_at_update(members[0]);
        return;
      }
    }
    for (std::size_t i = 0; i < count; ++i) {
      TaskState& s = state_[members[i]];
      s.rate = rate;
      if (rate < 1) s.slowed = true;
      ++s.version;
      push(Event{at + s.remaining / rate, members[i], s.version});
    }
  }

  void make_ready(std::uint32_t u, double now) {
    const TaskState& s = state_[u];
    const std::int32_t g = s.rendezvous;
    if (g < 0) {
      start_flow(&u, 1, now, s.crit);
      return;
    }
    const auto gi = static_cast<std::size_t>(g);
    if (group_crit_[gi] == TaskTiming::kNone || s.ready_s > group_ready_s_[gi]) {
      group_ready_s_[gi] = s.ready_s;
      group_crit_[gi] = s.crit;
    }
    if (--group_left_[gi] > 0) return;
    start_flow(&group_members_[group_offsets_[gi]], group_offsets_[gi + 1] - group_offsets_[gi],
               now, group_crit_[gi]);
  }

  const TaskGraph& graph_;
  EngineOptions options_;
  std::vector<TaskState> state_;
  std::vector<std::uint32_t> group_left_;
  std::vector<double> group_ready_s_;
  std::vector<std::uint32_t> group_crit_;
  std::vector<std::uint32_t> group_offsets_;
  std::vector<std::uint32_t> group_members_;
  std::vector<std::uint32_t> group_running_;
  std::vector<Event> events_;  // a binary heap (Later)
  std::optional<ResourceModel> model_;  // contention on
  std::vector<FlowUse> flow_uses_;      // every flow's (TaskState::use_begin), built at the start
  EngineResult result_;
};

}  // namespace

Result<EngineResult> run_engine(const TaskGraph& graph, const EngineOptions& options) {
  STEPSIM_ASSERT(graph.finalized());
  return Engine(graph, options).run();
}

}  // namespace stepsim::sim
