#include "build_full_rank.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <unordered_map>

#include "stepsim/core/assert.hpp"
#include "stepsim/core/rank_layout.hpp"

namespace stepsim::sim {

namespace {

using Vertex = boost::graph_traits<TaskGraph::Csr>::vertex_descriptor;

Error not_modelled(const std::string& what) {
  return Error{"", "--full-rank", ": --full-rank with " + what + " is not modelled yet"};
}

/// What full-rank cannot represent yet, as errors: collectives inside an action over a group
/// other than TP and CP (they would tie lanes of different data-parallel replicas together
/// inside every forward and backward: MoE's expert all-to-alls, FP8 delayed scaling's amax
/// reduction over tp-dp), and per-step collectives over groups other than dp and embedding.
Errors unsupported(const Workload& w, const WorkloadPlan& plan) {
  Errors out;
  if (w.model.moe()) {
    out.push_back(not_modelled("mixture-of-experts layers (model.num_experts=" +
                               std::to_string(w.model.num_experts) + ")"));
    return out;
  }
  const auto check_actions = [&](const std::vector<Op>& ops) {
    for (const Op& op : ops) {
      const auto* coll = std::get_if<CollectiveOp>(&op.shape);
      if (coll == nullptr || coll->group == CommGroup::kTensor ||
          coll->group == CommGroup::kContext) {
        continue;
      }
      out.push_back(not_modelled("the " + op.name + " collective over the " +
                                 std::string(to_string(coll->group)) +
                                 " group inside forward and backward"));
      return true;
    }
    return false;
  };
  const auto check_step = [&](const std::vector<Op>& ops) {
    for (const Op& op : ops) {
      const auto* coll = std::get_if<CollectiveOp>(&op.shape);
      if (coll == nullptr || coll->group == CommGroup::kData ||
          coll->group == CommGroup::kEmbedding) {
        continue;
      }
      out.push_back(not_modelled("the per-step " + op.name + " collective over the " +
                                 std::string(to_string(coll->group)) + " group"));
      return true;
    }
    return false;
  };
  for (const StagePlan& stage : plan.stages) {
    if (check_step(stage.step_ops)) return out;
    for (const ChunkPlan& c : stage.chunks) {
      if (check_actions(c.forward) || check_actions(c.backward) ||
          check_actions(c.backward_wgrad_deferred) || check_actions(c.deferred_wgrad) ||
          check_step(c.grad_sync)) {
        return out;
      }
    }
  }
  return out;
}

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
    gpus_per_node_ = std::max<std::int64_t>(1, w.system.gpus_per_node);
  }

