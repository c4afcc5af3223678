#include "stepsim/cost/calibrated_cost_model.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>

#include "stepsim/cost/make_cost_model.hpp"

namespace stepsim {
namespace {

SystemConfig test_system() {
  SystemConfig s;
  s.name = "fallback-system";
  s.peak_flops_bf16 = 100e12;
  s.peak_flops_fp16 = 100e12;
  s.peak_flops_fp32 = 10e12;
  s.peak_flops_fp8 = 200e12;
  s.hbm_bandwidth_bytes_per_s = 1e12;
  s.gpus_per_node = 8;
  s.nics_per_node = 8;
  s.intra_node = {200e9, 5e-6};
  s.inter_node = {25e9, 10e-6};
  s.efficiency = {1.0, 0.0, 1.0, 0.0, 1.0};
  return s;
}

double gemm_seconds(std::int64_t m, std::int64_t n, std::int64_t k, double flops_per_s) {
  return 2.0 * static_cast<double>(m * n * k) / flops_per_s;
}

// Two bf16 GEMMs at different efficiencies, collectives for TP 8 in a node, P2P both ways.
std::shared_ptr<const Profile> test_profile() {
  auto p = std::make_shared<Profile>();
  p->machine = "test";
  p->source = "measured";
  p->gemm.push_back({1024, 1024, 1024, 1, DType::kBf16, gemm_seconds(1024, 1024, 1024, 50e12), ""});
  p->gemm.push_back({8192, 8192, 8192, 1, DType::kBf16, gemm_seconds(8192, 8192, 8192, 80e12), ""});
  // A shape measured twice: the median (here the mean of two) is its time.
  p->gemm.push_back({2048, 2048, 2048, 1, DType::kBf16, 2e-4, ""});
  p->gemm.push_back({2048, 2048, 2048, 1, DType::kBf16, 4e-4, ""});
  for (std::int64_t b = 1 << 16; b <= (1 << 28); b *= 4) {
    const double x = static_cast<double>(b);
    p->memory.push_back({b, 2e-6 + x / 1.6e12, ""});
    p->collectives.push_back({CollectiveKind::kAllReduce, 8, 1, b, 20e-6 + x / 100e9, ""});
    p->collectives.push_back({CollectiveKind::kAllGather, 8, 1, b, 10e-6 + x / 200e9, ""});
    p->p2p.push_back({false, b, 3e-6 + x / 150e9, ""});
  }
  fit_profile(*p);
  return p;
}

CalibratedCostModel model() {
  return CalibratedCostModel(test_profile(), "test.json", test_system());
}

TEST(CalibratedCostModel, MeasuredGemmTakesItsMeasuredTime) {
  const CalibratedCostModel m = model();
  const Profile& p = m.profile();
  EXPECT_EQ(m.gemm_s({1024, 1024, 1024, 1, DType::kBf16}), p.gemm[0].seconds);
  EXPECT_EQ(m.gemm_s({8192, 8192, 8192, 1, DType::kBf16}), p.gemm[1].seconds);
  EXPECT_DOUBLE_EQ(m.gemm_s({2048, 2048, 2048, 1, DType::kBf16}), 3e-4);
  EXPECT_TRUE(m.warnings().empty());
}

TEST(CalibratedCostModel, InterpolatedEfficiencyLiesBetweenNeighbours) {
  const Profile p = [] {
    Profile q;
    q.gemm.push_back(
        {1024, 1024, 1024, 1, DType::kBf16, gemm_seconds(1024, 1024, 1024, 50e12), ""});
    q.gemm.push_back(
        {4096, 4096, 4096, 1, DType::kBf16, gemm_seconds(4096, 4096, 4096, 80e12), ""});
    return q;
  }();
  const CalibratedCostModel m(std::make_shared<const Profile>(p), "two.json", test_system());
  const GemmOp mid{2048, 2048, 2048, 1, DType::kBf16};
  const double t = m.gemm_s(mid);
  const double achieved = mid.flops() / t;
  EXPECT_GT(achieved, 50e12);
  EXPECT_LT(achieved, 80e12);
  // Halfway in log space between the two points: the geometric mean of their efficiencies.
  EXPECT_NEAR(achieved, std::sqrt(50e12 * 80e12), 1e3);
  EXPECT_GT(t, p.gemm[0].seconds);
  EXPECT_LT(t, p.gemm[1].seconds);
  EXPECT_TRUE(m.warnings().empty());
}

TEST(CalibratedCostModel, ExtrapolationClampsEfficiencyAndWarns) {
  const CalibratedCostModel m = model();
  const GemmOp big{16384, 16384, 16384, 1, DType::kBf16};
  EXPECT_NEAR(big.flops() / m.gemm_s(big), 80e12, 1e3);  // the edge's efficiency
  const auto w = m.warnings();
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("beyond the profile's measured range"), std::string::npos) << w[0];
  EXPECT_NE(w[0].find("m=16384"), std::string::npos) << w[0];
}

// Roofline floor, worked by hand on the test system (100 TFLOP/s bf16, 1e12 B/s HBM). A bf16
// GEMM m=1048576 n=8 k=1024 moves 2 B x (1048576 x 1024 + 1024 x 8 + 1048576 x 8) =
// 2,164,277,248 B: at least 2.1643 ms through HBM, while its 17.18 GFLOP take 0.172 ms at the
// peak and 0.21..0.34 ms at the samples' 50..80 TFLOP/s. The floor is the system's HBM
// bandwidth, not the profile's memory fit (1.6e12 B/s here), which one kernel reached.
TEST(CalibratedCostModel, SkinnyGemmIsHeldAtTheMemoryFloor) {
  const CalibratedCostModel m = model();
  const GemmOp skinny{.m = 1048576, .n = 8, .k = 1024, .batch = 1, .dtype = DType::kBf16};
  const double bytes = 2.0 * (1048576.0 * 1024 + 1024.0 * 8 + 1048576.0 * 8);
  EXPECT_EQ(bytes, 2164277248.0);
  EXPECT_NEAR(m.gemm_s(skinny), bytes / test_system().hbm_bandwidth_bytes_per_s, 1e-15);
  EXPECT_NEAR(m.gemm_s(skinny), 2.164277e-3, 0.000001e-3);
}

// A square shape inside the box is compute-bound and takes the interpolated efficiency: 4096^3
// moves 2 B x 3 x 4096^2 = 100,663,296 B (0.101 ms at 1e12 B/s) and its 137.4 GFLOP take
// 1.374 ms at the 100 TFLOP/s peak, both under the 1.72..2.75 ms of the samples' 50..80 TFLOP/s.
TEST(CalibratedCostModel, SquareGemmInsideTheBoxIsAboveTheFloor) {
  const CalibratedCostModel m = model();
  const GemmOp square{.m = 4096, .n = 4096, .k = 4096, .batch = 1, .dtype = DType::kBf16};
  const double achieved = square.flops() / m.gemm_s(square);
  EXPECT_GT(achieved, 50e12);
  EXPECT_LT(achieved, 80e12);
  EXPECT_GT(m.gemm_s(square), 1.374e-3);
  EXPECT_TRUE(m.warnings().empty());
}

// Outside the measured box (1024..8192 each way) the efficiency is clamped to the edge's and
// the floor still holds: m=16384 n=16 k=16384 moves 2 B x (16384 x 16384 + 16384 x 16 +
// 16384 x 16) = 537,919,488 B, 0.5379 ms at 1e12 B/s, while its 8.59 GFLOP would take
// 0.107..0.172 ms at the clamped 50..80 TFLOP/s (0.086 ms at the peak).
TEST(CalibratedCostModel, SkinnyShapeOutsideTheBoxTakesTheFloor) {
  const CalibratedCostModel m = model();
  const GemmOp skinny{.m = 16384, .n = 16, .k = 16384, .batch = 1, .dtype = DType::kBf16};
  EXPECT_NEAR(m.gemm_s(skinny), 537919488.0 / 1e12, 1e-15);
  const auto w = m.warnings();
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("beyond the profile's measured range"), std::string::npos) << w[0];
}

