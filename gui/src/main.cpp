// stepsim-viewer: timelines of predicted and measured steps, per-stage and memory charts,
// sweep results. The only code of the viewer that reads argv and the environment.
//
//   stepsim-viewer [TRACE.json ...] [SWEEP.csv [--sweep-file SWEEP.json] [--click-point N]]
//                  [--screenshot FILE.png] [--size WxH] [--critical-path] [--select-mb N]
//                  [--range START:END]
//                  [--tab stages|memory|sweep] [--bench-load]

#include <QApplication>
#include <QImage>
#include <QPainter>
#include <QPixmap>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <optional>
#include <string>
#include <vector>

#include "stepsim/gui/main_window.hpp"
#include "stepsim/gui/sweep_chart.hpp"
#include "stepsim/gui/sweep_csv.hpp"
#include "stepsim/gui/timeline_widget.hpp"
#include "stepsim/gui/trace_reader.hpp"
#include "stepsim/base/main_guard.hpp"
#include "widgets/viewer_options.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using stepsim::gui::ViewerOptions;

double cpu_seconds() { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The offscreen platform warns that it cannot size windows; that is expected, not news.
void quiet_offscreen(QtMsgType type, const QMessageLogContext& /*context*/, const QString& text) {
  if (text.contains(QStringLiteral("propagateSizeHints"))) return;
  std::fprintf(stderr, "%s\n", text.toLocal8Bit().constData());
  if (type == QtFatalMsg) std::abort();
}

void print_errors(const stepsim::Errors& errors) {
  std::fputs(stepsim::format_errors(errors).c_str(), stderr);
}

}  // namespace

namespace {

int run_main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  auto parsed = stepsim::gui::parse_viewer_args(args);
  if (!parsed) {
    print_errors(parsed.errors());
    std::fputs("Run 'stepsim-viewer --help' for usage.\n", stderr);
    return 2;
  }
  const ViewerOptions& options = *parsed;
  if (options.help) {
    std::fputs(stepsim::gui::viewer_usage().c_str(), stdout);
    return 0;
  }
  const bool headless = !options.screenshot.empty() || options.bench_load;
  // Render without a display when asked for a file, unless the user chose a platform.
  if (headless && std::getenv("QT_QPA_PLATFORM") == nullptr)
    setenv("QT_QPA_PLATFORM", "offscreen", 1);

  const auto load_start = Clock::now();
  const double load_cpu_start = cpu_seconds();
  std::vector<stepsim::gui::TraceModel> traces;
  stepsim::Errors errors;
  for (const std::string& path : options.traces) {
    auto result = stepsim::gui::read_trace_file(path);
    if (!result) {
      errors.insert(errors.end(), result.errors().begin(), result.errors().end());
      continue;
    }
    traces.push_back(std::move(result).value());
  }
  std::optional<stepsim::gui::SweepTable> sweep;
  if (!options.sweep.empty()) {
    auto result = stepsim::gui::read_sweep_csv(options.sweep);
    if (!result) {
      errors.insert(errors.end(), result.errors().begin(), result.errors().end());
    } else {
      sweep = std::move(result).value();
    }
  }
  stepsim::gui::SweepTraceProvider sweep_traces;
  if (!options.sweep_file.empty()) {
    const char* dir = std::getenv("STEPSIM_SCENARIOS_DIR");
    auto provider = stepsim::gui::make_sweep_trace_provider(
        options.sweep_file, dir != nullptr ? dir : STEPSIM_DEFAULT_SCENARIOS_DIR);
    if (!provider) {
      errors.insert(errors.end(), provider.errors().begin(), provider.errors().end());
    } else {
      sweep_traces = std::move(provider).value();
    }
  }
  if (sweep && options.click_point >= 0 &&
      static_cast<std::size_t>(options.click_point) >= sweep->points.size()) {
    errors.push_back(stepsim::Error{options.sweep, "",
                                    "--click-point " + std::to_string(options.click_point) +
                                        ": the CSV has " + std::to_string(sweep->points.size()) +
                                        " plotted rows"});
  }
  if (!errors.empty()) {
    print_errors(errors);
    return 2;
  }
  const double load_s = seconds_since(load_start);
  const double load_cpu_s = cpu_seconds() - load_cpu_start;
  if (headless && traces.empty() && !sweep) {
    std::fputs("stepsim-viewer: nothing to render: give a trace (.json) or sweep (.csv) file\n",
               stderr);
    return 2;
  }
  if (!headless && std::getenv("QT_QPA_PLATFORM") == nullptr && std::getenv("DISPLAY") == nullptr &&
      std::getenv("WAYLAND_DISPLAY") == nullptr) {
    std::fputs(
        "stepsim-viewer: no display (DISPLAY is not set); use --screenshot FILE.png to "
        "render without one\n",
        stderr);
    return 1;
  }

