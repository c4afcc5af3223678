// Megatron's process groups as the executor makes them, the members of a rank's groups, and
// when a measured call's last peer arrived (executor.hpp: peers_ready).

#include "peer_groups.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>
#include <variant>

#include "stepsim/cost/nccl_model.hpp"

namespace stepsim::calib {

std::vector<std::int32_t> members_of(CommGroup g, const RankLayout& layout, std::int32_t me,
                                     bool distributed_optimizer) {
  const auto c = layout.coord_of(me);
  std::vector<std::int32_t> out;
  switch (g) {
    case CommGroup::kTensor:
      for (std::int32_t t = 0; t < layout.tp; ++t) {
        out.push_back(layout.global_rank(c.pp, c.dp, t, c.cp));
      }
      break;
    case CommGroup::kData:
      for (std::int32_t d = 0; d < layout.dp; ++d) {
        for (std::int32_t k = 0; k < layout.cp; ++k)
          out.push_back(layout.global_rank(c.pp, d, c.tp, k));
      }
      break;
    case CommGroup::kEmbedding:
      out.push_back(layout.global_rank(0, c.dp, c.tp, c.cp));
      out.push_back(layout.global_rank(layout.pp - 1, c.dp, c.tp, c.cp));
      break;
    case CommGroup::kTensorData:
      for (std::int32_t d = 0; d < layout.dp; ++d) {
        for (std::int32_t k = 0; k < layout.cp; ++k) {
          for (std::int32_t t = 0; t < layout.tp; ++t)
            out.push_back(layout.global_rank(c.pp, d, t, k));
        }
      }
      break;
    case CommGroup::kTensorContext:
      for (std::int32_t k = 0; k < layout.cp; ++k) {
        for (std::int32_t t = 0; t < layout.tp; ++t)
          out.push_back(layout.global_rank(c.pp, c.dp, t, k));
      }
      break;
    case CommGroup::kContext:
      for (std::int32_t k = 0; k < layout.cp; ++k)
        out.push_back(layout.global_rank(c.pp, c.dp, c.tp, k));
      break;
    case CommGroup::kGradStats:
      for (std::int32_t r = 0; r < layout.world_size(); ++r) {
        const auto o = layout.coord_of(r);
        if (distributed_optimizer || (o.dp == c.dp && o.cp == c.cp)) out.push_back(r);
      }
      break;
    case CommGroup::kContextA2a: {
      const std::int32_t first = c.cp - c.cp % layout.cp_a2a;
      for (std::int32_t k = first; k < first + layout.cp_a2a; ++k) {
        out.push_back(layout.global_rank(c.pp, c.dp, c.tp, k));
      }
      break;
    }
    case CommGroup::kExpert:
    case CommGroup::kExpertTensor:
    case CommGroup::kExpertTensorExpert:
    case CommGroup::kExpertData: {
      if (!layout.moe) break;
      const std::string_view token = g == CommGroup::kExpert         ? "ep"
                                     : g == CommGroup::kExpertTensor ? "tp"
                                     : g == CommGroup::kExpertData   ? "dp"
                                                                     : "tp-ep";
      for (const std::int64_t r : layout.expert_generator().group_of(token, me)) {
        out.push_back(static_cast<std::int32_t>(r));
      }
      break;
    }
  }
  return out;
}

namespace {

/// The tasks of a stage's program that a peer must match: collectives of groups that span
/// stages, by op name and turn; P2P transfers, by tensor, micro-batch, producer virtual
/// stage and direction.
struct StageIndex {
  std::map<std::string, std::vector<std::size_t>> calls_by_name;  // collective tasks
  std::map<std::tuple<int, std::int32_t, std::int32_t, bool>, std::size_t> transfer_task;
  std::vector<std::size_t> turn;  // per task: its turn among the calls of its name
};

StageIndex index_stage(const std::vector<ExecTask>& tasks) {
  StageIndex x;
  x.turn.assign(tasks.size(), 0);
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const ExecTask& t = tasks[i];
    if (t.kind == ExecTask::Kind::kComm) {
      for (const sim::Transfer& tr : t.transfers) {
        x.transfer_task[{static_cast<int>(tr.tensor), tr.microbatch, tr.producer_virtual_stage,
                         tr.send}] = i;
      }
    } else if (std::holds_alternative<CollectiveOp>(t.op.shape)) {
      auto& calls = x.calls_by_name[t.op_name];
      x.turn[i] = calls.size();
      calls.push_back(i);
    }
  }
  return x;
}

}  // namespace

