#include "stepsim/cost/spread.hpp"

#include <cmath>
#include <mutex>
#include <numbers>
#include <unordered_map>
#include <utility>
#include <variant>

namespace stepsim {
namespace {

/// {E, Var} of the largest of n standard normals by numerical integration of its density
/// f(x) = n phi(x) Phi(x)^(n-1) (David & Nagaraja 2003, eq. 2.1.6 with F = Phi).
std::pair<double, double> max_moments(std::int64_t n) {
  constexpr double kLo = -12.0, kHi = 12.0, kStep = 1.0 / 512.0;
  const double inv_sqrt_2pi = 1.0 / std::sqrt(2.0 * std::numbers::pi);
  double m0 = 0, m1 = 0, m2 = 0;
  const auto steps = static_cast<std::int64_t>((kHi - kLo) / kStep);
  for (std::int64_t i = 0; i <= steps; ++i) {
    const double x = kLo + static_cast<double>(i) * kStep;
    const double cdf = 0.5 * std::erfc(-x / std::numbers::sqrt2);
    const double log_f = std::log(static_cast<double>(n)) - 0.5 * x * x +
                         std::log(inv_sqrt_2pi) +
                         static_cast<double>(n - 1) * std::log(cdf);
    const double w = (i == 0 || i == steps) ? 0.5 : 1.0;
    const double f = w * std::exp(log_f);
    m0 += f;
    m1 += f * x;
    m2 += f * x * x;
  }
  const double mean = m1 / m0;  // m0 ~ 1/kStep; dividing by it also removes the rule's error
  return {mean, m2 / m0 - mean * mean};
}

std::pair<double, double> cached_moments(std::int64_t n) {
  static std::mutex mutex;
  static std::unordered_map<std::int64_t, std::pair<double, double>> cache;
  const std::lock_guard lock(mutex);
  auto it = cache.find(n);
  if (it == cache.end()) it = cache.emplace(n, max_moments(n)).first;
  return it->second;
}

}  // namespace

double expected_max_std_normal(std::int64_t n) {
  return n <= 1 ? 0.0 : cached_moments(n).first;
}

double variance_max_std_normal(std::int64_t n) {
  return n <= 1 ? 1.0 : cached_moments(n).second;
}

double spread_cv(const KernelSpread& s, const Op& op) {
  if (std::holds_alternative<GemmOp>(op.shape)) return s.gemm_cv;
  if (std::holds_alternative<AttentionOp>(op.shape)) return s.attention_cv;
  if (std::holds_alternative<MemoryBoundOp>(op.shape)) return s.memory_cv;
  if (std::holds_alternative<CollectiveOp>(op.shape)) return s.collective_cv;
  if (std::holds_alternative<P2POp>(op.shape)) return s.p2p_cv;
  return 0.0;
}

double sync_wait_s(std::int64_t group_size, double sigma_s) {
  if (group_size <= 1 || !(sigma_s > 0)) return 0.0;
  return sigma_s * expected_max_std_normal(group_size);
}

}  // namespace stepsim
