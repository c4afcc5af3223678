// Offscreen rendering: draws the two-stage fixture and checks pixel colours where known
// slices, bubbles and highlights must be.
#include <gtest/gtest.h>

#include <QApplication>
#include <QImage>
#include <QMouseEvent>
#include <QLegendMarker>
#include <QLineSeries>
#include <QScatterSeries>
#include <QValueAxis>
#include <cmath>
#include <set>
#include <QWheelEvent>
#include <sstream>

#include "stepsim/gui/charts.hpp"
#include "stepsim/gui/colors.hpp"
#include "stepsim/gui/main_window.hpp"
#include "stepsim/gui/sweep_chart.hpp"
#include "stepsim/gui/timeline_widget.hpp"
#include "synthetic_trace.hpp"
#include "test_data.hpp"

namespace stepsim::gui {
namespace {

QColor qcolor(Rgb c) { return QColor(c.r, c.g, c.b); }

class RenderTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    static int argc = 1;
    static char name[] = "gui_render_tests";
    static char* argv[] = {name, nullptr};
    if (QApplication::instance() == nullptr) app_ = new QApplication(argc, argv);
  }

  void SetUp() override {
    std::vector<TraceModel> traces;
    traces.push_back(testing::load_fixture("two_stage_predicted.json"));
    document_ = std::make_unique<TimelineDocument>(std::move(traces));
    widget_ = std::make_unique<TimelineWidget>(document_.get());
    widget_->resize(800, 400);
    widget_->fit();
  }

  QImage render() {
    QImage image(widget_->size(), QImage::Format_RGB32);
    widget_->render(&image);
    return image;
  }

  // A pixel inside the box of the slice spanning [start, end] µs in `row`, away from its
  // border and label.
  QColor pixel_in(const QImage& image, std::size_t row, double start_us) {
    const int x = static_cast<int>(widget_->x_of(start_us)) + 3;
    const int y = widget_->row_rect(row).top() + 4;
    return image.pixelColor(x, y);
  }

  static QApplication* app_;
  std::unique_ptr<TimelineDocument> document_;
  std::unique_ptr<TimelineWidget> widget_;
};

QApplication* RenderTest::app_ = nullptr;

TEST_F(RenderTest, BoxesHaveTheirKindsColours) {
  const QImage image = render();
  // Rows: 0 r0 compute, 1 r0 pp_comm, 2 r0 dp_comm, 3 r1 compute, 4 r1 tp_comm, ...
  EXPECT_EQ(pixel_in(image, 0, 0), qcolor(kind_color(Kind::kForward)));
  EXPECT_EQ(pixel_in(image, 0, 500), qcolor(kind_color(Kind::kBackwardInput)));
  EXPECT_EQ(pixel_in(image, 0, 700), qcolor(kind_color(Kind::kBackwardWeight)));
  EXPECT_EQ(pixel_in(image, 0, 1050), qcolor(kind_color(Kind::kOptimizer)));
  EXPECT_EQ(pixel_in(image, 2, 1000), qcolor(kind_color(Kind::kDataComm)));
  EXPECT_EQ(pixel_in(image, 4, 460), qcolor(kind_color(Kind::kTensorComm)));
  // Nothing on r1's tp_comm lane at 100 µs: the row background, not a kind colour.
  const QColor empty = pixel_in(image, 4, 100);
  for (std::size_t k = 0; k < kKindCount; ++k)
    EXPECT_NE(empty, qcolor(kind_color(static_cast<Kind>(k))));
}

TEST_F(RenderTest, IdleTimeOnComputeLanesIsMarkedAsBubble) {
  const QImage image = render();
  // r0 is idle from 240 to 480 µs: pale red fill or its hatch, on the compute lane only.
  int bubble = 0;
  int hatch = 0;
  const int y = widget_->row_rect(0).top() + widget_->row_height() / 2;
  for (int x = static_cast<int>(widget_->x_of(260)); x < static_cast<int>(widget_->x_of(460));
       ++x) {
    const QColor c = image.pixelColor(x, y);
    if (c == qcolor(kind_color(Kind::kBubble))) ++bubble;
    if (c == QColor(214, 120, 120)) ++hatch;
  }
  EXPECT_GT(bubble, 50);
  EXPECT_GT(hatch, 5);
  EXPECT_NE(pixel_in(image, 1, 300), qcolor(kind_color(Kind::kBubble)));
}

