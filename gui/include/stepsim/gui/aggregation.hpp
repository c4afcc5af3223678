#pragma once
// Level of detail: what to draw of a lane in a window of the timeline. Slices at least a
// few pixels wide are drawn as boxes; narrower ones are summed per pixel column (which kind
// covers most of the column, and how much of it is covered), so the cost of a frame is
// bounded by the visible slices, and a column is never drawn twice.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "stepsim/gui/trace_model.hpp"

namespace stepsim::gui {

/// The visible time window mapped onto `width_px` pixel columns. x = (t - t0) / us_per_px.
struct ViewWindow {
  double t0_us = 0;
  double us_per_px = 1;
  std::int32_t width_px = 0;

  double x_of(double t_us) const { return (t_us - t0_us) / us_per_px; }
  double t_of(double x_px) const { return t0_us + x_px * us_per_px; }
  double t1_us() const { return t_of(width_px); }
};

/// A slice drawn on its own; x in pixels from the window's left edge, clipped to it.
struct BoxItem {
  std::uint32_t index = 0;  ///< slice index in the lane
  double x0 = 0;
  double x1 = 0;
};

/// A pixel column of narrow slices: the kind covering most of it, the covered fraction and
/// the band (Lane::band) covering most of it.
struct ColumnCell {
  Kind kind = Kind::kOther;
  float coverage = 0;  ///< 0: nothing narrow in this column; at most 1
  std::uint8_t band = 0;
};

struct LaneDraw {
  std::vector<BoxItem> boxes;
  std::vector<ColumnCell> columns;  ///< width_px entries
  std::vector<float> scratch;       ///< per column and kind; reused between calls
  std::vector<float> band_scratch;  ///< per column: coverage of band 1 minus band 0
};

/// Fills `out` for the intervals visible in `view`. `kinds` gives each interval's kind, or is
/// null, when all are `uniform_kind`; `bands` each interval's band (Lane::band), or is null
/// (all band 0). Intervals at least `min_box_px` wide become boxes.
void aggregate(const Intervals& time, const Kind* kinds, Kind uniform_kind, const ViewWindow& view,
               double min_box_px, LaneDraw& out, const std::uint8_t* bands = nullptr);

/// Index of the interval containing `t_us`, else of the one nearest to it within
/// `tolerance_us`, else -1 (for hover and click at any zoom).
std::int64_t interval_at(const Intervals& time, double t_us, double tolerance_us);

/// A point of a plotted series.
struct XY {
  double x = 0;
  double y = 0;
  bool operator==(const XY&) const = default;
};

/// The memory step function (bytes[i] from time_us[i] on) as polyline points, reduced to
/// about 2 * max_buckets points: each bucket keeps its lowest and highest value, so the peak
/// survives. Series up to max_buckets points are drawn exactly as steps.
std::vector<XY> memory_polyline(const MemorySeries& series, std::size_t max_buckets);

}  // namespace stepsim::gui
