#include "stepsim/gui/timeline_widget.hpp"

#include <QHelpEvent>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>

#include "timeline_painter.hpp"

namespace stepsim::gui {

namespace {
constexpr int kHitTolerancePx = 3;
constexpr int kDragThresholdPx = 3;
}  // namespace

TimelineWidget::TimelineWidget(TimelineDocument* document, QWidget* parent)
    : QWidget(parent), document_(document) {
  setMouseTracking(true);
  setFocusPolicy(Qt::StrongFocus);
  setMinimumSize(400, 160);
  setAttribute(Qt::WA_OpaquePaintEvent);
}

void TimelineWidget::set_document(TimelineDocument* document) {
  document_ = document;
  fit();
}

int TimelineWidget::plot_width() const { return std::max(1, width() - kLabelWidth - kRightMargin); }

int TimelineWidget::row_height() const {
  const auto rows = static_cast<int>(document_->layout().rows.size());
  if (rows == 0) return kMaxRowHeight;
  return std::clamp((rows_bottom() - rows_top()) / rows, kMinRowHeight, kMaxRowHeight);
}

QRect TimelineWidget::row_rect(std::size_t row) const {
  return QRect(kLabelWidth, rows_top() + static_cast<int>(row) * row_height() - scroll_y_,
               plot_width(), row_height());
}

void TimelineWidget::fit() {
  const double end = std::max(document_->end_us(), 1e-3);
  view_.width_px = plot_width();
  view_.us_per_px = end / view_.width_px;
  view_.t0_us = 0;
  scroll_y_ = 0;
  fitted_ = true;
  update();
}

void TimelineWidget::show_range(double t0_us, double t1_us) {
  view_.width_px = plot_width();
  view_.t0_us = t0_us;
  view_.us_per_px = std::max(t1_us - t0_us, 1e-3) / view_.width_px;
  scroll_y_ = 0;
  fitted_ = true;
  clamp_view();
  update();
}

void TimelineWidget::clamp_view() {
  const double end = std::max(document_->end_us(), 1e-3);
  view_.width_px = plot_width();
  view_.us_per_px = std::clamp(view_.us_per_px, 1e-5, 4 * end / view_.width_px);
  const double span = view_.us_per_px * view_.width_px;
  view_.t0_us = std::clamp(view_.t0_us, -0.5 * span, end - 0.5 * span);
  const int content = static_cast<int>(document_->layout().rows.size()) * row_height();
  scroll_y_ = std::clamp(scroll_y_, 0, std::max(0, content - (rows_bottom() - rows_top())));
}

void TimelineWidget::zoom_at(double x_px, double factor) {
  const double anchor = view_.t_of(x_px - kLabelWidth);
  view_.us_per_px /= factor;
  clamp_view();
  view_.t0_us = anchor - (x_px - kLabelWidth) * view_.us_per_px;
  clamp_view();
  update();
}

void TimelineWidget::pan_by(double dx_px, double dy_px) {
  view_.t0_us += dx_px * view_.us_per_px;
  scroll_y_ += static_cast<int>(std::lround(dy_px));
  clamp_view();
  update();
}

void TimelineWidget::set_critical_path_visible(bool on) {
  document_->set_show_critical_path(on);
  update();
}

void TimelineWidget::set_selected_microbatch(std::int32_t mb) {
  document_->set_selected_microbatch(mb);
  update();
  emit selection_changed(mb);
}

std::optional<TimelineHit> TimelineWidget::hit_test(QPoint pos) const {
  if (pos.x() < kLabelWidth || pos.y() < rows_top() || pos.y() >= rows_bottom()) return {};
  const int index = (pos.y() - rows_top() + scroll_y_) / row_height();
  const auto& rows = document_->layout().rows;
  if (index < 0 || static_cast<std::size_t>(index) >= rows.size()) return {};
  const LaneRow& row = rows[static_cast<std::size_t>(index)];
  const Lane& lane = document_->traces()[row.trace].lanes[row.lane];
  const double t = view_.t_of(pos.x() - kLabelWidth);
  const std::int64_t i = interval_at(lane.time, t, kHitTolerancePx * view_.us_per_px);
  if (i < 0) return {};
  return TimelineHit{static_cast<std::size_t>(index), row.trace,
                     SliceRef{row.lane, static_cast<std::uint32_t>(i)}};
}

void TimelineWidget::paintEvent(QPaintEvent* /*event*/) {
  if (!fitted_) fit();
  clamp_view();
  QPainter painter(this);
  detail::TimelineGeometry g;
  g.view = view_;
  g.label_width = kLabelWidth;
  g.width = width();
  g.height = height();
  g.rows_top = rows_top();
  g.rows_bottom = rows_bottom();
  g.row_height = row_height();
  g.scroll_y = scroll_y_;
  g.min_box_px = kMinBoxPx;
  detail::paint_timeline(painter, *document_, g, scratch_);
}

void TimelineWidget::resizeEvent(QResizeEvent* /*event*/) {
  // Keep the visible time span when the plot gets wider or narrower.
  const double span = view_.us_per_px * view_.width_px;
  view_.width_px = plot_width();
  if (fitted_ && span > 0) view_.us_per_px = span / view_.width_px;
}

void TimelineWidget::wheelEvent(QWheelEvent* event) {
  const double steps = event->angleDelta().y() / 120.0;
  if (event->modifiers() & Qt::ShiftModifier) {
    pan_by(0, -steps * row_height() * 3);
  } else {
    zoom_at(event->position().x(), std::pow(1.25, steps));
  }
  event->accept();
}

void TimelineWidget::mousePressEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton) return;
  pressed_ = true;
  dragging_ = false;
  press_pos_ = last_pos_ = event->position().toPoint();
}

