// The analytic memory model (core) is the oracle of the simulated memory timeline (sim):
// the same decomposition replayed by the event engine must reach the same per-stage peak.
// The one intended difference: the analytic peak also adds the last stage's transient fp32
// logits on top of the activations held, the engine holds them only during the logits GEMM.

#include <gtest/gtest.h>

#include "../core/model_workloads.hpp"
#include "stepsim/core/decompose.hpp"
#include "stepsim/core/memory_model.hpp"
#include "stepsim/core/roofline_cost_model.hpp"
#include "stepsim/sim/simulate.hpp"

namespace stepsim {
namespace {

void expect_simulated_peaks_match(const Workload& w) {
  const WorkloadPlan plan = decompose(w);
  const RooflineCostModel cost(w.system);
  const Result<sim::SimulationResult> result = sim::simulate(w, plan, cost);
  ASSERT_TRUE(result.ok()) << format_errors(result.errors());
  const sim::SimulationResult& run = *result;
  const std::vector<StageMemory> analytic = analytic_memory(w);
  ASSERT_EQ(run.prediction.stages.size(), analytic.size());
  const std::size_t last = analytic.size() - 1;
  for (std::size_t r = 0; r < last; ++r) {
    EXPECT_EQ(run.prediction.stages[r].peak_memory_bytes, analytic[r].peak_bytes)
        << w.name << " stage " << r;
  }
  const std::int64_t logits = chunk_activations(w, static_cast<std::int32_t>(last),
                                                static_cast<std::int32_t>(
                                                    w.training.virtual_pipeline_model_parallel_size -
                                                    1))
                                  .transient_bytes;
  EXPECT_LE(run.prediction.stages[last].peak_memory_bytes, analytic[last].peak_bytes);
  EXPECT_GE(run.prediction.stages[last].peak_memory_bytes, analytic[last].peak_bytes - logits);
}

TEST(MemoryCrossCheck, OneFOneBWithSelectiveRecompute) {
  Workload w = testing::make_workload(testing::gpt3_175b(), 8, 8, 1, 1, 16);
  w.name = "gpt3-1f1b-selective";
  w.training.sequence_parallel = true;
  w.training.recompute_granularity = RecomputeGranularity::kSelective;
  expect_simulated_peaks_match(w);
}

TEST(MemoryCrossCheck, InterleavedWithFullRecompute) {
  Workload w = testing::make_workload(testing::llama2_70b(), 8, 4, 2, 1, 8, 2);
  w.name = "llama2-interleaved-full";
  w.training.recompute_granularity = RecomputeGranularity::kFull;
  w.training.recompute_method = RecomputeMethod::kUniform;
  w.training.recompute_num_layers = 2;
  expect_simulated_peaks_match(w);
}

TEST(MemoryCrossCheck, FewerMicrobatchesThanStages) {
  Workload w = testing::make_workload(testing::gpt3_175b(), 8, 8, 1, 1, 3);
  w.name = "gpt3-m3";
  expect_simulated_peaks_match(w);
}

}  // namespace
}  // namespace stepsim
