#include "stepsim/gui/sweep_chart.hpp"

#include <QCursor>
#include <QLineSeries>
#include <QScatterSeries>
#include <QToolTip>
#include <QValueAxis>
#include <algorithm>
#include <cmath>
#include <limits>

namespace stepsim::gui {

namespace {
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
}

SweepChart::SweepChart(SweepTable table, QWidget* parent)
    : QChartView(parent), table_(std::move(table)) {
  auto* chart = new QChart;
  chart->setAnimationOptions(QChart::NoAnimation);
  auto* all = new QScatterSeries;
  all->setName(QStringLiteral("configurations"));
  all->setMarkerSize(8);
  all->setColor(QColor(59, 111, 212, 170));
  auto* rejected = new QScatterSeries;
  rejected->setName(QStringLiteral("not feasible"));
  rejected->setMarkerSize(7);
  rejected->setColor(QColor(150, 150, 150, 150));
  double max_x = 0;
  double max_y = 0;
  for (const SweepPoint& p : table_.points) {
    (p.feasible ? all : rejected)->append(p.peak_memory_bytes / kGiB, p.tokens_per_s);
    max_x = std::max(max_x, p.peak_memory_bytes / kGiB);
    max_y = std::max(max_y, p.tokens_per_s);
  }
  auto* front_line = new QLineSeries;
  front_line->setName(QStringLiteral("Pareto front"));
  front_line->setPen(QPen(QColor(214, 45, 59), 2));
  auto* front = new QScatterSeries;
  front->setName(QStringLiteral("Pareto-optimal"));
  front->setMarkerSize(11);
  front->setColor(QColor(214, 45, 59));
  for (std::size_t i : pareto_front(table_.points)) {
    const SweepPoint& p = table_.points[i];
    front_line->append(p.peak_memory_bytes / kGiB, p.tokens_per_s);
    front->append(p.peak_memory_bytes / kGiB, p.tokens_per_s);
  }
  chart->addSeries(front_line);
  if (rejected->count() > 0) {
    chart->addSeries(rejected);
  } else {
    delete rejected;
  }
  chart->addSeries(all);
  chart->addSeries(front);
  auto* x = new QValueAxis;
  auto* y = new QValueAxis;
  x->setTitleText(QStringLiteral("peak memory per GPU (GiB)"));
  y->setTitleText(QStringLiteral("throughput (tokens/s)"));
  x->setRange(0, std::max(max_x * 1.1, 1e-3));
  y->setRange(0, std::max(max_y * 1.1, 1e-3));
  // Plain numbers: GiB with one decimal, tokens/s whole (never 1.2e+05).
  x->setLabelFormat(max_x < 10 ? QStringLiteral("%.2f") : QStringLiteral("%.1f"));
  y->setLabelFormat(max_y < 10 ? QStringLiteral("%.2f") : QStringLiteral("%.0f"));
  x->applyNiceNumbers();
  y->applyNiceNumbers();
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  for (QAbstractSeries* s : chart->series()) {
    s->attachAxis(x);
    s->attachAxis(y);
  }
  QString title = QStringLiteral("Sweep: %1 configurations").arg(table_.points.size());
  if (table_.skipped_rows > 0)
    title += QStringLiteral(", %1 skipped without metrics").arg(table_.skipped_rows);
  chart->setTitle(title);
  chart->legend()->setAlignment(Qt::AlignBottom);
  chart->setMargins(QMargins(4, 4, 4, 4));
  setChart(chart);
  setRenderHint(QPainter::Antialiasing);
  for (QAbstractSeries* series : chart->series()) {
    auto* s = qobject_cast<QScatterSeries*>(series);
    if (s == nullptr) continue;
    connect(s, &QScatterSeries::clicked, this, &SweepChart::on_clicked);
    connect(s, &QScatterSeries::hovered, this, &SweepChart::on_hovered);
  }
}

std::int64_t SweepChart::nearest_point(QPointF value) const {
  // Distance in axis-normalised units, so GiB and tokens/s weigh alike.
  double sx = 1e-9;
  double sy = 1e-9;
  for (const SweepPoint& p : table_.points) {
    sx = std::max(sx, p.peak_memory_bytes / kGiB);
    sy = std::max(sy, p.tokens_per_s);
  }
  std::int64_t best = -1;
  double best_d = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < table_.points.size(); ++i) {
    const double dx = (table_.points[i].peak_memory_bytes / kGiB - value.x()) / sx;
    const double dy = (table_.points[i].tokens_per_s - value.y()) / sy;
    const double d = dx * dx + dy * dy;
    if (d < best_d) {
      best_d = d;
      best = static_cast<std::int64_t>(i);
    }
  }
  return best;
}

void SweepChart::set_can_simulate(bool on) {
  can_simulate_ = on;
  QString title = chart()->title();
  if (on || table_.has_trace_column) title += QStringLiteral("; click a point to open its trace");
  chart()->setTitle(title);
}

void SweepChart::on_clicked(const QPointF& value) {
  const std::int64_t i = nearest_point(value);
  if (i >= 0) click_point(static_cast<std::size_t>(i));
}

void SweepChart::click_point(std::size_t i) {
  if (i >= table_.points.size()) return;
  const SweepPoint& p = table_.points[i];
  const QString label = QString::fromStdString(p.label);
  if (!p.trace_path.empty()) {
    emit open_trace(QString::fromStdString(p.trace_path));
  } else if (can_simulate_ && p.index >= 0) {
    emit simulate(p.index, label);
  } else {
    emit message(label + (p.index >= 0 ? QStringLiteral(": no trace for this configuration (give "
                                                        "--sweep-file to simulate it)")
                                       : QStringLiteral(": no trace for this configuration")));
  }
}

QPoint SweepChart::point_position(std::size_t i) const {
  const SweepPoint& p = table_.points.at(i);
  const QPointF scene =
      chart()->mapToPosition(QPointF(p.peak_memory_bytes / kGiB, p.tokens_per_s));
  return mapFromScene(chart()->mapToScene(scene));
}

void SweepChart::on_hovered(const QPointF& value, bool state) {
  if (!state) {
    QToolTip::hideText();
    return;
  }
  const std::int64_t i = nearest_point(value);
  if (i < 0) return;
  const SweepPoint& p = table_.points[static_cast<std::size_t>(i)];
  QString label = QString::fromStdString(p.label);
  if (p.index >= 0) label = QStringLiteral("#%1 ").arg(p.index) + label;
  if (!p.status.empty()) label += QStringLiteral(" (%1)").arg(QString::fromStdString(p.status));
  const bool openable = !p.trace_path.empty() || (can_simulate_ && p.index >= 0);
  QToolTip::showText(
      QCursor::pos(),
      QStringLiteral("%1\n%2 tokens/s, %3 GiB peak%4%5")
          .arg(label)
          .arg(p.tokens_per_s, 0, 'f', 0)
          .arg(p.peak_memory_bytes / kGiB, 0, 'f', 2)
          .arg(p.step_time_s > 0 ? QStringLiteral(", step %1 s").arg(p.step_time_s, 0, 'f', 3)
                                 : QString())
          .arg(openable ? QStringLiteral("\nclick to open its trace") : QString()));
}

}  // namespace stepsim::gui
