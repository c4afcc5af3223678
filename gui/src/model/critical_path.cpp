#include "stepsim/gui/critical_path.hpp"

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>
#include <utility>

namespace stepsim::gui {

namespace {

struct Entry {
  double end = 0;
  double start = 0;
  std::int32_t stream = 0;
  SliceRef ref;
};

// Orders entries so that the last one at or before a time is the preferred predecessor:
// latest end, then latest start, then lowest stream.
bool before(const Entry& a, const Entry& b) {
  if (a.end != b.end) return a.end < b.end;
  if (a.start != b.start) return a.start < b.start;
  if (a.stream != b.stream) return a.stream > b.stream;
  return std::tie(a.ref.lane, a.ref.index) < std::tie(b.ref.lane, b.ref.index);
}

class PathFinder {
 public:
  explicit PathFinder(const TraceModel& model) : model_(model) {
    for (std::uint32_t l = 0; l < model.lanes.size(); ++l) {
      const Lane& lane = model.lanes[l];
      auto& by_end = by_rank_[lane.rank];
      for (std::uint32_t i = 0; i < lane.size(); ++i) {
        by_end.push_back(Entry{lane.time.end_us[i], lane.time.start_us[i], lane.stream, {l, i}});
        if (lane.kind[i] == Kind::kPipelineComm) {
          transfers_[{lane.microbatch[i], lane.chunk[i]}].push_back(SliceRef{l, i});
        }
      }
    }
    for (auto& [rank, entries] : by_rank_) std::sort(entries.begin(), entries.end(), before);
  }

  CriticalPath run() const {
    CriticalPath path;
    const Entry* cur = last_slice();
    // Each step moves to a slice that ends no later than the current one starts, so the
    // walk ends; the bound guards against zero-length slices at one instant.
    const std::size_t bound = model_.slice_count() + 1;
    while (cur != nullptr && path.slices.size() < bound) {
      path.slices.push_back(cur->ref);
      path.busy_us += cur->end - cur->start;
      const Entry* next = predecessor(*cur, rank_of(cur->ref));
      const Entry* via = nullptr;
      if (kind_of(cur->ref) == Kind::kPipelineComm) {
        for (const Entry* partner : partners(*cur)) {
          const Entry* candidate = predecessor(*partner, rank_of(partner->ref));
          if (candidate != nullptr && (next == nullptr || before(*next, *candidate))) {
            next = candidate;
            via = partner;
          }
        }
      }
      if (via != nullptr) {
        path.slices.push_back(via->ref);
        path.busy_us += via->end - via->start;
      }
      cur = next;
    }
    std::reverse(path.slices.begin(), path.slices.end());
    return path;
  }

 private:
  std::int32_t rank_of(SliceRef r) const { return model_.lanes[r.lane].rank; }
  Kind kind_of(SliceRef r) const { return model_.lanes[r.lane].kind[r.index]; }

  const Entry* last_slice() const {
    const Entry* best = nullptr;
    for (const auto& [rank, entries] : by_rank_) {
      if (entries.empty()) continue;
      // Latest end; among equal ends the lowest rank (map order) wins.
      if (best == nullptr || entries.back().end > best->end) best = &entries.back();
    }
    return best;
  }

  const Entry* find(SliceRef r) const {
    const Lane& lane = model_.lanes[r.lane];
    const auto& entries = by_rank_.at(lane.rank);
    const Entry key{lane.time.end_us[r.index], lane.time.start_us[r.index], lane.stream, r};
    auto it = std::lower_bound(entries.begin(), entries.end(), key, before);
    return it != entries.end() && it->ref == r ? &*it : nullptr;
  }

  // The latest-ending slice of `rank` that ends no later than `cur` starts.
  const Entry* predecessor(const Entry& cur, std::int32_t rank) const {
    const auto& entries = by_rank_.at(rank);
    const double limit = cur.start + kTouchToleranceUs;
    auto it = std::upper_bound(entries.begin(), entries.end(), limit,
                               [](double t, const Entry& e) { return t < e.end; });
    while (it != entries.begin()) {
      --it;
      const bool earlier = it->start < cur.start || it->end < cur.end;
      if (!(it->ref == cur.ref) && earlier) return &*it;
    }
    return nullptr;
  }

  // pp_comm slices of other ranks with the same micro-batch and chunk overlapping `cur`.
  std::vector<const Entry*> partners(const Entry& cur) const {
    std::vector<const Entry*> out;
    const Lane& lane = model_.lanes[cur.ref.lane];
    auto it = transfers_.find({lane.microbatch[cur.ref.index], lane.chunk[cur.ref.index]});
    if (it == transfers_.end()) return out;
    for (SliceRef r : it->second) {
      const Lane& other = model_.lanes[r.lane];
      if (other.rank == lane.rank) continue;
      const double s = other.time.start_us[r.index];
      const double e = other.time.end_us[r.index];
      if (s > cur.end + kTouchToleranceUs || e < cur.start - kTouchToleranceUs) continue;
      if (const Entry* entry = find(r)) out.push_back(entry);
    }
    return out;
  }

  const TraceModel& model_;
  std::map<std::int32_t, std::vector<Entry>> by_rank_;
  std::map<std::pair<std::int32_t, std::int32_t>, std::vector<SliceRef>> transfers_;
};

// The simulator's own chain: every slice of a link's lane that lies inside the link's span.
CriticalPath path_of_chain(const TraceModel& model) {
  CriticalPath path;
  for (const ChainLink& link : model.summary.critical_chain) {
    const std::int64_t l = model.find_lane(link.rank, link.stream);
    if (l < 0) continue;  // a rank the trace left out (--trace-ranks)
    const Lane& lane = model.lanes[static_cast<std::size_t>(l)];
    const double start = link.start_us - model.origin_us;
    const double end = link.end_us - model.origin_us;
    for (std::size_t i = lane.time.first_starting_at_or_after(start - kTouchToleranceUs);
         i < lane.size() && lane.time.start_us[i] < end - kTouchToleranceUs; ++i) {
      if (lane.time.end_us[i] > end + kTouchToleranceUs) continue;
      path.slices.push_back(SliceRef{static_cast<std::uint32_t>(l), static_cast<std::uint32_t>(i)});
      path.busy_us += lane.time.end_us[i] - lane.time.start_us[i];
    }
  }
  return path;
}

}  // namespace

CriticalPath critical_path(const TraceModel& model) {
  if (model.slice_count() == 0) return {};
  if (!model.summary.critical_chain.empty()) {
    CriticalPath chain = path_of_chain(model);
    if (!chain.slices.empty()) return chain;
  }
  return PathFinder(model).run();
}

}  // namespace stepsim::gui
