#include "stepsim/cost/nccl_model.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "stepsim/cost/roofline_cost_model.hpp"

// Expected figures are worked by hand from github.com/NVIDIA/nccl src/graph/tuning.cc at
// commit 5067397c2676d5aed50042fc39e5c8ee96eb0027 (the working is in each comment); the
// published nccl-tests figures at the end are checks of the model, not inputs to it.

namespace stepsim {
namespace {

SystemConfig dgx(const std::string& gpu, double nvlink_Bps, double nic_Bps) {
  SystemConfig s;
  s.name = "dgx";
  s.gpu_name = gpu;
  s.gpus_per_node = 8;
  s.nics_per_node = 8;
  s.intra_node = {nvlink_Bps, 1.9e-6};
  s.inter_node = {nic_Bps, 4e-6};
  s.efficiency = {0.8, 0.0, 0.9, 1e-6, 0.8};
  return s;
}
SystemConfig dgx_a100() { return dgx("NVIDIA A100-SXM4-80GB", 300e9, 25e9); }
SystemConfig dgx_h100() { return dgx("NVIDIA H100-SXM5-80GB", 450e9, 50e9); }

NcclModel model(const SystemConfig& s, std::int64_t ranks, std::int64_t nodes) {
  const auto comm = nccl_comm(s, ranks, nodes);
  EXPECT_TRUE(comm.has_value());
  return NcclModel(*comm);
}

std::string pick(const NcclModel& m, CollectiveKind k, std::int64_t bytes) {
  const NcclChoice c = m.choose(k, bytes);
  return std::string(to_string(c.algo)) + "/" + std::string(to_string(c.proto));
}

constexpr std::int64_t kMiB = 1 << 20;

/// nccl_tuning_factor of a collective of `kind` over `ranks` GPUs on `nodes` nodes.
double tuning_factor(const SystemConfig& s, CollectiveKind kind, std::int64_t ranks,
                     std::int64_t nodes, std::int64_t bytes) {
  return nccl_tuning_factor(s, CollectiveOp{.kind = kind,
                                            .group = CommGroup::kData,
                                            .bytes = bytes,
                                            .group_size = ranks,
                                            .nodes_spanned = nodes});
}

constexpr auto kAR = CollectiveKind::kAllReduce;
constexpr auto kAG = CollectiveKind::kAllGather;
constexpr auto kRS = CollectiveKind::kReduceScatter;

TEST(NcclPlatform, OnlyNvidiaNvswitchSystems) {
  EXPECT_TRUE(nccl_platform(dgx_a100()).has_value());
  EXPECT_EQ(nccl_platform(dgx_a100())->nvlinks, 12);
  EXPECT_EQ(nccl_platform(dgx_h100())->nvlinks, 18);
  EXPECT_FALSE(nccl_platform(dgx("Huawei Ascend 910 (32 GB HBM2)", 90e9, 12.5e9)).has_value());
  EXPECT_FALSE(nccl_comm(dgx_a100(), 1, 1).has_value());
  // A NIC slower than the search's slowest speed (0.12 GB/s): no ring, no model (the roofline
  // keeps its own formula), never an infinite time.
  EXPECT_FALSE(nccl_comm(dgx("NVIDIA A100-SXM4-80GB", 300e9, 0.1e9), 16, 2).has_value());
  const RooflineCostModel slow(dgx("NVIDIA A100-SXM4-80GB", 300e9, 0.1e9));
  const CollectiveOp op{.kind = CollectiveKind::kAllReduce,
                        .group = CommGroup::kData,
                        .bytes = 1 << 20,
                        .group_size = 16,
                        .nodes_spanned = 2};
  EXPECT_TRUE(std::isfinite(slow.collective_s(op)));
}

TEST(NcclGraphs, DgxA100OneNode) {
  // 12 NVLinks x SM80_NVLINK_BW 20 = 240 GB/s. Ring: 40 GB/s x 6 channels uses it all; DupChannels
  // (bwIntra >= 25) -> 12 x 20, the 12 rings NCCL prints (doubled to "Channel xx/24" by the
  // postset) in github.com/NVIDIA/nccl-tests/issues/100. Tree: 12 channels at 20.
  const auto c = nccl_comm(dgx_a100(), 8, 1);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->ring, (NcclGraph{.channels = 12, .bw_intra = 20.0, .bw_inter = 20.0}));
  EXPECT_EQ(c->tree, (NcclGraph{.channels = 12, .bw_intra = 20.0, .bw_inter = 20.0}));
  EXPECT_FALSE(c->nvls_support);  // Ampere: no NVLink SHARP
}

TEST(NcclGraphs, DgxH100OneNodeAndAcross) {
  // 18 x 20.6 = 370.8 GB/s. Ring: 60 x 6 = 360 (no better placement lower down), duplicated to
  // 12 x 30. NVLS: one head per GPU, 8 x 40 fits in 370.8 (8 x 50 does not); pass 2 raises
  // bwInter to 60.
  const auto one = nccl_comm(dgx_h100(), 8, 1);
  ASSERT_TRUE(one.has_value());
  EXPECT_EQ(one->ring, (NcclGraph{.channels = 12, .bw_intra = 30.0, .bw_inter = 30.0}));
  EXPECT_EQ(one->nvls, (NcclGraph{.channels = 8, .bw_intra = 40.0, .bw_inter = 60.0}));
  EXPECT_TRUE(one->nvls_support);
  // Across nodes: 8 NDR NICs at min(50, PCIe Gen5 48) = 48, one channel each.
  const auto many = nccl_comm(dgx_h100(), 64, 8);
  ASSERT_TRUE(many.has_value());
  EXPECT_EQ(many->ring, (NcclGraph{.channels = 8, .bw_intra = 48.0, .bw_inter = 48.0}));
  // One GPU per node: one NIC, a single-GPU tree (NCCL_TOPO_PATTERN_TREE).
  const auto dp = nccl_comm(dgx_h100(), 8, 8);
  ASSERT_TRUE(dp.has_value());
  EXPECT_TRUE(dp->tree.tree_pattern);
  EXPECT_DOUBLE_EQ(dp->ring.channels * dp->ring.bw_inter, 48.0);
  EXPECT_FALSE(dp->nvls_support);  // NVLS needs two GPUs of the communicator in a node
}

TEST(NcclTuning, DgxA100OneNodeTable) {
  const NcclModel m = model(dgx_a100(), 8, 1);
  // Ring LL: 6.6 + 14 steps x 0.6 = 15.0 us; min(llMaxBw 87.7, 240 x .5) x 8/14 = 50.11 GB/s.
  EXPECT_NEAR(m.latency_us(kAR, NcclAlgo::kRing, NcclProto::kLL), 15.0, 1e-9);
  EXPECT_NEAR(m.bandwidth_gbps(kAR, NcclAlgo::kRing, NcclProto::kLL), 87.7 * 8 / 14, 1e-9);
  // Ring LL128: 14 + 14 x 1.9 = 40.6; min(240 x .92, 12 x 20) x 8/14.
  EXPECT_NEAR(m.latency_us(kAR, NcclAlgo::kRing, NcclProto::kLL128), 40.6, 1e-9);
  EXPECT_NEAR(m.bandwidth_gbps(kAR, NcclAlgo::kRing, NcclProto::kLL128), 220.8 * 8 / 14, 1e-9);
  // Ring Simple: 8.4 + 14 x 3.4 = 56.0; 240 x 8/14.
  EXPECT_NEAR(m.latency_us(kAR, NcclAlgo::kRing, NcclProto::kSimple), 56.0, 1e-9);
  EXPECT_NEAR(m.bandwidth_gbps(kAR, NcclAlgo::kRing, NcclProto::kSimple), 240.0 * 8 / 14, 1e-9);
  // Tree LL: 6.8 + 2 x 7 x 0.6 = 15.2; min(240 x .92, 12 x 24) / 3.8 x .5.
  EXPECT_NEAR(m.latency_us(kAR, NcclAlgo::kTree, NcclProto::kLL), 15.2, 1e-9);
  EXPECT_NEAR(m.bandwidth_gbps(kAR, NcclAlgo::kTree, NcclProto::kLL), 220.8 / 3.8 * .5, 1e-9);
  // All-gather ring Simple: 8.4 + 7 x 3.4; 240 x 8/7. No tree, NVLS or PAT for it here.
  EXPECT_NEAR(m.latency_us(kAG, NcclAlgo::kRing, NcclProto::kSimple), 32.2, 1e-9);
  EXPECT_NEAR(m.bandwidth_gbps(kAG, NcclAlgo::kRing, NcclProto::kSimple), 240.0 * 8 / 7, 1e-9);
  EXPECT_EQ(m.bandwidth_gbps(kAG, NcclAlgo::kTree, NcclProto::kSimple), 0.0);
  EXPECT_EQ(m.bandwidth_gbps(kAG, NcclAlgo::kPat, NcclProto::kSimple), 0.0);
  EXPECT_FALSE(m.time_s(kAR, NcclAlgo::kNvls, NcclProto::kSimple, kMiB).has_value());
}

TEST(NcclChoice, DgxA100OneNodeGrid) {
  const NcclModel m = model(dgx_a100(), 8, 1);
  // Ring LL -> LL128 where 15.0 + B/50.11k = 40.6 + B/126.2k (B = 2.13 MB); LL128 -> Simple at
  // 24.3 MB; the tree never wins in one node (more latency, less bandwidth).
  EXPECT_EQ(pick(m, kAR, 1024), "ring/LL");
  EXPECT_EQ(pick(m, kAR, 1 * kMiB), "ring/LL");
  EXPECT_EQ(pick(m, kAR, 4 * kMiB), "ring/LL128");
  EXPECT_EQ(pick(m, kAR, 16 * kMiB), "ring/LL128");
  EXPECT_EQ(pick(m, kAR, 64 * kMiB), "ring/Simple");
  EXPECT_EQ(pick(m, kAG, 64 * 1024), "ring/LL");
  EXPECT_EQ(pick(m, kRS, 256 * kMiB), "ring/Simple");
  // A 2-GPU tensor-parallel group: 2 steps, the same per-channel figures.
  const NcclModel tp2 = model(dgx_a100(), 2, 1);
  EXPECT_EQ(pick(tp2, kAR, 64 * 1024), "ring/LL");
  EXPECT_EQ(pick(tp2, kAR, 256 * kMiB), "ring/Simple");
}

TEST(NcclChoice, DgxH100OneNodeUsesNvlsForLargeAllReduce) {
  const NcclModel m = model(dgx_h100(), 8, 1);
  // NVLS: latency 25 us; bw 8 x min(40 x .85 x 7/8 x 2, 60) x 8/14 = 272 GB/s.
  EXPECT_NEAR(m.latency_us(kAR, NcclAlgo::kNvls, NcclProto::kSimple), 25.0, 1e-9);
  EXPECT_NEAR(m.bandwidth_gbps(kAR, NcclAlgo::kNvls, NcclProto::kSimple),
              8 * (40.0 * .85 * 7 / 8 * 2) * 8 / 14, 1e-9);
  EXPECT_EQ(pick(m, kAR, 1 * kMiB), "ring/LL");
  EXPECT_EQ(pick(m, kAR, 4 * kMiB), "nvls/Simple");
  EXPECT_EQ(pick(m, kAR, 1024 * kMiB), "nvls/Simple");
  // NVLS all-gather is not converted to algorithm bandwidth and carries (ppn-1)/ppn: the ring wins.
  EXPECT_EQ(pick(m, kAG, 1024 * kMiB), "ring/Simple");
  // Four GPUs: NVLS 4 x min(60 x .85 x 3/4 x 2, 60) x 4/6 = 160 < ring 360 x 4/6.
  EXPECT_EQ(pick(model(dgx_h100(), 4, 1), kAR, 1024 * kMiB), "ring/Simple");
}

TEST(NcclChoice, AcrossNodes) {
  // Data-parallel group, one A100 per node on 16 nodes: PAT for small all-gathers
  // (8 + log2(16) x 14/3.5 + 16 x 2.8 = 68.8 us against the ring LL's 6.6 + 15 x 5.0), the ring for
  // large ones; the tree for small all-reduces.
  const NcclModel dp = model(dgx_a100(), 16, 16);
  EXPECT_NEAR(dp.latency_us(kAG, NcclAlgo::kPat, NcclProto::kSimple), 8 + 4 * 14 / 3.5 + 16 * 2.8,
              1e-9);
  EXPECT_EQ(pick(dp, kAG, 64 * 1024), "pat/Simple");
  EXPECT_EQ(pick(dp, kAG, 256 * kMiB), "ring/Simple");
  EXPECT_EQ(pick(dp, kAR, 4096), "tree/LL");
  EXPECT_EQ(pick(dp, kAR, 256 * kMiB), "ring/Simple");
  // Full DGX H100 nodes: NVLS tree for large all-reduces (NVLS itself needs CollNet across nodes).
  const NcclModel full = model(dgx_h100(), 64, 8);
  EXPECT_EQ(pick(full, kAR, 256 * kMiB), "nvls_tree/Simple");
  EXPECT_FALSE(full.time_s(kAR, NcclAlgo::kNvls, NcclProto::kSimple, kMiB).has_value());
  EXPECT_EQ(pick(full, kRS, 256 * kMiB), "ring/Simple");
}

// NCCL_NVLS_ENABLE=0 (SystemConfig::nccl_nvls false, from training.nccl_nvls_enable): no NVLS
// graph, so the tuner picks among ring and tree; a measured collective that NCCL ran with
// NVLS is scaled by the model's own ratio, one it ran without is left as it is.
TEST(NcclChoice, NvlsOffPicksWithoutNvlinkSharp) {
  SystemConfig off = dgx_h100();
  off.nccl_nvls = false;
  const auto comm = nccl_comm(off, 8, 1);
  ASSERT_TRUE(comm.has_value());
  EXPECT_FALSE(comm->nvls_support);
  const NcclModel m(*comm);
  EXPECT_FALSE(m.time_s(kAR, NcclAlgo::kNvls, NcclProto::kSimple, 64 * kMiB).has_value());
  EXPECT_EQ(pick(m, kAR, 64 * kMiB), "ring/Simple");
  EXPECT_EQ(pick(model(off, 64, 8), kAR, 256 * kMiB), "ring/LL128");  // not nvls_tree
  // The factor: ring over NVLS at 64 MiB, as the two models time them.
  const NcclModel on = model(dgx_h100(), 8, 1);
  const double ratio = m.choose(kAR, 64 * kMiB).seconds / on.choose(kAR, 64 * kMiB).seconds;
  EXPECT_GT(ratio, 1.0);
  EXPECT_DOUBLE_EQ(tuning_factor(off, kAR, 8, 1, 64 * kMiB), ratio);
  // 1: NVLS on; NCCL picks the ring anyway (small all-reduce, all-gather); no NVLS on A100.
  EXPECT_EQ(tuning_factor(dgx_h100(), kAR, 8, 1, 64 * kMiB), 1.0);
  EXPECT_EQ(tuning_factor(off, kAR, 8, 1, kMiB), 1.0);
  EXPECT_EQ(tuning_factor(off, kAG, 8, 1, 1024 * kMiB), 1.0);
  SystemConfig a100 = dgx_a100();
  a100.nccl_nvls = false;
  EXPECT_EQ(tuning_factor(a100, kAR, 8, 1, 64 * kMiB), 1.0);
  EXPECT_TRUE(nccl_nvls_capable(dgx_h100()));
  EXPECT_FALSE(nccl_nvls_capable(dgx_a100()));
  // The roofline cost model prices through the same choice.
  const CollectiveOp op{.kind = kAR,
                        .group = CommGroup::kData,
                        .bytes = 64 * kMiB,
                        .group_size = 8,
                        .nodes_spanned = 1};
  EXPECT_DOUBLE_EQ(RooflineCostModel(off).collective_s(op), m.choose(kAR, 64 * kMiB).seconds);
  EXPECT_DOUBLE_EQ(RooflineCostModel(dgx_h100()).collective_s(op),
                   on.choose(kAR, 64 * kMiB).seconds);
}

// Checks against published nccl-tests figures (not fitted: the model has no free constant).
TEST(NcclModelCheck, PublishedNcclTests) {
  const auto busbw = [](const NcclModel& m, CollectiveKind k, std::int64_t bytes, double n) {
    return static_cast<double>(bytes) / m.choose(k, bytes).seconds *
           bus_factor(k, static_cast<std::int64_t>(n)) / 1e9;
  };
  // 8x H200 (NVLink 4 / NVSwitch as DGX H100), all_reduce_perf 4 GiB: 473.10 GB/s busbw
  // (github.com/stas00/ml-engineering network/benchmarks/README.md). Model: 475.
  EXPECT_NEAR(busbw(model(dgx_h100(), 8, 1), kAR, 4096 * kMiB, 8), 473.10, 0.03 * 473.10);
  // 8x A100 all_reduce_perf peak ~230 GB/s busbw (NCCL maintainer,
  // github.com/NVIDIA/nccl-tests/issues/149). Model: 239.6, NCCL's 240 GB/s of 12 NVLinks.
  EXPECT_NEAR(busbw(model(dgx_a100(), 8, 1), kAR, 4096 * kMiB, 8), 230.0, 0.05 * 230.0);
}

TEST(RooflineCollectives, UseNcclsModelOnNvidiaPlatforms) {
  const SystemConfig s = dgx_a100();
  const RooflineCostModel r(s);
  const CollectiveOp op{.kind = CollectiveKind::kAllReduce,
                        .group = CommGroup::kTensor,
                        .bytes = 64 * kMiB,
                        .group_size = 8,
                        .nodes_spanned = 1};
  EXPECT_DOUBLE_EQ(r.collective_s(op), model(s, 8, 1).choose(kAR, 64 * kMiB).seconds);
  // Inter-node P2P runs at NCCL's NIC rate (24 GB/s for HDR), not at link_max x 25 GB/s.
  const P2POp p2p{.bytes = 24'000'000, .inter_node = true};
  EXPECT_NEAR(r.p2p_s(p2p), 4e-6 + 24e6 / 24e9, 1e-12);
}

}  // namespace
}  // namespace stepsim
