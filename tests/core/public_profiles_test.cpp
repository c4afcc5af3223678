// The shipped public reference profiles (scenarios/profiles/*-public.json): they load, say
// they are public data, cite every figure, and cover what the shipped scenarios ask for.

#include <filesystem>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

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

INSTANTIATE_TEST_SUITE_P(Shipped, PublicProfile,
                         testing::Values("a100-sxm4-80gb-public.json", "h100-sxm5-80gb-public.json",
                                         "h200-sxm-141gb-public.json"));

}  // namespace
}  // namespace stepsim
