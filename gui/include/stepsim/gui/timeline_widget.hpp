#pragma once
// TimelineWidget: draws a TimelineDocument with QPainter (one row per lane, boxes coloured
// by kind, bubbles on compute lanes, ruler, legend, critical path) and turns mouse and keys
// into view changes. It only draws and navigates: what to draw comes from the model layer.

#include <QWidget>
#include <cstdint>
#include <optional>
#include <vector>

#include "stepsim/gui/aggregation.hpp"
#include "stepsim/gui/document.hpp"

namespace stepsim::gui {

/// A slice under the cursor: the row it is drawn in and the slice.
struct TimelineHit {
  std::size_t row = 0;
  std::uint32_t trace = 0;
  SliceRef slice;
};

class TimelineWidget : public QWidget {
  Q_OBJECT

 public:
  /// Pixel layout (logical pixels).
  static constexpr int kLabelWidth = 170;
  static constexpr int kRightMargin = 12;
  static constexpr int kRulerHeight = 26;
  static constexpr int kLegendHeight = 26;
  static constexpr int kMaxRowHeight = 26;
  static constexpr int kMinRowHeight = 9;
  /// Slices at least this wide are drawn as boxes; narrower ones per pixel column.
  static constexpr double kMinBoxPx = 1.0;

  /// `document` must outlive the widget (the main window owns both).
  explicit TimelineWidget(TimelineDocument* document, QWidget* parent = nullptr);

  /// Shows another document (same lifetime rule) and fits it.
  void set_document(TimelineDocument* document);
  /// Whole step in view, all rows from the top.
  void fit();
  /// Shows the window [t0_us, t1_us) of the step (relative µs), rows from the top.
  void show_range(double t0_us, double t1_us);
  /// Zooms by `factor` (> 1 zooms in) keeping the time under widget x `x_px` in place.
  void zoom_at(double x_px, double factor);
  /// Moves the view by pixels (positive dx shows later times).
  void pan_by(double dx_px, double dy_px);
  void set_critical_path_visible(bool on);
  void set_selected_microbatch(std::int32_t mb);

  const ViewWindow& view() const { return view_; }
  /// Widget x of a time (relative µs).
  double x_of(double t_us) const { return kLabelWidth + view_.x_of(t_us); }
  /// Rectangle of row `row` over the plot area (empty when scrolled out).
  QRect row_rect(std::size_t row) const;
  int row_height() const;
  /// The slice at a widget position (within 3 px), if any.
  std::optional<TimelineHit> hit_test(QPoint pos) const;

 signals:
  void selection_changed(int microbatch);

 protected:
  void paintEvent(QPaintEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void mouseDoubleClickEvent(QMouseEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;
  bool event(QEvent* event) override;

 private:
  int plot_width() const;
  int rows_top() const { return kRulerHeight; }
  int rows_bottom() const { return height() - kLegendHeight; }
  void clamp_view();

  TimelineDocument* document_;
  ViewWindow view_;
  int scroll_y_ = 0;  ///< pixels of rows scrolled above the top
  bool fitted_ = false;
  QPoint press_pos_;
  QPoint last_pos_;
  bool pressed_ = false;
  bool dragging_ = false;
  mutable LaneDraw scratch_;
};

}  // namespace stepsim::gui
