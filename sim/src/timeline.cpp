#include "stepsim/sim/timeline.hpp"

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
  }
  return "?";
}

}  // namespace stepsim::sim