std::vector<std::vector<double>> peers_ready(const Measurement& m, std::size_t step) {
  const RankLayout& layout = m.layout;
  const auto& timings = m.steps.at(step);
  std::vector<StageIndex> index;
  for (const auto& tasks : m.stage_tasks) index.push_back(index_stage(tasks));
  // The start of task `i` of stage `stage`'s program on world rank `rank` (-inf: not run).
  const auto start_of = [&](std::int32_t rank, std::size_t i) {
    const auto& r = timings.at(static_cast<std::size_t>(rank));
    return i < r.size() ? r[i].start_s : -std::numeric_limits<double>::infinity();
  };
  std::vector<std::vector<double>> out(static_cast<std::size_t>(layout.pp));
  for (std::int32_t s = 0; s < layout.pp; ++s) {
    const auto& tasks = m.stage_tasks[static_cast<std::size_t>(s)];
    const std::int32_t me = layout.global_rank(s, 0, 0);
    const auto& mine = timings.at(static_cast<std::size_t>(me));
    auto& ready = out[static_cast<std::size_t>(s)];
    for (std::size_t i = 0; i < tasks.size() && i < mine.size(); ++i) {
      const ExecTask& t = tasks[i];
      double last = mine[i].start_s;
      if (t.kind == ExecTask::Kind::kComm) {
        for (const sim::Transfer& tr : t.transfers) {
          const auto& peer = index[static_cast<std::size_t>(tr.peer)].transfer_task;
          const auto it = peer.find(
              {static_cast<int>(tr.tensor), tr.microbatch, tr.producer_virtual_stage, !tr.send});
          if (it == peer.end()) continue;
          last = std::max(last, start_of(layout.global_rank(tr.peer, 0, 0), it->second));
        }
      } else if (const auto* coll = std::get_if<CollectiveOp>(&t.op.shape)) {
        const bool world =
            coll->group == CommGroup::kGradStats && coll->group_size == layout.world_size();
        for (const std::int32_t member : members_of(coll->group, layout, me, world)) {
          const std::int32_t stage = layout.coord_of(member).pp;
          std::size_t j = i;
          if (stage != s) {  // the same call's turn on the member's stage
            const auto& calls = index[static_cast<std::size_t>(stage)].calls_by_name;
            const auto it = calls.find(t.op_name);
            const std::size_t turn = index[static_cast<std::size_t>(s)].turn[i];
            if (it == calls.end() || turn >= it->second.size()) continue;
            j = it->second[turn];
          }
          last = std::max(last, start_of(member, j));
        }
      }
      ready.push_back(std::clamp(last, mine[i].start_s, mine[i].end_s));
    }
  }
  return out;
}

namespace {

/// The group of `token` ("ep", "tp", "tp-ep", "dp") of Megatron's expert rank generator that
/// holds `me`, made with Backend::split: the group's lowest rank is its colour, `me`'s place
/// in Megatron's order its key (every rank splits once per token, in the same order).
Result<GroupId> split_expert_group(Backend& b, const RankLayout& layout, std::int32_t me,
                                   std::string_view token) {
  const std::vector<std::int64_t> members = layout.expert_generator().group_of(token, me);
  const auto at = std::find(members.begin(), members.end(), me);
  return b.split(static_cast<std::int32_t>(*std::min_element(members.begin(), members.end())),
                 static_cast<std::int32_t>(at - members.begin()), CommOptions{});
}

}  // namespace

