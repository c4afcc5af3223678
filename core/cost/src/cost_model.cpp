#include "stepsim/cost/cost_model.hpp"

#include <type_traits>

namespace stepsim {

double CostModel::shape_s(const OpShape& shape) const {
  return std::visit(
      [this](const auto& s) -> double {
        using T = std::decay_t<decltype(s)>;
        if constexpr (std::is_same_v<T, GemmOp>) {
          if (s.atomic_chunks <= 1) return gemm_s(s);
          // A chunk of one atomic GEMM: the whole kernel's time, shared by its chunks.
          GemmOp whole = s;
          whole.n *= s.atomic_chunks;
          whole.atomic_chunks = 1;
          return gemm_s(whole) / static_cast<double>(s.atomic_chunks);
        }
        if constexpr (std::is_same_v<T, AttentionOp>) return attention_s(s);
        if constexpr (std::is_same_v<T, MemoryBoundOp>) {
          if (s.kernels <= 1) return memory_bound_s(s);
          // `kernels` launches of equal size, each priced as the kernel it is (a small one is
          // latency-bound), so cost models only ever see single launches.
          const std::int64_t each = (s.bytes + s.kernels - 1) / s.kernels;
          return static_cast<double>(s.kernels) * memory_bound_s(MemoryBoundOp{.bytes = each});
        }
        if constexpr (std::is_same_v<T, CollectiveOp>) return collective_s(s);
        if constexpr (std::is_same_v<T, P2POp>) return p2p_s(s);
      },
      shape);
}

// A kernel confined to a share of the SMs runs at that share of its full-GPU rate (a GEMM's
// tiles are spread over fewer SMs; wave quantisation ignored): the profile's or roofline's
// per-shape time scaled by 1 / sm_share.
double CostModel::op_s(const Op& op) const {
  const double seconds = shape_s(op.shape);
  return op.sm_share < 1.0 ? seconds / op.sm_share : seconds;
}

}  // namespace stepsim
