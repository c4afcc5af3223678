#include "stepsim/gui/charts.hpp"

#include <QBarCategoryAxis>
#include <QBarSet>
#include <QLegendMarker>
#include <QLineSeries>
#include <QScatterSeries>
#include <QStackedBarSeries>
#include <QValueAxis>
#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

#include "stepsim/gui/aggregation.hpp"
#include "stepsim/gui/colors.hpp"
#include "stepsim/gui/stage_stats.hpp"

namespace stepsim::gui {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr std::size_t kMemoryBuckets = 1500;

QColor qcolor(Kind kind) {
  const Rgb c = kind_color(kind);
  return QColor(c.r, c.g, c.b);
}

QChartView* make_view(QChart* chart, QWidget* parent) {
  chart->setAnimationOptions(QChart::NoAnimation);
  chart->legend()->setAlignment(Qt::AlignRight);
  chart->setMargins(QMargins(4, 4, 4, 4));
  auto* view = new QChartView(chart, parent);
  view->setRenderHint(QPainter::Antialiasing);
  return view;
}

// The largest binary unit that keeps `bytes` at 1 or more ("GiB", "MiB", "KiB", "B").
std::pair<double, QString> byte_unit(double bytes) {
  if (bytes >= kGiB) return {kGiB, QStringLiteral("GiB")};
  if (bytes >= 1024.0 * 1024.0) return {1024.0 * 1024.0, QStringLiteral("MiB")};
  if (bytes >= 1024.0) return {1024.0, QStringLiteral("KiB")};
  return {1.0, QStringLiteral("B")};
}

QString short_label(const std::string& label) {
  if (label == "predicted") return QStringLiteral("pred");
  if (label == "measured") return QStringLiteral("meas");
  return QString::fromStdString(label);
}

}  // namespace

// Tableau 10 without its red and grey: red marks the highest peak and grey the capacity
// line, so no rank's line shares a legend colour with them.
QColor series_color(std::size_t index) {
  static constexpr std::array<QRgb, 8> kTableau = {0x1f77b4, 0xff7f0e, 0x2ca02c, 0x9467bd,
                                                   0x8c564b, 0xe377c2, 0xbcbd22, 0x17becf};
  return QColor(kTableau[index % kTableau.size()]);
}

namespace {

double nice_step(double approx) {
  if (!(approx > 0)) return 1;
  const double power = std::pow(10.0, std::floor(std::log10(approx)));
  for (double m : {1.0, 2.0, 5.0}) {
    if (m * power >= approx) return m * power;
  }
  return 10 * power;
}

void round_ticks(QValueAxis* axis, double top) {
  const double step = nice_step(top / 6.0);
  axis->setRange(0, std::ceil(top / step) * step);
  axis->setTickType(QValueAxis::TicksDynamic);
  axis->setTickAnchor(0);
  axis->setTickInterval(step);
}

}  // namespace

QChartView* make_stage_chart(const TimelineDocument& document, QWidget* parent) {
  auto* busy = new QBarSet(QStringLiteral("busy"));
  auto* bubble = new QBarSet(QStringLiteral("bubble"));
  auto* exposed = new QBarSet(QStringLiteral("exposed comm"));
  busy->setColor(qcolor(Kind::kForward));
  bubble->setColor(QColor(220, 120, 120));
  exposed->setColor(qcolor(Kind::kTensorComm));
  QStringList categories;
  bool from_summary = true;
  const bool several = document.traces().size() > 1;
  double highest = 0;
  // Stage by stage, the traces side by side (s0 pred, s0 meas, s1 pred, ...).
  std::vector<std::vector<StageStats>> per_trace;
  std::size_t stages = 0;
  for (const TraceModel& trace : document.traces()) {
    from_summary = from_summary && trace.summary.present && !trace.summary.stages.empty();
    per_trace.push_back(stage_stats(trace));
    stages = std::max(stages, per_trace.back().size());
  }
  for (std::size_t i = 0; i < stages; ++i) {
    for (std::size_t t = 0; t < per_trace.size(); ++t) {
      if (i >= per_trace[t].size()) continue;
      const StageStats& s = per_trace[t][i];
      QString category = QStringLiteral("s%1").arg(s.stage);
      if (several) category += QStringLiteral(" ") + short_label(document.traces()[t].label);
      categories << category;
      *busy << s.busy_s * 1e3;
      *bubble << s.bubble_s * 1e3;
      *exposed << s.exposed_comm_s * 1e3;
      highest = std::max(highest, (s.busy_s + s.bubble_s + s.exposed_comm_s) * 1e3);
    }
  }
  auto* series = new QStackedBarSeries;
  series->append(busy);
  series->append(bubble);
  series->append(exposed);
  auto* chart = new QChart;
  chart->addSeries(series);
  chart->setTitle(from_summary ? QStringLiteral("Per-stage time (ms), from the stepsim summary")
                               : QStringLiteral("Per-stage time (ms), derived from the slices"));
  auto* x = new QBarCategoryAxis;
  x->append(categories);
  auto* y = new QValueAxis;
  y->setRange(0, std::max(highest * 1.05, 1e-3));
  y->setTitleText(QStringLiteral("ms"));
  y->setLabelFormat(highest >= 100 ? QStringLiteral("%.0f") : QStringLiteral("%.3g"));
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  series->attachAxis(x);
  series->attachAxis(y);
  return make_view(chart, parent);
}