// A class with one measured GEMM (the A100 public profile: no per-shape data is public) has
// no range to be beyond: every shape runs at that sample's efficiency (under the peak and
// over the floor), and the note says that, not that a shape was clamped.
TEST(CalibratedCostModel, OneMeasuredShapeIsSaidSoNotClamped) {
  Profile p;
  p.gemm.push_back(
      {1024, 10240, 5120, 1, DType::kBf16, gemm_seconds(1024, 10240, 5120, 60e12), ""});
  const CalibratedCostModel m(std::make_shared<const Profile>(p), "one.json", test_system());
  const GemmOp other{.m = 12288, .n = 6144, .k = 2048, .batch = 1, .dtype = DType::kBf16};
  EXPECT_NEAR(m.gemm_s(other), other.flops() / 60e12, 1e-15);
  const auto w = m.warnings();
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("the profile measured one GEMM shape of this class: every other shape "
                      "priced at its efficiency"),
            std::string::npos)
      << w[0];
  EXPECT_EQ(w[0].find("clamped"), std::string::npos) << w[0];
}

// A profile whose samples beat the system's peak (measured on a faster part, or a system file
// that understates it) never prices an interpolated shape above the peak: 2048^3 between two
// samples at 150 TFLOP/s takes its 17.18 GFLOP at 100 TFLOP/s, 0.1718 ms. A measured shape
// keeps its measured time.
TEST(CalibratedCostModel, InterpolatedGemmNeverBeatsThePeak) {
  Profile p;
  p.gemm.push_back({1024, 1024, 1024, 1, DType::kBf16, gemm_seconds(1024, 1024, 1024, 150e12), ""});
  p.gemm.push_back({4096, 4096, 4096, 1, DType::kBf16, gemm_seconds(4096, 4096, 4096, 150e12), ""});
  const CalibratedCostModel m(std::make_shared<const Profile>(p), "fast.json", test_system());
  const GemmOp mid{2048, 2048, 2048, 1, DType::kBf16};
  EXPECT_NEAR(m.gemm_s(mid), 2.0 * 2048.0 * 2048.0 * 2048.0 / 100e12, 1e-15);
  EXPECT_NEAR(m.gemm_s(mid), 0.1718e-3, 0.0001e-3);
  EXPECT_EQ(m.gemm_s({4096, 4096, 4096, 1, DType::kBf16}), p.gemm[1].seconds);
}

