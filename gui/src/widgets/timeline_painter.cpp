#include "timeline_painter.hpp"

#include <QFontMetrics>
#include <QPainterPath>
#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "stepsim/gui/colors.hpp"

namespace stepsim::gui::detail {

namespace {

QColor to_qcolor(Rgb c, int alpha = 255) { return QColor(c.r, c.g, c.b, alpha); }

constexpr double kDimAmount = 0.78;  // how far unselected micro-batches fade to white
constexpr int kOddBandDarker = 118;  // QColor::darker() factor for odd micro-batch bands

/// Odd (micro-batch, chunk) bands a shade darker, so consecutive micro-batches stay apart.
QColor banded(Rgb c, std::uint8_t band, int alpha = 255) {
  const QColor color = to_qcolor(c, alpha);
  return band != 0 ? color.darker(kOddBandDarker) : color;
}
const QColor kCriticalColor(20, 20, 20);
// The hatching over idle time (Qt::BDiagPattern): a rank's bubbles on its compute lane, the
// slices of stepsim's "bubble" track and the legend's bubble entry.
const QColor kHatchColor(214, 120, 120);

class RowPainter {
 public:
  RowPainter(QPainter& p, const TimelineDocument& doc, const TimelineGeometry& g, LaneDraw& s)
      : p_(p), doc_(doc), g_(g), scratch_(s), metrics_(p.font()) {}

  void paint_row(std::size_t r) {
    const LaneRow& row = doc_.layout().rows[r];
    const QRect rect = g_.row_rect(r);
    const TraceModel& trace = doc_.traces()[row.trace];
    const Lane& lane = trace.lanes[row.lane];
    p_.fillRect(QRect(0, rect.top(), g_.width, rect.height()),
                row.first_of_rank || r % 2 == 0 ? QColor(250, 250, 250) : QColor(243, 244, 246));
    if (row.first_of_rank && r > 0) {
      p_.setPen(QColor(170, 170, 175));
      p_.drawLine(0, rect.top(), g_.width, rect.top());
    }
    const QRect band = rect.adjusted(0, 2, 0, -2);
    if (row.stream == kStreamCompute) paint_bubbles(trace, row.rank, band);
    paint_slices(lane, band, trace.has_chunks);
    paint_title(row, rect);
  }

 private:
  // The lane's title in the label column, in a smaller font when rows are thin.
  void paint_title(const LaneRow& row, const QRect& rect) {
    p_.save();
    QFont font = p_.font();
    if (metrics_.height() > rect.height()) {
      font.setPixelSize(std::max(6, rect.height() - 1));
      p_.setFont(font);
    }
    const QFontMetrics metrics(font);
    p_.setPen(QColor(40, 40, 40));
    const QRect label(6, rect.top(), g_.label_width - 10, rect.height());
    p_.drawText(
        label, Qt::AlignVCenter | Qt::AlignLeft,
        metrics.elidedText(QString::fromStdString(row.title), Qt::ElideRight, label.width()));
    p_.restore();
  }

  void paint_bubbles(const TraceModel& trace, std::int32_t rank, const QRect& band) {
    const std::int64_t pos = trace.rank_position(rank);
    if (pos < 0) return;
    aggregate(trace.idle[static_cast<std::size_t>(pos)], nullptr, Kind::kBubble, g_.view,
              g_.min_box_px, scratch_);
    const QColor fill = to_qcolor(kind_color(Kind::kBubble));
    const QBrush hatch(kHatchColor, Qt::BDiagPattern);
    for (const BoxItem& b : scratch_.boxes) {
      const QRectF r(g_.label_width + b.x0, band.top(), b.x1 - b.x0, band.height());
      p_.fillRect(r, fill);
      p_.fillRect(r, hatch);
    }
    paint_columns(band, false);
  }

  void paint_columns(const QRect& band, bool dim) {
    for (std::size_t c = 0; c < scratch_.columns.size(); ++c) {
      const ColumnCell& cell = scratch_.columns[c];
      if (cell.coverage <= 0) continue;
      Rgb color = kind_color(cell.kind);
      if (dim) color = faded(color, kDimAmount);
      const int alpha =
          static_cast<int>(std::lround(80.0 + 175.0 * static_cast<double>(cell.coverage)));
      p_.fillRect(QRect(g_.label_width + static_cast<int>(c), band.top(), 1, band.height()),
                  banded(color, dim ? 0 : cell.band, alpha));
    }
  }

