#include "stepsim/graph/build_full_rank.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>

#include "stepsim/base/assert.hpp"
#include "stepsim/layout/rank_layout.hpp"

namespace stepsim::sim {

namespace {

using Vertex = boost::graph_traits<TaskGraph::Csr>::vertex_descriptor;

Error not_modelled(const std::string& what) {
  return Error{"", "--full-rank", ": --full-rank with " + what + " is not modelled yet"};
}

/// Megatron's process group of a CommGroup: the rank generator it comes from (the decoder's,
/// order tp-cp-ep-dp-pp with ep 1, or the experts', tp = etp, ep, dp = expert dp) and the
/// dimensions it spans. kEmbedding (first and last stage of one pipeline) has none.
struct GroupToken {
  bool expert = false;
  const char* token = "";
};

std::optional<GroupToken> token_of(CommGroup g, bool distributed_optimizer) {
  switch (g) {
    case CommGroup::kTensor: return GroupToken{false, "tp"};
    case CommGroup::kContext: return GroupToken{false, "cp"};
    case CommGroup::kData: return GroupToken{false, "dp-cp"};
    case CommGroup::kTensorData: return GroupToken{false, "tp-cp-dp"};  // FP8 amax reduction
    case CommGroup::kTensorContext:
      return GroupToken{false, "tp-cp"};  // ... tp_only_amax_red
    case CommGroup::kExpert: return GroupToken{true, "ep"};
    case CommGroup::kExpertTensor: return GroupToken{true, "tp"};
    case CommGroup::kExpertTensorExpert: return GroupToken{true, "tp-ep"};
    case CommGroup::kExpertData: return GroupToken{true, "dp"};
    // The optimizer's grad_stats_parallel_group: the world (intra_dist_opt_group) or the
    // model-parallel group.
    case CommGroup::kGradStats:
      return GroupToken{false, distributed_optimizer ? "tp-cp-dp-pp" : "tp-pp"};
    // kContextA2a: hierarchical, FullRankBuilder::group_ids makes its groups.
    case CommGroup::kEmbedding:
    case CommGroup::kContextA2a: break;
  }
  return std::nullopt;
}

/// Union-find over global ranks (path halving; the smaller root wins, so roots do not
/// depend on the order of the unions).
struct RankSets {
  std::vector<std::int32_t> parent;
  explicit RankSets(std::int64_t n) : parent(static_cast<std::size_t>(n)) {
    for (std::size_t i = 0; i < parent.size(); ++i) parent[i] = static_cast<std::int32_t>(i);
  }
  std::int32_t find(std::int32_t r) {
    while (parent[static_cast<std::size_t>(r)] != r) {
      auto& p = parent[static_cast<std::size_t>(r)];
      p = parent[static_cast<std::size_t>(p)];
      r = p;
    }
    return r;
  }
  void unite(std::int32_t a, std::int32_t b) {
    a = find(a);
    b = find(b);
    if (a != b) parent[static_cast<std::size_t>(std::max(a, b))] = std::min(a, b);
  }
};

class FullRankBuilder {
 public:
  FullRankBuilder(const Workload& w, const WorkloadPlan& plan, const Schedule& schedule,
                  const CostModel& cost, const BuildOptions& options,
                  const std::vector<double>& scale)
      : w_(w), plan_(plan), schedule_(schedule), cost_(cost), options_(options), scale_(scale),
        layout_(ParallelSizes{.tp = w.training.tensor_model_parallel_size,
                              .cp = w.training.context_parallel_size,
                              .dp = std::max<std::int64_t>(1, w.training.data_parallel_size),
                              .pp = w.training.pipeline_model_parallel_size}) {
    const TrainingConfig& t = w.training;
    tp_ = t.tensor_model_parallel_size;
    cp_ = t.context_parallel_size;
    dp_ = std::max<std::int64_t>(1, t.data_parallel_size);
    pp_ = t.pipeline_model_parallel_size;
    // A send crosses the NICs when its ranks sit in different NVLink domains.
    gpus_per_node_ = std::max<std::int64_t>(1, w.system.nvlink_domain());
    if (w.model.moe()) {
      experts_.emplace(ParallelSizes{.tp = t.expert_tensor_parallel(),
                                     .ep = t.expert_model_parallel_size,
                                     .dp = std::max<std::int64_t>(1, t.expert_data_parallel_size),
                                     .pp = pp_});
    }
  }