// A profile that measured layouts prices each GEMM from its own layout's samples: the same
// 4096^3 shape measured at 80 (TN), 60 (NN) and 40 (NT) TFLOP/s gives three times; a shape
// between samples is interpolated within its layout; a GEMM without a layout (attention's
// batched products) and a layout the profile lacks use every sample of the dtype.
TEST(CalibratedCostModel, GemmsArePricedFromTheSamplesOfTheirLayout) {
  Profile p;
  const double rate[] = {80e12, 60e12, 40e12};
  const GemmLayout layouts[] = {GemmLayout::kTN, GemmLayout::kNN, GemmLayout::kNT};
  for (int i = 0; i < 3; ++i) {
    for (const std::int64_t d : {1024, 4096}) {
      p.gemm.push_back(GemmSample{.m = d, .n = d, .k = d, .batch = 1, .dtype = DType::kBf16,
                                  .seconds = gemm_seconds(d, d, d, rate[i]), .citation = "",
                                  .layout = layouts[i]});
    }
  }
  const CalibratedCostModel m(std::make_shared<const Profile>(p), "layouts.json", test_system());
  for (int i = 0; i < 3; ++i) {
    const GemmOp exact{.m = 4096, .n = 4096, .k = 4096, .dtype = DType::kBf16,
                       .layout = layouts[i]};
    EXPECT_DOUBLE_EQ(m.gemm_s(exact), gemm_seconds(4096, 4096, 4096, rate[i]));
    // Between the samples of its layout, at that layout's (equal) efficiency.
    const GemmOp between{.m = 2048, .n = 2048, .k = 2048, .dtype = DType::kBf16,
                         .layout = layouts[i]};
    EXPECT_NEAR(between.flops() / m.gemm_s(between), rate[i], rate[i] * 1e-9);
  }
  // No layout: the shape's median over every layout's sample (60 TFLOP/s here).
  const GemmOp any{.m = 4096, .n = 4096, .k = 4096, .dtype = DType::kBf16};
  EXPECT_DOUBLE_EQ(m.gemm_s(any), gemm_seconds(4096, 4096, 4096, 60e12));
  EXPECT_TRUE(m.warnings().empty());
}

