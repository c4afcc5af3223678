#include "stepsim/cost/roofline_cost_model.hpp"

#include <gtest/gtest.h>

namespace stepsim {
namespace {

SystemConfig test_system() {
  SystemConfig s;
  s.name = "test";
  s.peak_flops_bf16 = 100e12;
  s.peak_flops_fp16 = 100e12;
  s.peak_flops_fp32 = 10e12;
  s.hbm_bandwidth_bytes_per_s = 1e12;
  s.gpus_per_node = 8;
  s.nics_per_node = 8;
  s.intra_node = {200e9, 5e-6};
  s.inter_node = {25e9, 10e-6};
  s.efficiency = {1.0, 0.0, 1.0, 0.0, 1.0};
  return s;
}

TEST(BusFactor, MatchesNcclTests) {
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveKind::kAllReduce, 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveKind::kAllGather, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveKind::kReduceScatter, 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveKind::kAllReduce, 1), 0.0);
}

TEST(Roofline, LargeGemmRunsAtPeak) {
  RooflineCostModel m(test_system());
  GemmOp g{8192, 8192, 8192, 1, DType::kBf16};
  EXPECT_NEAR(m.gemm_s(g), g.flops() / 100e12, 1e-12);
}

TEST(Roofline, SkinnyGemmIsBandwidthBound) {
  RooflineCostModel m(test_system());
  GemmOp g{1 << 20, 8, 8, 1, DType::kBf16};
  const double bytes = 2.0 * ((1 << 20) * 8 + 64 + (1 << 20) * 8);
  EXPECT_NEAR(m.gemm_s(g), bytes / 1e12, 1e-15);
}

TEST(Roofline, IntraNodeAllReduceUsesBusBandwidth) {
  RooflineCostModel m(test_system());
  // 8 ranks, a power of two: recursive halving-doubling's 2 log2(8) = 6 steps beat the
  // ring's 14 at the same bytes.
  CollectiveOp c{CollectiveKind::kAllReduce, CommGroup::kTensor, 1 << 30, 8, 1};
  const double expected = 6 * 5e-6 + (1 << 30) * (2.0 * 7 / 8) / 200e9;
  EXPECT_NEAR(m.collective_s(c), expected, 1e-12);
}

TEST(Roofline, SmallMessagesTakeLogarithmicStepsLargeOnesTheRing) {
  RooflineCostModel m(test_system());
  // 1536 ranks on 192 nodes (not a power of two): a 4-byte all-reduce folds the 512 extra
  // ranks in and out (2 steps) around 2 * 10 halving-doubling steps, 22 hops of 10 us, where
  // the ring would take 2 * 1535 hops (30.7 ms).
  const double busbw = m.bus_bandwidth_bytes_per_s(1536, 192);
  const double bw = 4 * (2.0 * 1535 / 1536) / busbw;
  CollectiveOp tiny{CollectiveKind::kAllReduce, CommGroup::kGradStats, 4, 1536, 192};
  EXPECT_NEAR(m.collective_s(tiny), 22 * 10e-6 + bw + 2 * 4 / busbw, 1e-15);
  // 1 GiB over 6 ranks on 6 nodes: folding moves the buffer twice more (2 GiB at one NIC's
  // 25 GB/s, 86 ms) than the ring's 10 extra hops (0.1 ms) cost: the ring.
  CollectiveOp big{CollectiveKind::kAllReduce, CommGroup::kData, 1LL << 30, 6, 6};
  const double ring = 10 * 10e-6 + (1LL << 30) * (2.0 * 5 / 6) / 25e9;
  EXPECT_NEAR(m.collective_s(big), ring, 1e-12);
}

TEST(Roofline, InterNodeGroupGetsItsShareOfTheNics) {
  RooflineCostModel m(test_system());
  // One member per node: 1/8 of the node's 8 NICs, i.e. one NIC's 25 GB/s.
  EXPECT_DOUBLE_EQ(m.bus_bandwidth_bytes_per_s(4, 4), 25e9);
  // Eight members per node: all NICs, 200 GB/s, capped by NVLink's 200 GB/s.
  EXPECT_DOUBLE_EQ(m.bus_bandwidth_bytes_per_s(16, 2), 200e9);
}

