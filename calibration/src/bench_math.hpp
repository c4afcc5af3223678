#pragma once
// Internal: what both backends share about measuring: medians, collective buffer sizes and
// the rank-dependent values that make every collective's result checkable (as nccl-tests).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "stepsim/calibration/backend.hpp"
#include "stepsim/ops/ops.hpp"

namespace stepsim::calib {

/// Median of `v` (mean of the two middle values for an even count); 0 for an empty vector.
inline double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const std::size_t mid = v.size() / 2;
  return v.size() % 2 == 1 ? v[mid] : 0.5 * (v[mid - 1] + v[mid]);
}

/// The coefficient of variation of `v` (sample standard deviation / mean); 0 for fewer
/// than two values or a zero mean.
inline double coefficient_of_variation(const std::vector<double>& v) {
  if (v.size() < 2) return 0.0;
  double mean = 0;
  for (const double x : v) mean += x;
  mean /= static_cast<double>(v.size());
  if (!(mean > 0)) return 0.0;
  double sq = 0;
  for (const double x : v) sq += (x - mean) * (x - mean);
  return std::sqrt(sq / static_cast<double>(v.size() - 1)) / mean;
}

/// Elements each rank sends and receives for a collective of nccl-tests size `bytes` over
/// `group_size` ranks with `elem_bytes`-byte elements (at least one element per rank).
struct CollectiveCounts {
  std::int64_t in = 0;        ///< input elements per rank
  std::int64_t out = 0;       ///< output elements per rank
  std::int64_t per_rank = 0;  ///< the scattered/gathered slice (= in = out for all-reduce)
};

inline CollectiveCounts collective_counts(CollectiveKind kind, std::int64_t bytes,
                                          std::int64_t group_size, std::int64_t elem_bytes) {
  const std::int64_t total = std::max<std::int64_t>(1, bytes / elem_bytes);
  const std::int64_t per = std::max<std::int64_t>(1, total / group_size);
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return {total, total, total};
    case CollectiveKind::kAllGather:
      return {per, per * group_size, per};
    case CollectiveKind::kReduceScatter:
      return {per * group_size, per, per};
    case CollectiveKind::kAllToAll:
      return {per * group_size, per * group_size, per};
    case CollectiveKind::kDeepEpDispatch:  // not run by the backends (validate refuses flex)
    case CollectiveKind::kDeepEpCombine:
      break;
  }
  return {total, total, total};
}

/// Input element `i` of group rank `r`: small integers, so every sum is exact in fp32.
inline float pattern_value(std::int64_t r, std::int64_t i) {
  return static_cast<float>((r + 1) * ((i % 13) + 1));
}

/// Expected output element `j` of group rank `g` in a group of `n` ranks.
inline float expected_value(CollectiveKind kind, std::int64_t g, std::int64_t n,
                            std::int64_t per_rank, std::int64_t j) {
  const std::int64_t ranks_sum = n * (n + 1) / 2;
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return static_cast<float>(ranks_sum * ((j % 13) + 1));
    case CollectiveKind::kAllGather:
      return pattern_value(j / per_rank, j % per_rank);
    case CollectiveKind::kReduceScatter:
      return static_cast<float>(ranks_sum * (((g * per_rank + j) % 13) + 1));
    case CollectiveKind::kAllToAll:
      // Slice j / per_rank comes from that rank's slice g.
      return pattern_value(j / per_rank, g * per_rank + j % per_rank);
    case CollectiveKind::kDeepEpDispatch:
    case CollectiveKind::kDeepEpCombine:
      break;
  }
  return 0.0F;
}

/// Byte `i` of a point-to-point message from world rank `sender` with `tag`.
inline std::uint8_t p2p_pattern(std::int32_t sender, std::int32_t tag, std::int64_t i) {
  return static_cast<std::uint8_t>((sender * 31 + tag * 7 + i) % 251);
}

/// The distinct peers of a batch of requests, ascending.
inline std::vector<std::int32_t> distinct_peers(const std::vector<P2PRequest>& requests) {
  std::vector<std::int32_t> peers;
  for (const P2PRequest& q : requests) peers.push_back(q.peer);
  std::sort(peers.begin(), peers.end());
  peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
  return peers;
}

}  // namespace stepsim::calib