// Samples without a layout (public data) serve GEMMs of every layout as before.
TEST(CalibratedCostModel, SamplesWithoutLayoutServeEveryLayout) {
  const CalibratedCostModel m = model();
  for (const GemmLayout l : {GemmLayout::kTN, GemmLayout::kNN, GemmLayout::kNT}) {
    EXPECT_EQ(m.gemm_s({.m = 1024, .n = 1024, .k = 1024, .dtype = DType::kBf16, .layout = l}),
              m.profile().gemm[0].seconds);
  }
}

TEST(CalibratedCostModel, WarningsAreDeduplicatedAndIndependentOfQueryOrder) {
  const CalibratedCostModel a = model();
  const CalibratedCostModel b = model();
  const GemmOp g1{32768, 1024, 1024, 1, DType::kBf16};
  const GemmOp g2{64, 64, 64, 1, DType::kBf16};
  const CollectiveOp c{CollectiveKind::kAllReduce, CommGroup::kTensor, 1 << 20, 4, 1};
  a.gemm_s(g1);
  a.gemm_s(g2);
  a.gemm_s(g1);
  a.collective_s(c);
  b.collective_s(c);
  b.gemm_s(g2);
  b.gemm_s(g1);
  EXPECT_EQ(a.warnings(), b.warnings());
  EXPECT_EQ(a.warnings().size(), 2u);
}

TEST(CalibratedCostModel, MissingDtypeFallsBackToRooflineWithWarning) {
  const CalibratedCostModel m = model();
  const RooflineCostModel roofline(test_system());
  const GemmOp g{4096, 4096, 4096, 1, DType::kFp32};
  EXPECT_EQ(m.gemm_s(g), roofline.gemm_s(g));
  ASSERT_EQ(m.warnings().size(), 1u);
  EXPECT_NE(m.warnings()[0].find("no GEMM samples"), std::string::npos);
}

TEST(CalibratedCostModel, Fp16BorrowsTheBf16SamplesWithWarning) {
  const CalibratedCostModel m = model();
  const GemmOp g{4096, 4096, 4096, 1, DType::kFp16};
  GemmOp as_bf16 = g;
  as_bf16.dtype = DType::kBf16;
  EXPECT_EQ(m.gemm_s(g), m.gemm_s(as_bf16));
  ASSERT_EQ(m.warnings().size(), 1u);
  EXPECT_NE(m.warnings()[0].find("fp16 from bf16"), std::string::npos) << m.warnings()[0];
}

TEST(CalibratedCostModel, Fp8NeverBorrowsSixteenBitSamples) {
  // FP8 runs at twice the 16-bit tensor-core peak on Hopper: bf16 samples would price it at
  // half its speed, so without FP8 samples it falls back to the roofline, with a warning.
  const CalibratedCostModel m = model();
  const RooflineCostModel roofline(test_system());
  const GemmOp g{4096, 4096, 4096, 1, DType::kFp8};
  EXPECT_EQ(m.gemm_s(g), roofline.gemm_s(g));
  ASSERT_EQ(m.warnings().size(), 1u);
  EXPECT_NE(m.warnings()[0].find("no GEMM samples"), std::string::npos) << m.warnings()[0];
  EXPECT_EQ(bytes_of(DType::kFp8), 1);
  EXPECT_EQ(parse_dtype("fp8"), DType::kFp8);
  EXPECT_EQ(to_string(DType::kFp8), "fp8");
}

