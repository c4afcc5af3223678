// calibrate keeps the run-to-run spread of kernel times (the profile's KernelSpread): per
// kernel class the median of its points' coefficients of variation, as the backend observed
// them in each point's repeats; a backend that observes none leaves the profile without one.

#include <gtest/gtest.h>

#include "fake_backend.hpp"
#include "mpi_environment.hpp"
#include "stepsim/calibration/calibrate.hpp"
#include "stepsim/cost/profile.hpp"

namespace stepsim::calib {
namespace {

std::vector<BenchPoint> plan() {
  return {GemmOp{32, 32, 32, 1, DType::kFp32}, GemmOp{64, 32, 16, 1, DType::kFp32},
          GemmOp{16, 64, 64, 2, DType::kFp32}, MemoryBoundOp{1 << 16}, MemoryBoundOp{1 << 18}};
}

TEST(CalibrateSpread, KeepsTheRepeatsSpreadPerKernelClass) {
  testing::FakeBackend fake(0, 1, {});
  fake.spread_by_kind = {{"gemm 32", RepeatSpread{0.01, 10}},
                         {"gemm 64", RepeatSpread{0.02, 10}},
                         {"gemm 16", RepeatSpread{0.09, 10}},
                         {"memory", RepeatSpread{0.05, 10}}};
  auto run = run_calibration(fake, plan(), CalibrationOptions{}, nullptr);
  ASSERT_TRUE(run.ok()) << format_errors(run.errors());
  const KernelSpread& s = run->profile.spread;
  EXPECT_TRUE(s.measured());
  EXPECT_EQ(s.repeats, 10);
  EXPECT_DOUBLE_EQ(s.gemm_cv, 0.02);  // the median of 0.01, 0.02, 0.09
  EXPECT_DOUBLE_EQ(s.memory_cv, 0.05);
  EXPECT_EQ(s.attention_cv, 0.0);  // no attention point measured
  EXPECT_NE(s.citation.find("fake device"), std::string::npos) << s.citation;
  // It survives the profile file.
  const Result<Profile> back = parse_profile(profile_to_json(run->profile), "spread.json");
  ASSERT_TRUE(back.ok()) << format_errors(back.errors());
  EXPECT_EQ(back->spread, s);

  testing::FakeBackend silent(0, 1, {});
  auto plain = run_calibration(silent, plan(), CalibrationOptions{}, nullptr);
  ASSERT_TRUE(plain.ok()) << format_errors(plain.errors());
  EXPECT_FALSE(plain->profile.spread.measured());
  EXPECT_EQ(profile_to_json(plain->profile).find("\"spread\""), std::string::npos);
}

}  // namespace
}  // namespace stepsim::calib
