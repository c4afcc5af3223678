#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "stepsim/cost/profile.hpp"

namespace stepsim {
namespace {

// Multiplicative noise in [-amplitude, +amplitude] from std::mt19937, whose output sequence
// the standard fixes: the same on every platform.
class Noise {
 public:
  explicit Noise(double amplitude) : amplitude_(amplitude) {}
  double factor() {
    const double u = static_cast<double>(rng_()) / 4294967296.0;  // [0, 1)
    return 1.0 + amplitude_ * (2.0 * u - 1.0);
  }

 private:
  std::mt19937 rng_{20261122};
  double amplitude_;
};

struct Synthetic {
  std::vector<std::int64_t> bytes;
  std::vector<double> seconds;
};

// nccl-tests-like sweep: 1 KiB .. 1 GiB, doubling.
Synthetic synthetic(double latency_s, double bandwidth, double noise_amplitude) {
  Noise noise(noise_amplitude);
  Synthetic s;
  for (std::int64_t b = 1024; b <= (std::int64_t{1} << 30); b *= 2) {
    s.bytes.push_back(b);
    s.seconds.push_back((latency_s + static_cast<double>(b) / bandwidth) * noise.factor());
  }
  return s;
}

TEST(FitLinear, RecoversExactLatencyAndBandwidth) {
  const Synthetic s = synthetic(8e-6, 150e9, 0.0);
  const LinearFit f = fit_linear(s.bytes, s.seconds);
  EXPECT_NEAR(f.latency_s, 8e-6, 8e-6 * 1e-9);
  EXPECT_NEAR(f.bandwidth_bytes_per_s, 150e9, 150e9 * 1e-9);
  EXPECT_LT(f.rms_relative_error, 1e-12);
  EXPECT_EQ(f.samples, 21);
  EXPECT_EQ(f.min_bytes, 1024);
  EXPECT_EQ(f.max_bytes, std::int64_t{1} << 30);
}

// With +-3% uniform noise on every sample the fit stays within 5% on latency and 2% on
// bandwidth (the stated tolerance), and reports an rms error of the noise's order (a uniform
// distribution of half-width 3% has an rms of 3%/sqrt(3) = 1.7%).
TEST(FitLinear, RecoversLatencyAndBandwidthThroughNoise) {
  const Synthetic s = synthetic(8e-6, 150e9, 0.03);
  const LinearFit f = fit_linear(s.bytes, s.seconds);
  EXPECT_NEAR(f.latency_s, 8e-6, 8e-6 * 0.05);
  EXPECT_NEAR(f.bandwidth_bytes_per_s, 150e9, 150e9 * 0.02);
  EXPECT_GT(f.rms_relative_error, 0.005);
  EXPECT_LT(f.rms_relative_error, 0.03);
}

TEST(FitLinear, NeverReturnsANegativeLatency) {
  // Pure bandwidth with noise: an unconstrained fit can dip below zero; the fit must not.
  const Synthetic s = synthetic(0.0, 2e12, 0.03);
  const LinearFit f = fit_linear(s.bytes, s.seconds);
  EXPECT_GE(f.latency_s, 0.0);
  EXPECT_NEAR(f.bandwidth_bytes_per_s, 2e12, 2e12 * 0.02);
}

TEST(FitLinear, OneSizeGivesItsBandwidth) {
  const LinearFit f = fit_linear({1000, 1000}, {1e-6, 3e-6});
  EXPECT_EQ(f.latency_s, 0.0);
  // Through the origin with relative weights: b = sum(x/t) / sum((x/t)^2).
  const double r1 = 1000 / 1e-6;
  const double r2 = 1000 / 3e-6;
  EXPECT_DOUBLE_EQ(f.bandwidth_bytes_per_s, (r1 * r1 + r2 * r2) / (r1 + r2));
}

TEST(FitLinear, NoSamplesIsAnEmptyFit) {
  const LinearFit f = fit_linear({}, {});
  EXPECT_EQ(f.samples, 0);
  EXPECT_EQ(f.bandwidth_bytes_per_s, 0.0);
}

TEST(FitProfile, OneFitPerKindGroupAndSpan) {
  Profile p;
  const struct {
    CollectiveKind kind;
    std::int64_t group, span;
    double latency, bandwidth;
  } groups[] = {
      {CollectiveKind::kAllReduce, 8, 1, 20e-6, 100e9},
      {CollectiveKind::kAllReduce, 8, 8, 40e-6, 10e9},
      {CollectiveKind::kAllGather, 8, 1, 15e-6, 160e9},
      {CollectiveKind::kAllReduce, 2, 1, 10e-6, 90e9},
      {CollectiveKind::kReduceScatter, 8, 1, 15e-6, 150e9},
  };
  // Interleave the groups' samples: fitting must group them, not rely on their order.
  for (std::int64_t b = 1 << 12; b <= (1 << 28); b *= 4) {
    for (const auto& g : groups) {
      p.collectives.push_back(
          {g.kind, g.group, g.span, b, g.latency + static_cast<double>(b) / g.bandwidth, ""});
    }
  }
  for (std::int64_t b = 1 << 20; b <= (1 << 30); b *= 2) {
    p.memory.push_back({b, 3e-6 + static_cast<double>(b) / 1.5e12, ""});
    p.p2p.push_back({true, b, 5e-6 + static_cast<double>(b) / 20e9, ""});
    p.p2p.push_back({false, b, 2e-6 + static_cast<double>(b) / 200e9, ""});
  }
  fit_profile(p);

  ASSERT_EQ(p.collective_fits.size(), 5u);
  // Ordered by (kind, group size, nodes spanned).
  EXPECT_EQ(p.collective_fits[0].kind, CollectiveKind::kAllReduce);
  EXPECT_EQ(p.collective_fits[0].group_size, 2);
  EXPECT_EQ(p.collective_fits[1].group_size, 8);
  EXPECT_EQ(p.collective_fits[1].nodes_spanned, 1);
  EXPECT_EQ(p.collective_fits[2].nodes_spanned, 8);
  EXPECT_EQ(p.collective_fits[3].kind, CollectiveKind::kAllGather);
  EXPECT_EQ(p.collective_fits[4].kind, CollectiveKind::kReduceScatter);
  for (const auto& g : groups) {
    int found = 0;
    for (const CollectiveFit& f : p.collective_fits) {
      if (f.kind != g.kind || f.group_size != g.group || f.nodes_spanned != g.span) continue;
      ++found;
      EXPECT_NEAR(f.fit.latency_s, g.latency, g.latency * 1e-6);
      EXPECT_NEAR(f.fit.bandwidth_bytes_per_s, g.bandwidth, g.bandwidth * 1e-6);
      EXPECT_EQ(f.fit.samples, 9);
      EXPECT_EQ(f.fit.min_bytes, 1 << 12);
      EXPECT_EQ(f.fit.max_bytes, 1 << 28);
    }
    EXPECT_EQ(found, 1);
  }
  ASSERT_EQ(p.p2p_fits.size(), 2u);
  EXPECT_FALSE(p.p2p_fits[0].inter_node);
  EXPECT_NEAR(p.p2p_fits[0].fit.bandwidth_bytes_per_s, 200e9, 200e9 * 1e-6);
  EXPECT_TRUE(p.p2p_fits[1].inter_node);
  EXPECT_NEAR(p.p2p_fits[1].fit.latency_s, 5e-6, 5e-6 * 1e-6);
  EXPECT_NEAR(p.memory_fit.bandwidth_bytes_per_s, 1.5e12, 1.5e12 * 1e-6);
  EXPECT_EQ(p.memory_fit.samples, 11);
}

TEST(FitProfile, RefittingReplacesOldFits) {
  Profile p;
  p.collective_fits.push_back({CollectiveKind::kAllGather, 4, 1, LinearFit{}});
  p.p2p_fits.push_back({true, LinearFit{}});
  fit_profile(p);
  EXPECT_TRUE(p.collective_fits.empty());
  EXPECT_TRUE(p.p2p_fits.empty());
  EXPECT_EQ(p.memory_fit.samples, 0);
}

}  // namespace
}  // namespace stepsim
