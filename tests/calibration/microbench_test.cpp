// What calibration measures: grids, group layouts, scenario shapes.

#include "stepsim/calibration/microbench.hpp"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace stepsim::calib {
namespace {

template <typename T>
std::vector<T> only(const std::vector<BenchPoint>& points) {
  std::vector<T> out;
  for (const BenchPoint& p : points) {
    if (const auto* v = std::get_if<T>(&p)) out.push_back(*v);
  }
  return out;
}

/// A compute op named `name` (layer 0) in `phase`.
Op compute_op(std::string name, OpShape shape, Phase phase = Phase::kForward) {
  return Op{std::move(name), 0, phase, Stream::kCompute, std::move(shape), {}, 0};
}

/// A plan of one stage whose one chunk's forward list is `forward`.
WorkloadPlan one_chunk(std::vector<Op> forward) {
  ChunkPlan chunk;
  chunk.forward = std::move(forward);
  StagePlan stage;
  stage.chunks.push_back(std::move(chunk));
  WorkloadPlan plan;
  plan.stages.push_back(std::move(stage));
  return plan;
}

TEST(BenchPlan, CpuQuickGridsAreSmallAndComplete) {
  BenchPlanOptions o;
  o.quick = true;
  o.node_ids = {0, 0};
  const auto plan = make_bench_plan(o);
  const auto gemms = only<GemmOp>(plan);
  EXPECT_EQ(gemms.size(), 27u);  // {64, 256, 1024}^3
  for (const GemmOp& g : gemms) {
    EXPECT_EQ(g.dtype, DType::kFp32);
    EXPECT_LE(g.m, 1024);
    EXPECT_GE(g.m, 64);
  }
  const auto coll = only<CollectivePoint>(plan);
  std::set<CollectiveKind> kinds;
  for (const auto& c : coll) {
    kinds.insert(c.kind);
    EXPECT_EQ(c.group_size, 2);
    EXPECT_EQ(c.nodes_spanned, 1);
    EXPECT_EQ(c.bytes % 8, 0);
  }
  EXPECT_EQ(kinds.size(), 4u);  // all-reduce, all-gather, reduce-scatter, all-to-all
  EXPECT_TRUE(kinds.count(CollectiveKind::kAllToAll));
  const auto p2p = only<P2PPoint>(plan);
  ASSERT_FALSE(p2p.empty());
  EXPECT_FALSE(p2p[0].inter_node);
  EXPECT_EQ(p2p[0].receiver, 1);
  std::set<std::string> keys;
  for (const auto& p : plan) keys.insert(point_key(p));
  EXPECT_EQ(keys.size(), plan.size());
}

TEST(BenchPlan, GpuGridReachesLargeShapesAndOneGiB) {
  BenchPlanOptions o;
  o.gpu = true;
  o.node_ids = {0, 0, 0, 0, 0, 0, 0, 0};
  const auto plan = make_bench_plan(o);
  const auto gemms = only<GemmOp>(plan);
  // 256..16384, 7 per dimension, each in Transformer Engine's three layouts.
  EXPECT_EQ(gemms.size(), 3u * 343u);
  EXPECT_EQ(gemms.back().m, 16384);
  EXPECT_EQ(gemms.front().dtype, DType::kBf16);
  std::map<GemmLayout, std::size_t> per_layout;
  for (const GemmOp& g : gemms) ++per_layout[g.layout];
  EXPECT_EQ(per_layout, (std::map<GemmLayout, std::size_t>{
                            {GemmLayout::kTN, 343}, {GemmLayout::kNN, 343}, {GemmLayout::kNT, 343}}));
  std::set<std::int32_t> groups;
  std::int64_t largest = 0;
  for (const auto& c : only<CollectivePoint>(plan)) {
    groups.insert(c.group_size);
    largest = std::max(largest, c.bytes);
  }
  EXPECT_EQ(groups, (std::set<std::int32_t>{2, 4, 8}));
  EXPECT_EQ(largest, std::int64_t{1} << 30);
}

TEST(BenchPlan, OneRankMeasuresNoCommunication) {
  BenchPlanOptions o;
  o.node_ids = {0};
  const auto plan = make_bench_plan(o);
  EXPECT_TRUE(only<CollectivePoint>(plan).empty());
  EXPECT_TRUE(only<P2PPoint>(plan).empty());
  EXPECT_FALSE(only<MemoryBoundOp>(plan).empty());
  EXPECT_FALSE(only<AttentionOp>(plan).empty());
}

TEST(GroupLayout, NodesSpannedAndColors) {
  const std::vector<std::int32_t> two_nodes{0, 0, 2, 2};
  EXPECT_EQ(nodes_spanned(two_nodes, 2, GroupLayout::kContiguous), 1);
  EXPECT_EQ(nodes_spanned(two_nodes, 2, GroupLayout::kStrided), 2);
  EXPECT_EQ(nodes_spanned(two_nodes, 4, GroupLayout::kContiguous), 2);
  EXPECT_EQ(group_color(3, 4, 2, GroupLayout::kContiguous), 1);
  EXPECT_EQ(group_color(3, 4, 2, GroupLayout::kStrided), 1);
  EXPECT_EQ(group_color(2, 4, 2, GroupLayout::kStrided), 0);
  BenchPlanOptions o;
  o.quick = true;
  o.node_ids = two_nodes;
  const auto plan = make_bench_plan(o);
  bool strided_two = false;
  for (const auto& c : only<CollectivePoint>(plan)) {
    if (c.layout == GroupLayout::kStrided) {
      EXPECT_EQ(c.group_size, 2);  // groups of 4 span both nodes either way
      EXPECT_EQ(c.nodes_spanned, 2);
      strided_two = true;
    }
  }
  EXPECT_TRUE(strided_two);
  bool inter = false;
  for (const auto& p : only<P2PPoint>(plan)) inter = inter || (p.inter_node && p.receiver == 2);
  EXPECT_TRUE(inter);
}

TEST(ScenarioPoints, TakesTheExactShapesOfAPlan) {
  WorkloadPlan plan;
  StagePlan stage;
  ChunkPlan chunk;
  chunk.forward.push_back(Op{"qkv",
                             0,
                             Phase::kForward,
                             Stream::kCompute,
                             GemmOp{2048, 4608, 12288, 1, DType::kBf16},
                             {},
                             0});
  chunk.forward.push_back(
      Op{"ln", 0, Phase::kForward, Stream::kCompute, MemoryBoundOp{12345}, {}, 0});
  chunk.forward.push_back(
      Op{"tp_ar",
         0,
         Phase::kForward,
         Stream::kTensorComm,
         CollectiveOp{CollectiveKind::kAllReduce, CommGroup::kTensor, 1000, 2, 1},
         {},
         0});
  chunk.backward.push_back(Op{"qkv_dgrad",
                              0,
                              Phase::kBackwardInput,
                              Stream::kCompute,
                              GemmOp{2048, 12288, 4608, 1, DType::kBf16},
                              {},
                              0});
  chunk.backward.push_back(Op{"qkv_dgrad_again",
                              0,
                              Phase::kBackwardInput,
                              Stream::kCompute,
                              GemmOp{2048, 12288, 4608, 1, DType::kBf16},
                              {},
                              0});
  chunk.grad_sync.push_back(
      Op{"dp",
         -1,
         Phase::kStep,
         Stream::kDataComm,
         CollectiveOp{CollectiveKind::kReduceScatter, CommGroup::kData, 1 << 20, 8, 2},
         {},
         0});
  chunk.p2p_bytes = 4096;
  stage.chunks.push_back(chunk);
  plan.stages.push_back(stage);
  plan.stages.push_back(stage);  // two pipeline ranks: activations cross between them

  BenchPlanOptions o;
  o.gpu = true;
  o.node_ids = {0, 0};
  std::vector<std::string> skipped;
  const auto points = scenario_points(plan, o, skipped);
  const auto gemms = only<GemmOp>(points);
  ASSERT_EQ(gemms.size(), 2u);  // duplicates merged
  EXPECT_EQ(gemms[0], (GemmOp{2048, 4608, 12288, 1, DType::kBf16}));
  const auto coll = only<CollectivePoint>(points);
  ASSERT_EQ(coll.size(), 1u);
  EXPECT_EQ(coll[0].bytes, 1000);  // already a multiple of 4 * 2
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped[0].find("groups of 8 ranks"), std::string::npos);
  const auto p2p = only<P2PPoint>(points);
  ASSERT_EQ(p2p.size(), 1u);
  EXPECT_EQ(p2p[0].bytes, 4096);
  EXPECT_EQ(only<MemoryBoundOp>(points).size(), 1u);

