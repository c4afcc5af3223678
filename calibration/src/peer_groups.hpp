#pragma once
// Who a measured call waits for: the members of a rank's communication group in Megatron's
// rank layout (the executor's fault messages name them; peers_ready() takes the last to
// arrive).

#include <cstdint>
#include <vector>

#include "stepsim/calibration/executor.hpp"

namespace stepsim::calib {

/// World ranks of the group `g` of rank `me` (`distributed_optimizer`: the gradient norm's
/// group is the world; without it, the model-parallel ranks of `me`'s data-parallel position).
std::vector<std::int32_t> members_of(CommGroup g, const RankLayout& layout, std::int32_t me,
                                     bool distributed_optimizer);

}  // namespace stepsim::calib