TEST_F(RenderTest, SelectingAMicrobatchDimsTheOthers) {
  widget_->set_selected_microbatch(1);
  const QImage image = render();
  EXPECT_EQ(pixel_in(image, 0, 0), qcolor(faded(kind_color(Kind::kForward), 0.78)));
  // Micro-batch 1's forward on r0 (120..220 µs) keeps its colour, with a black outline.
  const int y = widget_->row_rect(0).top() + 6;
  EXPECT_EQ(image.pixelColor(static_cast<int>(widget_->x_of(120)) + 5, y),
            qcolor(kind_color(Kind::kForward)));
  bool outlined = false;
  for (int dx = -1; dx <= 3; ++dx) {
    outlined = outlined ||
               image.pixelColor(static_cast<int>(widget_->x_of(120)) + dx, y) == QColor(0, 0, 0);
  }
  EXPECT_TRUE(outlined);
}

TEST_F(RenderTest, ClickSelectsAndHitTestFindsSlices) {
  const QPoint at(static_cast<int>(widget_->x_of(150)), widget_->row_rect(3).center().y());
  const auto hit = widget_->hit_test(at);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->row, 3u);
  EXPECT_EQ(document_->traces()[0].slice_name(hit->slice), "F mb0 c0 L1 fwd");
  EXPECT_FALSE(widget_->hit_test(QPoint(5, 5)).has_value());
}

TEST_F(RenderTest, MouseClickSelectsWheelZoomsDragPans) {
  const QPointF at(widget_->x_of(150), widget_->row_rect(3).center().y());
  int signalled = -2;
  QObject::connect(widget_.get(), &TimelineWidget::selection_changed,
                   [&](int mb) { signalled = mb; });
  QMouseEvent press(QEvent::MouseButtonPress, at, at, Qt::LeftButton, Qt::LeftButton,
                    Qt::NoModifier);
  QMouseEvent release(QEvent::MouseButtonRelease, at, at, Qt::LeftButton, Qt::NoButton,
                      Qt::NoModifier);
  QApplication::sendEvent(widget_.get(), &press);
  QApplication::sendEvent(widget_.get(), &release);
  EXPECT_EQ(document_->selected_microbatch(), 0);  // r1's forward of micro-batch 0
  EXPECT_EQ(signalled, 0);
  // Clicking the same micro-batch again clears the selection.
  QApplication::sendEvent(widget_.get(), &press);
  QApplication::sendEvent(widget_.get(), &release);
  EXPECT_EQ(document_->selected_microbatch(), -1);

  const double before = widget_->view().us_per_px;
  QWheelEvent wheel(at, at, QPoint(), QPoint(0, 120), Qt::NoButton, Qt::NoModifier,
                    Qt::NoScrollPhase, false);
  QApplication::sendEvent(widget_.get(), &wheel);
  EXPECT_NEAR(widget_->view().us_per_px, before / 1.25, 1e-12);
  EXPECT_NEAR(widget_->x_of(150), at.x(), 1e-6);  // zoomed around the cursor

  const QPointF to = at - QPointF(40, 0);
  QMouseEvent press2(QEvent::MouseButtonPress, at, at, Qt::LeftButton, Qt::LeftButton,
                     Qt::NoModifier);
  QMouseEvent move(QEvent::MouseMove, to, to, Qt::NoButton, Qt::LeftButton, Qt::NoModifier);
  QMouseEvent release2(QEvent::MouseButtonRelease, to, to, Qt::LeftButton, Qt::NoButton,
                       Qt::NoModifier);
  QApplication::sendEvent(widget_.get(), &press2);
  QApplication::sendEvent(widget_.get(), &move);
  QApplication::sendEvent(widget_.get(), &release2);
  EXPECT_NEAR(widget_->x_of(150), at.x() - 40, 1e-6);  // the content follows the drag
  EXPECT_EQ(document_->selected_microbatch(), -1);     // a drag is not a click
}

TEST_F(RenderTest, CriticalPathIsOutlined) {
  const QImage before = render();
  widget_->set_critical_path_visible(true);
  const QImage after = render();
  // r1's backward of micro-batch 0 (220..460 µs) is on the path: a dark outline at its top.
  const QRect row = widget_->row_rect(3);
  const int x = static_cast<int>(widget_->x_of(340));
  int dark = 0;
  for (int y = row.top(); y < row.top() + 4; ++y)
    dark += after.pixelColor(x, y) == QColor(20, 20, 20);
  EXPECT_GT(dark, 0);
  EXPECT_NE(before, after);
}

