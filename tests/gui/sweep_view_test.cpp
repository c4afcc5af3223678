// The sweep view, headless (offscreen QPA): a sweep opened without a trace fills the window
// with its scatter (readable axes, the Pareto front), and a mouse click on a configuration
// that has no trace file simulates it from the sweep file and opens its predicted step.
#include <gtest/gtest.h>

#include <QApplication>
#include <QImage>
#include <QMouseEvent>
#include <QValueAxis>
#include <filesystem>
#include <fstream>

#include "stepsim/sweep/sweep_spec.hpp"
#include "stepsim/gui/main_window.hpp"
#include "stepsim/gui/sweep_chart.hpp"
#include "stepsim/gui/sweep_traces.hpp"
#include "stepsim/gui/timeline_widget.hpp"
#include "stepsim/sweep/sweep_plan.hpp"

namespace stepsim::gui {
namespace {

namespace fs = std::filesystem;

class SweepViewTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    static int argc = 1;
    static char name[] = "gui_sweep_view_tests";
    static char* argv[] = {name, nullptr};
    if (QApplication::instance() == nullptr) new QApplication(argc, argv);
  }

  // A small sweep of the Llama 3 8B scenario and its CSV, as `stepsim sweep --out` writes.
  void SetUp() override {
    // One folder per test: ctest runs them as separate processes, side by side.
    dir_ = fs::path(STEPSIM_TEST_OUT_DIR) / "sweep_view" /
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::create_directories(dir_);
    sweep_file_ = (dir_ / "sweep.json").string();
    std::ofstream(sweep_file_) << R"({"base": "llama3-8b-h100-8.json",
      "search": {"training.tensor_model_parallel_size": [1, 2, 4, 8],
                 "training.micro_batch_size": [1, 2, 4],
                 "training.recompute_granularity": "auto"}})";
    auto spec = load_sweep_file(sweep_file_, LoadOptions{STEPSIM_SCENARIOS_DIR});
    ASSERT_TRUE(spec.ok()) << format_errors(spec.errors());
    sim::SweepPlanOptions options;
    options.jobs = 2;
    options.out = (dir_ / "plan.csv").string();
    const sim::SweepPlanOutcome outcome = sim::run_sweep_plan(*spec, options);
    ASSERT_TRUE(outcome.plan.has_value()) << format_errors(outcome.errors);
    auto table = read_sweep_csv(options.out);
    ASSERT_TRUE(table.ok()) << format_errors(table.errors());
    table_ = std::move(table).value();
    ASSERT_GE(table_.points.size(), 4u);
  }

  fs::path dir_;
  std::string sweep_file_;
  SweepTable table_;
};

TEST_F(SweepViewTest, ScatterFillsTheWindowAndAClickOpensTheSimulatedTrace) {
  auto provider = make_sweep_trace_provider(sweep_file_, STEPSIM_SCENARIOS_DIR);
  ASSERT_TRUE(provider.ok()) << format_errors(provider.errors());
  MainWindow window({}, table_, nullptr, std::move(provider).value());
  window.resize(1400, 900);
  window.show();
  QApplication::processEvents();

  // The scatter, not an empty timeline, has the window.
  SweepChart* chart = window.sweep_chart();
  ASSERT_NE(chart, nullptr);
  EXPECT_TRUE(chart->isVisible());
  EXPECT_FALSE(window.timeline()->isVisible());
  const double window_area = window.width() * window.height();
  EXPECT_GT(chart->width() * chart->height(), 0.75 * window_area);
  const QRectF plot = chart->chart()->plotArea();
  EXPECT_GT(plot.width() * plot.height(), 0.5 * window_area);
  const QImage before = window.grab().toImage();
  ASSERT_TRUE(before.save(QString::fromStdString((dir_ / "sweep_view.png").string())));

  // Readable axes: units in the titles, tokens/s as plain numbers.
  const auto axes = chart->chart()->axes();
  ASSERT_EQ(axes.size(), 2);
  for (QAbstractAxis* axis : axes) {
    const auto* value = qobject_cast<QValueAxis*>(axis);
    ASSERT_NE(value, nullptr);
    EXPECT_FALSE(value->labelFormat().contains(QLatin1Char('g'))) << value->labelFormat().toStdString();
  }
  EXPECT_TRUE(axes[1]->titleText().contains(QStringLiteral("tokens/s")));
  EXPECT_TRUE(axes[0]->titleText().contains(QStringLiteral("GiB")));

  // A real mouse click on the fastest configuration, which has no trace file.
  std::size_t fastest = 0;
  for (std::size_t i = 0; i < table_.points.size(); ++i) {
    if (table_.points[i].tokens_per_s > table_.points[fastest].tokens_per_s) fastest = i;
  }
  ASSERT_TRUE(table_.points[fastest].trace_path.empty());
  const QPoint at = chart->point_position(fastest);
  ASSERT_TRUE(chart->viewport()->rect().contains(at));
  QMouseEvent press(QEvent::MouseButtonPress, QPointF(at), chart->viewport()->mapToGlobal(QPointF(at)),
                    Qt::LeftButton, Qt::LeftButton, Qt::NoModifier);
  QMouseEvent release(QEvent::MouseButtonRelease, QPointF(at),
                      chart->viewport()->mapToGlobal(QPointF(at)), Qt::LeftButton, Qt::NoButton,
                      Qt::NoModifier);
  QApplication::sendEvent(chart->viewport(), &press);
  QApplication::sendEvent(chart->viewport(), &release);
  QApplication::processEvents();

  ASSERT_EQ(window.document().traces().size(), 1u);
  const TraceModel& trace = window.document().traces()[0];
  EXPECT_GT(trace.slice_count(), 100u);
  EXPECT_EQ(trace.label, table_.points[fastest].label);
  // Its step is the step time the sweep predicted for that configuration.
  EXPECT_NEAR(trace.step_time_s(), table_.points[fastest].step_time_s,
              1e-9 * table_.points[fastest].step_time_s);
  EXPECT_TRUE(window.timeline()->isVisible());
  const QImage after = window.grab().toImage();
  ASSERT_TRUE(after.save(QString::fromStdString((dir_ / "sweep_view_trace.png").string())));
}

TEST_F(SweepViewTest, WithoutTheSweepFileAClickSaysHowToSimulate) {
  MainWindow window({}, table_);
  QStringList messages;
  QObject::connect(window.sweep_chart(), &SweepChart::message,
                   [&](const QString& m) { messages << m; });
  window.sweep_chart()->click_point(0);
  EXPECT_TRUE(window.document().traces().empty());
  ASSERT_EQ(messages.size(), 1);
  EXPECT_TRUE(messages[0].contains(QStringLiteral("--sweep-file")));
}

TEST_F(SweepViewTest, AnIndexBeyondTheSweepIsAnError) {
  auto spec = load_sweep_file(sweep_file_, LoadOptions{STEPSIM_SCENARIOS_DIR});
  ASSERT_TRUE(spec.ok());
  auto w = sim::sweep_configuration(*spec, 1000000);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.errors().front().message.find("no configuration with index 1000000"),
            std::string::npos);
  EXPECT_TRUE(sim::sweep_configuration(*spec, table_.points.front().index).ok());
}

}  // namespace
}  // namespace stepsim::gui