  void paint_slices(const Lane& lane, const QRect& band, bool chunks) {
    aggregate(lane.time, lane.kind.data(), Kind::kOther, g_.view, g_.min_box_px, scratch_,
              lane.band.empty() ? nullptr : lane.band.data());
    const std::int32_t selected = doc_.selected_microbatch();
    paint_columns(band, selected >= 0);
    for (const BoxItem& b : scratch_.boxes) {
      const std::size_t i = b.index;
      Rgb color = kind_color(lane.kind[i]);
      const bool chosen = selected >= 0 && lane.microbatch[i] == selected;
      if (selected >= 0 && !chosen) color = faded(color, kDimAmount);
      const QRectF r(g_.label_width + b.x0, band.top(), b.x1 - b.x0, band.height());
      // Boxes too narrow for a border are banded like the columns; a selection dims instead.
      const bool plain = lane.band.empty() || selected >= 0 || r.width() >= 5;
      p_.fillRect(r, banded(color, plain ? 0 : lane.band[i]));
      if (lane.kind[i] == Kind::kBubble) p_.fillRect(r, QBrush(kHatchColor, Qt::BDiagPattern));
      if (r.width() >= 5) {
        p_.setPen(QPen(to_qcolor(faded(color, 0.0)).darker(135), 0));
        p_.drawRect(r.adjusted(0, 0, -1, -1));
      }
      if (chosen) {
        p_.setPen(QPen(QColor(0, 0, 0), 2));
        p_.drawRect(r.adjusted(1, 1, -1, -1));
      }
      paint_label(lane, i, r, color, chunks);
    }
  }

  void paint_label(const Lane& lane, std::size_t i, const QRectF& r, Rgb color, bool chunks) {
    if (lane.microbatch[i] < 0 || r.width() < 24 || r.height() < metrics_.height() - 2) return;
    QString text = QStringLiteral("mb%1").arg(lane.microbatch[i]);
    if (chunks && lane.chunk[i] >= 0) text += QStringLiteral(" c%1").arg(lane.chunk[i]);
    if (metrics_.horizontalAdvance(text) + 4 > r.width()) {
      text = QString::number(lane.microbatch[i]);
      if (metrics_.horizontalAdvance(text) + 4 > r.width()) return;
    }
    p_.setPen(to_qcolor(text_color_on(color)));
    p_.drawText(r, Qt::AlignCenter, text);
  }

