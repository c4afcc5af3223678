#pragma once
// Throughput against peak memory for every configuration of a sweep, with the Pareto front.
// Hovering a point names its configuration; clicking one asks to open its trace: the file
// of the CSV's trace column, or (when the window can simulate configurations) the
// configuration's predicted step computed on demand.

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
  /// Points without a trace file are simulated on click (emit simulate()).
  void set_can_simulate(bool on);
  /// Clicks point `i` of the table, as a mouse click on it does.
  void click_point(std::size_t i);
  /// Where point `i` is drawn, in this widget's coordinates.
  QPoint point_position(std::size_t i) const;
  /// Index of the point nearest to a value (memory GiB, tokens/s), or -1.
  std::int64_t nearest_point(QPointF value) const;

 signals:
  /// A point with a trace was clicked.
  void open_trace(const QString& path);
  /// A point without a trace was clicked and simulating is on: its index in the sweep.
  void simulate(qint64 index, const QString& label);
  /// A message for the status bar (e.g. a point without a trace was clicked).
  void message(const QString& text);

 private:
  void on_clicked(const QPointF& value);
  void on_hovered(const QPointF& value, bool state);

  SweepTable table_;
  bool can_simulate_ = false;
};

}  // namespace stepsim::gui
