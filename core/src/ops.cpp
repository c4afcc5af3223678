#include "stepsim/core/ops.hpp"

#include <type_traits>

namespace stepsim {

double AttentionOp::flops() const {
  // Forward: QK^T and attention*V, 2 matmuls of 2*s*s*d each per head. Backward does twice
  // the forward's matmul work (dQ, dK from dS; dV, dP from dO).
  const double per_head = 4.0 * static_cast<double>(seq) * static_cast<double>(seq) *
                          static_cast<double>(head_dim);
  const double fwd = per_head * static_cast<double>(batch * heads);
  return backward ? 2.0 * fwd : fwd;
}

double Op::flops() const {
  return std::visit(
      [](const auto& s) -> double {
        using T = std::decay_t<decltype(s)>;
        if constexpr (std::is_same_v<T, GemmOp> || std::is_same_v<T, AttentionOp>) {
          return s.flops();
        } else {
          return 0.0;
        }
      },
      shape);
}

std::string_view to_string(Phase p) {
  switch (p) {
    case Phase::kForward: return "forward";
    case Phase::kBackwardInput: return "backward_input";
    case Phase::kBackwardWeight: return "backward_weight";
    case Phase::kRecompute: return "recompute";
    case Phase::kStep: return "step";
  }
  return "?";
}

std::string_view to_string(Stream s) {
  switch (s) {
    case Stream::kCompute: return "compute";
    case Stream::kTensorComm: return "tp_comm";
    case Stream::kPipelineComm: return "pp_comm";
    case Stream::kDataComm: return "dp_comm";
  }
  return "?";
}

std::string_view to_string(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::kAllReduce: return "all_reduce";
    case CollectiveKind::kAllGather: return "all_gather";
    case CollectiveKind::kReduceScatter: return "reduce_scatter";
  }
  return "?";
}

std::string_view to_string(CommGroup g) {
  switch (g) {
    case CommGroup::kTensor: return "tp";
    case CommGroup::kData: return "dp";
    case CommGroup::kEmbedding: return "embedding";
    case CommGroup::kTensorData: return "tp_dp";
  }
  return "?";
}

}  // namespace stepsim
