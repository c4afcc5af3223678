// Megatron-Core's RankGenerator and generate_masked_orthogonal_rank_groups
// (megatron/core/parallel_state.py), same arithmetic: a rank is the inner product of its
// coordinates with the prefix products of the sizes in `order`.

#include "stepsim/layout/rank_layout.hpp"

#include <algorithm>
#include <string>

#include "stepsim/base/assert.hpp"

namespace stepsim {

namespace {

constexpr std::array<std::string_view, 5> kNames = {"tp", "cp", "ep", "dp", "pp"};
constexpr std::array<ParallelDim, 5> kDims = {ParallelDim::kTp, ParallelDim::kCp, ParallelDim::kEp,
                                              ParallelDim::kDp, ParallelDim::kPp};

ParallelDim dim_named(std::string_view name) {
  for (std::size_t i = 0; i < kNames.size(); ++i) {
    if (kNames[i] == name) return kDims[i];
  }
  STEPSIM_UNREACHABLE("RankGenerator: unknown parallel dimension");
  return ParallelDim::kTp;
}

template <typename F>
void for_each_token(std::string_view text, F&& f) {
  while (!text.empty()) {
    const auto dash = text.find('-');
    f(text.substr(0, dash));
    text = dash == std::string_view::npos ? std::string_view() : text.substr(dash + 1);
  }
}

}  // namespace

std::int64_t& ParallelCoords::operator[](ParallelDim d) {
  switch (d) {
    case ParallelDim::kTp:
      return tp;
    case ParallelDim::kCp:
      return cp;
    case ParallelDim::kEp:
      return ep;
    case ParallelDim::kDp:
      return dp;
    case ParallelDim::kPp:
      return pp;
  }
  return tp;
}

std::int64_t ParallelCoords::operator[](ParallelDim d) const {
  return (*const_cast<ParallelCoords*>(this))[d];
}

RankGenerator::RankGenerator(const ParallelSizes& sizes, std::string_view order)
    : sizes_{.tp = sizes.tp, .cp = sizes.cp, .ep = sizes.ep, .dp = sizes.dp, .pp = sizes.pp} {
  STEPSIM_ASSERT(sizes.tp >= 1 && sizes.cp >= 1 && sizes.ep >= 1 && sizes.dp >= 1 && sizes.pp >= 1);
  // "Both EP and CP > 1 in not allow in one rank generator."
  STEPSIM_ASSERT(sizes.ep == 1 || sizes.cp == 1);
  std::size_t n = 0;
  for_each_token(order, [&](std::string_view name) {
    STEPSIM_ASSERT(n < order_.size());
    order_[n++] = dim_named(name);
  });
  // Dimensions the order leaves out must have size 1; Megatron appends them.
  for (const ParallelDim d : kDims) {
    if (std::find(order_.begin(), order_.begin() + static_cast<std::ptrdiff_t>(n), d) ==
        order_.begin() + static_cast<std::ptrdiff_t>(n)) {
      STEPSIM_ASSERT(sizes_[d] == 1);
      order_[n++] = d;
    }
  }
  std::int64_t stride = 1;
  for (std::size_t i = 0; i < order_.size(); ++i) {
    stride_[i] = stride;
    stride *= sizes_[order_[i]];
  }
  world_size_ = stride;
}

std::int64_t RankGenerator::rank(const ParallelCoords& c) const {
  std::int64_t r = 0;
  for (std::size_t i = 0; i < order_.size(); ++i) r += c[order_[i]] * stride_[i];
  return r;
}

ParallelCoords RankGenerator::coords(std::int64_t rank) const {
  STEPSIM_ASSERT(rank >= 0 && rank < world_size_);
  ParallelCoords c;
  for (std::size_t i = 0; i < order_.size(); ++i) {
    c[order_[i]] = (rank / stride_[i]) % sizes_[order_[i]];
  }
  return c;
}

std::vector<bool> RankGenerator::mask_of(std::string_view token) const {
  std::vector<bool> mask(order_.size(), false);
  for_each_token(token, [&](std::string_view name) {
    const ParallelDim d = dim_named(name);
    for (std::size_t i = 0; i < order_.size(); ++i) {
      if (order_[i] == d) mask[i] = true;
    }
  });
  return mask;
}

std::vector<std::vector<std::int64_t>> RankGenerator::groups(std::string_view token) const {
  const std::vector<bool> mask = mask_of(token);
  std::int64_t group_size = 1;
  for (std::size_t i = 0; i < order_.size(); ++i) {
    if (mask[i]) group_size *= sizes_[order_[i]];
  }
  const std::int64_t count = world_size_ / group_size;
  std::vector<std::vector<std::int64_t>> out(static_cast<std::size_t>(count));
  for (std::int64_t g = 0; g < count; ++g) {
    // decompose(group_index, unmasked_shape) . unmasked_stride
    std::int64_t base = 0;
    std::int64_t rest = g;
    for (std::size_t i = 0; i < order_.size(); ++i) {
      if (mask[i]) continue;
      const std::int64_t s = sizes_[order_[i]];
      base += (rest % s) * stride_[i];
      rest /= s;
    }
    auto& group = out[static_cast<std::size_t>(g)];
    group.reserve(static_cast<std::size_t>(group_size));
    for (std::int64_t k = 0; k < group_size; ++k) {
      std::int64_t r = base;
      std::int64_t left = k;
      for (std::size_t i = 0; i < order_.size(); ++i) {
        if (!mask[i]) continue;
        const std::int64_t s = sizes_[order_[i]];
        r += (left % s) * stride_[i];
        left /= s;
      }
      group.push_back(r);
    }
  }
  return out;
}

std::vector<std::int64_t> RankGenerator::group_of(std::string_view token, std::int64_t rank) const {
  const std::vector<bool> mask = mask_of(token);
  const ParallelCoords c = coords(rank);
  std::int64_t base = 0;
  std::int64_t group_size = 1;
  for (std::size_t i = 0; i < order_.size(); ++i) {
    if (mask[i]) {
      group_size *= sizes_[order_[i]];
    } else {
      base += c[order_[i]] * stride_[i];
    }
  }
  std::vector<std::int64_t> group;
  group.reserve(static_cast<std::size_t>(group_size));
  for (std::int64_t k = 0; k < group_size; ++k) {
    std::int64_t r = base;
    std::int64_t left = k;
    for (std::size_t i = 0; i < order_.size(); ++i) {
      if (!mask[i]) continue;
      const std::int64_t s = sizes_[order_[i]];
      r += (left % s) * stride_[i];
      left /= s;
    }
    group.push_back(r);
  }
  return group;
}

std::int64_t RankGenerator::nodes_spanned(std::string_view token, std::int64_t rank,
                                          std::int64_t gpus_per_node) const {
  // A group's ranks ascend in Megatron's order (mixed-radix counting over ascending
  // strides), so its nodes are the changes of rank / gpus_per_node along it. No allocation:
  // the sweep asks this for every configuration.
  const std::int64_t gpn = std::max<std::int64_t>(1, gpus_per_node);
  std::array<bool, 5> mask{};
  for_each_token(token, [&](std::string_view name) {
    const ParallelDim d = dim_named(name);
    for (std::size_t i = 0; i < order_.size(); ++i) {
      if (order_[i] == d) mask[i] = true;
    }
  });
  const ParallelCoords c = coords(rank);
  std::int64_t base = 0;
  std::int64_t group_size = 1;
  for (std::size_t i = 0; i < order_.size(); ++i) {
    if (mask[i]) {
      group_size *= sizes_[order_[i]];
    } else {
      base += c[order_[i]] * stride_[i];
    }
  }
  std::int64_t nodes = 0;
  std::int64_t last_node = -1;
  for (std::int64_t k = 0; k < group_size; ++k) {
    std::int64_t r = base;
    std::int64_t left = k;
    for (std::size_t i = 0; i < order_.size(); ++i) {
      if (!mask[i]) continue;
      const std::int64_t s = sizes_[order_[i]];
      r += (left % s) * stride_[i];
      left /= s;
    }
    if (r / gpn != last_node) ++nodes;
    last_node = r / gpn;
  }
  return nodes;
}

std::vector<std::vector<std::int64_t>> hierarchical_groups(std::span<const std::int64_t> ranks,
                                                           std::span<const std::int64_t> sizes,
                                                           std::size_t level) {
  STEPSIM_ASSERT(level < sizes.size());
  std::int64_t u = 1;
  for (std::size_t i = 0; i < level; ++i) u *= sizes[i];
  const std::int64_t s = sizes[level];
  const auto n = static_cast<std::int64_t>(ranks.size());
  STEPSIM_ASSERT(s >= 1 && n % (u * s) == 0);
  const std::int64_t l = n / (u * s);
  // Position (li * s + si) * u + ui of `ranks` goes to group li * u + ui, place si.
  std::vector<std::vector<std::int64_t>> out;
  out.reserve(static_cast<std::size_t>(l * u));
  for (std::int64_t li = 0; li < l; ++li) {
    for (std::int64_t ui = 0; ui < u; ++ui) {
      std::vector<std::int64_t>& group = out.emplace_back();
      for (std::int64_t si = 0; si < s; ++si) {
        group.push_back(ranks[static_cast<std::size_t>((li * s + si) * u + ui)]);
      }
    }
  }
  return out;
}

std::vector<std::int64_t> hierarchical_group_of(std::span<const std::int64_t> ranks,
                                                std::span<const std::int64_t> sizes,
                                                std::size_t level, std::int64_t rank) {
  for (std::vector<std::int64_t>& g : hierarchical_groups(ranks, sizes, level)) {
    if (std::find(g.begin(), g.end(), rank) != g.end()) return std::move(g);
  }
  STEPSIM_UNREACHABLE("hierarchical_group_of: rank not in ranks");
  return {};
}

std::int64_t nodes_of(std::span<const std::int64_t> ranks, std::int64_t gpus_per_node) {
  const std::int64_t gpn = std::max<std::int64_t>(1, gpus_per_node);
  std::vector<std::int64_t> nodes;
  for (const std::int64_t r : ranks) nodes.push_back(r / gpn);
  std::sort(nodes.begin(), nodes.end());
  return static_cast<std::int64_t>(std::unique(nodes.begin(), nodes.end()) - nodes.begin());
}

}  // namespace stepsim
