#pragma once
// How full activation recompute groups the layers of one model chunk, as Megatron's
// TransformerBlock._checkpointed_forward does: `uniform` checkpoints consecutive groups of
// recompute_num_layers layers (the last group may be shorter); `block` checkpoints the first
// recompute_num_layers layers one by one and stores everything for the rest.
// Internal to stepsim_core.

#include <algorithm>
#include <cstdint>

#include "stepsim/config/scenario.hpp"

namespace stepsim::detail {

struct CheckpointGroup {
  std::int64_t first = 0;  ///< local index of the group's first layer in the chunk
  std::int64_t size = 1;
  bool checkpointed = false;  ///< only the group's input is stored; backward re-runs forward
};

class RecomputeLayout {
 public:
  RecomputeLayout(const TrainingConfig& t, std::int64_t chunk_layers)
      : count_(chunk_layers),
        full_(t.recompute_granularity == RecomputeGranularity::kFull),
        block_(t.recompute_method == RecomputeMethod::kBlock),
        n_(std::max<std::int64_t>(1, t.recompute_num_layers)) {}

  bool full() const { return full_; }

  /// The group holding local layer `i`.
  CheckpointGroup group_of(std::int64_t i) const {
    if (!full_) return {i, 1, false};
    if (block_) return {i, 1, i < n_};
    const std::int64_t first = (i / n_) * n_;
    return {first, std::min(n_, count_ - first), true};
  }

  /// Stored layer inputs (checkpoints) in the chunk.
  std::int64_t checkpoints() const {
    if (!full_) return 0;
    return block_ ? std::min(n_, count_) : (count_ + n_ - 1) / n_;
  }

  /// Layers that store all their activations.
  std::int64_t plain_layers() const {
    if (!full_) return count_;
    return block_ ? count_ - std::min(n_, count_) : 0;
  }

  /// Layers of the largest checkpointed group (re-run together in backward).
  std::int64_t largest_group() const {
    if (!full_ || count_ == 0) return 0;
    return block_ ? (n_ > 0 ? 1 : 0) : std::min(n_, count_);
  }

 private:
  std::int64_t count_;
  bool full_;
  bool block_;
  std::int64_t n_;
};

}  // namespace stepsim::detail