TEST(CalibratedCostModel, MemoryBoundUsesTheMemoryFit) {
  const CalibratedCostModel m = model();
  EXPECT_NEAR(m.memory_bound_s({1 << 24}), 2e-6 + (1 << 24) / 1.6e12, 1e-12);
  EXPECT_TRUE(m.warnings().empty());
  m.memory_bound_s({std::int64_t{1} << 34});
  EXPECT_EQ(m.warnings().size(), 1u);
}

TEST(CalibratedCostModel, CollectivesUseTheirFit) {
  const CalibratedCostModel m = model();
  const CollectiveOp ar{CollectiveKind::kAllReduce, CommGroup::kTensor, 1 << 24, 8, 1};
  EXPECT_NEAR(m.collective_s(ar), 20e-6 + (1 << 24) / 100e9, 1e-12);
  EXPECT_EQ(m.collective_s({CollectiveKind::kAllReduce, CommGroup::kData, 1 << 24, 1, 1}), 0.0);
  EXPECT_TRUE(m.warnings().empty());
}

TEST(CalibratedCostModel, NearestGroupIsRescaledByBusFactor) {
  const CalibratedCostModel m = model();
  const CollectiveOp ar4{CollectiveKind::kAllReduce, CommGroup::kTensor, 1 << 24, 4, 1};
  // Same bus bandwidth as the 8-rank fit: algbw_4 = busbw / (2*3/4), busbw = 100e9 * 2*7/8.
  const double busbw = 100e9 * 2.0 * 7.0 / 8.0;
  const double expected = 20e-6 * 6.0 / 14.0 + (1 << 24) * (2.0 * 3.0 / 4.0) / busbw;
  EXPECT_NEAR(m.collective_s(ar4), expected, 1e-12);
  ASSERT_EQ(m.warnings().size(), 1u);
  EXPECT_NE(m.warnings()[0].find("all_reduce over 4 ranks on 1 node from all_reduce over 8"),
            std::string::npos)
      << m.warnings()[0];
}

TEST(CalibratedCostModel, OtherKindIsRescaledWhenItsKindIsMissing) {
  const CalibratedCostModel m = model();
  const CollectiveOp rs{CollectiveKind::kReduceScatter, CommGroup::kTensor, 1 << 24, 8, 1};
  // Nearest is all_gather over 8 (both n-1 steps, same bus factor): same time.
  EXPECT_NEAR(m.collective_s(rs), 10e-6 + (1 << 24) / 200e9, 1e-12);
}

// All-to-all (grouped sends and receives) is priced only from all-to-all samples: without
// them the system's roofline, never another collective's fit; with them their fit, and for
// another group size the nearest all-to-all rescaled like any collective.
TEST(CalibratedCostModel, AllToAllUsesOnlyAllToAllSamples) {
  const RooflineCostModel roofline(test_system());
  const CollectiveOp a2a8{CollectiveKind::kAllToAll, CommGroup::kContext, 1 << 24, 8, 1};
  const CollectiveOp a2a4{CollectiveKind::kAllToAll, CommGroup::kContext, 1 << 24, 4, 1};
  const CalibratedCostModel without = model();
  EXPECT_EQ(without.collective_s(a2a8), roofline.collective_s(a2a8));
  ASSERT_EQ(without.warnings().size(), 1u);
  EXPECT_NE(without.warnings()[0].find("no all-to-all samples"), std::string::npos);

  auto p = std::make_shared<Profile>(*test_profile());
  for (std::int64_t b = 1 << 16; b <= (1 << 28); b *= 4) {
    p->collectives.push_back(
        {CollectiveKind::kAllToAll, 8, 1, b, 15e-6 + static_cast<double>(b) / 120e9, ""});
  }
  fit_profile(*p);
  const CalibratedCostModel with(p, "test.json", test_system());
  EXPECT_NEAR(with.collective_s(a2a8), 15e-6 + (1 << 24) / 120e9, 1e-12);
  EXPECT_TRUE(with.warnings().empty());
  // 4 ranks from 8: latency by (4-1)/(8-1) steps, bus bandwidth kept: algbw_4 = busbw / (3/4).
  const double busbw = 120e9 * 7.0 / 8.0;
  EXPECT_NEAR(with.collective_s(a2a4), 15e-6 * 3.0 / 7.0 + (1 << 24) * (3.0 / 4.0) / busbw, 1e-12);
}

