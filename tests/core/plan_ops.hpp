#pragma once
// Finding ops in a decomposed plan, for the decomposition tests, and a measured profile of
// chosen GEMM samples, for the FP8 recipes' pricing tests.

#include <gtest/gtest.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "stepsim/plan/decompose.hpp"
#include "stepsim/cost/profile.hpp"

namespace stepsim::testing {

/// Keeps a plan alive for the rest of the test program, so that pointers `named` returns into
/// it stay valid (a temporary plan would be freed at the end of the full expression).
inline const WorkloadPlan& kept(WorkloadPlan plan) {
  static std::deque<WorkloadPlan> plans;
  return plans.emplace_back(std::move(plan));
}

/// The ops of `ops` called `name` on layer `layer`, in order.
inline std::vector<const Op*> named(const std::vector<Op>& ops, const std::string& name,
                                    std::int32_t layer = 0) {
  std::vector<const Op*> out;
  for (const Op& op : ops) {
    if (op.name == name && op.layer == layer) out.push_back(&op);
  }
  return out;
}

/// The index of the first op named `name` in layer 1 (a failure if there is none).
inline std::size_t index_of(const std::vector<Op>& ops, std::string_view name) {
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].name == name && ops[i].layer == 1) return i;
  }
  ADD_FAILURE() << "no op " << name;
  return 0;
}

/// The bytes a memory-bound op or a collective moves (a failure for any other op).
inline std::int64_t bytes_of_op(const Op& op) {
  if (const auto* m = std::get_if<MemoryBoundOp>(&op.shape)) return m->bytes;
  if (const auto* c = std::get_if<CollectiveOp>(&op.shape)) return c->bytes;
  ADD_FAILURE() << op.name << " moves no bytes";
  return 0;
}

/// The first tensor-parallel all-gather at or after `from`.
inline const Op& gather_after(const std::vector<Op>& ops, std::size_t from) {
  for (std::size_t i = from; i < ops.size(); ++i) {
    if (ops[i].name == "tp_all_gather") return ops[i];
  }
  ADD_FAILURE() << "no all-gather after " << ops[from].name;
  static const Op none;
  return none;
}

/// A measured profile of `gemm` samples (and two memory-bound ones, which a fit needs).
inline std::shared_ptr<Profile> gemm_profile(std::vector<GemmSample> gemm) {
  auto p = std::make_shared<Profile>();
  p->format_version = 1;
  p->machine = "test";
  p->backend = "cuda";
  p->source = "measured";
  p->gemm = std::move(gemm);
  p->memory = {MemorySample{1 << 20, 1e-6, ""}, MemorySample{1 << 30, 4e-4, ""}};
  fit_profile(*p);
  return p;
}

/// A per-tensor, split-accumulating FP8 sample of 4096^3 in 100 us.
inline const GemmSample kFp8Sample{.m = 4096,
                                   .n = 4096,
                                   .k = 4096,
                                   .batch = 1,
                                   .dtype = DType::kFp8,
                                   .seconds = 1.0e-4,
                                   .citation = "",
                                   .layout = GemmLayout::kTN};

}  // namespace stepsim::testing