// All-to-all is grouped sends and receives (NCCL's enqueue.cc): each rank sends (n-k)/n of its
// buffer off its node through its own NIC (one of 25 GB/s per GPU here) while (k-1)/n goes
// over NVLink at the same time; the slower leg sets the time.
TEST(Roofline, CrossNodeAllToAllUsesEachRanksOwnNic) {
  RooflineCostModel m(test_system());
  const std::int64_t bytes = 1 << 28;
  // EP 64 over 8 nodes of 8: 56/64 off the node at one NIC's 25 GB/s (not the 8 NICs a ring
  // of 8 ranks per node would get), 7/64 over NVLink at 200 GB/s.
  const CollectiveOp ep64{CollectiveKind::kAllToAll, CommGroup::kExpert, bytes, 64, 8};
  EXPECT_DOUBLE_EQ(all_to_all_off_node_fraction(64, 8), 56.0 / 64.0);
  EXPECT_NEAR(m.collective_s(ep64), 10e-6 + bytes * (56.0 / 64.0) / 25e9, 1e-12);
  // The old ring pricing, 63/64 at 8 x 25 GB/s, was 7.1x faster.
  EXPECT_GT(m.collective_s(ep64), 7.0 * (10e-6 + bytes * (63.0 / 64.0) / 200e9));
}

TEST(Roofline, AllToAllWithOneRankPerNodeIsOneNic) {
  RooflineCostModel m(test_system());
  const std::int64_t bytes = 1 << 28;
  const CollectiveOp a2a{CollectiveKind::kAllToAll, CommGroup::kExpert, bytes, 8, 8};
  EXPECT_DOUBLE_EQ(all_to_all_off_node_fraction(8, 8), 7.0 / 8.0);
  // As before the fix: (n-1)/n at the bus bandwidth of a group with one member per node.
  EXPECT_NEAR(m.collective_s(a2a), 10e-6 + bytes * (7.0 / 8.0) / 25e9, 1e-12);
  EXPECT_NEAR(m.collective_s(a2a), 10e-6 + bytes * (7.0 / 8.0) / m.bus_bandwidth_bytes_per_s(8, 8),
              1e-12);
}

TEST(Roofline, AllToAllIsBoundByTheSlowerLeg) {
  SystemConfig s = test_system();
  s.intra_node = {10e9, 5e-6};  // an NVLink slower than the NIC: the on-node leg binds
  RooflineCostModel m(s);
  const std::int64_t bytes = 1 << 28;
  // 16 over 2 nodes: 8/16 off the node at 25 GB/s vs 7/16 over NVLink at 10 GB/s.
  const CollectiveOp a2a{CollectiveKind::kAllToAll, CommGroup::kExpert, bytes, 16, 2};
  EXPECT_NEAR(m.collective_s(a2a), 10e-6 + bytes * (7.0 / 16.0) / 10e9, 1e-12);
}

TEST(Roofline, IntraNodeAllToAllUsesNvlinkBusBandwidth) {
  RooflineCostModel m(test_system());
  const std::int64_t bytes = 1 << 28;
  const CollectiveOp a2a{CollectiveKind::kAllToAll, CommGroup::kExpert, bytes, 8, 1};
  EXPECT_DOUBLE_EQ(all_to_all_off_node_fraction(8, 1), 0.0);
  EXPECT_NEAR(m.collective_s(a2a), 5e-6 + bytes * (7.0 / 8.0) / 200e9, 1e-12);
}

TEST(Roofline, SingleRankCollectiveIsFree) {
  RooflineCostModel m(test_system());
  EXPECT_EQ(m.collective_s({CollectiveKind::kAllReduce, CommGroup::kData, 1 << 20, 1, 1}), 0.0);
}

}  // namespace
}  // namespace stepsim