  Result<std::unique_ptr<FullRankStep>> build() {
    const std::int64_t world = w_.training.world_size;
    if (layout_.world_size() != world || (experts_ && experts_->world_size() != world)) {
      return Error{"", "", "rank layout of " + std::to_string(layout_.world_size()) +
                               " GPUs but world_size " + std::to_string(world),
                   ErrorKind::kInternal};
    }
    out_ = std::make_unique<FullRankStep>();
    out_->lanes = tp_ * cp_ * dp_;
    map_ranks();
    if (Status ok = join_action_groups(); !ok.ok()) return ok.errors();
    if (Status ok = make_builds(); !ok.ok()) return ok.errors();
    concatenate_refs();
    if (Status ok = copy_lanes(); !ok.ok()) return ok.errors();
    out_->step.graph.finalize();
    return std::move(out_);
  }

 private:
  std::int64_t lane_of(std::int64_t tp, std::int64_t cp, std::int64_t dp) const {
    return tp + tp_ * (cp + cp_ * dp);
  }

  std::int32_t rank_of(std::int64_t lane, std::int32_t stage) const {
    return rank_table_[static_cast<std::size_t>(lane * pp_ + stage)];
  }

  void map_ranks() {
    const auto world = static_cast<std::size_t>(layout_.world_size());
    rank_table_.assign(world, 0);
    out_->stage_of_rank.assign(world, 0);
    out_->lane_of_rank.assign(world, 0);
    for (std::size_t r = 0; r < world; ++r) {
      const ParallelCoords c = layout_.coords(static_cast<std::int64_t>(r));
      const std::int64_t lane = lane_of(c.tp, c.cp, c.dp);
      rank_table_[static_cast<std::size_t>(lane * pp_ + c.pp)] = static_cast<std::int32_t>(r);
      out_->stage_of_rank[r] = static_cast<std::int32_t>(c.pp);
      out_->lane_of_rank[r] = static_cast<std::int32_t>(lane);
    }
  }

  double scale_of_rank(std::int32_t r) const {
    const auto ri = static_cast<std::size_t>(r);
    return ri < scale_.size() ? scale_[ri] : 1.0;
  }

  // The GPUs whose actions run as one: those that share a collective inside a forward or
  // backward (TP, CP; with MoE the expert groups; with FP8 delayed scaling the tp-cp-dp amax
  // group), closed transitively. Each set's actions are one rendezvous, paced by its slowest
  // member.
  Status join_action_groups() {
    const std::int64_t world = layout_.world_size();
    RankSets sets(world);
    std::vector<bool> seen(16, false);
    const auto join = [&](const std::vector<Op>& ops) -> Status {
      for (const Op& op : ops) {
        const auto* coll = std::get_if<CollectiveOp>(&op.shape);
        if (coll == nullptr || seen[static_cast<std::size_t>(coll->group)]) continue;
        seen[static_cast<std::size_t>(coll->group)] = true;
        // Hierarchical CP's a2a groups lie inside the CP groups, joined below.
        if (coll->group == CommGroup::kContextA2a) continue;
        const std::optional<GroupToken> tok =
            token_of(coll->group, w_.training.use_distributed_optimizer);
        if (!tok || (tok->expert && !experts_)) {
          return not_modelled("the " + op.name + " collective over the " +
                              std::string(to_string(coll->group)) + " group inside an action");
        }
        const RankGenerator& gen = tok->expert ? *experts_ : layout_;
        for (const std::vector<std::int64_t>& g : gen.groups(tok->token)) {
          for (const std::int64_t r : g) {
            sets.unite(static_cast<std::int32_t>(g.front()), static_cast<std::int32_t>(r));
          }
        }
      }
      return ok_status();
    };
    // TP and CP peers always: their exchanges inside an action (the CP ring's P2P, TE's
    // userbuffers) are not all CollectiveOps over kTensor/kContext.
    for (const std::vector<std::int64_t>& g : layout_.groups("tp-cp")) {
      for (const std::int64_t r : g) {
        sets.unite(static_cast<std::int32_t>(g.front()), static_cast<std::int32_t>(r));
      }
    }
    for (const StagePlan& stage : plan_.stages) {
      for (const ChunkPlan& c : stage.chunks) {
        for (const std::vector<Op>* ops : {&c.forward, &c.backward, &c.backward_wgrad_deferred}) {
          if (Status ok = join(*ops); !ok.ok()) return ok;
        }
      }
    }
    action_root_.resize(static_cast<std::size_t>(world));
    root_pace_.assign(static_cast<std::size_t>(world), 0.0);
    root_members_.assign(static_cast<std::size_t>(world), 0);
    for (std::int32_t r = 0; r < world; ++r) {
      const std::int32_t root = sets.find(r);
      action_root_[static_cast<std::size_t>(r)] = root;
      double& pace = root_pace_[static_cast<std::size_t>(root)];
      pace = std::max(pace, scale_of_rank(r));
      ++root_members_[static_cast<std::size_t>(root)];
    }
    return ok_status();
  }

