// Benchmarks of stepsim-viewer at scale: a synthetic trace of about 2 million slices is
// written once to a temporary folder, then loading it, the first paint of the timeline and
// later frames (panning, zoomed in) are timed. Timings are reported, never asserted.
//
//   build/bin/gui_viewer_bench [--benchmark_filter=...]   (STEPSIM_BENCH_SLICES overrides 2e6)

#include <benchmark/benchmark.h>

#include <QApplication>
#include <QImage>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "stepsim/gui/document.hpp"
#include "stepsim/gui/timeline_widget.hpp"
#include "stepsim/gui/trace_reader.hpp"
#include "synthetic_trace.hpp"

namespace {

namespace gui = stepsim::gui;

std::string& trace_path() {
  static std::string path;
  return path;
}

gui::TraceModel load() {
  auto result = gui::read_trace_file(trace_path());
  if (!result) {
    std::fputs(stepsim::format_errors(result.errors()).c_str(), stderr);
    std::abort();
  }
  return std::move(result).value();
}

QImage paint(gui::TimelineWidget& widget) {
  QImage image(widget.size(), QImage::Format_RGB32);
  widget.render(&image);
  return image;
}

void BM_ReadTrace(benchmark::State& state) {
  std::size_t slices = 0;
  for (auto _ : state) {
    const gui::TraceModel model = load();
    slices = model.slice_count();
    benchmark::DoNotOptimize(slices);
  }
  state.counters["slices"] = static_cast<double>(slices);
  state.counters["file_MB"] = static_cast<double>(std::filesystem::file_size(trace_path())) / 1e6;
}

// What a user waits for: read the file, lay out the lanes, draw the first frame.
void BM_LoadAndFirstPaint(benchmark::State& state) {
  for (auto _ : state) {
    std::vector<gui::TraceModel> traces;
    traces.push_back(load());
    gui::TimelineDocument document(std::move(traces));
    gui::TimelineWidget widget(&document);
    widget.resize(1600, 900);
    widget.fit();
    benchmark::DoNotOptimize(paint(widget));
  }
}

struct Loaded {
  gui::TimelineDocument document;
  std::unique_ptr<gui::TimelineWidget> widget;
};

Loaded& loaded() {
  static Loaded l = [] {
    std::vector<gui::TraceModel> traces;
    traces.push_back(load());
    Loaded out{gui::TimelineDocument(std::move(traces)), nullptr};
    return out;
  }();
  if (!l.widget) {
    l.widget = std::make_unique<gui::TimelineWidget>(&l.document);
    l.widget->resize(1600, 900);
  }
  return l;
}

// One frame while dragging at the fitted zoom: every slice of the trace is in view.
void BM_PanFrameWholeStep(benchmark::State& state) {
  auto& widget = *loaded().widget;
  widget.fit();
  double dx = 3;
  for (auto _ : state) {
    widget.pan_by(dx, 0);
    dx = -dx;
    benchmark::DoNotOptimize(paint(widget));
  }
}

// One frame while dragging zoomed in 100x around the middle of the step.
void BM_PanFrameZoomedIn(benchmark::State& state) {
  auto& widget = *loaded().widget;
  widget.fit();
  widget.zoom_at(gui::TimelineWidget::kLabelWidth + 700, 100);
  double dx = 20;
  for (auto _ : state) {
    widget.pan_by(dx, 0);
    dx = -dx;
    benchmark::DoNotOptimize(paint(widget));
  }
}

void BM_CriticalPath(benchmark::State& state) {
  const gui::TraceModel& model = loaded().document.traces().front();
  for (auto _ : state) benchmark::DoNotOptimize(gui::critical_path(model).slices.size());
}

BENCHMARK(BM_ReadTrace)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_LoadAndFirstPaint)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_PanFrameWholeStep)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PanFrameZoomedIn)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CriticalPath)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace

int main(int argc, char** argv) {
  if (std::getenv("QT_QPA_PLATFORM") == nullptr) setenv("QT_QPA_PLATFORM", "offscreen", 1);
  QApplication app(argc, argv);
  benchmark::Initialize(&argc, argv);
  std::size_t slices = 2000000;
  if (const char* env = std::getenv("STEPSIM_BENCH_SLICES"))
    slices = std::strtoull(env, nullptr, 10);
  const auto dir = std::filesystem::temp_directory_path() / "stepsim_viewer_bench";
  std::filesystem::create_directories(dir);
  trace_path() = (dir / ("trace_" + std::to_string(slices) + ".json")).string();
  if (!std::filesystem::exists(trace_path())) {
    std::ofstream out(trace_path(), std::ios::binary);
    const auto info = gui::synth::write_synthetic_trace(gui::synth::spec_with_slices(slices), out);
    std::fprintf(stderr, "wrote %s: %zu slices\n", trace_path().c_str(), info.slices);
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