  if (headless) qInstallMessageHandler(quiet_offscreen);
  QApplication app(argc, argv);
  std::size_t slices = 0;
  for (const auto& t : traces) slices += t.slice_count();
  stepsim::gui::MainWindow window(std::move(traces), std::move(sweep), nullptr,
                                  std::move(sweep_traces));
  window.resize(options.width, options.height);
  if (options.critical_path) window.set_critical_path_visible(true);
  if (options.select_mb >= 0) window.timeline()->set_selected_microbatch(options.select_mb);
  if (!options.tab.empty() && !window.show_tab(QString::fromStdString(options.tab))) {
    std::fprintf(stderr,
                 "stepsim-viewer: --tab %s: no such tab (stages, memory, sweep with a CSV)\n",
                 options.tab.c_str());
    return 2;
  }
  if (options.bench_load) {
    window.show();
    QApplication::processEvents();
    const auto paint_start = Clock::now();
    const double paint_cpu_start = cpu_seconds();
    auto* timeline = window.timeline();
    QImage image(timeline->size(), QImage::Format_RGB32);
    timeline->render(&image);
    const double paint_s = seconds_since(paint_start);
    const double paint_cpu_s = cpu_seconds() - paint_cpu_start;
    std::printf(
        "loaded %zu slices in %.3f s (cpu %.3f s); first paint of the timeline (%dx%d) "
        "%.3f s (cpu %.3f s); load + first paint %.3f s (cpu %.3f s)\n",
        slices, load_s, load_cpu_s, timeline->width(), timeline->height(), paint_s, paint_cpu_s,
        load_s + paint_s, load_cpu_s + paint_cpu_s);
    return 0;
  }
  window.show();
  if (options.range_end_ms > options.range_start_ms) {
    const double end_ms = window.document().end_us() * 1e-3;
    if (options.range_start_ms >= end_ms) {
      std::fprintf(stderr, "stepsim-viewer: --range %g:%g: the step ends at %.3f ms\n",
                   options.range_start_ms, options.range_end_ms, end_ms);
      return 2;
    }
    QApplication::processEvents();  // the timeline has its final width only once shown
    window.timeline()->show_range(options.range_start_ms * 1e3, options.range_end_ms * 1e3);
  }
  if (options.click_point >= 0) {
    QApplication::processEvents();
    window.sweep_chart()->click_point(static_cast<std::size_t>(options.click_point));
  }
  if (!options.screenshot.empty()) {
    QApplication::processEvents();
    const QPixmap pixmap = window.grab();
    if (!pixmap.save(QString::fromStdString(options.screenshot), "PNG")) {
      std::fprintf(stderr, "%s: cannot write the screenshot\n", options.screenshot.c_str());
      return 1;
    }
    return 0;
  }
  return QApplication::exec();
}

}  // namespace

int main(int argc, char** argv) {
  return stepsim::guarded_main("stepsim-viewer", [&] { return run_main(argc, argv); });
}
