// NVLink domains (SystemConfig::nvlink_domain): a group talks over NVLink inside one domain
// and over the NICs across domains; NCCL counts domains as its nodes. Expected graphs and
// choices are worked by hand from github.com/NVIDIA/nccl at commit
// 5067397c2676d5aed50042fc39e5c8ee96eb0027 (src/graph/search.cc, tuning.cc, enqueue.cc), as in
// nccl_model_test.cpp.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "stepsim/config/parse.hpp"
#include "stepsim/cost/nccl_model.hpp"
#include "stepsim/cost/roofline_cost_model.hpp"
#include "stepsim/layout/nccl_topology.hpp"
#include "stepsim/layout/rank_layout.hpp"

namespace stepsim {
namespace {

namespace fs = std::filesystem;
const std::string kScenarios = STEPSIM_SCENARIOS_DIR;

SystemConfig shipped(const std::string& stem) {
  const Result<SystemConfig> s =
      load_system_file((fs::path(kScenarios) / "systems" / (stem + ".json")).string());
  EXPECT_TRUE(s.ok()) << stem;
  return s.ok() ? *s : SystemConfig{};
}

NcclModel model(const SystemConfig& s, std::int64_t ranks, std::int64_t domains) {
  const auto comm = nccl_comm(s, ranks, domains);
  EXPECT_TRUE(comm.has_value());
  return NcclModel(*comm);
}

std::string pick(const NcclModel& m, CollectiveKind k, std::int64_t bytes) {
  const NcclChoice c = m.choose(k, bytes);
  return std::string(to_string(c.algo)) + "/" + std::string(to_string(c.proto));
}

constexpr std::int64_t kMiB = 1 << 20;
constexpr auto kAR = CollectiveKind::kAllReduce;
constexpr auto kAG = CollectiveKind::kAllGather;
constexpr auto kRS = CollectiveKind::kReduceScatter;

TEST(NvlinkDomain, DefaultsToTheNode) {
  const SystemConfig b200 = shipped("dgx-b200");
  EXPECT_EQ(b200.nvlink_domain_size, 0);
  EXPECT_EQ(b200.nvlink_domain(), 8);
  const SystemConfig gb200 = shipped("dgx-gb200-nvl72");
  EXPECT_EQ(gb200.gpus_per_node, 4);
  EXPECT_EQ(gb200.nvlink_domain(), 72);
  EXPECT_EQ(shipped("dgx-gb300-nvl72").nvlink_domain(), 72);
  EXPECT_EQ(shipped("dgx-b300").nvlink_domain(), 8);
}

TEST(NvlinkDomain, MustHoldWholeNodes) {
  const SystemConfig gb200 = shipped("dgx-gb200-nvl72");
  std::ifstream in(fs::path(kScenarios) / "systems" / "dgx-gb200-nvl72.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string key = "\"nvlink_domain_size\": 72";
  ASSERT_NE(text.find(key), std::string::npos);
  text.replace(text.find(key), key.size(), "\"nvlink_domain_size\": 70");
  const fs::path path = fs::path(::testing::TempDir()) / "nvl70.json";
  std::ofstream(path) << text;
  const Result<SystemConfig> bad = load_system_file(path.string());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.errors().front().message.find("multiple of gpus_per_node=4"), std::string::npos)
      << bad.errors().front().message;
  EXPECT_EQ(bad.errors().front().key, "nvlink_domain_size");
}

// Megatron's order tp-cp-ep-dp-pp: a TP group of 16 is 16 consecutive ranks, one NVL72 domain
// but two DGX B200 nodes; 256 GB200 span four domains (72 + 72 + 72 + 40).
TEST(NvlinkDomain, GroupsSpanDomainsNotHosts) {
  const RankGenerator tp16(ParallelSizes{.tp = 16, .dp = 16});
  EXPECT_EQ(tp16.nodes_spanned("tp", 0, shipped("dgx-gb200-nvl72").nvlink_domain()), 1);
  EXPECT_EQ(tp16.nodes_spanned("tp", 0, shipped("dgx-b200").nvlink_domain()), 2);
  EXPECT_EQ(tp16.nodes_spanned("dp", 0, 72), 4);  // ranks 0, 16, ..., 240
  EXPECT_EQ(tp16.nodes_spanned("dp", 0, 4), 16);   // the hosts, were they asked
}

// One domain is one NCCL node however many hosts it spans: 16 GB200 of one rack build the
// graphs 16 B200 would build on one NVSwitch (the ring: 8 x 90 GB/s fill 18 x 40.1 = 721.8,
// duplicated to 16 x 45), while 16 DGX B200 GPUs cross 2 nodes on 8 NICs of min(50, PCIe 48).
TEST(NvlinkDomain, Tp16InsideNvl72IsNvlinkOnB200IsNics) {
  const SystemConfig gb200 = shipped("dgx-gb200-nvl72");
  const SystemConfig b200 = shipped("dgx-b200");
  const auto in_rack = nccl_comm(gb200, 16, 1);
  ASSERT_TRUE(in_rack.has_value());
  EXPECT_EQ(in_rack->ring, (NcclGraph{.channels = 16, .bw_intra = 45.0, .bw_inter = 45.0}));
  const auto two_hosts = nccl_comm(b200, 16, 2);
  ASSERT_TRUE(two_hosts.has_value());
  EXPECT_EQ(two_hosts->ring, (NcclGraph{.channels = 8, .bw_intra = 48.0, .bw_inter = 48.0}));
  // The cost model prices each on its own fabric: NCCL's choice and time for that graph.
  const CollectiveOp gb_op{.kind = kAG,
                           .group = CommGroup::kTensor,
                           .bytes = 256 * kMiB,
                           .group_size = 16,
                           .nodes_spanned = 1};
  CollectiveOp b_op = gb_op;
  b_op.nodes_spanned = 2;
  const double on_nvlink = RooflineCostModel(gb200).collective_s(gb_op);
  const double on_nics = RooflineCostModel(b200).collective_s(b_op);
  EXPECT_DOUBLE_EQ(on_nvlink, NcclModel(*in_rack).choose(kAG, 256 * kMiB).seconds);
  EXPECT_DOUBLE_EQ(on_nics, NcclModel(*two_hosts).choose(kAG, 256 * kMiB).seconds);
  // Ring Simple all-gather bus bandwidth (tuning.cc: bwIntra x channels up to two nodes, x
  // nRanks / nsteps): 16 x 45 = 720 GB/s in the rack against 8 x 48 = 384 on the NICs.
  const double ring_rack =
      NcclModel(*in_rack).bandwidth_gbps(kAG, NcclAlgo::kRing, NcclProto::kSimple);
  const double ring_nics =
      NcclModel(*two_hosts).bandwidth_gbps(kAG, NcclAlgo::kRing, NcclProto::kSimple);
  EXPECT_NEAR(ring_rack / ring_nics, 720.0 / 384.0, 1e-9);
  EXPECT_GT(on_nics, 1.5 * on_nvlink);
}

// NVLS in a domain: multicast needs >= 2 GPUs of the communicator in the node; NCCL caps the
// heads at NCCL_MAX_NVLS_ARITY = 32 (search.cc) and runs NVLS all-gather / reduce-scatter only
// with at most 32 local ranks (enqueue.cc updateCollCostTable); all-reduce keeps it.
TEST(NvlinkDomain, NcclChoicesOnNvl72Groups) {
  const SystemConfig gb200 = shipped("dgx-gb200-nvl72");
  for (const std::int64_t n : {8, 16, 32, 64, 72}) {
    const NcclModel m = model(gb200, n, 1);
    SCOPED_TRACE(n);
    EXPECT_TRUE(m.time_s(kAR, NcclAlgo::kNvls, NcclProto::kSimple, kMiB).has_value());
    const bool nvls_ag = m.time_s(kAG, NcclAlgo::kNvls, NcclProto::kSimple, kMiB).has_value();
    EXPECT_EQ(nvls_ag, n <= 32);
    EXPECT_FALSE(m.time_s(kAR, NcclAlgo::kNvlsTree, NcclProto::kSimple, kMiB).has_value());
  }
  // The NVLS graph of 72: 32 heads at the highest speed with 32 x s <= 721.8 (20 GB/s), bwInter
  // raised by pass 2 to twice that.
  const auto c72 = nccl_comm(gb200, 72, 1);
  ASSERT_TRUE(c72.has_value());
  EXPECT_EQ(c72->nvls, (NcclGraph{.channels = 32, .bw_intra = 20.0, .bw_inter = 40.0}));
  // Large all-reduces take NVLS in every group of one rack; all-gathers the ring (NVLS
  // all-gather carries (ppn-1)/ppn and no algorithm-bandwidth ratio, and is off above 32).
  for (const std::int64_t n : {8, 16, 32, 64, 72}) {
    EXPECT_EQ(pick(model(gb200, n, 1), kAR, 1024 * kMiB), "nvls/Simple") << n;
    EXPECT_EQ(pick(model(gb200, n, 1), kAG, 1024 * kMiB), "ring/Simple") << n;
  }
  // NVLS latency does not grow with the ranks (tuning.cc: intra latency once), while the ring's
  // LL grows by 0.6 us a step (142 steps for 72): NVLS even for a 4 KiB all-reduce of 72.
  EXPECT_EQ(pick(model(gb200, 72, 1), kAR, 4096), "nvls/Simple");
  EXPECT_EQ(pick(model(gb200, 8, 1), kAR, 4096), "ring/LL");
}

// Across domains NCCL builds rings and trees over the NICs (NVLS needs CollNet across nodes,
// NVLS tree all-reduce remains): 144 GB200 in two racks, 256 in four.
TEST(NvlinkDomain, NcclChoicesAcrossDomains) {
  const SystemConfig gb200 = shipped("dgx-gb200-nvl72");
  const NcclModel two = model(gb200, 144, 2);
  EXPECT_FALSE(two.time_s(kAR, NcclAlgo::kNvls, NcclProto::kSimple, kMiB).has_value());
  EXPECT_EQ(pick(two, kAR, 1024 * kMiB), "nvls_tree/Simple");
  EXPECT_EQ(pick(two, kRS, 1024 * kMiB), "ring/LL128");
  // The data-parallel group of a TP-8 job on 256 GB200: 32 ranks over 4 domains, 8 per domain.
  const NcclModel dp = model(gb200, 32, 4);
  EXPECT_EQ(pick(dp, kRS, 256 * kMiB), "ring/Simple");
  EXPECT_EQ(pick(dp, kAR, 4096), "tree/LL");
}

}  // namespace
}  // namespace stepsim
