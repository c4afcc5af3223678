#pragma once
// Paths of the viewer's test fixtures (tests/gui/data) and a loader that fails the test on
// error.

#include <gtest/gtest.h>

#include <string>

#include "stepsim/gui/trace_reader.hpp"

namespace stepsim::gui::testing {

inline std::string data_path(const std::string& name) {
  return std::string(STEPSIM_SOURCE_DIR) + "/tests/gui/data/" + name;
}

/// The two-stage 1F1B fixture: ranks 0 and 1, times 0..1100 µs after the origin 5000 µs.
inline TraceModel load_fixture(const std::string& name) {
  auto result = read_trace_file(data_path(name));
  EXPECT_TRUE(result.ok()) << (result.ok() ? "" : format_errors(result.errors()));
  if (!result.ok()) return {};
  return std::move(result).value();
}

}  // namespace stepsim::gui::testing