  o.gpu = false;  // the CPU backend records the fp32 it computes in
  skipped.clear();
  EXPECT_EQ(only<GemmOp>(scenario_points(plan, o, skipped))[0].dtype, DType::kFp32);

  // One pipeline rank sends no activations: nothing to measure, nothing said to be skipped,
  // on one rank as on two.
  plan.stages.pop_back();
  for (const std::vector<std::int32_t>& nodes :
       {std::vector<std::int32_t>{0}, std::vector<std::int32_t>{0, 0}}) {
    o.node_ids = nodes;
    skipped.clear();
    EXPECT_TRUE(only<P2PPoint>(scenario_points(plan, o, skipped)).empty());
    for (const std::string& s : skipped) EXPECT_EQ(s.find("pipeline"), std::string::npos) << s;
  }
}

TEST(ScenarioPoints, Fp8TwinsAndGpuMemoryBeyondTheGrid) {
  const WorkloadPlan plan =
      one_chunk({compute_op("fc1", GemmOp{4096, 28672, 4096, 1, DType::kBf16}),
                 compute_op("odd", GemmOp{4096, 50257, 4096, 1, DType::kBf16}),
                 compute_op("adam", MemoryBoundOp{std::int64_t{5} << 30}, Phase::kStep),
                 compute_op("ln", MemoryBoundOp{std::int64_t{1} << 30})});

  BenchPlanOptions o;
  o.gpu = true;
  o.fp8 = true;
  std::vector<std::string> skipped;
  const auto points = scenario_points(plan, o, skipped);
  const auto gemms = only<GemmOp>(points);
  // Both bf16 shapes, and an FP8 twin only where cuBLASLt's multiple-of-16 rule allows it.
  ASSERT_EQ(gemms.size(), 3u);
  EXPECT_EQ(gemms[1], (GemmOp{4096, 28672, 4096, 1, DType::kFp8}));
  EXPECT_EQ(gemms[2].n, 50257);
  EXPECT_EQ(gemms[2].dtype, DType::kBf16);
  // 5 GiB could not be measured on every GPU: left to the fit, and said so.
  const auto mem = only<MemoryBoundOp>(points);
  ASSERT_EQ(mem.size(), 1u);
  EXPECT_EQ(mem[0].bytes, std::int64_t{1} << 30);
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped[0].find("1 memory-bound kernel sizes over 4 GiB"), std::string::npos);

  o.fp8 = false;
  skipped.clear();
  EXPECT_EQ(only<GemmOp>(scenario_points(plan, o, skipped)).size(), 2u);
  o.gpu = false;  // CPU runs keep every size: their grids and sizes are small
  skipped.clear();
  EXPECT_EQ(only<MemoryBoundOp>(scenario_points(plan, o, skipped)).size(), 2u);
}