QChartView* make_memory_chart(const TimelineDocument& document, QWidget* parent) {
  auto* chart = new QChart;
  auto* x = new QValueAxis;
  auto* y = new QValueAxis;
  x->setTitleText(QStringLiteral("ms from step start"));
  x->setLabelFormat(QStringLiteral("%.0f"));
  y->setLabelFormat(QStringLiteral("%.3g"));
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  const bool several = document.traces().size() > 1;
  double most = 0;
  for (const TraceModel& trace : document.traces()) {
    most = std::max(most, static_cast<double>(trace.summary.memory_capacity_bytes));
    for (const MemorySeries& series : trace.memory)
      most = std::max(most, static_cast<double>(memory_peak(series).bytes));
  }
  const auto [unit, unit_name] = byte_unit(most);
  y->setTitleText(unit_name + QStringLiteral(" in use"));
  double end_ms = std::max(document.end_us() * 1e-3, 1e-6);
  double top = 0;
  std::int64_t capacity = 0;
  auto* peaks = new QScatterSeries;
  peaks->setName(QStringLiteral("peak per rank"));
  peaks->setMarkerSize(9);
  peaks->setColor(QColor(30, 30, 30));
  MemoryPeak highest;
  std::string highest_where;
  std::size_t index = 0;
  for (const TraceModel& trace : document.traces()) {
    capacity = std::max(capacity, trace.summary.memory_capacity_bytes);
    for (const MemorySeries& series : trace.memory) {
      auto* line = new QLineSeries;
      QString name = QStringLiteral("r%1").arg(series.rank);
      if (several) name += QStringLiteral(" ") + short_label(trace.label);
      line->setName(several ? QStringLiteral("r%1").arg(series.rank) : name);
      QPen pen(series_color(several ? static_cast<std::size_t>(series.rank) : index), 1.5);
      if (several && &trace != &document.traces().front()) pen.setStyle(Qt::DashLine);
      line->setPen(pen);
      const bool reference = &trace == &document.traces().front();
      QList<QPointF> points;
      for (const XY& p : memory_polyline(series, kMemoryBuckets))
        points.append(QPointF(p.x * 1e-3, p.y / unit));
      if (!points.isEmpty()) points.append(QPointF(end_ms, points.back().y()));
      line->replace(points);
      chart->addSeries(line);
      line->attachAxis(x);
      line->attachAxis(y);
      // One legend entry per rank: the other traces' lines share the rank's colour, dashed.
      if (!reference) chart->legend()->markers(line).front()->setVisible(false);
      const MemoryPeak peak = memory_peak(series);
      peaks->append(peak.time_us * 1e-3, static_cast<double>(peak.bytes) / unit);
      if (peak.bytes > highest.bytes) {
        highest = peak;
        highest_where = name.toStdString();
      }
      top = std::max(top, static_cast<double>(peak.bytes) / unit);
      ++index;
    }
  }
  chart->addSeries(peaks);
  peaks->attachAxis(x);
  peaks->attachAxis(y);
  if (highest.bytes > 0) {
    auto* label = new QScatterSeries;
    label->setName(QStringLiteral("highest peak"));
    label->setMarkerSize(13);
    label->setColor(QColor(214, 45, 59));
    label->append(highest.time_us * 1e-3, static_cast<double>(highest.bytes) / unit);
    label->setPointLabelsVisible(true);
    label->setPointLabelsFormat(QString::fromStdString(highest_where) +
                                QStringLiteral(" peak @yPoint ") + unit_name);
    label->setPointLabelsClipping(false);
    chart->addSeries(label);
    label->attachAxis(x);
    label->attachAxis(y);
  }
  if (capacity > 0) {
    auto* cap = new QLineSeries;
    const double gib = static_cast<double>(capacity) / unit;
    cap->setName(QStringLiteral("capacity %1 %2").arg(gib, 0, 'g', 4).arg(unit_name));
    cap->setPen(QPen(QColor(110, 110, 110), 2, Qt::DashLine));
    cap->append(0, gib);
    cap->append(end_ms, gib);
    chart->addSeries(cap);
    cap->attachAxis(x);
    cap->attachAxis(y);
    top = std::max(top, gib);
  }
  // Round ticks (0, 10000, 20000 ms; not the fifths of the step's own length).
  round_ticks(x, end_ms);
  if (end_ms < 100) x->setLabelFormat(QStringLiteral("%.3g"));
  round_ticks(y, std::max(top * 1.04, 1e-3));
  chart->setTitle(document.traces().empty() || index == 0
                      ? QStringLiteral("Memory: the traces have no memory counters")
                  : several ? QStringLiteral("Memory in use per rank (solid: %1, dashed: %2)")
                                  .arg(QString::fromStdString(document.traces()[0].label),
                                       QString::fromStdString(document.traces()[1].label))
                            : QStringLiteral("Memory in use per rank"));
  return make_view(chart, parent);
}

}  // namespace stepsim::gui
