#include "stepsim/core/cost_model.hpp"

#include <type_traits>

namespace stepsim {

double CostModel::shape_s(const OpShape& shape) const {
  return std::visit(
      [this](const auto& s) -> double {
        using T = std::decay_t<decltype(s)>;
        if constexpr (std::is_same_v<T, GemmOp>) return gemm_s(s);
        if constexpr (std::is_same_v<T, AttentionOp>) return attention_s(s);
        if constexpr (std::is_same_v<T, MemoryBoundOp>) return memory_bound_s(s);
        if constexpr (std::is_same_v<T, CollectiveOp>) return collective_s(s);
        if constexpr (std::is_same_v<T, P2POp>) return p2p_s(s);
      },
      shape);
}

double CostModel::op_s(const Op& op) const { return shape_s(op.shape); }

}  // namespace stepsim