  QPainter& p_;
  const TimelineDocument& doc_;
  const TimelineGeometry& g_;
  LaneDraw& scratch_;
  QFontMetrics metrics_;
};

void paint_ruler(QPainter& p, const TimelineGeometry& g) {
  p.fillRect(QRect(0, 0, g.width, g.rows_top), QColor(232, 234, 238));
  p.setPen(QColor(90, 90, 90));
  p.drawLine(g.label_width, g.rows_top - 1, g.width, g.rows_top - 1);
  const double step = nice_tick_us(g.view.us_per_px * 110.0);
  const double first = std::ceil(g.view.t0_us / step) * step;
  for (double t = first; t <= g.view.t1_us(); t += step) {
    const double x = g.label_width + g.view.x_of(t);
    p.drawLine(QPointF(x, g.rows_top - 7), QPointF(x, g.rows_top - 1));
    p.drawText(QPointF(x + 3, g.rows_top - 10), QString::fromStdString(format_duration_us(t)));
  }
  p.drawText(QRect(6, 0, g.label_width - 10, g.rows_top), Qt::AlignVCenter | Qt::AlignLeft,
             QStringLiteral("time from step start"));
}

// Every path slice gets a dark bar along the top of its row (the bars join into a line that
// reads at any zoom), wide ones also an outline, and a dotted link marks each jump between
// ranks (a P2P transfer the path goes through).
void paint_critical_path(QPainter& p, const TimelineDocument& doc, const TimelineGeometry& g) {
  constexpr double kOutlinePx = 24;
  for (std::size_t t = 0; t < doc.traces().size(); ++t) {
    const CriticalPath& path = doc.critical_path_of(t);
    if (path.slices.empty()) continue;
    std::unordered_map<std::uint32_t, std::size_t> row_of_lane;
    for (std::size_t r = 0; r < doc.layout().rows.size(); ++r) {
      if (doc.layout().rows[r].trace == t) row_of_lane[doc.layout().rows[r].lane] = r;
    }
    const TraceModel& trace = doc.traces()[t];
    QPointF previous;
    std::int32_t previous_rank = -1;
    for (SliceRef ref : path.slices) {
      const Lane& lane = trace.lanes[ref.lane];
      const QRect row = g.row_rect(row_of_lane.at(ref.lane));
      const double x0 = g.label_width + g.view.x_of(lane.time.start_us[ref.index]);
      const double x1 = g.label_width + g.view.x_of(lane.time.end_us[ref.index]);
      const double mid = row.center().y();
      if (previous_rank >= 0 && previous_rank != lane.rank) {
        p.setPen(QPen(kCriticalColor, 1.5, Qt::DotLine));
        p.drawLine(previous, QPointF(x0, mid));
      }
      if (x1 >= g.label_width && x0 <= g.width) {
        const double w = std::max(x1 - x0, 1.0);
        p.fillRect(QRectF(x0, row.top(), w, std::max(3, row.height() / 5)), kCriticalColor);
        if (x1 - x0 >= kOutlinePx) {
          p.setPen(QPen(kCriticalColor, 2));
          p.setBrush(Qt::NoBrush);
          p.drawRect(QRectF(x0, row.top() + 1, w, row.height() - 2));
        }
      }
      previous = QPointF(x1, mid);
      previous_rank = lane.rank;
    }
  }
}

void paint_legend(QPainter& p, const TimelineDocument& doc, const TimelineGeometry& g) {
  p.fillRect(QRect(0, g.rows_bottom, g.width, g.height - g.rows_bottom), QColor(255, 255, 255));
  p.setPen(QColor(200, 200, 200));
  p.drawLine(0, g.rows_bottom, g.width, g.rows_bottom);
  const QFontMetrics metrics(p.font());
  int x = 8;
  const int y = g.rows_bottom + (g.height - g.rows_bottom - 12) / 2;
  auto item = [&](const QString& text, auto&& swatch) {
    swatch(QRect(x, y, 12, 12));
    p.setPen(QColor(40, 40, 40));
    p.drawText(QPoint(x + 16, y + 11), text);
    x += 16 + metrics.horizontalAdvance(text) + 14;
  };
  // The kinds the traces hold (stepsim's, or a profiler's categories), and idle time.
  for (std::size_t k = 0; k < kKindCount; ++k) {
    const auto kind = static_cast<Kind>(k);
    if (kind != Kind::kBubble && !doc.has_kind(kind)) continue;
    item(QString::fromUtf8(kind_label(kind).data(), static_cast<int>(kind_label(kind).size())),
         [&](const QRect& r) {
           p.fillRect(r, to_qcolor(kind_color(kind)));
           if (kind == Kind::kBubble)
             p.fillRect(r, QBrush(kHatchColor, Qt::BDiagPattern));
         });
  }
  if (doc.show_critical_path()) {
    item(QStringLiteral("Critical path"), [&](const QRect& r) {
      p.setPen(QPen(kCriticalColor, 2));
      p.setBrush(Qt::NoBrush);
      p.drawRect(r.adjusted(1, 1, -1, -1));
      p.fillRect(QRect(r.left(), r.top(), r.width(), 3), kCriticalColor);
    });
  }
}

}  // namespace

double nice_tick_us(double approx_us) {
  if (!(approx_us > 0)) return 1;
  const double power = std::pow(10.0, std::floor(std::log10(approx_us)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * power >= approx_us) return m * power;
  }
  return 10 * power;
}

void paint_timeline(QPainter& painter, const TimelineDocument& document,
                    const TimelineGeometry& geometry, LaneDraw& scratch) {
  painter.fillRect(QRect(0, 0, geometry.width, geometry.height), QColor(255, 255, 255));
  const auto& rows = document.layout().rows;
  if (rows.empty()) {
    painter.setPen(QColor(90, 90, 90));
    painter.drawText(QRect(0, 0, geometry.width, geometry.rows_bottom), Qt::AlignCenter,
                     QStringLiteral("No trace open: Open\u2026 a trace, or click a sweep point "
                                    "that has one"));
    paint_legend(painter, document, geometry);
    return;
  }
  painter.save();
  painter.setClipRect(
      QRect(0, geometry.rows_top, geometry.width, geometry.rows_bottom - geometry.rows_top));
  RowPainter row_painter(painter, document, geometry, scratch);
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const QRect rect = geometry.row_rect(r);
    if (rect.bottom() < geometry.rows_top || rect.top() > geometry.rows_bottom) continue;
    row_painter.paint_row(r);
  }
  painter.setClipRect(QRect(geometry.label_width, geometry.rows_top,
                            geometry.width - geometry.label_width,
                            geometry.rows_bottom - geometry.rows_top));
  if (document.show_critical_path()) paint_critical_path(painter, document, geometry);
  painter.restore();
  paint_ruler(painter, geometry);
  paint_legend(painter, document, geometry);
}

}  // namespace stepsim::gui::detail