  /// Per global rank, the index of its group of `g` (Megatron's group order), and the
  /// group's size; computed once per kind.
  const std::pair<std::vector<std::int32_t>, std::int64_t>& group_ids(CommGroup g) {
    auto it = group_ids_.find(g);
    if (it != group_ids_.end()) return it->second;
    std::vector<std::vector<std::int64_t>> groups;
    if (g == CommGroup::kContextA2a) {
      // Megatron's hierarchical level 0 inside every CP group (parallel_state.py
      // create_hierarchical_groups).
      const std::vector<std::int64_t>& levels = w_.training.hierarchical_context_parallel_sizes;
      STEPSIM_ASSERT(levels.size() == 2);
      for (const std::vector<std::int64_t>& cp : layout_.groups("cp")) {
        for (std::vector<std::int64_t>& a2a : hierarchical_groups(cp, levels, 0)) {
          groups.push_back(std::move(a2a));
        }
      }
    } else {
      const std::optional<GroupToken> tok =
            token_of(g, w_.training.use_distributed_optimizer);
      STEPSIM_ASSERT(tok && (!tok->expert || experts_));
      const RankGenerator& gen = tok->expert ? *experts_ : layout_;
      groups = gen.groups(tok->token);
    }
    std::pair<std::vector<std::int32_t>, std::int64_t> out;
    out.first.assign(static_cast<std::size_t>(layout_.world_size()), 0);
    for (std::size_t i = 0; i < groups.size(); ++i) {
      for (const std::int64_t r : groups[i]) out.first[static_cast<std::size_t>(r)] = static_cast<std::int32_t>(i);
    }
    out.second = static_cast<std::int64_t>(groups.front().size());
    return group_ids_.emplace(g, std::move(out)).first->second;
  }

  // One representative build per distinct pace: per lane and stage, the slowest GPU of the
  // set its actions run with (join_action_groups) sets the pace of its actions.
  Status make_builds() {
    std::map<std::vector<double>, std::int32_t> index;
    out_->build_of_lane.assign(static_cast<std::size_t>(out_->lanes), 0);
    for (std::int64_t l = 0; l < out_->lanes; ++l) {
      std::vector<double> pace(static_cast<std::size_t>(pp_), 0.0);
      for (std::int32_t s = 0; s < pp_; ++s) {
        const std::int32_t root = action_root_[static_cast<std::size_t>(rank_of(l, s))];
        pace[static_cast<std::size_t>(s)] = root_pace_[static_cast<std::size_t>(root)];
      }
      auto [it, fresh] = index.emplace(pace, static_cast<std::int32_t>(out_->builds.size()));
      if (fresh) {
        BuildOptions o = options_;
        o.compute_scale = pace;
        Result<BuiltStep> made = build_step(w_, plan_, schedule_, cost_, o);
        if (!made.ok()) return made.errors();
        out_->builds.push_back(std::move(made).value());
        if (out_->builds.back().graph.size() != out_->builds.front().graph.size()) {
          return Error{"", "", "representative steps of different pace differ in shape",
                       ErrorKind::kInternal};
        }
      }
      out_->build_of_lane[static_cast<std::size_t>(l)] = it->second;
    }
    out_->lane_tasks = static_cast<std::uint32_t>(out_->builds.front().graph.size());
    return ok_status();
  }

  void concatenate_refs() {
    BuiltStep& s = out_->step;
    s.chunks_per_rank = out_->builds.front().chunks_per_rank;
    for (const BuiltStep& b : out_->builds) {
      offsets_.push_back(Offsets{.actions = static_cast<std::int32_t>(s.actions.size()),
                                 .transfers = static_cast<std::int32_t>(s.transfers.size()),
                                 .step_ops = static_cast<std::int32_t>(s.step_ops.size())});
      const auto templates = static_cast<std::int32_t>(s.templates.size());
      s.templates.insert(s.templates.end(), b.templates.begin(), b.templates.end());
      for (ActionRef a : b.actions) {
        a.template_index += templates;
        s.actions.push_back(a);
      }
      s.transfers.insert(s.transfers.end(), b.transfers.begin(), b.transfers.end());
      s.step_ops.insert(s.step_ops.end(), b.step_ops.begin(), b.step_ops.end());
    }
  }

