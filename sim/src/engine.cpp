#include "stepsim/sim/engine.hpp"

#include <string>

namespace stepsim::sim {

namespace {

struct Event {
  double time_s;  // when the task ends
  std::uint32_t task;
};

class Engine {
 public:
  using Vertex = boost::graph_traits<TaskGraph::Csr>::vertex_descriptor;

  explicit Engine(const TaskGraph& graph) : graph_(graph) {
    const std::size_t n = graph.size();
    pending_.assign(n, 0);
    ready_s_.assign(n, 0.0);
    crit_.assign(n, TaskTiming::kNone);
    result_.timings.resize(n);
    started_.assign(n, false);
    const auto& csr = graph.graph();
    for (std::uint32_t u = 0; u < n; ++u) {
      auto [e, end] = boost::out_edges(static_cast<Vertex>(u), csr);
      for (; e != end; ++e) ++pending_[boost::target(*e, csr)];
    }
    const auto groups = static_cast<std::size_t>(graph.rendezvous_count());
    group_left_.assign(groups, 0);
    group_ready_s_.assign(groups, 0.0);
    group_crit_.assign(groups, TaskTiming::kNone);
    group_offsets_.assign(groups + 1, 0);
    for (const Task& t : graph.tasks()) {
      if (t.rendezvous >= 0) ++group_left_[static_cast<std::size_t>(t.rendezvous)];
    }
    for (std::size_t g = 0; g < groups; ++g) group_offsets_[g + 1] = group_offsets_[g] + group_left_[g];
    group_members_.resize(group_offsets_[groups]);
    std::vector<std::uint32_t> fill(group_offsets_.begin(), group_offsets_.end() - 1);
    for (std::uint32_t u = 0; u < n; ++u) {
      const std::int32_t g = graph.tasks()[u].rendezvous;
      if (g >= 0) group_members_[fill[static_cast<std::size_t>(g)]++] = u;
    }
  }

  Result<EngineResult> run() {
    const std::size_t n = graph_.size();
    for (std::uint32_t u = 0; u < n; ++u) {
      if (pending_[u] == 0) make_ready(u);
    }
    const auto& csr = graph_.graph();
    std::size_t finished = 0;
    for (std::size_t next = 0; next < events_.size(); ++next) {
      const Event ev = events_[next];
      ++finished;
      if (ev.time_s > result_.makespan_s || result_.last_task == TaskTiming::kNone) {
        result_.makespan_s = ev.time_s;
        result_.last_task = ev.task;
      }
      auto [e, end] = boost::out_edges(static_cast<Vertex>(ev.task), csr);
      for (; e != end; ++e) {
        const auto v = static_cast<std::uint32_t>(boost::target(*e, csr));
        if (crit_[v] == TaskTiming::kNone || ev.time_s > ready_s_[v]) {
          ready_s_[v] = ev.time_s;
          crit_[v] = ev.task;
        }
        if (--pending_[v] == 0) make_ready(v);
      }
    }
    if (finished != n) {
      for (std::uint32_t u = 0; u < n; ++u) {
        if (pending_[u] != 0 || !started(u)) {
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
    return std::move(result_);
  }

 private:
  bool started(std::uint32_t u) const { return started_[u]; }

  void start(std::uint32_t u, double at_s, std::uint32_t crit) {
    TaskTiming& t = result_.timings[u];
    t.start_s = at_s;
    t.end_s = at_s + graph_.tasks()[u].duration_s;
    t.critical_pred = crit;
    started_[u] = true;
    events_.push_back(Event{t.end_s, u});
  }

  void make_ready(std::uint32_t u) {
    const std::int32_t g = graph_.tasks()[u].rendezvous;
    if (g < 0) {
      start(u, ready_s_[u], crit_[u]);
      return;
    }
    const auto gi = static_cast<std::size_t>(g);
    if (group_crit_[gi] == TaskTiming::kNone || ready_s_[u] > group_ready_s_[gi]) {
      group_ready_s_[gi] = ready_s_[u];
      group_crit_[gi] = crit_[u];
    }
    if (--group_left_[gi] > 0) return;
    for (std::uint32_t i = group_offsets_[gi]; i < group_offsets_[gi + 1]; ++i) {
      start(group_members_[i], group_ready_s_[gi], group_crit_[gi]);
    }
  }

  const TaskGraph& graph_;
  std::vector<std::uint32_t> pending_;
  std::vector<double> ready_s_;
  std::vector<std::uint32_t> crit_;
  std::vector<std::uint32_t> group_left_;
  std::vector<double> group_ready_s_;
  std::vector<std::uint32_t> group_crit_;
  std::vector<std::uint32_t> group_offsets_;
  std::vector<std::uint32_t> group_members_;
  std::vector<bool> started_;
  std::vector<Event> events_;  // completions, in the order tasks started
  EngineResult result_;
};

}  // namespace

Result<EngineResult> run_engine(const TaskGraph& graph) {
  STEPSIM_ASSERT(graph.finalized());
  return Engine(graph).run();
}

}  // namespace stepsim::sim
