#include "stepsim/engine/timeline.hpp"

#include <algorithm>
#include <map>
#include <tuple>

namespace stepsim::sim {

std::string_view to_string(SliceKind k) {
  switch (k) {
    case SliceKind::kForward: return "forward";
    case SliceKind::kBackwardInput: return "backward_input";
    case SliceKind::kBackwardWeight: return "backward_weight";
    case SliceKind::kRecompute: return "recompute";
    case SliceKind::kTensorComm: return "tp_comm";
    case SliceKind::kPipelineComm: return "pp_comm";
    case SliceKind::kDataComm: return "dp_comm";
    case SliceKind::kOptimizer: return "optimizer";
    case SliceKind::kContextComm: return "cp_comm";
    case SliceKind::kWait:
      return "wait";
  }
  return "?";
}

std::string_view to_string(IdleKind k) {
  switch (k) {
    case IdleKind::kScheduleBubble: return "schedule bubble";
    case IdleKind::kStageImbalance: return "stage imbalance";
    case IdleKind::kWait: return "wait";
    case IdleKind::kExposedComm: return "exposed communication";
  }
  return "?";
}

Timeline microbatch_level(const Timeline& timeline) {
  Timeline out = timeline;
  out.slices.clear();
  // (rank, stream, micro-batch, chunk, backward?) -> index into out.slices, and op count.
  std::map<std::tuple<std::int32_t, int, std::int32_t, std::int32_t, bool>, std::size_t> merged;
  std::vector<std::int64_t> ops;
  std::vector<bool> is_merged;
  for (const Slice& s : timeline.slices) {
    const bool action = s.microbatch >= 0 && s.stream != Stream::kPipelineComm &&
                        s.phase != Phase::kStep;
    if (!action) {
      out.slices.push_back(s);
      ops.push_back(1);
      is_merged.push_back(false);
      continue;
    }
    const bool backward = s.phase != Phase::kForward;
    const auto key = std::make_tuple(s.rank, static_cast<int>(s.stream), s.microbatch, s.chunk, backward);
    auto [it, fresh] = merged.try_emplace(key, out.slices.size());
    if (!fresh) {
      Slice& m = out.slices[it->second];
      m.start_s = std::min(m.start_s, s.start_s);
      m.end_s = std::max(m.end_s, s.end_s);
      ++ops[it->second];
      continue;
    }
    Slice m;
    m.rank = s.rank;
    m.stream = s.stream;
    m.kind = s.stream == Stream::kCompute
                 ? (backward ? SliceKind::kBackwardInput : SliceKind::kForward)
                 : s.kind;
    m.start_s = s.start_s;
    m.end_s = s.end_s;
    m.microbatch = s.microbatch;
    m.chunk = s.chunk;
    m.phase = backward ? Phase::kBackwardInput : Phase::kForward;
    m.op = backward ? "backward" : "forward";
    m.name = std::string(backward ? "B" : "F") + " mb" + std::to_string(s.microbatch) + " c" +
             std::to_string(s.chunk) +
             (s.stream == Stream::kCompute ? "" : " " + std::string(to_string(m.kind)));
    out.slices.push_back(std::move(m));
    ops.push_back(1);
    is_merged.push_back(true);
  }
  for (std::size_t i = 0; i < out.slices.size(); ++i) {
    if (is_merged[i]) out.slices[i].detail = std::to_string(ops[i]) + " ops";
  }
  std::stable_sort(out.slices.begin(), out.slices.end(), [](const Slice& a, const Slice& b) {
    if (a.start_s != b.start_s) return a.start_s < b.start_s;
    if (a.rank != b.rank) return a.rank < b.rank;
    return a.stream < b.stream;
  });
  return out;
}

void keep_ranks(Timeline& timeline, const std::vector<std::int32_t>& ranks) {
  const auto kept = [&ranks](std::int32_t r) {
    return std::find(ranks.begin(), ranks.end(), r) != ranks.end();
  };
  std::erase_if(timeline.slices, [&](const Slice& s) { return !kept(s.rank); });
  std::erase_if(timeline.idle, [&](const IdleSpan& s) { return !kept(s.rank); });
  for (std::size_t r = 0; r < timeline.memory.size(); ++r) {
    if (!kept(static_cast<std::int32_t>(r))) timeline.memory[r].clear();
  }
}

}  // namespace stepsim::sim