  // The rendezvous id of `key`, a fresh one the first time (ids in first-seen order, so the
  // graph is the same run after run).
  std::int32_t rendezvous(std::uint64_t key) {
    auto [it, fresh] = rendezvous_of_.emplace(key, 0);
    if (fresh) it->second = out_->step.graph.new_rendezvous();
    return it->second;
  }

  std::int64_t node_of(std::int32_t rank) const { return rank / gpus_per_node_; }

  Status copy_lanes() {
    BuiltStep& s = out_->step;
    const std::uint32_t n = out_->lane_tasks;
    const auto lanes = static_cast<std::size_t>(out_->lanes);
    const TaskGraph& first = out_->builds.front().graph;
    const std::size_t edges = boost::num_edges(first.graph());
    // TaskId is 32 bits (and payloads, rendezvous ids 31).
    if (static_cast<std::uint64_t>(lanes) * n >= (1ULL << 31)) {
      return not_modelled(std::to_string(lanes) + " pipelines of " + std::to_string(n) +
                          " tasks (the task graph holds at most 2^31 tasks)");
    }
    s.graph.reserve(lanes * n, lanes * edges);
    for (std::size_t l = 0; l < lanes; ++l) {
      const auto k = static_cast<std::size_t>(out_->build_of_lane[l]);
      const BuiltStep& b = out_->builds[k];
      for (std::uint32_t u = 0; u < n; ++u) {
        Task t = b.graph.tasks()[u];
        if (Status placed = place_task(t, b, offsets_[k], u, l); !placed) return placed;
        s.graph.add_task(t);
      }
      copy_edges(b, l);
    }
    return ok_status();
  }

  struct Offsets {
    std::int32_t actions = 0, transfers = 0, step_ops = 0;
  };

  /// Representative task `u` of `b` as lane `l`'s: on the lane's GPUs, its payload among the
  /// lane's, and joined with its copies. Joined copies of a representative task u: actions
  /// over their set (key: u and the set's root rank), collectives over their group (u and the
  /// group's index), the embedding all-reduce per lane (its representative rendezvous and the
  /// lane).
  Status place_task(Task& t, const BuiltStep& b, const Offsets& off, std::uint32_t u,
                    std::size_t l) {
    const auto lane = static_cast<std::int64_t>(l);
    const auto global = [&](std::int32_t stage) { return stage < 0 ? stage : rank_of(lane, stage); };
    const std::int32_t stage = t.rank;
    t.rank = global(stage);
    TaskResources& res = t.resources;
    res.compute_gpu = global(res.compute_gpu);
    res.nccl_gpu = global(res.nccl_gpu);
    for (std::uint8_t i = 0; i < res.link_count; ++i) res.links[i].gpu = global(res.links[i].gpu);
    const std::int32_t rep_group = t.rendezvous;
    t.rendezvous = -1;
    switch (t.kind) {
      case TaskKind::kCompute: {
        t.payload += off.actions;
        const std::int32_t root = action_root_[static_cast<std::size_t>(t.rank)];
        if (root_members_[static_cast<std::size_t>(root)] > 1) {
          t.rendezvous = rendezvous((static_cast<std::uint64_t>(u) << 32) |
                                    static_cast<std::uint64_t>(root));
        }
        break;
      }
      case TaskKind::kTransfer: {
        const TransferRef& ref = b.transfers[static_cast<std::size_t>(t.payload)];
        t.payload += off.transfers;
        const bool inter = node_of(global(ref.sender)) != node_of(global(ref.receiver));
        if (inter != ref.inter_node) {
          // This lane's peers sit across a node boundary where the representative's do
          // not (or the other way round).
          t.duration_s = cost_.p2p_s(P2POp{ref.bytes, inter});
          res.links[0].kind = inter ? ResourceKind::kNicTx : ResourceKind::kNvlinkTx;
          res.links[1].kind = inter ? ResourceKind::kNicRx : ResourceKind::kNvlinkRx;
        }
        break;
      }
      case TaskKind::kCollective: return join_collective(t, b, off, u, l, rep_group);
      case TaskKind::kStepOp: t.payload += off.step_ops; break;
      case TaskKind::kJoin:
      case TaskKind::kDelay:
      case TaskKind::kHost:
        break;
    }
    return ok_status();
  }