TEST(CalibratedCostModel, InterNodeNeverBorrowsAnIntraNodeFit) {
  const CalibratedCostModel m = model();
  const RooflineCostModel roofline(test_system());
  const CollectiveOp dp{CollectiveKind::kAllReduce, CommGroup::kData, 1 << 24, 4, 4};
  EXPECT_EQ(m.collective_s(dp), roofline.collective_s(dp));
  const P2POp inter{1 << 20, true};
  EXPECT_EQ(m.p2p_s(inter), roofline.p2p_s(inter));
  EXPECT_EQ(m.warnings().size(), 2u);
}

TEST(CalibratedCostModel, InterNodeBorrowsOnlyWithSameMembersPerNode) {
  auto p = std::make_shared<Profile>(*test_profile());
  for (std::int64_t b = 1 << 16; b <= (1 << 28); b *= 4) {
    p->collectives.push_back(
        {CollectiveKind::kAllReduce, 2, 2, b, 10e-6 + static_cast<double>(b) / 20e9, ""});
  }
  fit_profile(*p);
  const CalibratedCostModel m(p, "dp.json", test_system());
  // One member per node, like the measured 2-rank group: rescaled from it.
  const CollectiveOp dp4{CollectiveKind::kAllReduce, CommGroup::kData, 1 << 24, 4, 4};
  EXPECT_NEAR(m.collective_s(dp4), 10e-6 * 6.0 / 2.0 + (1 << 24) * 1.5 / 20e9, 1e-9);
  // Eight members per node use eight NICs: the roofline, not the one-NIC fit.
  const RooflineCostModel roofline(test_system());
  const CollectiveOp dp16{CollectiveKind::kAllReduce, CommGroup::kData, 1 << 24, 16, 2};
  EXPECT_EQ(m.collective_s(dp16), roofline.collective_s(dp16));
}

// A cross-node all-to-all not measured borrows the measured one with as many members per node
// (the same NIC share per rank) and scales its bytes by the part sent off the node, (n-k)/n.
TEST(CalibratedCostModel, CrossNodeAllToAllRescalesByItsOffNodeBytes) {
  auto p = std::make_shared<Profile>(*test_profile());
  for (std::int64_t b = 1 << 16; b <= (1 << 28); b *= 4) {
    p->collectives.push_back(
        {CollectiveKind::kAllToAll, 16, 2, b, 20e-6 + static_cast<double>(b) / 40e9, ""});
  }
  fit_profile(*p);
  const CalibratedCostModel m(p, "a2a.json", test_system());
  // 16 on 2 nodes sends 8/16 off its node: 20 GB/s of NIC per rank. 64 on 8 nodes sends 56/64.
  const double nic = 40e9 * 8.0 / 16.0;
  const CollectiveOp ep64{CollectiveKind::kAllToAll, CommGroup::kExpert, 1 << 24, 64, 8};
  EXPECT_NEAR(m.collective_s(ep64), 20e-6 * 63.0 / 15.0 + (1 << 24) * (56.0 / 64.0) / nic, 1e-9);
}

TEST(CalibratedCostModel, P2PUsesItsLinkClass) {
  const CalibratedCostModel m = model();
  EXPECT_NEAR(m.p2p_s({1 << 20, false}), 3e-6 + (1 << 20) / 150e9, 1e-12);
}

