#pragma once
// Megatron-Core's rank layout: its RankGenerator (megatron/core/parallel_state.py), the one
// place stepsim maps parallel coordinates to global ranks and back. Megatron builds the decoder
// groups with order "tp-cp-ep-dp-pp" and ep = 1, and the expert groups with the same order,
// cp = 1, tp = expert_tensor_parallel_size and dp = the expert data-parallel size; the first
// dimension of the order varies fastest. Everything that needs to know which GPUs form a
// group (links inside or across nodes, the validator's communicators) asks this class.

#include <array>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace stepsim {

/// The parallel dimensions of one RankGenerator.
enum class ParallelDim : std::uint8_t { kTp, kCp, kEp, kDp, kPp };

/// A rank's index in each dimension.
struct ParallelCoords {
  std::int64_t tp = 0;
  std::int64_t cp = 0;
  std::int64_t ep = 0;
  std::int64_t dp = 0;
  std::int64_t pp = 0;
  std::int64_t& operator[](ParallelDim d);
  std::int64_t operator[](ParallelDim d) const;
  bool operator==(const ParallelCoords&) const = default;
};

/// Each dimension's size.
struct ParallelSizes {
  std::int64_t tp = 1;
  std::int64_t cp = 1;
  std::int64_t ep = 1;
  std::int64_t dp = 1;
  std::int64_t pp = 1;
  bool operator==(const ParallelSizes&) const = default;
};

class RankGenerator {
 public:
  /// `sizes`: each dimension's size (all >= 1; ep or cp must be 1, as Megatron asserts).
  /// `order`: the dimensions from fastest to slowest, "-"-separated, Megatron's spelling.
  explicit RankGenerator(const ParallelSizes& sizes, std::string_view order = "tp-cp-ep-dp-pp");

  std::int64_t world_size() const { return world_size_; }

  /// The global rank at `c`.
  std::int64_t rank(const ParallelCoords& c) const;
  /// The coordinates of global rank `rank` (0 <= rank < world_size()).
  ParallelCoords coords(std::int64_t rank) const;

  /// Megatron's get_ranks(token): every group of the dimensions in `token` ("tp", "dp",
  /// "tp-cp", "cp-dp", ...), each group's ranks in the order Megatron lists them.
  std::vector<std::vector<std::int64_t>> groups(std::string_view token) const;
  /// The group of `token` that holds `rank`, in Megatron's order.
  std::vector<std::int64_t> group_of(std::string_view token, std::int64_t rank) const;
  /// Nodes of `gpus_per_node` GPUs (ranks node-major; callers pass the NVLink domain's size,
  /// SystemConfig::nvlink_domain(), to count domains) that the group of `token` holding
  /// `rank` spans.
  std::int64_t nodes_spanned(std::string_view token, std::int64_t rank,
                             std::int64_t gpus_per_node) const;

 private:
  std::vector<bool> mask_of(std::string_view token) const;

  ParallelCoords sizes_;
  std::array<ParallelDim, 5> order_{};    // fastest first
  std::array<std::int64_t, 5> stride_{};  // global stride of order_[i]
  std::int64_t world_size_ = 1;
};

/// Megatron's create_hierarchical_groups (megatron/core/parallel_state.py): `ranks` (one of
/// Megatron's groups, in its order) split into the groups of level `level` of `sizes`
/// (innermost first; their product is ranks.size()), by einops' "(l s u) -> (l u) s" with
/// u = prod(sizes[:level]), s = sizes[level]: level 0 takes consecutive ranks, level 1 every
/// sizes[0]-th, and so on. Each group in Megatron's order.
std::vector<std::vector<std::int64_t>> hierarchical_groups(std::span<const std::int64_t> ranks,
                                                           std::span<const std::int64_t> sizes,
                                                           std::size_t level);

/// The group of hierarchical_groups(ranks, sizes, level) that holds `rank`.
std::vector<std::int64_t> hierarchical_group_of(std::span<const std::int64_t> ranks,
                                                std::span<const std::int64_t> sizes,
                                                std::size_t level, std::int64_t rank);

/// Nodes of `gpus_per_node` GPUs (ranks node-major) that `ranks` live on.
std::int64_t nodes_of(std::span<const std::int64_t> ranks, std::int64_t gpus_per_node);

}  // namespace stepsim
