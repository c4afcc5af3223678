#pragma once
// A cost model for steps whose times a test computes by hand.

#include <string>
#include <utility>

#include "stepsim/cost/cost_model.hpp"
#include "stepsim/cost/profile.hpp"

namespace stepsim::sim {

/// A GEMM costs its k times `gemm_s_per_k` seconds, memory-bound ops and collectives 1 ns
/// per byte, attention nothing, a P2P transfer `p2p_s`; the host issues kernels as `host`
/// says (not modelled unless measured()).
class HandCost final : public CostModel {
 public:
  struct Options {
    double gemm_s_per_k = 1;
    double p2p_s = 0;
    HostCosts host{};
    KernelSpread spread{};
  };
  HandCost() = default;
  explicit HandCost(Options options) : o_(std::move(options)) {}
  double gemm_s(const GemmOp& op) const override {
    return o_.gemm_s_per_k * static_cast<double>(op.k);
  }
  double attention_s(const AttentionOp&) const override { return 0.0; }
  double memory_bound_s(const MemoryBoundOp& op) const override {
    return static_cast<double>(op.bytes) * 1e-9;
  }
  double collective_s(const CollectiveOp& op) const override {
    return static_cast<double>(op.bytes) * 1e-9;
  }
  double p2p_s(const P2POp&) const override { return o_.p2p_s; }
  std::string describe() const override { return "hand"; }
  const HostCosts* host() const override { return o_.host.measured() ? &o_.host : nullptr; }
  const KernelSpread* spread() const override {
    return o_.spread.measured() ? &o_.spread : nullptr;
  }

 private:
  Options o_;
};

}  // namespace stepsim::sim