TEST(ScenarioPoints, CpuRecordsFp8GemmsAsTheFp32ProductsItRunsForThem) {
  // An FP8 scenario on the cpu backend: its FP8 linear GEMMs keep their dtype (the backend
  // runs each as its fp32 product, emulated FP8), so the profile prices exactly those; the
  // other GEMMs are recorded as the fp32 products they are, without layouts.
  const WorkloadPlan plan = one_chunk({compute_op("fc1", GemmOp{.m = 128,
                                                                .n = 512,
                                                                .k = 256,
                                                                .batch = 1,
                                                                .dtype = DType::kFp8,
                                                                .layout = GemmLayout::kTN}),
                                       compute_op("logits", GemmOp{.m = 128,
                                                                   .n = 2048,
                                                                   .k = 256,
                                                                   .batch = 1,
                                                                   .dtype = DType::kBf16,
                                                                   .layout = GemmLayout::kTN})});
  BenchPlanOptions o;
  o.gpu = false;
  o.fp8 = true;
  std::vector<std::string> skipped;
  const auto gemms = only<GemmOp>(scenario_points(plan, o, skipped));
  // fc1 as FP8; logits as fp32 and its FP8 twin (the --fp8 grid's), all without layouts.
  ASSERT_EQ(gemms.size(), 3u);
  EXPECT_EQ(gemms[0], (GemmOp{.m = 128, .n = 512, .k = 256, .batch = 1, .dtype = DType::kFp8}));
  EXPECT_EQ(gemms[1], (GemmOp{.m = 128, .n = 2048, .k = 256, .batch = 1, .dtype = DType::kFp32}));
  EXPECT_EQ(gemms[2], (GemmOp{.m = 128, .n = 2048, .k = 256, .batch = 1, .dtype = DType::kFp8}));
  // Without --fp8 (validate --calibrate) the scenario's own FP8 GEMM is still recorded as FP8.
  o.fp8 = false;
  const auto plain = only<GemmOp>(scenario_points(plan, o, skipped));
  ASSERT_EQ(plain.size(), 2u);
  EXPECT_EQ(plain[0].dtype, DType::kFp8);
  EXPECT_EQ(plain[1].dtype, DType::kFp32);
}