TEST_F(RenderTest, ZoomKeepsTheTimeUnderTheCursor) {
  const double x = widget_->x_of(550);
  widget_->zoom_at(x, 4.0);
  EXPECT_NEAR(widget_->x_of(550), x, 1e-6);
  EXPECT_NEAR(widget_->view().us_per_px * 4.0,
              1100.0 / (800 - TimelineWidget::kLabelWidth - TimelineWidget::kRightMargin), 1e-9);
  widget_->pan_by(100, 0);
  EXPECT_NEAR(widget_->x_of(550), x - 100, 1e-6);
  widget_->fit();
  EXPECT_NEAR(widget_->x_of(0), TimelineWidget::kLabelWidth, 1e-9);
}

TEST_F(RenderTest, MainWindowShowsComparisonHeader) {
  std::vector<TraceModel> traces;
  traces.push_back(testing::load_fixture("two_stage_measured.json"));
  traces.push_back(testing::load_fixture("two_stage_predicted.json"));
  MainWindow window(std::move(traces), std::nullopt);
  const QString header = MainWindow::header_text(window.document());
  EXPECT_TRUE(
      header.startsWith(QStringLiteral("predicted 1.1 ms | measured 1.21 ms | difference +110 us")))
      << header.toStdString();
  EXPECT_TRUE(header.contains(QStringLiteral("r0 +"))) << header.toStdString();
  EXPECT_TRUE(window.show_tab(QStringLiteral("memory")));
  EXPECT_FALSE(window.show_tab(QStringLiteral("sweep")));
}

// Issue 40: the memory chart's axes tick at round numbers from 0 (not fifths of the step's
// length), and every legend entry has a colour of its own.
TEST_F(RenderTest, MemoryChartTicksAreRoundAndLegendColoursDistinct) {
  synth::SyntheticTraceSpec spec;
  spec.ranks = 8;
  spec.microbatches = 16;
  std::stringstream json;
  synth::write_synthetic_trace(spec, json);
  auto trace = parse_trace(json.str(), "synthetic");
  ASSERT_TRUE(trace.ok());
  std::vector<TraceModel> traces;
  traces.push_back(std::move(trace).value());
  const TimelineDocument document(std::move(traces));
  std::unique_ptr<QChartView> view(make_memory_chart(document));
  for (QAbstractAxis* abstract : view->chart()->axes()) {
    auto* axis = qobject_cast<QValueAxis*>(abstract);
    ASSERT_NE(axis, nullptr);
    EXPECT_EQ(axis->tickType(), QValueAxis::TicksDynamic);
    EXPECT_EQ(axis->tickAnchor(), 0.0);
    const double step = axis->tickInterval();
    const double mantissa = step / std::pow(10.0, std::floor(std::log10(step)));
    EXPECT_TRUE(mantissa == 1.0 || mantissa == 2.0 || mantissa == 5.0) << step;
    EXPECT_NEAR(std::fmod(axis->max(), step), 0.0, 1e-9 * axis->max());
  }
  std::set<QRgb> colours;
  int entries = 0;
  for (QLegendMarker* marker : view->chart()->legend()->markers()) {  // one trace: none hidden
    ++entries;
    colours.insert(marker->brush().color().rgb());
  }
  EXPECT_GE(entries, 10);  // 8 ranks, their peaks, the highest peak, the capacity
  EXPECT_EQ(static_cast<int>(colours.size()), entries);
}

// A large trace at the fitted zoom: thousands of slices per pixel column on each compute
// lane, so everything is drawn through the per-column aggregation. The columns must show
// slice colours (not background) where the rank is busy, and hover still finds slices.
TEST_F(RenderTest, LargeTraceIsDrawnPerPixelColumn) {
  synth::SyntheticTraceSpec spec = synth::spec_with_slices(200000, 4);
  std::ostringstream json;
  synth::write_synthetic_trace(spec, json);
  auto model = parse_trace(json.str(), "large.json");
  ASSERT_TRUE(model.ok());
  std::vector<TraceModel> traces;
  traces.push_back(std::move(model).value());
  TimelineDocument document(std::move(traces));
  TimelineWidget widget(&document);
  widget.resize(900, 500);
  widget.fit();
  QImage image(widget.size(), QImage::Format_RGB32);
  widget.render(&image);
  const int y = widget.row_rect(0).top() + widget.row_height() / 2;
  const QColor background = image.pixelColor(5, widget.row_rect(0).top() + 1);
  int painted = 0;
  int columns = 0;
  // The steady 1F1B phase of rank 0, from 30% to 70% of the step.
  for (int x = static_cast<int>(widget.x_of(0.3 * document.end_us()));
       x < static_cast<int>(widget.x_of(0.7 * document.end_us())); ++x, ++columns) {
    painted +=
        image.pixelColor(x, y) != background && image.pixelColor(x, y) != QColor(255, 255, 255);
  }
  EXPECT_GT(columns, 200);
  EXPECT_GT(painted, columns * 9 / 10);
  const auto hit =
      widget.hit_test(QPoint(static_cast<int>(widget.x_of(0.5 * document.end_us())), y));
  EXPECT_TRUE(hit.has_value());
}