  /// A collective of lane `l`: joined with the copies of its group, or with the embedding
  /// group's per lane.
  Status join_collective(Task& t, const BuiltStep& b, const Offsets& off, std::uint32_t u,
                         std::size_t l, std::int32_t rep_group) {
    const std::uint32_t n = out_->lane_tasks;
    const StepOpRef& ref = b.step_ops[static_cast<std::size_t>(t.payload)];
    t.payload += off.step_ops;
    const auto& coll = std::get<CollectiveOp>(ref.op->shape);
    if (coll.group == CommGroup::kEmbedding) {
      STEPSIM_ASSERT(rep_group >= 0);
      t.rendezvous = rendezvous((static_cast<std::uint64_t>(n + static_cast<std::uint32_t>(rep_group)) << 32) |
                                static_cast<std::uint64_t>(l));
    } else {
      // Only the grad-stats all-reduces span the stages of a pipeline (their
      // representative rendezvous); every other group lies inside one stage.
      STEPSIM_ASSERT(rep_group < 0 || coll.group == CommGroup::kGradStats);
      const std::optional<GroupToken> tok =
          token_of(coll.group, w_.training.use_distributed_optimizer);
      if (coll.group != CommGroup::kContextA2a && (!tok || (tok->expert && !experts_))) {
        return not_modelled("the " + ref.op->name + " collective over the " +
                            std::string(to_string(coll.group)) + " group");
      }
      const auto& [ids, size] = group_ids(coll.group);
      if (coll.group_size != size) {
        return Error{"", "",
                     "plan bug: " + ref.op->name + " over " +
                         std::to_string(coll.group_size) + " ranks, its group has " +
                         std::to_string(size),
                     ErrorKind::kInternal};
      }
      if (size > 1) {
        // Keyed by the representative rendezvous where the group spans stages (each
        // stage's copy is another task u).
        const std::uint64_t key =
            rep_group >= 0 ? n + static_cast<std::uint32_t>(rep_group) : u;
        t.rendezvous = rendezvous(
            (key << 32) | static_cast<std::uint64_t>(ids[static_cast<std::size_t>(t.rank)]));
      }
    }
    return ok_status();
  }

  /// Lane `l`'s copy of the representative's edges.
  void copy_edges(const BuiltStep& b, std::size_t l) {
    const std::uint32_t n = out_->lane_tasks;
    BuiltStep& s = out_->step;
    const auto base = static_cast<std::uint32_t>(l * n);
    const auto& csr = b.graph.graph();
    for (std::uint32_t u = 0; u < n; ++u) {
      auto [e, end] = boost::out_edges(static_cast<Vertex>(u), csr);
      for (; e != end; ++e) {
        s.graph.add_edge(TaskId{base + u},
                         TaskId{base + static_cast<std::uint32_t>(boost::target(*e, csr))});
      }
    }
  }

  const Workload& w_;
  const WorkloadPlan& plan_;
  const Schedule& schedule_;
  const CostModel& cost_;
  const BuildOptions& options_;
  const std::vector<double>& scale_;
  RankGenerator layout_;
  std::optional<RankGenerator> experts_;  // MoE: Megatron's expert rank generator
  std::int64_t tp_ = 1, cp_ = 1, dp_ = 1, pp_ = 1, gpus_per_node_ = 1;
  std::unique_ptr<FullRankStep> out_;
  std::vector<std::int32_t> rank_table_;  // [lane * pp + stage] -> global rank
  std::vector<Offsets> offsets_;          // per build
  std::unordered_map<std::uint64_t, std::int32_t> rendezvous_of_;
  std::vector<std::int32_t> action_root_;   // per rank: the root of its action set
  std::vector<double> root_pace_;           // per root: the set's largest compute scale
  std::vector<std::int32_t> root_members_;  // per root: the set's size
  std::map<CommGroup, std::pair<std::vector<std::int32_t>, std::int64_t>> group_ids_;
};

}  // namespace

Result<std::unique_ptr<FullRankStep>> build_full_rank(const Workload& w, const WorkloadPlan& plan,
                                                      const Schedule& schedule,
                                                      const CostModel& cost,
                                                      const BuildOptions& options,
                                                      const std::vector<double>& gpu_compute_scale) {
  return FullRankBuilder(w, plan, schedule, cost, options, gpu_compute_scale).build();
}

}  // namespace stepsim::sim