/// Megatron's process groups, made with Backend::split (a collective over the world: every
/// rank makes the same calls in the same order).
Result<Groups> make_groups(Backend& b, const RankLayout& layout, std::int32_t me,
                           const TrainingConfig& training) {
  const bool distributed_optimizer = training.use_distributed_optimizer;
  const auto c = layout.coord_of(me);
  const auto options = [&training](CommGroup g) {
    const auto o = nccl_group_options(training, g);
    if (!o) return CommOptions{};
    return CommOptions{.min_ctas = std::max<std::int64_t>(0, o->min_ctas),
                       .max_ctas = std::max<std::int64_t>(0, o->max_ctas),
                       .cga_cluster_size = o->cga_cluster_size};
  };
  const std::int32_t world = layout.world_size();
  // Colours number the groups; keys give Megatron's order inside them (cp varies faster
  // than dp in its layout, so the data-parallel group with context parallelism, over which
  // gradients are reduced, is ordered by (dp, cp)).
  auto tp =
      b.split((c.pp * layout.dp + c.dp) * layout.cp + c.cp, c.tp, options(CommGroup::kTensor));
  if (!tp) return tp.errors();
  auto dp = b.split(c.pp * layout.tp + c.tp, c.dp * layout.cp + c.cp, options(CommGroup::kData));
  if (!dp) return dp.errors();
  // Embedding group: the first and last pipeline stage of the same (dp, tp) position. Ranks
  // outside it get a group of their own, which they never use.
  const bool member = layout.pp > 1 && (c.pp == 0 || c.pp == layout.pp - 1);
  auto emb = b.split(member ? (c.dp * layout.cp + c.cp) * layout.tp + c.tp : world + me, c.pp,
                     options(CommGroup::kEmbedding));
  if (!emb) return emb.errors();
  Groups groups{.tp = *tp,
                .dp = *dp,
                .embedding = *emb,
                .tp_dp = {},
                .tp_cp = *tp,
                .cp = {},
                .cp_a2a = {},
                .grad_stats = GroupId{0},
                .ep = {},
                .etp = {},
                .etp_ep = {},
                .edp = {}};
  if (layout.cp > 1) {
    const std::int32_t cp_colour = (c.pp * layout.dp + c.dp) * layout.tp + c.tp;
    auto cp = b.split(cp_colour, c.cp, options(CommGroup::kContext));
    if (!cp) return cp.errors();
    groups.cp = *cp;
    if (layout.cp_a2a > 1) {
      // Megatron's hierarchical level 0: cp_a2a consecutive ranks of the CP group.
      const std::int32_t runs = layout.cp / layout.cp_a2a;
      auto a2a =
          b.split(cp_colour * runs + c.cp / layout.cp_a2a, c.cp % layout.cp_a2a, CommOptions{});
      if (!a2a) return a2a.errors();
      groups.cp_a2a = *a2a;
    }
  }
  if (layout.moe) {
    for (const auto& [token, out] : {std::pair<std::string_view, GroupId*>{"ep", &groups.ep},
                                     {"tp", &groups.etp},
                                     {"tp-ep", &groups.etp_ep},
                                     {"dp", &groups.edp}}) {
      auto g = split_expert_group(b, layout, me, token);
      if (!g) return g.errors();
      *out = *g;
    }
  }
  // The amax-reduction group of FP8 (every tensor, data and context rank of the stage).
  auto tp_dp =
      b.split(c.pp, (c.dp * layout.cp + c.cp) * layout.tp + c.tp, options(CommGroup::kTensorData));
  if (!tp_dp) return tp_dp.errors();
  groups.tp_dp = *tp_dp;
  if (layout.cp > 1) {
    // ... and with tp_only_amax_red, Megatron's tensor x context group (cp fastest after tp).
    auto tp_cp = b.split(c.pp * layout.dp + c.dp, c.cp * layout.tp + c.tp,
                         options(CommGroup::kTensorContext));
    if (!tp_cp) return tp_cp.errors();
    groups.tp_cp = *tp_cp;
  }
  if (!distributed_optimizer) {
    // The gradient norm's group without the distributed optimizer: Megatron's model-parallel
    // group, the tensor and pipeline ranks of one (dp, cp) position, tp fastest (with it,
    // the world).
    auto mp =
        b.split(c.dp * layout.cp + c.cp, c.pp * layout.tp + c.tp, options(CommGroup::kGradStats));
    if (!mp) return mp.errors();
    groups.grad_stats = *mp;
  }
  return groups;
}

std::string join_ranks(std::vector<std::int32_t> ranks, std::int32_t me) {
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  std::ostringstream s;
  bool first = true;
  for (const auto r : ranks) {
    if (r == me) continue;
    s << (first ? "" : ", ") << r;
    first = false;
  }
  return s.str();
}

GroupId Groups::of(CommGroup g) const {
  switch (g) {
    case CommGroup::kTensor:
      return tp;
    case CommGroup::kData:
      return dp;
    case CommGroup::kExpert:
      return ep;
    case CommGroup::kExpertTensor:
      return etp;
    case CommGroup::kExpertTensorExpert:
      return etp_ep;
    case CommGroup::kExpertData:
      return edp;
    case CommGroup::kContext:
      return cp;
    case CommGroup::kContextA2a:
      return cp_a2a;
    case CommGroup::kTensorData:
      return tp_dp;
    case CommGroup::kTensorContext:
      return tp_cp;
    case CommGroup::kGradStats:
      return grad_stats;
    case CommGroup::kEmbedding:
      return embedding;
  }
  return embedding;
}

}  // namespace stepsim::calib
