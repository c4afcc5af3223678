#pragma once
// Paints a TimelineDocument: ruler, rows (bubbles, boxes or per-column aggregates, labels),
// the critical path and the legend. Separate from the widget so that painting has no state.

#include <QPainter>
#include <QRect>

#include "stepsim/gui/aggregation.hpp"
#include "stepsim/gui/document.hpp"

namespace stepsim::gui::detail {

/// Where things go, in widget pixels.
struct TimelineGeometry {
  ViewWindow view;
  int label_width = 0;
  int width = 0;
  int height = 0;
  int rows_top = 0;     ///< first pixel below the ruler
  int rows_bottom = 0;  ///< first pixel of the legend
  int row_height = 0;
  int scroll_y = 0;
  double min_box_px = 1;

  /// Row `row` over the plot area (x from label_width), possibly outside the rows band.
  QRect row_rect(std::size_t row) const {
    return QRect(label_width, rows_top + static_cast<int>(row) * row_height - scroll_y,
                 view.width_px, row_height);
  }
};

void paint_timeline(QPainter& painter, const TimelineDocument& document,
                    const TimelineGeometry& geometry, LaneDraw& scratch);

/// A "nice" tick spacing (1, 2 or 5 times a power of ten) near `approx_us`.
double nice_tick_us(double approx_us);

}  // namespace stepsim::gui::detail
