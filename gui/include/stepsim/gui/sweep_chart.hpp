#pragma once
// Throughput against peak memory for every configuration of a sweep, with the Pareto front.
// Hovering a point names its configuration; clicking one asks to open its trace when the
// CSV has a trace column.

#include <QChartView>
#include <QString>

#include "stepsim/gui/sweep_csv.hpp"

class QScatterSeries;

namespace stepsim::gui {

class SweepChart : public QChartView {
  Q_OBJECT

 public:
  explicit SweepChart(SweepTable table, QWidget* parent = nullptr);

  const SweepTable& table() const { return table_; }
  /// Index of the point nearest to a value (memory GiB, tokens/s), or -1.
  std::int64_t nearest_point(QPointF value) const;

 signals:
  /// A point with a trace was clicked.
  void open_trace(const QString& path);
  /// A message for the status bar (e.g. a point without a trace was clicked).
  void message(const QString& text);

 private:
  void on_clicked(const QPointF& value);
  void on_hovered(const QPointF& value, bool state);

  SweepTable table_;
};

}  // namespace stepsim::gui
