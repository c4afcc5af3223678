// The wave mechanics of a GEMM (core/cost/gemm_waves.hpp), checked by hand, and the calibrated
// model's use of them: a shape the profile did not measure takes its neighbours' efficiency
// against the mechanism times its own tiles and waves.
#include "stepsim/cost/gemm_waves.hpp"

#include <gtest/gtest.h>

#include <memory>

#include "stepsim/cost/calibrated_cost_model.hpp"

namespace stepsim {
namespace {

// An H100 SXM5 as its system file says: 132 SMs, compute capability 9.0, 989 TFLOPS bf16,
// 3.35 TB/s, 1 us per kernel launch.
SystemConfig h100() {
  SystemConfig s;
  s.name = "h100-like";
  s.sm_count = 132;
  s.compute_capability = 90;
  s.peak_flops_bf16 = 989e12;
  s.peak_flops_fp16 = 989e12;
  s.peak_flops_fp32 = 494e12;
  s.peak_flops_fp8 = 1979e12;
  s.hbm_bandwidth_bytes_per_s = 3.35e12;
  s.gpus_per_node = 8;
  s.nics_per_node = 8;
  s.intra_node = {450e9, 3e-6};
  s.inter_node = {50e9, 5e-6};
  s.efficiency = {1.0, 0.0, 1.0, 1e-6, 1.0};
  return s;
}

constexpr double kSmPeak = 989e12 / 132;  // one SM's share of the bf16 peak

TEST(GemmWaves, TilesPerArchitecture) {
  EXPECT_EQ(gemm_cta_tile(80).m, 256);   // A100: 256x128 (NVIDIA's matrix-multiplication guide)
  EXPECT_EQ(gemm_cta_tile(80).n, 128);
  EXPECT_EQ(gemm_cta_tile(90).m, 128);   // Hopper: 128x256
  EXPECT_EQ(gemm_cta_tile(90).n, 256);
  EXPECT_EQ(gemm_cta_tile(0).m, 0);      // no compute capability: not modelled
  SystemConfig cpu = h100();
  cpu.sm_count = 1;
  EXPECT_FALSE(gemm_waves_apply(cpu, DType::kBf16));
  EXPECT_TRUE(gemm_waves_apply(h100(), DType::kBf16));
}

// 4096^3: 32 x 16 = 512 tiles of 128x256 over 132 SMs: 4 waves (528 slots), the last one 116
// tiles: fill 512 / 528. Each CTA: 2 x 128 x 256 x 4096 FLOPs at one SM's share of the peak.
TEST(GemmWaves, FourWavesWithATail) {
  const GemmWaves w = gemm_waves(GemmOp{4096, 4096, 4096, 1, DType::kBf16}, h100());
  EXPECT_EQ(w.tiles, 512);
  EXPECT_EQ(w.split_k, 1);
  EXPECT_EQ(w.waves, 4);
  EXPECT_DOUBLE_EQ(w.fill, 512.0 / 528.0);
  EXPECT_NEAR(w.compute_s, 4 * 2.0 * 128 * 256 * 4096 / kSmPeak, 1e-12);  // 143.3 us
  EXPECT_NEAR(w.compute_s, 143.31e-6, 0.01e-6);
  EXPECT_NEAR(w.memory_s, 2.0 * 3 * 4096.0 * 4096 / 3.35e12, 1e-12);       // 30.0 us
  EXPECT_NEAR(w.seconds, w.compute_s + 1e-6, 1e-12);
}

// 1408 x 3072: 11 x 12 = 132 tiles, exactly one full wave. One more row (1409) needs a 12th row
// of tiles: 144 tiles, two waves (the second 12 of 132 SMs busy), twice the time for 0.07% more
// FLOPs. The other orientation (256x128) is no better: 6 x 24 = 144 tiles for either.
TEST(GemmWaves, OneMoreRowOfTilesDoublesTheTime) {
  const GemmWaves full = gemm_waves(GemmOp{1408, 3072, 8192, 1, DType::kBf16}, h100());
  EXPECT_EQ(full.tiles, 132);
  EXPECT_EQ(full.waves, 1);
  EXPECT_DOUBLE_EQ(full.fill, 1.0);
  EXPECT_NEAR(full.compute_s, 2.0 * 128 * 256 * 8192 / kSmPeak, 1e-12);  // 71.7 us
  const GemmWaves tail = gemm_waves(GemmOp{1409, 3072, 8192, 1, DType::kBf16}, h100());
  EXPECT_EQ(tail.tiles, 144);
  EXPECT_EQ(tail.waves, 2);
  EXPECT_DOUBLE_EQ(tail.fill, 144.0 / 264.0);
  EXPECT_NEAR(tail.compute_s, 2.0 * full.compute_s, 1e-12);
}

// 256 x 256 x 16384: two tiles leave 130 SMs idle; split-K cuts K in 16 (the most cuBLAS's
// kernels split; 1024 of K per slice): 32 CTAs, one wave of 2 x 128 x 256 x 1024 FLOPs each,
// plus 16 fp32 partial results written and read (2 x 16 x 4 x 65536 bytes) and a second launch.
TEST(GemmWaves, SplitKForFewTilesAndLongK) {
  const GemmWaves w = gemm_waves(GemmOp{256, 256, 16384, 1, DType::kBf16}, h100());
  EXPECT_EQ(w.tiles, 2);
  EXPECT_EQ(w.split_k, 16);
  EXPECT_EQ(w.ctas, 32);
  EXPECT_EQ(w.waves, 1);
  EXPECT_NEAR(w.compute_s, 2.0 * 128 * 256 * 1024 / kSmPeak, 1e-12);  // 8.96 us
  EXPECT_NEAR(w.reduce_s, 2.0 * 16 * 4 * 65536 / 3.35e12, 1e-15);     // 2.50 us
  EXPECT_NEAR(w.launch_s, 2e-6, 1e-15);
  EXPECT_NEAR(w.seconds, w.compute_s + w.reduce_s + w.launch_s, 1e-12);  // 13.5 us
  // Without the split it would take 16 times the compute: 143 us.
  EXPECT_LT(w.seconds, 2.0 * 128 * 256 * 16384 / kSmPeak / 10);
}

// A skinny product (n = 16): its operands through HBM take longer than its one wave of tiles.
TEST(GemmWaves, SkinnyShapesMeetTheMemoryFloor) {
  const GemmWaves w = gemm_waves(GemmOp{65536, 16, 8192, 1, DType::kBf16}, h100());
  EXPECT_GT(w.memory_s, w.compute_s);
  EXPECT_NEAR(w.memory_s, 2.0 * (65536.0 * 8192 + 8192.0 * 16 + 65536.0 * 16) / 3.35e12, 1e-12);
  EXPECT_NEAR(w.seconds, w.memory_s + w.reduce_s + w.launch_s, 1e-12);
}

// Anchored on the profile: with one sample (4096^3 measured at 180 us), a shape not measured
// costs the sample's time times the ratio of the two shapes' mechanism times.
TEST(GemmWaves, CalibratedModelScalesTheMechanismToTheSample) {
  auto p = std::make_shared<Profile>();
  p->machine = "test";
  p->source = "measured";
  p->gemm.push_back({4096, 4096, 4096, 1, DType::kBf16, 180e-6, ""});
  const CalibratedCostModel m(p, "one.json", h100());
  const SystemConfig s = h100();
  const double sample = gemm_waves(GemmOp{4096, 4096, 4096, 1, DType::kBf16}, s).seconds;
  const GemmOp full{1408, 3072, 8192, 1, DType::kBf16};
  const GemmOp tail{1409, 3072, 8192, 1, DType::kBf16};
  const double full_s = m.gemm_s(full);
  EXPECT_NEAR(full_s, 180e-6 * gemm_waves(full, s).seconds / sample, 1e-12);
  // 72.7 us / 144.3 us x 180 us = 90.6 us for the full wave; the tail wave about twice that.
  EXPECT_NEAR(full_s, 90.6e-6, 0.1e-6);
  EXPECT_NEAR(m.gemm_s(tail) / full_s, (2 * 71.66 + 1) / (71.66 + 1), 2e-3);
  EXPECT_DOUBLE_EQ(m.gemm_s(GemmOp{4096, 4096, 4096, 1, DType::kBf16}), 180e-6);
}

}  // namespace
}  // namespace stepsim
