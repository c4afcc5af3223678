#pragma once
// Shared by validate.cpp and validate_limits.cpp. Private to stepsim_core.

#include <cstdint>
#include <string>

#include "stepsim/core/result.hpp"
#include "stepsim/core/scenario.hpp"

namespace stepsim::detail {

/// Collects rule violations for one file.
struct Checker {
  const std::string& file;
  Errors& errors;
  /// `message` follows the key, e.g. "=6 does not divide num_attention_heads=96".
  void fail(std::string key, std::string message) {
    errors.push_back({file, std::move(key), std::move(message)});
  }
};

inline std::string str(std::int64_t v) { return std::to_string(v); }

/// Sizes beyond 64-bit products or beyond what a simulation can enumerate.
void check_limits(const Workload& w, Checker& check);

}  // namespace stepsim::detail
