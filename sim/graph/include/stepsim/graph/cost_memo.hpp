#pragma once
// CostMemo: a CostModel that remembers what another one answered, for one thread.
//
// A sweep prices the same op shapes for thousands of configurations (every configuration
// with the same t, micro-batch size and sequence length has the same GEMMs), and a
// CalibratedCostModel query interpolates in log space and records warnings under a mutex
// that all workers share. Each sweep worker owns one CostMemo per cost model: repeated
// shapes cost a hash lookup and touch nothing shared.
//
// Answers are the wrapped model's, bit for bit (its queries are deterministic), and every
// distinct shape still reaches it once, so its warnings() are the same as without the memo.
// Not thread-safe: one per thread.

#include <array>
#include <cstdint>
#include <unordered_map>

#include "stepsim/cost/cost_model.hpp"

namespace stepsim::sim {

class CostMemo final : public CostModel {
 public:
  explicit CostMemo(const CostModel& model) : model_(&model) {}

  double gemm_s(const GemmOp& op) const override;
  double attention_s(const AttentionOp& op) const override;
  double memory_bound_s(const MemoryBoundOp& op) const override;
  double collective_s(const CollectiveOp& op) const override;
  double p2p_s(const P2POp& op) const override;
  std::string describe() const override { return model_->describe(); }
  std::vector<std::string> warnings() const override { return model_->warnings(); }
  Provenance provenance() const override { return model_->provenance(); }
  const HostCosts* host() const override { return model_->host(); }
  const MeasuredInterference* interference() const override { return model_->interference(); }
  const KernelSpread* spread() const override { return model_->spread(); }

  const CostModel& model() const { return *model_; }
  std::size_t size() const { return memo_.size(); }

 private:
  /// An op's kind and every field its price depends on, widened to integers (the rest 0).
  struct Key {
    std::array<std::int64_t, 9> fields{};
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const;
  };
  template <typename Query>
  double remembered(const Key& key, Query&& query) const;

  const CostModel* model_;
  mutable std::unordered_map<Key, double, KeyHash> memo_;
};

}  // namespace stepsim::sim