  Result<std::unique_ptr<FullRankStep>> build() {
    if (Errors bad = unsupported(w_, plan_); !bad.empty()) return bad;
    if (layout_.world_size() != w_.training.world_size) {
      return Error{"", "", "rank layout of " + std::to_string(layout_.world_size()) +
                               " GPUs but world_size " + std::to_string(w_.training.world_size),
                   ErrorKind::kInternal};
    }
    out_ = std::make_unique<FullRankStep>();
    out_->lanes = tp_ * cp_ * dp_;
    map_ranks();
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

  // One representative build per distinct pace: per data-parallel replica and stage, the
  // slowest GPU of the stage's TP x CP group sets the pace of its actions.
  Status make_builds() {
    std::map<std::vector<double>, std::int32_t> index;
    out_->build_of_lane.assign(static_cast<std::size_t>(out_->lanes), 0);
    for (std::int64_t d = 0; d < dp_; ++d) {
      std::vector<double> pace(static_cast<std::size_t>(pp_), 0.0);
      for (std::int32_t s = 0; s < pp_; ++s) {
        double& f = pace[static_cast<std::size_t>(s)];
        for (std::int64_t c = 0; c < cp_; ++c) {
          for (std::int64_t t = 0; t < tp_; ++t) {
            f = std::max(f, scale_of_rank(rank_of(lane_of(t, c, d), s)));
          }
        }
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
      for (std::int64_t c = 0; c < cp_; ++c) {
        for (std::int64_t t = 0; t < tp_; ++t) {
          out_->build_of_lane[static_cast<std::size_t>(lane_of(t, c, d))] = it->second;
        }
      }
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
    // Joined copies of a representative task u: actions over the lanes of one replica (key:
    // u and the replica), dp collectives over the lanes of one tp position (u and tp), the
    // embedding all-reduce per lane (its representative rendezvous and the lane).
    const std::uint64_t join_actions = tp_ * cp_ > 1 ? 1 : 0;
    for (std::size_t l = 0; l < lanes; ++l) {
      const auto lane = static_cast<std::int64_t>(l);
      const std::int64_t tp = lane % tp_;
      const std::int64_t dp = lane / (tp_ * cp_);
      const auto k = static_cast<std::size_t>(out_->build_of_lane[l]);
      const BuiltStep& b = out_->builds[k];
      const Offsets& off = offsets_[k];
      const auto global = [&](std::int32_t stage) { return stage < 0 ? stage : rank_of(lane, stage); };
      for (std::uint32_t u = 0; u < n; ++u) {
        Task t = b.graph.tasks()[u];
        const std::int32_t stage = t.rank;
        t.rank = global(stage);
        TaskResources& res = t.resources;
        res.compute_gpu = global(res.compute_gpu);
        res.nccl_gpu = global(res.nccl_gpu);
        for (std::uint8_t i = 0; i < res.link_count; ++i) res.links[i].gpu = global(res.links[i].gpu);
        const std::int32_t rep_group = t.rendezvous;
        t.rendezvous = -1;
        switch (t.kind) {
          case TaskKind::kCompute:
            t.payload += off.actions;
            if (join_actions != 0) {
              t.rendezvous = rendezvous((static_cast<std::uint64_t>(u) << 32) |
                                        static_cast<std::uint64_t>(dp));
            }
            break;
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
          case TaskKind::kCollective: {
            const StepOpRef& ref = b.step_ops[static_cast<std::size_t>(t.payload)];
            t.payload += off.step_ops;
            const auto& coll = std::get<CollectiveOp>(ref.op->shape);
            if (coll.group == CommGroup::kEmbedding) {
              STEPSIM_ASSERT(rep_group >= 0);
              t.rendezvous = rendezvous((static_cast<std::uint64_t>(n + static_cast<std::uint32_t>(rep_group)) << 32) |
                                        static_cast<std::uint64_t>(l));
            } else {
              STEPSIM_ASSERT(coll.group == CommGroup::kData && rep_group < 0);
              if (coll.group_size != dp_ * cp_) {
                return Error{"", "",
                             "plan bug: " + ref.op->name + " over " +
                                 std::to_string(coll.group_size) + " ranks, the dp-cp group has " +
                                 std::to_string(dp_ * cp_),
                             ErrorKind::kInternal};
              }
              t.rendezvous = rendezvous((static_cast<std::uint64_t>(u) << 32) |
                                        static_cast<std::uint64_t>(tp));
            }
            break;
          }
          case TaskKind::kStepOp: t.payload += off.step_ops; break;
          case TaskKind::kJoin:
          case TaskKind::kDelay: break;
        }
        s.graph.add_task(t);
      }
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
    return ok_status();
  }

  struct Offsets {
    std::int32_t actions = 0, transfers = 0, step_ops = 0;
  };

  const Workload& w_;
  const WorkloadPlan& plan_;
  const Schedule& schedule_;
  const CostModel& cost_;
  const BuildOptions& options_;
  const std::vector<double>& scale_;
  RankGenerator layout_;
  std::int64_t tp_ = 1, cp_ = 1, dp_ = 1, pp_ = 1, gpus_per_node_ = 1;
  std::unique_ptr<FullRankStep> out_;
  std::vector<std::int32_t> rank_table_;  // [lane * pp + stage] -> global rank
  std::vector<Offsets> offsets_;          // per build
  std::unordered_map<std::uint64_t, std::int32_t> rendezvous_of_;
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
