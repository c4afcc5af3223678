#include "schedule_checker.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <tuple>

namespace stepsim::sim::testing {
namespace {

/// A transfer seen from both ends: (tensor, micro-batch, producer stage, sender, receiver).
using Key = std::tuple<int, std::int32_t, std::int32_t, std::int32_t, std::int32_t>;

Key key_of(std::int32_t rank, const Transfer& t) {
  const std::int32_t sender = t.send ? rank : t.peer;
  const std::int32_t receiver = t.send ? t.peer : rank;
  return {static_cast<int>(t.tensor), t.microbatch, t.producer_virtual_stage, sender, receiver};
}

std::string describe(std::int32_t rank, const Transfer& t) {
  return "rank " + std::to_string(rank) + (t.send ? " send " : " recv ") +
         (t.tensor == TensorKind::kActivation ? "activation" : "gradient") + " mb " +
         std::to_string(t.microbatch) + " stage " + std::to_string(t.producer_virtual_stage) +
         " peer " + std::to_string(t.peer);
}

/// The transfer a compute consumes, seen from the consuming rank; none at the pipeline's ends.
std::optional<Transfer> input_of(const Schedule& s, std::int32_t rank, const Action& a) {
  const std::int32_t p = s.params.pipeline_size;
  const std::int32_t stages = p * s.params.virtual_size;
  const std::int32_t vs = a.chunk * p + rank;
  if (a.type == ActionType::kForward) {
    if (vs == 0) return std::nullopt;
    return Transfer{TensorKind::kActivation, false, a.microbatch, vs - 1, (vs - 1) % p};
  }
  if (vs == stages - 1) return std::nullopt;
  return Transfer{TensorKind::kGradient, false, a.microbatch, vs + 1, (vs + 1) % p};
}

}  // namespace

Problems check_matching(const Schedule& s) {
  Problems problems;
  std::map<Key, std::pair<int, int>> seen;  // (sends, receives)
  for (const RankProgram& prog : s.ranks) {
    std::set<Key> posted_async;
    std::set<Key> waited;
    for (const ProgramItem& item : prog.items) {
      if (item.kind != ProgramItem::Kind::kComm) continue;
      if (item.comm.name == "wait") {
        if (item.comm.transfer_count != 0 || item.comm.wait_count == 0 || !item.comm.blocking) {
          problems.push_back("rank " + std::to_string(prog.rank) + ": malformed wait");
        }
        for (const Transfer& t : prog.waits_of(item.comm)) {
          const Key k = key_of(prog.rank, t);
          if (posted_async.count(k) == 0) {
            problems.push_back(describe(prog.rank, t) + ": waited but not posted asynchronously");
          }
          if (!waited.insert(k).second)
            problems.push_back(describe(prog.rank, t) + ": waited twice");
        }
        continue;
      }
      if (item.comm.transfer_count == 0 || item.comm.wait_count != 0) {
        problems.push_back("rank " + std::to_string(prog.rank) + ": malformed " + std::string(item.comm.name));
      }
      for (const Transfer& t : prog.transfers_of(item.comm)) {
        if (t.peer < 0 || t.peer >= s.params.pipeline_size || t.peer == prog.rank) {
          problems.push_back(describe(prog.rank, t) + ": bad peer");
        }
        const Key k = key_of(prog.rank, t);
        auto& counts = seen[k];
        (t.send ? counts.first : counts.second) += 1;
        if (!item.comm.blocking) posted_async.insert(k);
      }
    }
  }
  for (const auto& [k, counts] : seen) {
    if (counts.first != 1 || counts.second != 1) {
      problems.push_back(
          "tensor " + std::to_string(std::get<0>(k)) + " mb " + std::to_string(std::get<1>(k)) +
          " stage " + std::to_string(std::get<2>(k)) + " from " + std::to_string(std::get<3>(k)) +
          " to " + std::to_string(std::get<4>(k)) + ": " + std::to_string(counts.first) +
          " sends, " + std::to_string(counts.second) + " receives");
    }
  }
  const std::int32_t p = s.params.pipeline_size;
  const std::int32_t stages = p * s.params.virtual_size;
  const std::size_t expected =
      2 * static_cast<std::size_t>(s.params.microbatches) * static_cast<std::size_t>(stages - 1);
  if (seen.size() != expected) {
    problems.push_back(std::to_string(seen.size()) + " distinct transfers, expected " +
                       std::to_string(expected));
  }
  for (const auto& [k, counts] : seen) {
    const auto [tensor, mb, vs, sender, receiver] = k;
    const bool act = tensor == static_cast<int>(TensorKind::kActivation);
    const bool ok =
        mb >= 0 && mb < s.params.microbatches && sender == vs % p &&
        (act ? vs <= stages - 2 && receiver == (vs + 1) % p : vs >= 1 && receiver == (vs - 1) % p);
    if (!ok) problems.push_back("unexpected transfer of stage " + std::to_string(vs));
  }
  return problems;
}

Problems check_dataflow(const Schedule& s) {
  Problems problems;
  const std::int32_t p = s.params.pipeline_size;
  for (const RankProgram& prog : s.ranks) {
    std::set<Key> posted;
    std::set<Key> computed;  // outputs available on this rank
    for (const ProgramItem& item : prog.items) {
      if (item.kind == ProgramItem::Kind::kCompute) {
        const Action& a = item.action;
        if (auto in = input_of(s, prog.rank, a); in && posted.count(key_of(prog.rank, *in)) == 0) {
          problems.push_back(describe(prog.rank, *in) + ": not received before its use");
        }
        const std::int32_t vs = a.chunk * p + prog.rank;
        const TensorKind out =
            a.type == ActionType::kForward ? TensorKind::kActivation : TensorKind::kGradient;
        computed.insert({static_cast<int>(out), a.microbatch, vs, prog.rank, -1});
        continue;
      }
      for (const Transfer& t : prog.transfers_of(item.comm)) {
        if (t.send && computed.count({static_cast<int>(t.tensor), t.microbatch,
                                      t.producer_virtual_stage, prog.rank, -1}) == 0) {
          problems.push_back(describe(prog.rank, t) + ": sent before it was computed");
        }
        if (!t.send && (item.comm.blocking || s.params.overlap_p2p_comm)) {
          posted.insert(key_of(prog.rank, t));
        }
      }
    }
  }
  return problems;
}

SimResult simulate_unit(const Schedule& s) {
  const std::size_t n = s.ranks.size();
  std::map<Key, std::pair<std::int64_t, std::int64_t>> post_time;  // send, recv; -1 = not yet
  auto complete = [&](std::int32_t rank, const Transfer& t) -> std::optional<std::int64_t> {
    auto it = post_time.find(key_of(rank, t));
    if (it == post_time.end() || it->second.first < 0 || it->second.second < 0) return {};
    return std::max(it->second.first, it->second.second);
  };
  std::vector<std::size_t> pc(n, 0);
  std::vector<std::int64_t> clock(n, 0);
  std::vector<bool> posted_current(n, false);
  bool progress = true;
  while (progress) {
    progress = false;
    for (std::size_t r = 0; r < n; ++r) {
      const RankProgram& prog = s.ranks[r];
      const auto rank = static_cast<std::int32_t>(r);
      while (pc[r] < prog.items.size()) {
        const ProgramItem& item = prog.items[pc[r]];
        std::int64_t ready = clock[r];
        bool blocked = false;
        if (item.kind == ProgramItem::Kind::kCompute) {
          if (auto in = input_of(s, rank, item.action)) {
            const auto done = complete(rank, *in);
            blocked = !done;
            if (done) ready = std::max(ready, *done);
          }
          if (blocked) break;
          clock[r] = ready + 1;
        } else {
          if (!posted_current[r]) {
            for (const Transfer& t : prog.transfers_of(item.comm)) {
              auto& times = post_time.try_emplace(key_of(rank, t), -1, -1).first->second;
              (t.send ? times.first : times.second) = clock[r];
            }
            posted_current[r] = true;
            progress = true;
          }
          if (item.comm.blocking) {
            const std::span<const Transfer> list =
                item.comm.name == "wait" ? prog.waits_of(item.comm) : prog.transfers_of(item.comm);
            for (const Transfer& t : list) {
              const auto done = complete(rank, t);
              if (!done) {
                blocked = true;
                break;
              }
              ready = std::max(ready, *done);
            }
          }
          if (blocked) break;
          clock[r] = ready;
          posted_current[r] = false;
        }
        ++pc[r];
        progress = true;
      }
    }
  }
  SimResult result;
  for (std::size_t r = 0; r < n; ++r) {
    result.makespan = std::max(result.makespan, clock[r]);
    if (pc[r] < s.ranks[r].items.size()) result.deadlock = true;
    result.stuck.push_back(static_cast<std::int32_t>(pc[r]));
  }
  return result;
}

}  // namespace stepsim::sim::testing
