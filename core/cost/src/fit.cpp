// Latency/bandwidth fits of calibration samples (profile.hpp), by least squares with Eigen.

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "stepsim/base/assert.hpp"
#include "stepsim/cost/profile.hpp"

namespace stepsim {

namespace {

double rms_relative_error(const LinearFit& f, const std::vector<std::int64_t>& bytes,
                          const std::vector<double>& seconds) {
  double sum = 0;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    const double predicted = f.latency_s + static_cast<double>(bytes[i]) / f.bandwidth_bytes_per_s;
    const double r = (predicted - seconds[i]) / seconds[i];
    sum += r * r;
  }
  return std::sqrt(sum / static_cast<double>(bytes.size()));
}

}  // namespace

// Samples span many decades of size (8 B to 8 GB), so an unweighted fit would let the largest
// messages decide everything and leave the latency meaningless. The fit minimises the sum
// of squared *relative* errors instead: each row of t = a + x*b is divided by its measured t.
// A negative latency (noise on samples that are all bandwidth bound) is not physical: the
// fit is then redone through the origin. A non-positive slope (all samples the same size,
// or times that do not grow with size) leaves no bandwidth to fit: the bandwidth is then the
// one of the largest sample with no latency.
LinearFit fit_linear(const std::vector<std::int64_t>& bytes, const std::vector<double>& seconds) {
  STEPSIM_ASSERT(bytes.size() == seconds.size());
  LinearFit f;
  f.samples = static_cast<std::int64_t>(bytes.size());
  if (bytes.empty()) return f;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    STEPSIM_ASSERT(bytes[i] > 0 && seconds[i] > 0);
  }
  const auto [lo, hi] = std::minmax_element(bytes.begin(), bytes.end());
  f.min_bytes = *lo;
  f.max_bytes = *hi;

  const auto n = static_cast<Eigen::Index>(bytes.size());
  Eigen::MatrixXd a(n, 2);
  Eigen::VectorXd y(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    const auto u = static_cast<std::size_t>(i);
    const double w = 1.0 / seconds[u];
    a(i, 0) = w;
    a(i, 1) = static_cast<double>(bytes[u]) * w;
    y(i) = 1.0;  // seconds[u] * w
  }
  double latency = 0;
  double inverse_bandwidth = 0;
  if (f.min_bytes != f.max_bytes) {
    const Eigen::Vector2d x = a.colPivHouseholderQr().solve(y);
    latency = x(0);
    inverse_bandwidth = x(1);
  }
  if (latency < 0 || inverse_bandwidth <= 0) {
    // Through the origin: minimise sum (x_i b w_i - 1)^2  =>  b = sum(x_i w_i) / sum((x_i w_i)^2).
    latency = 0;
    inverse_bandwidth = a.col(1).sum() / a.col(1).squaredNorm();
  }
  STEPSIM_ASSERT(inverse_bandwidth > 0);
  f.latency_s = latency;
  f.bandwidth_bytes_per_s = 1.0 / inverse_bandwidth;
  f.rms_relative_error = rms_relative_error(f, bytes, seconds);
  return f;
}

void fit_profile(Profile& p) {
  std::vector<std::int64_t> bytes;
  std::vector<double> seconds;
  for (const MemorySample& s : p.memory) {
    bytes.push_back(s.bytes);
    seconds.push_back(s.seconds);
  }
  p.memory_fit = fit_linear(bytes, seconds);

  // std::map orders the fits by (kind, group size, nodes spanned): deterministic output.
  using Key = std::tuple<CollectiveKind, std::int64_t, std::int64_t>;
  std::map<Key, std::pair<std::vector<std::int64_t>, std::vector<double>>> collectives;
  for (const CollectiveSample& s : p.collectives) {
    auto& [b, t] = collectives[Key{s.kind, s.group_size, s.nodes_spanned}];
    b.push_back(s.bytes);
    t.push_back(s.seconds);
  }
  p.collective_fits.clear();
  for (const auto& [key, samples] : collectives) {
    p.collective_fits.push_back(CollectiveFit{std::get<0>(key), std::get<1>(key), std::get<2>(key),
                                              fit_linear(samples.first, samples.second)});
  }

  std::map<bool, std::pair<std::vector<std::int64_t>, std::vector<double>>> p2p;
  for (const P2PSample& s : p.p2p) {
    auto& [b, t] = p2p[s.inter_node];
    b.push_back(s.bytes);
    t.push_back(s.seconds);
  }
  p.p2p_fits.clear();
  for (const auto& [inter_node, samples] : p2p) {
    p.p2p_fits.push_back(P2PFit{inter_node, fit_linear(samples.first, samples.second)});
  }
}

}  // namespace stepsim
