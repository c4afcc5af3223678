#pragma once
// Megatron's process groups as the executor makes them, and who a measured call waits for: the
// members of a rank's communication group in Megatron's
// rank layout (the executor's fault messages name them; peers_ready() takes the last to
// arrive).

#include <cstdint>
#include <string>
#include <vector>

#include "stepsim/calibration/backend.hpp"
#include "stepsim/validator/executor.hpp"
#include "stepsim/base/result.hpp"

namespace stepsim::calib {

/// World ranks of the group `g` of rank `me` (`distributed_optimizer`: the gradient norm's
/// group is the world; without it, the model-parallel ranks of `me`'s data-parallel position).
std::vector<std::int32_t> members_of(CommGroup g, const RankLayout& layout, std::int32_t me,
                                     bool distributed_optimizer);

/// Megatron's process groups of one rank, made with Backend::split.
struct Groups {
  GroupId tp, dp, embedding;
  /// Tensor x data (x context) parallel ranks of one pipeline stage: where FP8's amax
  /// histories are reduced (Megatron's amax reduction group).
  GroupId tp_dp;
  /// Tensor x context parallel ranks of one (pipeline, data) position: the amax reduction
  /// group with tp_only_amax_red (the tensor group without context parallelism).
  GroupId tp_cp;
  GroupId cp;      ///< with context parallelism (RankLayout::cp > 1)
  GroupId cp_a2a;  ///< with hierarchical CP (RankLayout::cp_a2a > 1): its a2a level
  /// The optimizer's grad_stats_parallel_group (the gradient norm's all-reduce): the world
  /// with the distributed optimizer, the model-parallel group (tp-pp) otherwise.
  GroupId grad_stats;
  // With experts (RankLayout::moe): Megatron's expert groups.
  GroupId ep, etp, etp_ep, edp;
  /// The group a collective over `g` runs on.
  GroupId of(CommGroup g) const;
};

/// Megatron's process groups of rank `me`, made with Backend::split (a collective over the
/// world: every rank makes the same calls in the same order).
/// Each group's NCCL communicator gets the job's options for it (`training`'s
/// nccl_group_options: Megatron's --nccl-communicator-config-path).
Result<Groups> make_groups(Backend& b, const RankLayout& layout, std::int32_t me,
                           const TrainingConfig& training);

/// `ranks` without `me`, sorted, each once, comma-separated: whom a fault message says a rank
/// waits for.
std::string join_ranks(std::vector<std::int32_t> ranks, std::int32_t me);

}  // namespace stepsim::calib