TEST(ScenarioPoints, AnAtomicGemmsChunksAreMeasuredAsTheWholeGemm) {
  // Each chunk of an atomic GEMM is priced as the whole GEMM's time over its chunks
  // (CostModel::shape_s): the profile needs the whole GEMM, not the chunk.
  const Op chunk_op = compute_op("proj_gemm", GemmOp{.m = 2048,
                                                     .n = 768,
                                                     .k = 1024,
                                                     .batch = 1,
                                                     .dtype = DType::kFp8,
                                                     .layout = GemmLayout::kTN,
                                                     .atomic_chunks = 4});
  const WorkloadPlan plan = one_chunk({chunk_op, chunk_op, chunk_op, chunk_op});
  BenchPlanOptions o;
  o.gpu = true;
  std::vector<std::string> skipped;
  const auto gemms = only<GemmOp>(scenario_points(plan, o, skipped));
  ASSERT_EQ(gemms.size(), 1u);
  EXPECT_EQ(gemms[0], (GemmOp{.m = 2048,
                              .n = 3072,
                              .k = 1024,
                              .batch = 1,
                              .dtype = DType::kFp8,
                              .layout = GemmLayout::kTN}));
}

TEST(BenchPlan, GpuFp8GridTwinsEveryGemm) {
  BenchPlanOptions o;
  o.gpu = true;
  o.quick = true;
  o.fp8 = true;
  const auto gemms = only<GemmOp>(make_bench_plan(o));
  std::size_t fp8 = 0, fast = 0;
  for (const GemmOp& g : gemms) {
    if (g.dtype != DType::kFp8) continue;
    ++fp8;
    if (g.fast_accum) ++fast;
    EXPECT_EQ(g.layout, GemmLayout::kTN);  // cuBLASLt's only FP8 layout on Hopper
  }
  // Every shape of the grid: three bf16 layouts and two FP8 twins, with split and with fast
  // accumulation (Transformer Engine's dgrad/wgrad and its fprop under per-tensor scaling).
  EXPECT_EQ(fast * 2, fp8);
  EXPECT_EQ(fp8 * 5, gemms.size() * 2);
}

// On a backend that runs block-scaled FP8 (Hopper, cuBLASLt 12.9+) every FP8 GEMM of the
// grid also runs block-scaled both ways Transformer Engine's blockwise recipe uses; each
// kind keeps a journal key of its own.
TEST(BenchPlan, GpuFp8GridTwinsEveryGemmBlockScaledWhereTheBackendCan) {
  BenchPlanOptions o;
  o.gpu = true;
  o.quick = true;
  o.fp8 = true;
  const std::size_t without = only<GemmOp>(make_bench_plan(o)).size();
  o.fp8_block_scaling = true;
  const auto points = make_bench_plan(o);
  const auto gemms = only<GemmOp>(points);
  std::size_t split = 0, blocks = 0, tiles = 0;
  std::set<std::string> keys;
  for (const BenchPoint& p : points) keys.insert(point_key(p));
  EXPECT_EQ(keys.size(), points.size());
  for (const GemmOp& g : gemms) {
    if (g.dtype != DType::kFp8 || g.fast_accum) continue;
    EXPECT_EQ(g.layout, GemmLayout::kTN);
    if (g.scaling == GemmScaling::kTensor) ++split;
    if (g.scaling == GemmScaling::kBlock128x128) ++blocks;
    if (g.scaling == GemmScaling::kBlock1x128) ++tiles;
  }
  EXPECT_GT(split, 0u);
  EXPECT_EQ(blocks, split);
  EXPECT_EQ(tiles, split);
  EXPECT_EQ(gemms.size(), without + 2 * split);
}

