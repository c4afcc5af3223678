#include "stepsim/gui/aggregation.hpp"

#include <algorithm>
#include <cmath>

namespace stepsim::gui {

void aggregate(const Intervals& time, const Kind* kinds, Kind uniform_kind, const ViewWindow& view,
               double min_box_px, LaneDraw& out, const std::uint8_t* bands) {
  out.boxes.clear();
  const auto width = static_cast<std::size_t>(std::max(0, view.width_px));
  out.columns.assign(width, ColumnCell{});
  out.scratch.assign(width * kKindCount, 0.0F);
  out.band_scratch.assign(bands != nullptr ? width : 0, 0.0F);
  if (width == 0 || time.size() == 0) return;
  const double t1 = view.t1_us();
  const double w = static_cast<double>(width);
  bool any_narrow = false;
  for (std::size_t i = time.first_reaching(view.t0_us); i < time.size(); ++i) {
    if (time.start_us[i] >= t1) break;
    if (time.end_us[i] <= view.t0_us) continue;
    const double x0 = std::max(0.0, view.x_of(time.start_us[i]));
    const double x1 = std::min(w, view.x_of(time.end_us[i]));
    if (x1 - x0 >= min_box_px) {
      out.boxes.push_back(BoxItem{static_cast<std::uint32_t>(i), x0, x1});
      continue;
    }
    const Kind kind = kinds != nullptr ? kinds[i] : uniform_kind;
    const auto k = static_cast<std::size_t>(kind);
    // Spread the slice's width over the columns it touches (usually one or two).
    auto c = static_cast<std::size_t>(x0);
    const double end = std::max(x1, x0);
    while (c < width) {
      const double lo = std::max(x0, static_cast<double>(c));
      const double hi = std::min(end, static_cast<double>(c + 1));
      if (hi > lo) {
        out.scratch[c * kKindCount + k] += static_cast<float>(hi - lo);
        if (bands != nullptr) {
          out.band_scratch[c] += static_cast<float>(bands[i] != 0 ? hi - lo : lo - hi);
        }
      }
      if (static_cast<double>(c + 1) >= end) break;
      ++c;
    }
    any_narrow = true;
  }
  if (!any_narrow) return;
  for (std::size_t c = 0; c < width; ++c) {
    const float* acc = &out.scratch[c * kKindCount];
    float total = 0;
    std::size_t best = 0;
    for (std::size_t k = 0; k < kKindCount; ++k) {
      total += acc[k];
      if (acc[k] > acc[best]) best = k;
    }
    if (total > 0) {
      const bool odd = !out.band_scratch.empty() && out.band_scratch[c] > 0;
      out.columns[c] = ColumnCell{static_cast<Kind>(best), std::min(total, 1.0F),
                                  static_cast<std::uint8_t>(odd ? 1 : 0)};
    }
  }
}

std::int64_t interval_at(const Intervals& time, double t_us, double tolerance_us) {
  std::int64_t best = -1;
  double best_distance = 0;
  double best_length = 0;
  const std::size_t end = time.first_starting_at_or_after(t_us + tolerance_us);
  for (std::size_t i = time.first_reaching(t_us - tolerance_us); i < end; ++i) {
    double distance = 0;
    if (t_us < time.start_us[i]) distance = time.start_us[i] - t_us;
    if (t_us > time.end_us[i]) distance = t_us - time.end_us[i];
    const double length = time.end_us[i] - time.start_us[i];
    // Nearest wins; among equally near ones (e.g. nested) the shortest.
    const bool better =
        best < 0 ? distance <= tolerance_us
                 : distance < best_distance || (distance == best_distance && length < best_length);
    if (better) {
      best = static_cast<std::int64_t>(i);
      best_distance = distance;
      best_length = length;
    }
  }
  return best;
}

std::vector<XY> memory_polyline(const MemorySeries& series, std::size_t max_buckets) {
  std::vector<XY> points;
  const std::size_t n = series.time_us.size();
  if (n == 0) return points;
  auto value = [&](std::size_t i) { return static_cast<double>(series.bytes[i]); };
  if (n <= max_buckets || max_buckets == 0) {
    points.reserve(2 * n);
    for (std::size_t i = 0; i < n; ++i) {
      if (i > 0) points.push_back({series.time_us[i], value(i - 1)});
      points.push_back({series.time_us[i], value(i)});
    }
    return points;
  }
  const double t0 = series.time_us.front();
  const double span = std::max(series.time_us.back() - t0, 1e-9);
  std::size_t i = 0;
  points.reserve(2 * max_buckets + 2);
  for (std::size_t b = 0; b < max_buckets && i < n; ++b) {
    const double bucket_end =
        t0 + span * static_cast<double>(b + 1) / static_cast<double>(max_buckets);
    std::size_t lo = i;
    std::size_t hi = i;
    std::size_t last = i;
    for (; i < n && (series.time_us[i] <= bucket_end || b + 1 == max_buckets); ++i) {
      if (series.bytes[i] < series.bytes[lo]) lo = i;
      if (series.bytes[i] > series.bytes[hi]) hi = i;
      last = i;
    }
    const std::size_t first = std::min(lo, hi);
    const std::size_t second = std::max(lo, hi);
    points.push_back({series.time_us[first], value(first)});
    if (second != first) points.push_back({series.time_us[second], value(second)});
    if (last != second) points.push_back({series.time_us[last], value(last)});
  }
  return points;
}

}  // namespace stepsim::gui
