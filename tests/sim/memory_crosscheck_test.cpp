// The analytic memory model (core) is the oracle of the simulated memory timeline (sim):
// the same decomposition replayed by the event engine must reach the same per-stage peak.
// The one intended difference: the analytic peak also adds the last stage's transient fp32
// logits on top of the activations held, the engine holds them only during the logits GEMM.

#include <gtest/gtest.h>

#include "../core/model_workloads.hpp"
#include "stepsim/plan/decompose.hpp"
#include "stepsim/memory/memory_model.hpp"
#include "stepsim/cost/roofline_cost_model.hpp"
#include "stepsim/simulate/simulate.hpp"

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

// Uneven stages (Megatron's --decoder-first/last-pipeline-num-layers): 18 layers on the first
// and last rank, 22 on the two middle ones, 2 virtual stages each. Weights, activations and
// compute follow each stage's own layers, and the engine's memory still matches the oracle.
TEST(MemoryCrossCheck, UnevenFirstAndLastStages) {
  Workload w = testing::make_workload(testing::llama2_70b(), 8, 4, 1, 1, 8, 2);
  w.name = "llama2-uneven-first-last";
  w.training.num_layers_per_virtual_pipeline_stage = 0;
  w.training.decoder_first_pipeline_num_layers = 18;
  w.training.decoder_last_pipeline_num_layers = 18;
  expect_simulated_peaks_match(w);

  const WorkloadPlan plan = decompose(w);
  ASSERT_EQ(plan.stages.size(), 4U);
  EXPECT_EQ(plan.stages[0].chunks[0].num_layers, 9);
  EXPECT_EQ(plan.stages[1].chunks[1].num_layers, 11);
  EXPECT_EQ(plan.stages[1].chunks[1].first_layer, 40 + 9);
  EXPECT_LT(plan.stages[0].parameters, plan.stages[1].parameters);
  const RooflineCostModel cost(w.system);
  const Result<sim::SimulationResult> result = sim::simulate(w, plan, cost);
  ASSERT_TRUE(result.ok()) << format_errors(result.errors());
  const std::vector<sim::StageSummary>& stages = result->prediction.stages;
  // The middle stages do 22/18 of the first stage's layer work; the first stage waits on them.
  EXPECT_GT(stages[1].busy_s, stages[0].busy_s * 1.1);
  EXPECT_GT(stages[0].bubble_s, stages[1].bubble_s);
}

// An uneven split without interleaving (1F1B): the first and last stages hold fewer layers
// than the middle ones, so fewer weights and activations, and spend less time computing.
TEST(MemoryCrossCheck, UnevenStagesOneFOneB) {
  Workload w = testing::make_workload(testing::llama2_70b(), 8, 4, 1, 1, 8);
  w.name = "llama2-uneven-1f1b";
  w.training.decoder_first_pipeline_num_layers = 14;
  w.training.decoder_last_pipeline_num_layers = 18;  // middle: (80 - 32) / 2 = 24 each
  expect_simulated_peaks_match(w);
  const WorkloadPlan plan = decompose(w);
  EXPECT_EQ(plan.stages[0].chunks[0].num_layers, 14);
  EXPECT_EQ(plan.stages[2].chunks[0].num_layers, 24);
  EXPECT_EQ(plan.stages[2].chunks[0].first_layer, 38);
  EXPECT_EQ(plan.stages[3].chunks[0].num_layers, 18);
  const std::vector<StageMemory> memory = analytic_memory(w);
  EXPECT_LT(memory[0].weights_bytes, memory[1].weights_bytes);
  EXPECT_LT(memory[3].weights_bytes, memory[2].weights_bytes);
  EXPECT_LT(memory[3].layer_activations_bytes, memory[2].layer_activations_bytes);
  const RooflineCostModel cost(w.system);
  const Result<sim::SimulationResult> result = sim::simulate(w, plan, cost);
  ASSERT_TRUE(result.ok()) << format_errors(result.errors());
  const std::vector<sim::StageSummary>& stages = result->prediction.stages;
  EXPECT_GT(stages[1].busy_s, stages[0].busy_s * 1.5);  // 24 layers against 14
  EXPECT_GT(stages[1].busy_s, stages[3].busy_s);
}

// A layout with a virtual stage that holds nothing (rank 0's second) and one that holds only
// the loss (rank 3's second): empty chunks still pass activations along.
TEST(MemoryCrossCheck, LayoutWithEmptyVirtualStages) {
  Workload w = testing::make_workload(testing::llama2_70b(), 8, 4, 1, 1, 8, 2);
  w.name = "llama2-layout-empty";
  w.training.num_layers_per_virtual_pipeline_stage = 0;
  w.training.pipeline_model_parallel_layout = "E|t*20|t*20|t*20||t*10|t*10|L";
  expect_simulated_peaks_match(w);
  const WorkloadPlan plan = decompose(w);
  EXPECT_EQ(plan.stages[0].chunks[0].num_layers, 0);
  EXPECT_TRUE(plan.stages[0].chunks[0].has_embedding);
  EXPECT_EQ(plan.stages[0].chunks[1].num_layers, 0);
  EXPECT_TRUE(plan.stages[0].chunks[1].forward.empty());
  EXPECT_EQ(plan.stages[3].chunks[1].num_layers, 0);
  EXPECT_TRUE(plan.stages[3].chunks[1].has_loss);
  EXPECT_EQ(plan.stages[1].chunks[1].first_layer, 60);
}

// The same layout with data parallelism, the distributed optimizer and both DDP overlaps:
// the empty chunk reduces and gathers nothing, and the step still simulates.
TEST(MemoryCrossCheck, LayoutWithEmptyVirtualStagesAndDdpOverlap) {
  Workload w = testing::make_workload(testing::llama2_70b(), 8, 4, 2, 1, 8, 2);
  w.name = "llama2-layout-empty-ddp";
  w.training.num_layers_per_virtual_pipeline_stage = 0;
  w.training.pipeline_model_parallel_layout = "E|t*20|t*20|t*20||t*10|t*10|L";
  w.training.use_distributed_optimizer = true;
  w.training.overlap_grad_reduce = true;
  w.training.overlap_param_gather = true;
  const WorkloadPlan plan = decompose(w);
  EXPECT_TRUE(plan.stages[0].chunks[1].grad_sync.empty());
  EXPECT_FALSE(plan.stages[0].chunks[0].grad_sync.empty());
  const RooflineCostModel cost(w.system);
  const Result<sim::SimulationResult> result = sim::simulate(w, plan, cost);
  ASSERT_TRUE(result.ok()) << format_errors(result.errors());
  EXPECT_GT(result->prediction.step_time_s, 0.0);
}

}  // namespace
}  // namespace stepsim