// A blockwise scenario's GEMMs keep their scaling where the backend runs it, and are
// measured with per-tensor scales (and said so) where it does not.
TEST(ScenarioPoints, BlockScaledGemmsAreMeasuredAsSuchWhereTheBackendCan) {
  const WorkloadPlan plan =
      one_chunk({compute_op("fc1_gemm", GemmOp{.m = 4096,
                                               .n = 14336,
                                               .k = 4096,
                                               .dtype = DType::kFp8,
                                               .layout = GemmLayout::kTN,
                                               .scaling = GemmScaling::kBlock128x128})});
  BenchPlanOptions o;
  o.gpu = true;
  std::vector<std::string> skipped;
  auto gemms = only<GemmOp>(scenario_points(plan, o, skipped));
  ASSERT_EQ(gemms.size(), 1u);
  EXPECT_EQ(gemms[0].scaling, GemmScaling::kTensor);
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped[0].find("measured with per-tensor scales"), std::string::npos) << skipped[0];

  o.fp8_block_scaling = true;
  skipped.clear();
  gemms = only<GemmOp>(scenario_points(plan, o, skipped));
  ASSERT_EQ(gemms.size(), 1u);
  EXPECT_EQ(gemms[0].scaling, GemmScaling::kBlock128x128);
  EXPECT_TRUE(skipped.empty());
  // With --fp8, the other block-scaled kind too (the shape's wgrad-like twin).
  o.fp8 = true;
  gemms = only<GemmOp>(scenario_points(plan, o, skipped));
  ASSERT_EQ(gemms.size(), 2u);
  EXPECT_EQ(gemms[1].scaling, GemmScaling::kBlock1x128);
}

// On Blackwell (Backend::runs_mxfp8) the FP8 grid also runs in MXFP8, in each of the three
// layouts Transformer Engine's MXFP8 GEMMs take.
TEST(BenchPlan, GpuFp8GridTwinsEveryGemmInMxfp8WhereTheBackendCan) {
  BenchPlanOptions o;
  o.gpu = true;
  o.quick = true;
  o.fp8 = true;
  const std::size_t without = only<GemmOp>(make_bench_plan(o)).size();
  o.fp8_mx_scaling = true;
  const auto points = make_bench_plan(o);
  std::set<std::string> keys;
  for (const BenchPoint& p : points) keys.insert(point_key(p));
  EXPECT_EQ(keys.size(), points.size());
  std::size_t split = 0;
  std::map<GemmLayout, std::size_t> mx;
  const auto gemms = only<GemmOp>(points);
  for (const GemmOp& g : gemms) {
    if (g.dtype != DType::kFp8 || g.fast_accum) continue;
    if (g.scaling == GemmScaling::kTensor) ++split;
    if (g.scaling == GemmScaling::kMx1x32) ++mx[g.layout];
  }
  EXPECT_GT(split, 0u);
  EXPECT_EQ(mx[GemmLayout::kTN], split);
  EXPECT_EQ(mx[GemmLayout::kNN], split);
  EXPECT_EQ(mx[GemmLayout::kNT], split);
  EXPECT_EQ(gemms.size(), without + 3 * split);
}

// An mxfp8 scenario's GEMMs keep their scaling and layout on Blackwell; elsewhere they are
// measured per-tensor in the TN layout, and said so.
TEST(ScenarioPoints, MxGemmsAreMeasuredAsSuchWhereTheBackendCan) {
  const WorkloadPlan plan =
      one_chunk({compute_op("fc1_dgrad", GemmOp{.m = 4096,
                                                .n = 4096,
                                                .k = 14336,
                                                .dtype = DType::kFp8,
                                                .layout = GemmLayout::kNN,
                                                .scaling = GemmScaling::kMx1x32})});
  BenchPlanOptions o;
  o.gpu = true;
  std::vector<std::string> skipped;
  auto gemms = only<GemmOp>(scenario_points(plan, o, skipped));
  ASSERT_EQ(gemms.size(), 1u);
  EXPECT_EQ(gemms[0].scaling, GemmScaling::kTensor);
  EXPECT_EQ(gemms[0].layout, GemmLayout::kTN);
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped[0].find("MXFP8 GEMM shapes"), std::string::npos) << skipped[0];
  o.fp8_mx_scaling = true;
  skipped.clear();
  gemms = only<GemmOp>(scenario_points(plan, o, skipped));
  ASSERT_EQ(gemms.size(), 1u);
  EXPECT_EQ(gemms[0].scaling, GemmScaling::kMx1x32);
  EXPECT_EQ(gemms[0].layout, GemmLayout::kNN);
  EXPECT_TRUE(skipped.empty());
}

// The CPU backend's Eigen products have no layouts: its grid and a scenario's GEMMs are
// recorded without one, whatever layout the scenario's op carries.
TEST(BenchPlan, CpuPlansRecordNoLayout) {
  BenchPlanOptions o;
  o.quick = true;
  for (const GemmOp& g : only<GemmOp>(make_bench_plan(o))) {
    EXPECT_EQ(g.layout, GemmLayout::kUnspecified);
  }
}

}  // namespace
}  // namespace stepsim::calib