void TimelineWidget::mouseMoveEvent(QMouseEvent* event) {
  if (!pressed_) return;
  const QPoint pos = event->position().toPoint();
  if (!dragging_ && (pos - press_pos_).manhattanLength() >= kDragThresholdPx) {
    dragging_ = true;
    setCursor(Qt::ClosedHandCursor);
  }
  if (dragging_) {
    pan_by(last_pos_.x() - pos.x(), last_pos_.y() - pos.y());
    last_pos_ = pos;
  }
}

void TimelineWidget::mouseReleaseEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton || !pressed_) return;
  pressed_ = false;
  if (dragging_) {
    dragging_ = false;
    unsetCursor();
    return;
  }
  // A click: select the micro-batch under the cursor, or clear the selection.
  std::int32_t mb = -1;
  if (const auto hit = hit_test(event->position().toPoint())) {
    mb = document_->traces()[hit->trace].lanes[hit->slice.lane].microbatch[hit->slice.index];
  }
  if (mb == document_->selected_microbatch()) mb = -1;
  set_selected_microbatch(mb);
}

void TimelineWidget::mouseDoubleClickEvent(QMouseEvent* /*event*/) { fit(); }

void TimelineWidget::keyPressEvent(QKeyEvent* event) {
  const double centre = kLabelWidth + plot_width() / 2.0;
  switch (event->key()) {
    case Qt::Key_F:
      fit();
      break;
    case Qt::Key_Plus:
    case Qt::Key_Equal:
      zoom_at(centre, 1.5);
      break;
    case Qt::Key_Minus:
      zoom_at(centre, 1 / 1.5);
      break;
    case Qt::Key_Left:
      pan_by(-plot_width() / 8.0, 0);
      break;
    case Qt::Key_Right:
      pan_by(plot_width() / 8.0, 0);
      break;
    case Qt::Key_Up:
      pan_by(0, -row_height());
      break;
    case Qt::Key_Down:
      pan_by(0, row_height());
      break;
    case Qt::Key_C:
      set_critical_path_visible(!document_->show_critical_path());
      break;
    case Qt::Key_Escape:
      set_selected_microbatch(-1);
      break;
    default:
      QWidget::keyPressEvent(event);
  }
}

bool TimelineWidget::event(QEvent* event) {
  if (event->type() != QEvent::ToolTip) return QWidget::event(event);
  auto* help = static_cast<QHelpEvent*>(event);
  if (const auto hit = hit_test(help->pos())) {
    const TraceModel& trace = document_->traces()[hit->trace];
    QString text = QString::fromStdString(describe_slice(trace, hit->slice));
    if (document_->traces().size() > 1)
      text += QStringLiteral("\ntrace: ") + QString::fromStdString(trace.label);
    QToolTip::showText(help->globalPos(), text, this);
  } else {
    QToolTip::hideText();
    event->ignore();
  }
  return true;
}

}  // namespace stepsim::gui
