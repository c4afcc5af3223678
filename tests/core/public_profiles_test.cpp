// The shipped public reference profiles (scenarios/profiles/*-public.json): they load, say
// they are public data, cite every figure, and cover what the shipped scenarios ask for.

#include <filesystem>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "stepsim/config/parse.hpp"
#include "stepsim/config/shipped.hpp"
#include "stepsim/cost/calibrated_cost_model.hpp"
#include "stepsim/cost/profile.hpp"

namespace stepsim {
namespace {

// The DGX system each profile describes (the NVLink and NIC figures NCCL's model reads).
SystemConfig fallback_system(const std::string& profile) {
  const bool a100 = profile.find("a100") != std::string::npos;
  const bool h200 = profile.find("h200") != std::string::npos;
  SystemConfig s;
  s.name = "fallback";
  s.gpu_name = a100   ? "NVIDIA A100-SXM4-80GB"
               : h200 ? "NVIDIA H200-SXM-141GB"
                      : "NVIDIA H100-SXM5-80GB";
  s.peak_flops_bf16 = a100 ? 312e12 : 989e12;
  s.peak_flops_fp16 = s.peak_flops_bf16;
  s.peak_flops_fp32 = s.peak_flops_bf16 / 2;
  s.peak_flops_fp8 = a100 ? 0.0 : 1979e12;
  s.hbm_bandwidth_bytes_per_s = a100 ? 2.039e12 : h200 ? 4.8e12 : 3.35e12;
  s.gpus_per_node = 8;
  s.nics_per_node = 8;
  s.intra_node = {a100 ? 300e9 : 450e9, 3e-6};
  s.inter_node = {a100 ? 25e9 : 50e9, 5e-6};
  s.efficiency = {0.8, 0.0, 0.8, 0.0, 0.8};
  return s;
}

class PublicProfile : public testing::TestWithParam<const char*> {
 protected:
  Profile load() const {
    const std::string path = std::string(STEPSIM_SCENARIOS_DIR) + "/profiles/" + GetParam();
    Result<Profile> p = load_profile_file(path);
    EXPECT_TRUE(p.ok()) << (p.ok() ? "" : format_errors(p.errors()));
    return p.ok() ? p.value() : Profile{};
  }
};

// A published figure (a link), or stepsim's own measurement committed beside the profile
// (the H100 profile takes FP8 GEMMs, memory-bound kernels and attention backward from it,
// the H200 profile every kernel sample).
bool cited(const std::string& c) {
  if (c.find("https://") != std::string::npos) return true;
  for (const std::string measured :
       {"h100-sxm5-80gb-measured.json", "h200-sxm-141gb-measured.json"}) {
    if (c.find("scenarios/profiles/" + measured) != std::string::npos &&
        std::filesystem::exists(std::string(STEPSIM_SCENARIOS_DIR) + "/profiles/" + measured))
      return true;
  }
  return false;
}

TEST_P(PublicProfile, IsPublicDataWithEveryFigureCited) {
  const Profile p = load();
  EXPECT_TRUE(p.source.starts_with("public data")) << p.source;
  EXPECT_EQ(p.backend, "public");
  EXPECT_FALSE(p.gemm.empty());
  for (const GemmSample& s : p.gemm) EXPECT_TRUE(cited(s.citation)) << s.m;
  for (const MemorySample& s : p.memory) EXPECT_TRUE(cited(s.citation)) << s.bytes;
  for (const CollectiveSample& s : p.collectives) EXPECT_TRUE(cited(s.citation)) << s.bytes;
  for (const P2PSample& s : p.p2p) EXPECT_TRUE(cited(s.citation)) << s.bytes;
  for (const AttentionSample& s : p.attention) EXPECT_TRUE(cited(s.citation));
}

// TP/DP groups of 2, 4 and 8 inside a node, groups across nodes with 1, 2 or 4 members per
// node (data-parallel and embedding groups), P2P both ways: the measured 8-GPU all-reduce from
// its samples, every other group from NCCL's model, never a rescaled neighbour or a roofline.
TEST_P(PublicProfile, CoversTheShippedScenariosGroups) {
  auto p = std::make_shared<const Profile>(load());
  const CalibratedCostModel m(p, GetParam(), fallback_system(GetParam()));
  const CollectiveOp measured{.kind = CollectiveKind::kAllReduce, .group = CommGroup::kTensor,
                              .bytes = 64 << 20, .group_size = 8, .nodes_spanned = 1};
  EXPECT_GT(m.collective_s(measured), 0.0);
  EXPECT_TRUE(m.warnings().empty()) << m.warnings()[0];
  for (CollectiveKind kind :
       {CollectiveKind::kAllReduce, CollectiveKind::kAllGather, CollectiveKind::kReduceScatter}) {
    for (std::int64_t tp : {2, 4, 8}) {
      EXPECT_GT(m.collective_s({kind, CommGroup::kTensor, 64 << 20, tp, 1}), 0.0);
    }
    for (std::int64_t per_node : {1, 2, 4}) {
      for (std::int64_t nodes : {2, 4, 8, 16, 32, 64, 128}) {
        EXPECT_GT(m.collective_s({kind, CommGroup::kData, 1 << 30, per_node * nodes, nodes}), 0.0);
      }
    }
  }
  EXPECT_GT(m.p2p_s({16 << 20, false}), 0.0);
  EXPECT_GT(m.p2p_s({16 << 20, true}), 0.0);
  const std::vector<std::string> w = m.warnings();
  ASSERT_EQ(w.size(), 1u) << w[0];
  EXPECT_NE(w[0].find("NCCL's own tuning model used"), std::string::npos) << w[0];
}

// The fits stay close to the cited figures they were made from.
TEST_P(PublicProfile, FitsFollowTheirSamples) {
  const Profile p = load();
  ASSERT_FALSE(p.collective_fits.empty());
  for (const CollectiveFit& f : p.collective_fits) {
    EXPECT_LT(f.fit.rms_relative_error, 0.25) << to_string(f.kind) << " " << f.group_size;
    EXPECT_GT(f.fit.bandwidth_bytes_per_s, 1e9);
  }
  ASSERT_EQ(p.p2p_fits.size(), 2u);
  for (const P2PFit& f : p.p2p_fits) EXPECT_LT(f.fit.rms_relative_error, 0.05);
}

// A cited GEMM shape takes exactly the cited time.
TEST_P(PublicProfile, CitedGemmIsReturnedExactly) {
  auto p = std::make_shared<const Profile>(load());
  const CalibratedCostModel m(p, GetParam(), fallback_system(GetParam()));
  for (const GemmSample& s : p->gemm) {
    EXPECT_EQ(m.gemm_s({.m = s.m,
                        .n = s.n,
                        .k = s.k,
                        .batch = s.batch,
                        .dtype = s.dtype,
                        .layout = s.layout,
                        .scaling = s.scaling,
                        .fast_accum = s.fast_accum}),
              s.seconds);
  }
}

// DGX B200 (issue 38, item 6): the only per-shape public figures are XLA's measured B200 GEMM
// table, so the profile holds GEMM samples alone, each citing it; the host is borrowed from
// stepsim's measured H100 profile (said in its citation). Everything else is the system file's
// data sheet, and the provenance says so: roofline for memory-bound kernels and P2P, NCCL's
// model for collectives, never "published".
TEST(B200PublicProfile, HoldsCitedGemmsOnlyAndSaysWhatIsDataSheet) {
  const std::string dir = STEPSIM_SCENARIOS_DIR;
  Result<Profile> loaded = load_profile_file(dir + "/profiles/b200-sxm-180gb-public.json");
  ASSERT_TRUE(loaded.ok()) << format_errors(loaded.errors());
  auto p = std::make_shared<const Profile>(loaded.value());
  EXPECT_EQ(p->backend, "public");
  EXPECT_TRUE(p->source.starts_with("public data")) << p->source;
  ASSERT_EQ(p->gemm.size(), 250u);  // 125 shapes x {bf16, fp8}
  for (const GemmSample& s : p->gemm) {
    EXPECT_FALSE(s.citation.empty());
    EXPECT_NE(s.citation.find("default_matmul_perf_table.txtpb"), std::string::npos) << s.citation;
    EXPECT_NE(s.citation.find("sm_100_B200"), std::string::npos) << s.citation;
    EXPECT_TRUE(s.dtype == DType::kBf16 || s.dtype == DType::kFp8) << s.citation;
    // Below the data sheet's dense peak (2.25 PFLOPS bf16, 4.5 FP8): a figure, not a roofline.
    const double peak = s.dtype == DType::kBf16 ? 2.25e15 : 4.5e15;
    EXPECT_LT(2.0 * static_cast<double>(s.m * s.n * s.k) / s.seconds, peak) << s.citation;
  }
  EXPECT_TRUE(p->memory.empty());
  EXPECT_TRUE(p->collectives.empty());
  EXPECT_TRUE(p->p2p.empty());
  EXPECT_TRUE(p->attention.empty());
  EXPECT_TRUE(p->host.citation.starts_with(
      "borrowed from scenarios/profiles/h100-sxm5-80gb-measured.json"))
      << p->host.citation;

  Result<SystemConfig> system = load_system_file(dir + "/systems/dgx-b200.json");
  ASSERT_TRUE(system.ok()) << format_errors(system.errors());
  const CalibratedCostModel m(p, "b200-sxm-180gb-public.json", system.value());
  EXPECT_GT(m.gemm_s({.m = 4096, .n = 4096, .k = 4096, .batch = 1, .dtype = DType::kBf16}), 0.0);
  EXPECT_GT(m.memory_bound_s({.bytes = 1 << 30}), 0.0);
  EXPECT_GT(m.collective_s({CollectiveKind::kAllReduce, CommGroup::kData, 1 << 30, 8, 1}), 0.0);
  const Provenance prov = m.provenance();
  EXPECT_EQ(prov.parts[static_cast<std::size_t>(PricedPart::kGemm)], kFromPublished);
  EXPECT_EQ(prov.parts[static_cast<std::size_t>(PricedPart::kMemoryBound)], kFromRoofline);
  EXPECT_EQ(prov.parts[static_cast<std::size_t>(PricedPart::kCollective)], kFromNcclModel);
  EXPECT_EQ(prov.host, HostOrigin::kBorrowed);
  EXPECT_EQ(prov.host_from, "h100-sxm5-80gb-measured.json");
}

INSTANTIATE_TEST_SUITE_P(Shipped, PublicProfile,
                         testing::Values("a100-sxm4-80gb-public.json", "h100-sxm5-80gb-public.json",
                                         "h200-sxm-141gb-public.json"));

}  // namespace
}  // namespace stepsim
