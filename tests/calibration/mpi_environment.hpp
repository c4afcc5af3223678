#pragma once
// Test helper: MPI for the whole test program (a one-rank singleton world when the program
// is not started by mpirun). Include from exactly one source file of a test program.

#include <gtest/gtest.h>

#include <memory>

#include "stepsim/calibration/mpi_session.hpp"

namespace stepsim::calib::testing {

class MpiEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    auto s = MpiSession::start(nullptr, nullptr);
    ASSERT_TRUE(s.ok());
    session_ = std::move(s).value();
  }
  void TearDown() override { session_.reset(); }

 private:
  std::unique_ptr<MpiSession> session_;
};

// Registered before main runs (gtest_main calls RUN_ALL_TESTS, which sets it up).
inline ::testing::Environment* const kMpiEnvironment =
    ::testing::AddGlobalTestEnvironment(new MpiEnvironment);

}  // namespace stepsim::calib::testing