TEST(CalibratedCostModel, AttentionWithoutSamplesIsCostedAsGemmsAndTraffic) {
  const CalibratedCostModel m = model();
  const AttentionOp a{1, 8, 8, 2048, 128, true, false, DType::kBf16};
  const double t = m.attention_s(a);
  const double scores = m.gemm_s({2048, 2048, 128, 8, DType::kBf16});
  const double values = m.gemm_s({2048, 128, 2048, 8, DType::kBf16});
  const double traffic = m.memory_bound_s({2 * 2 * (2 * 8 * 2048 * 128)});
  EXPECT_DOUBLE_EQ(t, scores + values + traffic);
  AttentionOp back = a;
  back.backward = true;
  EXPECT_GT(m.attention_s(back), 2.0 * t);
  bool said = false;
  for (const std::string& w : m.warnings())
    said |= w.find("no attention samples") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST(CalibratedCostModel, MeasuredAttentionTakesItsMeasuredTime) {
  auto p = std::make_shared<Profile>(*test_profile());
  AttentionSample s;
  s.op = {1, 8, 8, 2048, 128, true, false, DType::kBf16};
  s.seconds = 1.5e-4;
  p->attention.push_back(s);
  s.op.seq = 8192;
  s.seconds = 1.5e-4 * 16 * 0.8;  // more efficient at the longer sequence
  p->attention.push_back(s);
  const CalibratedCostModel m(p, "attn.json", test_system());
  EXPECT_EQ(m.attention_s({1, 8, 8, 2048, 128, true, false, DType::kBf16}), 1.5e-4);
  const AttentionOp mid{1, 8, 8, 4096, 128, true, false, DType::kBf16};
  const double t = m.attention_s(mid);
  EXPECT_GT(t, 1.5e-4 * 4 * 0.8);
  EXPECT_LT(t, 1.5e-4 * 4);
  EXPECT_TRUE(m.warnings().empty());
}

// fp16 samples answer a bf16 query (same tensor-core rate) with a warning; a direction the
// profile lacks (backward) is still costed from the matmuls.
TEST(CalibratedCostModel, Bf16AttentionBorrowsTheFp16Samples) {
  auto p = std::make_shared<Profile>(*test_profile());
  AttentionSample s;
  s.op = {.batch = 1,
          .heads = 16,
          .kv_heads = 16,
          .seq = 16384,
          .head_dim = 128,
          .causal = true,
          .backward = false,
          .dtype = DType::kFp16};
  s.seconds = 2e-3;
  p->attention.push_back(s);
  const CalibratedCostModel m(p, "attn.json", test_system());
  AttentionOp q = s.op;
  q.dtype = DType::kBf16;
  EXPECT_NEAR(m.attention_s(q), 2e-3, 1e-12);
  auto w = m.warnings();
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("16-bit twin"), std::string::npos) << w[0];
  q.backward = true;
  EXPECT_GT(m.attention_s(q), 0.0);
  w = m.warnings();
  bool from_matmuls = false;  // (its batched GEMMs may add clamping warnings of their own)
  for (const std::string& line : w) {
    from_matmuls = from_matmuls || line.find("no attention samples in the profile") == 0;
  }
  EXPECT_TRUE(from_matmuls) << w[0];
}

// A sliding window is priced as context parallelism's rectangular blocks are: the unmasked
// samples' rate at the rectangle of the band's score count, times the band's FLOPs. With every
// unmasked sample at one rate, that is the band's FLOPs at that rate, exactly.
TEST(CalibratedCostModel, SlidingWindowIsTheBandAtTheUnmaskedRate) {
  auto p = std::make_shared<Profile>(*test_profile());
  constexpr double kRate = 400e12;
  for (const std::int64_t seq : {512, 8192}) {
    for (const bool causal : {false, true}) {
      AttentionSample s;
      s.op = {.batch = 1,
              .heads = 8,
              .kv_heads = 8,
              .seq = seq,
              .head_dim = 128,
              .causal = causal,
              .backward = false,
              .dtype = DType::kBf16};
      // Causal samples at half the rate: the band must not be priced from them.
      s.seconds = s.op.flops() / (causal ? kRate / 2 : kRate);
      p->attention.push_back(s);
    }
  }
  const CalibratedCostModel m(p, "attn.json", test_system());
  const AttentionOp window{.batch = 1,
                           .heads = 8,
                           .kv_heads = 8,
                           .seq = 4096,
                           .head_dim = 128,
                           .causal = true,
                           .backward = false,
                           .dtype = DType::kBf16,
                           .window = 128};
  const double band = 128.0 * 4096 - 128.0 * 127 / 2;
  const double band_flops = 2 * band * (128 + 128) * 8;
  EXPECT_DOUBLE_EQ(window.flops(), band_flops);
  EXPECT_NEAR(m.attention_s(window), band_flops / kRate, 1e-12 * band_flops / kRate);
  AttentionOp full = window;
  full.window = 0;
  EXPECT_GT(m.attention_s(full), 10 * m.attention_s(window));
  EXPECT_TRUE(m.warnings().empty());
}

