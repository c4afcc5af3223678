// Megatron's data-parallel overlaps (sim/graph/src/build_step.cpp, ddp_buckets.hpp) on synthetic
// steps whose times are computed by hand, and on a shipped scenario.

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <vector>

#include "hand_cost.hpp"
#include "hand_step.hpp"
#include "stepsim/plan/decompose.hpp"
#include "stepsim/check/load.hpp"
#include "stepsim/cost/make_cost_model.hpp"
#include "stepsim/simulate/simulate.hpp"

namespace stepsim::sim {
namespace {

SimulationResult run(const Step& s) {
  SimulateOptions options;
  options.keep_timeline = true;
  Result<SimulationResult> r = simulate(s.w, s.plan, HandCost(), options);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : format_errors(r.errors()));
  return std::move(r).value();
}

std::vector<Slice> dp_slices(const SimulationResult& r, std::int32_t rank) {
  std::vector<Slice> out;
  for (const Slice& s : r.timeline.slices) {
    if (s.rank == rank && s.stream == Stream::kDataComm) out.push_back(s);
  }
  return out;
}

StepOptions grad_overlap(bool on, std::int64_t grad_bytes = 4) {
  return StepOptions{.overlap_grad_reduce = on, .grad_bytes = grad_bytes};
}

TEST(DdpOverlap, BucketsOfTheFirstStageReduceDuringTheLastBackward) {
  // p 1, m 2: F0 [0,3] B0 [3,6] F1 [6,9] B1 [9,12]. Without overlap the 0.48 s all-reduce
  // runs after B1: 12.48 s. With overlap_grad_reduce the chunk's 120M parameters form three
  // 40M buckets (max(40M, 1M * dp)) that become final at 10, 11 and 12 inside B1 (the last
  // micro-batch only) and reduce for 0.16 s each: 12.16 s, 0.32 s less.
  const SimulationResult off = run(make_step(1, 1, 2, grad_overlap(false)));
  const SimulationResult on = run(make_step(1, 1, 2, grad_overlap(true)));
  EXPECT_NEAR(off.prediction.step_time_s, 12.48, 1e-9);
  EXPECT_NEAR(on.prediction.step_time_s, 12.16, 1e-9);
  const std::vector<Slice> buckets = dp_slices(on, 0);
  ASSERT_EQ(buckets.size(), 3u);
  for (std::size_t b = 0; b < 3; ++b) {
    EXPECT_NEAR(buckets[b].start_s, 10.0 + static_cast<double>(b), 1e-9);
    EXPECT_NEAR(buckets[b].end_s, 10.16 + static_cast<double>(b), 1e-9);
    EXPECT_EQ(buckets[b].name, "c0 b" + std::to_string(b) + " dp_grad_all_reduce");
  }
  ASSERT_EQ(dp_slices(off, 0).size(), 1u);
  EXPECT_EQ(dp_slices(off, 0)[0].name, "c0 dp_grad_all_reduce");
}

TEST(DdpOverlap, OverlappedBucketsAndTheBackwardSlowEachOther) {
  // The case above with compute-communication interference: compute beside an NCCL kernel
  // 1.2 times as long, the collective 1.5 times. B1 [9, ...] has 3 s of work; buckets become
  // ready at 10, 11, 12 (fixed offsets into B1's template) and need 0.16 s each alone.
  // b0 [10, 10.24]: at 1/1.5 speed, 0.16 * 1.5 = 0.24 s; B1 does 0.24 / 1.2 = 0.2 s of work
  //   in it: 1.2 done at 10.24, 1.96 at 11.
  // b1 [11, 11.24] likewise: 2.16 done at 11.24, 2.92 at 12.
  // b2 from 12 beside B1's last 0.08 s of work, done at 1/1.2: B1 ends at 12.096; b2 has done
  //   0.096 / 1.5 = 0.064 s of its 0.16 and does the other 0.096 alone: 12.192.
  // Without overlap the all-reduce runs after B1 with nothing beside it: 12.48 as before.
  Step on = make_step(1, 1, 2, grad_overlap(true));
  on.w.system.interference = Interference{.compute_slowdown = 1.2, .collective_slowdown = 1.5};
  Step off = make_step(1, 1, 2, grad_overlap(false));
  off.w.system.interference = on.w.system.interference;
  const SimulationResult slowed = run(on);
  EXPECT_NEAR(slowed.prediction.step_time_s, 12.192, 1e-9);
  EXPECT_NEAR(run(off).prediction.step_time_s, 12.48, 1e-9);
  const std::vector<Slice> buckets = dp_slices(slowed, 0);
  ASSERT_EQ(buckets.size(), 3u);
  EXPECT_NEAR(buckets[0].end_s, 10.24, 1e-9);
  EXPECT_NEAR(buckets[1].end_s, 11.24, 1e-9);
  EXPECT_NEAR(buckets[2].end_s, 12.192, 1e-9);
}

TEST(DdpOverlap, BucketReductionsQueueOnTheDataParallelStream) {
  // 40 bytes per parameter: each bucket reduces for 1.6 s, longer than the 1 s between
  // ready points, so they queue: [10, 11.6], [11.6, 13.2], [13.2, 14.8]. Without overlap:
  // one 4.8 s all-reduce after B1, 16.8 s.
  EXPECT_NEAR(run(make_step(1, 1, 2, grad_overlap(true, 40))).prediction.step_time_s, 14.8, 1e-9);
  EXPECT_NEAR(run(make_step(1, 1, 2, grad_overlap(false, 40))).prediction.step_time_s, 16.8, 1e-9);
}

TEST(DdpOverlap, LaterPipelineStagesReduceOneBucketAfterTheirProgram) {
  // p 2, m 1, free transfers: stage 0 F [0,3], stage 1 F [3,6] B [6,9], stage 0 B [9,12].
  // Stage 1 is not bucketed (pp rank > 0): one 0.48 s all-reduce after its program,
  // [9, 9.48]. Stage 0's buckets become final at 10, 11, 12: 12.16 s (12.48 s without).
  const SimulationResult on = run(make_step(2, 1, 1, grad_overlap(true)));
  EXPECT_NEAR(on.prediction.step_time_s, 12.16, 1e-9);
  EXPECT_NEAR(run(make_step(2, 1, 1, grad_overlap(false))).prediction.step_time_s, 12.48, 1e-9);
  const std::vector<Slice> later = dp_slices(on, 1);
  ASSERT_EQ(later.size(), 1u);
  EXPECT_NEAR(later[0].start_s, 9.0, 1e-9);
  EXPECT_NEAR(later[0].end_s, 9.48, 1e-9);
  EXPECT_EQ(dp_slices(on, 0).size(), 3u);
}

TEST(DdpOverlap, InterleavedChunksLaunchTogetherAcrossThePipeline) {
  // Interleaved, align_grad_reduce (Megatron's default): a chunk's reduction starts when the
  // rank ends the backward whose virtual micro-batch id is the chunk's last plus the rank,
  // else after the program; buckets only on the first chunk of the first rank, and there
  // dispatched together. With 0.48 s reductions nothing queues.
  const std::int32_t p = 2, v = 2, m = 4;
  const SimulationResult on = run(make_step(p, v, m, grad_overlap(true)));
  const SimulationResult off = run(make_step(p, v, m, grad_overlap(false)));
  for (std::int32_t r = 0; r < p; ++r) {
    std::vector<Slice> backward;
    double program_end = 0;
    for (const Slice& s : on.timeline.slices) {
      if (s.rank != r || s.stream == Stream::kDataComm) continue;
      program_end = std::max(program_end, s.end_s);
      if (s.op == "qkv_wgrad") backward.push_back(s);  // a backward's last op
    }
    ASSERT_EQ(backward.size(), static_cast<std::size_t>(v * m));
    std::map<std::int32_t, std::size_t> last;  // chunk -> index of its last backward
    for (std::size_t j = 0; j < backward.size(); ++j) last[backward[j].chunk] = j;
    std::map<std::int32_t, double> start;  // chunk -> when its first reduction starts
    for (const Slice& red : dp_slices(on, r)) {
      if (start.count(red.chunk) == 0) start[red.chunk] = red.start_s;
    }
    ASSERT_EQ(start.size(), static_cast<std::size_t>(v));
    for (const auto& [chunk, at] : start) {
      const std::size_t k = last.at(chunk) + static_cast<std::size_t>(r);
      const double expected = k < backward.size() ? backward[k].end_s : program_end;
      EXPECT_NEAR(at, expected, 1e-9) << "rank " << r << " chunk " << chunk;
    }
  }
  // Rank 0 ends last. Its chunk 1 reduction hides under its last backward (chunk 0's), which
  // ends the program; then chunk 0's three buckets reduce for 0.16 s each: 0.48 s after the
  // program instead of 2 x 0.48 s.
  EXPECT_NEAR(off.prediction.step_time_s - on.prediction.step_time_s, 0.48, 1e-9);
}

TEST(DdpOverlap, ParamGatherOverlapsTheFirstForward) {
  // p 1, m 2, distributed optimizer, overlap_grad_reduce: the step of
  // BucketsOfTheFirstStageReduceDuringTheLastBackward (12.16 s), then a 0.5 s optimizer
  // step. Without overlap_param_gather the 0.24 s all-gather (2 bytes per parameter) follows
  // it: 12.9 s. With it, the three buckets' 0.08 s all-gathers run back to back from the
  // step's start in forward order (QKV's bucket first: Megatron's forward pre-hook waits
  // for it, then dispatches the next), ending at 0.08, 0.16, 0.24; the forward needs them at
  // 0, 1 and 2 s into F0, so F0 starts at 0.08 and the step ends at 12.74 s.
  StepOptions o{.overlap_grad_reduce = true, .param_bytes = 2};
  const SimulationResult off = run(make_step(1, 1, 2, o));
  o.overlap_param_gather = true;
  const SimulationResult on = run(make_step(1, 1, 2, o));
  EXPECT_NEAR(off.prediction.step_time_s, 12.9, 1e-9);
  EXPECT_NEAR(on.prediction.step_time_s, 12.74, 1e-9);
  // 40 bytes per parameter: all-gathers of 1.6 s end at 1.6, 3.2 and 4.8; FC2's GEMM (2 s
  // into F0) waits for the last, so F0 starts at 2.8 and the step ends at 15.46 s.
  o.param_bytes = 40;
  EXPECT_NEAR(run(make_step(1, 1, 2, o)).prediction.step_time_s, 15.46, 1e-9);
}

TEST(DdpOverlap, InterleavedParamGatherWaitsForTheWholeChunk) {
  // Interleaved with align_param_gather (Megatron's default): chunks 0 and 1 are gathered
  // at the start, every bucket of a chunk at once; a chunk's first forward waits for all of
  // them. Each chunk's gather takes 0.24 s (120M parameters x 2 bytes): rank 0 starts its
  // first forward at 0.24 instead of 0 (chunk 1's gather, [0.24, 0.48], is done long before
  // its first forward), every later rank waits for rank 0's activations anyway, so the
  // step shifts by 0.24 s, and loses the 2 x 0.24 s all-gather after the optimizer: 0.24 s
  // less.
  const std::int32_t p = 2, v = 2, m = 4;
  StepOptions o{.overlap_grad_reduce = true, .param_bytes = 2};
  const SimulationResult off = run(make_step(p, v, m, o));
  o.overlap_param_gather = true;
  const SimulationResult on = run(make_step(p, v, m, o));
  double first_forward = 1e9;
  for (const Slice& s : on.timeline.slices) {
    if (s.rank == 0 && s.stream == Stream::kCompute) first_forward = std::min(first_forward, s.start_s);
  }
  EXPECT_NEAR(first_forward, 0.24, 1e-9);
  EXPECT_NEAR(off.prediction.step_time_s - on.prediction.step_time_s, 0.24, 1e-9);
}

TEST(DdpOverlap, BucketSizeKeySetsTheBuckets) {
  // BucketReductionsQueueOnTheDataParallelStream (40 bytes per parameter, 14.8 s) with
  // ddp_bucket_size 80M: FC2's 40M weight leaves the bucket open, FC1's closes it at 80M
  // (final at 11), QKV's 40M make the second (final at 12). Reductions of 3.2 s and 1.6 s:
  // [11, 14.2] and [14.2, 15.8], one second later than three 40M buckets.
  StepOptions o = grad_overlap(true, 40);
  o.ddp_bucket_size = 80'000'000;
  const SimulationResult r = run(make_step(1, 1, 2, o));
  EXPECT_NEAR(r.prediction.step_time_s, 15.8, 1e-9);
  const std::vector<Slice> buckets = dp_slices(r, 0);
  ASSERT_EQ(buckets.size(), 2u);
  EXPECT_NEAR(buckets[0].start_s, 11.0, 1e-9);
  EXPECT_NEAR(buckets[0].end_s, 14.2, 1e-9);
  EXPECT_NEAR(buckets[1].start_s, 14.2, 1e-9);
  EXPECT_NEAR(buckets[1].end_s, 15.8, 1e-9);
  // 120M (the whole chunk) or more: one bucket, final at 12 and reduced for 4.8 s, as
  // without overlap_grad_reduce.
  o.ddp_bucket_size = 120'000'000;
  EXPECT_NEAR(run(make_step(1, 1, 2, o)).prediction.step_time_s, 16.8, 1e-9);
}

TEST(DdpOverlap, NumBucketsKeyDividesTheRanksParameters) {
  // ddp_num_buckets n: bucket size = the rank's 120M parameters // n (training.py).
  // n = 2: 60M, so FC2 + FC1 (80M) and QKV (40M), as with 80M buckets: 15.8 s. n = 1: one
  // 120M bucket: 16.8 s. n = 3: 40M, Megatron's default here: 14.8 s. n above the
  // parameters: size 1, one bucket per module: 14.8 s.
  StepOptions o = grad_overlap(true, 40);
  const std::pair<std::int64_t, double> cases[] = {
      {2, 15.8}, {1, 16.8}, {3, 14.8}, {200'000'000, 14.8}};
  for (const auto& [n, step] : cases) {
    o.ddp_num_buckets = n;
    EXPECT_NEAR(run(make_step(1, 1, 2, o)).prediction.step_time_s, step, 1e-9) << "n = " << n;
  }
  o.ddp_num_buckets = 2;
  EXPECT_EQ(dp_slices(run(make_step(1, 1, 2, o)), 0).size(), 2u);
}

TEST(DdpOverlap, UnalignedParamGatherWaitsInEachChunksFirstForward) {
  // InterleavedParamGatherWaitsForTheWholeChunk with --no-align-param-gather: no gathers at
  // the schedule's start; each chunk's first forward launches its gathers and waits for
  // them. Rank 0's chunk 0 has three 40M buckets gathered in forward order (0.08 s each), so
  // its first forward starts at 0.08, as without interleaving (0.24 aligned); every other
  // chunk is one bucket whose 0.24 s gather starts where its first forward would have and
  // delays it by 0.24 s.
  const std::int32_t p = 2, v = 2, m = 4;
  StepOptions o{.overlap_grad_reduce = true, .param_bytes = 2, .overlap_param_gather = true};
  const SimulationResult aligned = run(make_step(p, v, m, o));
  o.align_param_gather = false;
  const SimulationResult own = run(make_step(p, v, m, o));
  std::map<std::pair<std::int32_t, std::int32_t>, double> first_forward, gather_start, gather_end;
  for (const Slice& s : own.timeline.slices) {
    const auto key = std::make_pair(s.rank, s.chunk);
    if (s.stream == Stream::kCompute && s.kind == SliceKind::kForward &&
        first_forward.count(key) == 0) {
      first_forward[key] = s.start_s;
    }
    if (s.stream == Stream::kDataComm && s.op == "dp_param_all_gather") {
      if (gather_start.count(key) == 0) gather_start[key] = s.start_s;
      gather_end[key] = s.end_s;
    }
  }
  ASSERT_EQ(first_forward.size(), static_cast<std::size_t>(p * v));
  ASSERT_EQ(gather_start.size(), static_cast<std::size_t>(p * v));
  EXPECT_NEAR(first_forward.at({0, 0}), 0.08, 1e-9);
  EXPECT_NEAR(gather_start.at({0, 0}), 0.0, 1e-9);
  EXPECT_NEAR(gather_end.at({0, 0}), 0.24, 1e-9);
  for (std::int32_t r = 0; r < p; ++r) {
    for (std::int32_t c = 0; c < v; ++c) {
      if (r == 0 && c == 0) continue;
      const auto key = std::make_pair(r, c);
      EXPECT_NEAR(gather_end.at(key) - gather_start.at(key), 0.24, 1e-9) << r << " " << c;
      EXPECT_NEAR(first_forward.at(key), gather_end.at(key), 1e-9) << r << " " << c;
    }
  }
  // Rank 1's first forward takes rank 0's activation at 3.08 and waits 0.24 s for its own
  // gather: 3.32 (aligned: gathered from 0, it starts at 3.24 when the activation comes).
  EXPECT_NEAR(gather_start.at({1, 0}), 3.08, 1e-9);
  EXPECT_NEAR(first_forward.at({1, 0}), 3.32, 1e-9);
  EXPECT_GT(own.prediction.step_time_s, aligned.prediction.step_time_s);
}

TEST(DdpOverlap, ShippedLlama2PredictsLessWithOverlapGradReduce) {
  LoadOptions options;
  options.scenarios_dir = STEPSIM_SCENARIOS_DIR;
  Result<Workload> loaded =
      load_scenario_file(std::string(STEPSIM_SCENARIOS_DIR) + "/llama2-70b-h100-64.json", options);
  ASSERT_TRUE(loaded.ok()) << format_errors(loaded.errors());
  double step[2] = {0, 0};
  for (const bool overlap : {false, true}) {
    Workload w = *loaded;
    w.training.overlap_grad_reduce = overlap;
    w.training.overlap_param_gather = false;
    Result<std::unique_ptr<CostModel>> cost = make_cost_model(w);
    ASSERT_TRUE(cost.ok()) << format_errors(cost.errors());
    Result<SimulationResult> r = simulate(w, decompose(w), **cost);
    ASSERT_TRUE(r.ok()) << format_errors(r.errors());
    step[overlap ? 1 : 0] = r->prediction.step_time_s;
  }
  EXPECT_LT(step[1], step[0]);
}

TEST(DdpOverlap, GradNormAllReduceMakesEveryStageWaitForTheSlowest) {
  // p 2, m 1, no overlap: stage 1's program ends at 9 and its 0.48 s all-reduce at 9.48;
  // stage 0's at 12 and 12.48. Each stage then runs the optimizer's grad_norm kernel (1 s),
  // the norm's all-reduce over the grad-stats group (4 bytes: 4 ns) and the clip (1 s).
  // The all-reduce is one collective over both stages: stage 1, whose norm is ready at
  // 10.48, waits for stage 0's (13.48); both clip from 13.480000004 to 14.480000004.
  Step s = make_step(2, 1, 1, grad_overlap(false));
  for (StagePlan& stage : s.plan.stages) {
    Op norm;
    norm.name = "grad_norm";
    norm.phase = Phase::kStep;
    norm.shape = MemoryBoundOp{1'000'000'000};
    stage.step_ops.push_back(norm);
    Op& reduce = stage.step_ops.emplace_back();
    reduce.name = "grad_norm_all_reduce";
    reduce.phase = Phase::kStep;
    reduce.stream = Stream::kDataComm;
    reduce.shape = CollectiveOp{CollectiveKind::kAllReduce, CommGroup::kGradStats, 4, 2, 1};
    reduce.deps = {0};
    Op clip = norm;
    clip.name = "grad_clip";
    clip.deps = {1};
    stage.step_ops.push_back(clip);
  }
  const SimulationResult r = run(s);
  EXPECT_NEAR(r.prediction.step_time_s, 14.480000004, 1e-12);
  for (std::int32_t rank = 0; rank < 2; ++rank) {
    bool found = false;
    for (const Slice& slice : r.timeline.slices) {
      if (slice.rank != rank || slice.name.find("grad_clip") == std::string::npos) continue;
      EXPECT_NEAR(slice.start_s, 13.480000004, 1e-12) << "stage " << rank;
      found = true;
    }
    EXPECT_TRUE(found) << "stage " << rank;
  }
}

}  // namespace
}  // namespace stepsim::sim
