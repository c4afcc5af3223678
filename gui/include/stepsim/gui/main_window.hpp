#pragma once
// The viewer's window: a header (step times, and their difference when two traces are
// open), the timeline, and below it tabs with the per-stage bars, the memory chart and,
// when a sweep CSV is open, the throughput/memory scatter. A sweep opened without a trace
// fills the window with its scatter; clicking a configuration opens its trace (its file, or
// its predicted step simulated on demand) above it.

#include <QMainWindow>
#include <memory>
#include <optional>
#include <vector>

#include "stepsim/gui/document.hpp"
#include "stepsim/gui/sweep_csv.hpp"
#include "stepsim/gui/sweep_traces.hpp"

class QAction;
class QLabel;
class QSplitter;
class QTabWidget;

namespace stepsim::gui {

class TimelineWidget;

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  MainWindow(std::vector<TraceModel> traces, std::optional<SweepTable> sweep,
             QWidget* parent = nullptr, SweepTraceProvider sweep_traces = {});
  ~MainWindow() override;

  /// Replaces the open traces (charts and header follow).
  void set_traces(std::vector<TraceModel> traces);
  TimelineWidget* timeline() const { return timeline_; }
  /// The sweep's scatter, or null without a sweep.
  class SweepChart* sweep_chart() const;
  const TimelineDocument& document() const { return *document_; }
  /// Shows a bottom tab by name: "stages", "memory" or "sweep"; false if there is none.
  bool show_tab(const QString& name);
  void set_critical_path_visible(bool on);

  /// Header text for the current traces.
  static QString header_text(const TimelineDocument& document);

 public slots:
  void open_files();
  void open_trace_path(const QString& path);
  /// Simulates configuration `index` of the sweep and opens its predicted step.
  void open_simulated_configuration(qint64 index, const QString& label);

 private:
  void rebuild_charts();
  void update_header();
  void update_layout();

  std::unique_ptr<TimelineDocument> document_;
  TimelineWidget* timeline_ = nullptr;
  QLabel* header_ = nullptr;
  QTabWidget* tabs_ = nullptr;
  QAction* critical_action_ = nullptr;
  QWidget* sweep_view_ = nullptr;
  QWidget* top_ = nullptr;
  QSplitter* splitter_ = nullptr;
  SweepTraceProvider sweep_traces_;
};

}  // namespace stepsim::gui