TEST(MakeCostModel, RooflineOrProfile) {
  Workload w;
  w.system = test_system();
  auto roofline = make_cost_model(w);
  ASSERT_TRUE(roofline.ok());
  EXPECT_EQ(roofline.value()->describe(), "roofline fallback-system");

  w.cost_model.kind = CostModelSpec::Kind::kProfile;
  w.cost_model.profile_path = "/some/dir/test.json";
  auto calibrated = make_cost_model(w, test_profile());
  ASSERT_TRUE(calibrated.ok());
  EXPECT_EQ(calibrated.value()->describe(), "profile test.json (test, measured)");
  EXPECT_EQ(calibrated.value()->gemm_s({1024, 1024, 1024, 1, DType::kBf16}),
            test_profile()->gemm[0].seconds);
}

TEST(MakeCostModel, MissingProfileIsAnErrorNamingIt) {
  Workload w;
  w.system = test_system();
  w.cost_model.kind = CostModelSpec::Kind::kProfile;
  w.cost_model.profile_path = "/nonexistent/profile.json";
  auto r = make_cost_model(w);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.errors()[0].file, "/nonexistent/profile.json");
}

}  // namespace
}  // namespace stepsim

namespace stepsim {
namespace {

// Memory-bound kernels, collectives and messages of a measured size take their measured time;
// between two measured sizes, the line between them; beyond them, the fit.
TEST(CalibratedCostModelSizes, ExactAtMeasuredSizesAndLinearBetween) {
  auto p = std::make_shared<Profile>();
  p->memory = {{1000, 2e-6, ""}, {3000, 5e-6, ""}, {100000, 40e-6, ""}};
  p->collectives = {{CollectiveKind::kAllGather, 2, 1, 4096, 10e-6, ""},
                    {CollectiveKind::kAllGather, 2, 1, 8192, 30e-6, ""},
                    {CollectiveKind::kAllGather, 2, 1, 65536, 50e-6, ""}};
  p->p2p = {{false, 1024, 3e-6, ""}, {false, 4096, 9e-6, ""}, {false, 1 << 20, 100e-6, ""}};
  fit_profile(*p);
  SystemConfig fallback;
  fallback.name = "fallback";
  fallback.hbm_bandwidth_bytes_per_s = 1e12;
  fallback.efficiency.memory_max = 1.0;
  const CalibratedCostModel m(p, "sizes", fallback);
  EXPECT_DOUBLE_EQ(m.memory_bound_s({3000}), 5e-6);
  EXPECT_DOUBLE_EQ(m.memory_bound_s({2000}), 3.5e-6);
  const CollectiveOp ag{CollectiveKind::kAllGather, CommGroup::kTensor, 8192, 2, 1};
  EXPECT_DOUBLE_EQ(m.collective_s(ag), 30e-6);
  CollectiveOp between = ag;
  between.bytes = 6144;
  EXPECT_DOUBLE_EQ(m.collective_s(between), 20e-6);
  EXPECT_DOUBLE_EQ(m.p2p_s({4096, false}), 9e-6);
  EXPECT_DOUBLE_EQ(m.p2p_s({2560, false}), 6e-6);
  // Beyond the measured sizes: the latency/bandwidth fit, with a warning.
  const LinearFit& fit = p->memory_fit;
  EXPECT_DOUBLE_EQ(m.memory_bound_s({1 << 24}),
                   fit.latency_s + static_cast<double>(1 << 24) / fit.bandwidth_bytes_per_s);
  EXPECT_FALSE(m.warnings().empty());
}

}  // namespace
}  // namespace stepsim
