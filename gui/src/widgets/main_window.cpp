#include "stepsim/gui/main_window.hpp"

#include <QAction>
#include <QFileDialog>
#include <QLabel>
#include <QMessageBox>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QToolBar>
#include <QVBoxLayout>

#include "stepsim/gui/charts.hpp"
#include "stepsim/gui/sweep_chart.hpp"
#include "stepsim/gui/timeline_widget.hpp"
#include "stepsim/gui/trace_reader.hpp"

namespace stepsim::gui {

MainWindow::MainWindow(std::vector<TraceModel> traces, std::optional<SweepTable> sweep,
                       QWidget* parent, SweepTraceProvider sweep_traces)
    : QMainWindow(parent),
      document_(std::make_unique<TimelineDocument>(std::move(traces))),
      sweep_traces_(std::move(sweep_traces)) {
  setWindowTitle(QStringLiteral("stepsim-viewer"));
  auto* toolbar = addToolBar(QStringLiteral("View"));
  toolbar->setMovable(false);
  toolbar->addAction(QStringLiteral("Open\u2026"), this, &MainWindow::open_files);
  toolbar->addAction(QStringLiteral("Fit (F)"), this, [this] { timeline_->fit(); });
  critical_action_ = toolbar->addAction(QStringLiteral("Critical path (C)"));
  critical_action_->setCheckable(true);
  connect(critical_action_, &QAction::toggled, this,
          [this](bool on) { set_critical_path_visible(on); });
  toolbar->addAction(QStringLiteral("Clear selection (Esc)"), this,
                     [this] { timeline_->set_selected_microbatch(-1); });

  auto* top = new QWidget;
  top_ = top;
  auto* layout = new QVBoxLayout(top);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(2);
  header_ = new QLabel;
  header_->setContentsMargins(8, 4, 8, 2);
  header_->setTextFormat(Qt::PlainText);
  timeline_ = new TimelineWidget(document_.get());
  layout->addWidget(header_);
  layout->addWidget(timeline_, 1);
  connect(timeline_, &TimelineWidget::selection_changed, this, [this](int) { update_header(); });

  tabs_ = new QTabWidget;
  if (sweep) {
    auto* chart = new SweepChart(std::move(*sweep));
    connect(chart, &SweepChart::open_trace, this, &MainWindow::open_trace_path);
    connect(chart, &SweepChart::message, this,
            [this](const QString& m) { statusBar()->showMessage(m, 8000); });
    connect(chart, &SweepChart::simulate, this, &MainWindow::open_simulated_configuration);
    chart->set_can_simulate(static_cast<bool>(sweep_traces_));
    sweep_view_ = chart;
  }
  splitter_ = new QSplitter(Qt::Vertical);
  splitter_->addWidget(top);
  splitter_->addWidget(tabs_);
  splitter_->setStretchFactor(0, 3);
  splitter_->setStretchFactor(1, 2);
  splitter_->setSizes({3000, 2000});
  setCentralWidget(splitter_);
  rebuild_charts();
  update_header();
  update_layout();
  if (document_->traces().empty() && sweep_view_ != nullptr) show_tab(QStringLiteral("sweep"));
}

SweepChart* MainWindow::sweep_chart() const { return qobject_cast<SweepChart*>(sweep_view_); }

void MainWindow::update_layout() {
  // A sweep without a trace: the scatter gets the window, not an empty timeline.
  top_->setVisible(!document_->traces().empty() || sweep_view_ == nullptr);
}

void MainWindow::open_simulated_configuration(qint64 index, const QString& label) {
  if (!sweep_traces_) return;
  statusBar()->showMessage(QStringLiteral("simulating %1\u2026").arg(label));
  auto text = sweep_traces_(index);
  if (!text) {
    statusBar()->showMessage(
        label + QStringLiteral(": ") + QString::fromStdString(format_errors(text.errors())), 8000);
    return;
  }
  auto model = parse_trace(*text, "sweep configuration " + std::to_string(index));
  if (!model) {
    statusBar()->showMessage(QString::fromStdString(format_errors(model.errors())), 8000);
    return;
  }
  model.value().label = label.toStdString();
  std::vector<TraceModel> traces;
  traces.push_back(std::move(model).value());
  set_traces(std::move(traces));
  statusBar()->showMessage(QStringLiteral("%1: predicted step, simulated from the sweep").arg(label),
                           8000);
}

MainWindow::~MainWindow() = default;

void MainWindow::set_traces(std::vector<TraceModel> traces) {
  auto next = std::make_unique<TimelineDocument>(std::move(traces));
  if (critical_action_->isChecked()) next->set_show_critical_path(true);
  timeline_->set_document(next.get());
  document_ = std::move(next);
  rebuild_charts();
  update_header();
  update_layout();
  if (!document_->traces().empty()) timeline_->fit();
}

void MainWindow::rebuild_charts() {
  const int current = tabs_->currentIndex();
  while (tabs_->count() > 0) {
    QWidget* w = tabs_->widget(0);
    tabs_->removeTab(0);
    if (w != sweep_view_) w->deleteLater();
  }
  tabs_->addTab(make_stage_chart(*document_), QStringLiteral("Stages"));
  tabs_->addTab(make_memory_chart(*document_), QStringLiteral("Memory"));
  if (sweep_view_ != nullptr) tabs_->addTab(sweep_view_, QStringLiteral("Sweep"));
  if (current >= 0 && current < tabs_->count()) tabs_->setCurrentIndex(current);
}

bool MainWindow::show_tab(const QString& name) {
  for (int i = 0; i < tabs_->count(); ++i) {
    if (tabs_->tabText(i).compare(name, Qt::CaseInsensitive) == 0) {
      tabs_->setCurrentIndex(i);
      return true;
    }
  }
  return false;
}

void MainWindow::set_critical_path_visible(bool on) {
  if (critical_action_->isChecked() != on) critical_action_->setChecked(on);
  timeline_->set_critical_path_visible(on);
  update_header();
}

QString MainWindow::header_text(const TimelineDocument& document) {
  const auto& traces = document.traces();
  QString text;
  if (traces.size() >= 2) {
    text = QString::fromStdString(comparison_text(compare_steps(traces[0], traces[1])));
    QString ranks = QStringLiteral("per rank, end of its last slice:");
    for (std::int32_t rank : traces[0].ranks()) {
      if (traces[1].rank_position(rank) < 0) continue;
      const double diff = traces[1].rank_end_us(rank) - traces[0].rank_end_us(rank);
      ranks += QStringLiteral(" r%1 %2%3")
                   .arg(rank)
                   .arg(diff >= 0 ? QStringLiteral("+") : QString())
                   .arg(QString::fromStdString(format_duration_us(diff)));
    }
    text += QStringLiteral("\n") + ranks;
  } else if (traces.size() == 1) {
    text = QStringLiteral("%1: step %2, %3 slices on %4 ranks")
               .arg(QString::fromStdString(traces[0].label))
               .arg(QString::fromStdString(format_duration_us(traces[0].step_time_s() * 1e6)))
               .arg(traces[0].slice_count())
               .arg(traces[0].ranks().size());
  }
  if (document.selected_microbatch() >= 0) {
    text += QStringLiteral("  |  micro-batch %1 selected").arg(document.selected_microbatch());
  }
  if (document.show_critical_path()) {
    for (std::size_t t = 0; t < traces.size(); ++t) {
      const CriticalPath& path = document.critical_path_of(t);
      text += QStringLiteral("  |  critical path (%1): %2 slices, %3 busy")
                  .arg(QString::fromStdString(traces[t].label))
                  .arg(path.slices.size())
                  .arg(QString::fromStdString(format_duration_us(path.busy_us)));
    }
  }
  return text;
}

void MainWindow::update_header() { header_->setText(header_text(*document_)); }

void MainWindow::open_files() {
  const QStringList files =
      QFileDialog::getOpenFileNames(this, QStringLiteral("Open traces"), QString(),
                                    QStringLiteral("Traces (*.json);;All files (*)"));
  if (files.isEmpty()) return;
  std::vector<TraceModel> traces;
  for (const QString& f : files) {
    auto result = read_trace_file(f.toStdString());
    if (!result) {
      QMessageBox::warning(this, QStringLiteral("Cannot open trace"),
                           QString::fromStdString(format_errors(result.errors())));
      return;
    }
    traces.push_back(std::move(result).value());
  }
  set_traces(std::move(traces));
}

void MainWindow::open_trace_path(const QString& path) {
  auto result = read_trace_file(path.toStdString());
  if (!result) {
    QMessageBox::warning(this, QStringLiteral("Cannot open trace"),
                         QString::fromStdString(format_errors(result.errors())));
    return;
  }
  std::vector<TraceModel> traces;
  traces.push_back(std::move(result).value());
  set_traces(std::move(traces));
  statusBar()->showMessage(QStringLiteral("opened %1").arg(path), 8000);
}

}  // namespace stepsim::gui
