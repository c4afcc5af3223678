#include "stepsim/gui/charts.hpp"

#include <QBarCategoryAxis>
#include <QBarSet>
#include <QLineSeries>
#include <QScatterSeries>
#include <QStackedBarSeries>
#include <QValueAxis>

#include <algorithm>
#include <array>

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

QString short_label(const std::string& label) {
  if (label == "predicted") return QStringLiteral("pred");
  if (label == "measured") return QStringLiteral("meas");
  return QString::fromStdString(label);
}

}  // namespace

QColor series_color(std::size_t index) {
  static constexpr std::array<QRgb, 10> kTableau = {
      0x1f77b4, 0xff7f0e, 0x2ca02c, 0xd62728, 0x9467bd,
      0x8c564b, 0xe377c2, 0x7f7f7f, 0xbcbd22, 0x17becf};
  return QColor(kTableau[index % kTableau.size()]);
}

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
  for (const TraceModel& trace : document.traces()) {
    from_summary = from_summary && trace.summary.present && !trace.summary.stages.empty();
    for (const StageStats& s : stage_stats(trace)) {
      QString category = QStringLiteral("s%1").arg(s.stage);
      if (several) category += QStringLiteral(" ") + short_label(trace.label);
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
  y->setLabelFormat(QStringLiteral("%.3g"));
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
  y->setTitleText(QStringLiteral("GiB in use"));
  x->setLabelFormat(QStringLiteral("%.4g"));
  y->setLabelFormat(QStringLiteral("%.4g"));
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  const bool several = document.traces().size() > 1;
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
      line->setName(name);
      QPen pen(series_color(several ? static_cast<std::size_t>(series.rank) : index), 1.5);
      if (several && &trace != &document.traces().front()) pen.setStyle(Qt::DashLine);
      line->setPen(pen);
      QList<QPointF> points;
      for (const XY& p : memory_polyline(series, kMemoryBuckets)) points.append(QPointF(p.x * 1e-3, p.y / kGiB));
      if (!points.isEmpty()) points.append(QPointF(end_ms, points.back().y()));
      line->replace(points);
      chart->addSeries(line);
      line->attachAxis(x);
      line->attachAxis(y);
      const MemoryPeak peak = memory_peak(series);
      peaks->append(peak.time_us * 1e-3, static_cast<double>(peak.bytes) / kGiB);
      if (peak.bytes > highest.bytes) {
        highest = peak;
        highest_where = name.toStdString();
      }
      top = std::max(top, static_cast<double>(peak.bytes) / kGiB);
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
    label->append(highest.time_us * 1e-3, static_cast<double>(highest.bytes) / kGiB);
    label->setPointLabelsVisible(true);
    label->setPointLabelsFormat(QString::fromStdString(highest_where) + QStringLiteral(" peak @yPoint GiB"));
    label->setPointLabelsClipping(false);
    chart->addSeries(label);
    label->attachAxis(x);
    label->attachAxis(y);
  }
  if (capacity > 0) {
    auto* cap = new QLineSeries;
    const double gib = static_cast<double>(capacity) / kGiB;
    cap->setName(QStringLiteral("capacity %1 GiB").arg(gib, 0, 'g', 4));
    cap->setPen(QPen(QColor(214, 45, 59), 2, Qt::DashLine));
    cap->append(0, gib);
    cap->append(end_ms, gib);
    chart->addSeries(cap);
    cap->attachAxis(x);
    cap->attachAxis(y);
    top = std::max(top, gib);
  }
  x->setRange(0, end_ms);
  y->setRange(0, std::max(top * 1.08, 1e-3));
  chart->setTitle(document.traces().empty() || index == 0
                      ? QStringLiteral("Memory: the traces have no memory counters")
                      : QStringLiteral("Memory in use per rank"));
  return make_view(chart, parent);
}

}  // namespace stepsim::gui