// A whole step zoomed out: four micro-batches of 500 forward ops of 1 µs each, far under a
// pixel apiece. Without banding the lane is one solid forward band; with it, consecutive
// micro-batches alternate between the forward colour and a darker shade of it.
TEST_F(RenderTest, MicrobatchesStayApartWhenZoomedOut) {
  std::ostringstream json;
  json << R"({"traceEvents": [)";
  for (int i = 0; i < 2000; ++i) {
    json << (i > 0 ? "," : "") << R"({"ph": "X", "name": "F", "cat": "forward", "pid": 0, )"
         << R"("tid": 0, "ts": )" << i << R"(, "dur": 1, "args": {"mb": )" << i / 500
         << R"(, "chunk": 0, "layer": 0}})";
  }
  json << "]}";
  auto model = parse_trace(json.str(), "banded.json");
  ASSERT_TRUE(model.ok()) << model.errors().front().to_string();
  std::vector<TraceModel> traces;
  traces.push_back(std::move(model).value());
  TimelineDocument document(std::move(traces));
  TimelineWidget widget(&document);
  widget.resize(800, 200);
  widget.fit();
  QImage image(widget.size(), QImage::Format_RGB32);
  widget.render(&image);
  const int y = widget.row_rect(0).top() + widget.row_height() / 2;
  const auto at = [&](double t_us) {
    return image.pixelColor(static_cast<int>(widget.x_of(t_us)), y).rgb();
  };
  const QRgb plain = qcolor(kind_color(Kind::kForward)).rgb();
  const QRgb darker = qcolor(kind_color(Kind::kForward)).darker(118).rgb();
  ASSERT_NE(plain, darker);
  EXPECT_EQ(at(250), plain);    // micro-batch 0
  EXPECT_EQ(at(750), darker);   // micro-batch 1
  EXPECT_EQ(at(1250), plain);   // micro-batch 2
  EXPECT_EQ(at(1750), darker);  // micro-batch 3
  // Selecting a micro-batch dims the others instead of banding them.
  widget.set_selected_microbatch(2);
  widget.render(&image);
  EXPECT_EQ(at(750), at(250));
}

TEST_F(RenderTest, ClickingASweepPointOpensItsTrace) {
  auto table = read_sweep_csv(testing::data_path("sweep.csv"));
  ASSERT_TRUE(table.ok());
  SweepChart chart(std::move(table).value());
  QStringList opened;
  QStringList messages;
  QObject::connect(&chart, &SweepChart::open_trace, [&](const QString& p) { opened << p; });
  QObject::connect(&chart, &SweepChart::message, [&](const QString& m) { messages << m; });
  QScatterSeries* points = nullptr;
  for (QAbstractSeries* s : chart.chart()->series()) {
    if (s->name() == QStringLiteral("configurations")) points = qobject_cast<QScatterSeries*>(s);
  }
  ASSERT_NE(points, nullptr);
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  emit points->clicked(QPointF(6e10 / kGiB, 1000));  // tp8-pp8, which has a trace
  ASSERT_EQ(opened.size(), 1);
  EXPECT_EQ(opened[0].toStdString(), testing::data_path("two_stage_predicted.json"));
  emit points->clicked(QPointF(4e10 / kGiB, 905));  // near tp4-pp16, which has none
  EXPECT_EQ(opened.size(), 1);
  ASSERT_EQ(messages.size(), 1);
  EXPECT_TRUE(messages[0].startsWith(QStringLiteral("tp4-pp16")));
}

}  // namespace
}  // namespace stepsim::gui
