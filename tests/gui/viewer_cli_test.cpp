// End-to-end: runs the stepsim-viewer binary as a user would, without a display.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <QImage>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <initializer_list>
#include <string>

#include <fstream>

#include "synthetic_trace.hpp"
#include "test_data.hpp"

namespace {

using stepsim::gui::testing::data_path;

struct ViewerRun {
  int status = -1;
  std::string output;  // stdout and stderr together
};

// A shell word for a path.
std::string q(const std::string& path) {
  std::string out;
  out += '\'';
  out += path;
  out += '\'';
  return out;
}

// Runs the viewer with QT_QPA_PLATFORM unset, so the program must choose offscreen itself.
ViewerRun run_viewer(std::initializer_list<std::string> args) {
  std::string command = "env -u QT_QPA_PLATFORM -u DISPLAY -u WAYLAND_DISPLAY ";
  command += q(STEPSIM_VIEWER_BIN);
  for (const std::string& a : args) {
    command += ' ';
    command += a;
  }
  command += " 2>&1";
  ViewerRun run;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return run;
  char buffer[4096];
  std::size_t n = 0;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) run.output.append(buffer, n);
  const int raw = pclose(pipe);
  run.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return run;
}

std::string temp_png(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / "stepsim_viewer_cli_test";
  std::filesystem::create_directories(dir);
  const auto path = dir / name;
  std::filesystem::remove(path);
  return path.string();
}

TEST(ViewerCli, ScreenshotRendersWithoutADisplay) {
  const std::string png = temp_png("one.png");
  const ViewerRun run = run_viewer({q(data_path("two_stage_predicted.json")), "--screenshot",
                                    q(png), "--size 900x600 --critical-path --select-mb 1"});
  ASSERT_EQ(run.status, 0) << run.output;
  QImage image(QString::fromStdString(png));
  ASSERT_FALSE(image.isNull());
  EXPECT_EQ(image.width(), 900);
  EXPECT_EQ(image.height(), 600);
  // The forward colour of the palette appears somewhere (the timeline was drawn).
  bool forward = false;
  for (int y = 0; y < image.height() && !forward; y += 2) {
    for (int x = 0; x < image.width() && !forward; x += 2)
      forward = image.pixelColor(x, y) == QColor(0x3b, 0x6f, 0xd4);
  }
  EXPECT_TRUE(forward);
}

TEST(ViewerCli, ComparesTwoTracesAndOpensASweep) {
  const std::string png = temp_png("two.png");
  const ViewerRun run =
      run_viewer({q(data_path("two_stage_measured.json")), q(data_path("two_stage_predicted.json")),
                  q(data_path("sweep.csv")), "--tab sweep --screenshot", q(png)});
  ASSERT_EQ(run.status, 0) << run.output;
  EXPECT_FALSE(QImage(QString::fromStdString(png)).isNull());
  EXPECT_EQ(QImage(QString::fromStdString(png)).width(), 1600);
}

// Pixels of the bubble hatching's line colour (timeline_painter.cpp) in the image.
int hatch_pixels(const QImage& image) {
  int n = 0;
  for (int y = 0; y < image.height(); ++y) {
    for (int x = 0; x < image.width(); ++x) n += image.pixelColor(x, y) == QColor(214, 120, 120);
  }
  return n;
}

// Issue 40: a step of 512 micro-batches is a solid band at full width; --range shows one
// window of it, where the pipeline's warm-up bubbles are wide enough to be drawn hatched.
TEST(ViewerCli, RangeZoomsALongStepSoItsBubblesShowHatched) {
  stepsim::gui::synth::SyntheticTraceSpec spec;
  spec.ranks = 4;
  spec.microbatches = 512;
  const std::string trace = temp_png("long_step.json");
  std::ofstream out(trace);
  const auto info = stepsim::gui::synth::write_synthetic_trace(spec, out);
  out.close();
  ASSERT_GT(info.step_us, 100000.0);  // hundreds of ms: the warm-up is under 1% of it
  const std::string whole = temp_png("long_whole.png");
  const std::string window = temp_png("long_window.png");
  ASSERT_EQ(run_viewer({q(trace), "--size 1200x600 --screenshot", q(whole)}).status, 0);
  const ViewerRun run =
      run_viewer({q(trace), "--size 1200x600 --range 0:3 --screenshot", q(window)});
  ASSERT_EQ(run.status, 0) << run.output;
  const int zoomed = hatch_pixels(QImage(QString::fromStdString(window)));
  const int full = hatch_pixels(QImage(QString::fromStdString(whole)));
  // The last stage waits for three forwards before its first: in a 3 ms window that is a
  // third of its row, hundreds of hatch pixels; at full width a few columns at most.
  EXPECT_GT(zoomed, 500);
  EXPECT_GT(zoomed, 10 * std::max(full, 1));
}

TEST(ViewerCli, RangeOutsideTheStepOrMalformedExitsTwo) {
  const std::string png = temp_png("never_range.png");
  const ViewerRun after = run_viewer(
      {q(data_path("two_stage_predicted.json")), "--range 50:60 --screenshot", q(png)});
  EXPECT_EQ(after.status, 2);
  EXPECT_NE(after.output.find("--range 50:60: the step ends at 1.100 ms"), std::string::npos)
      << after.output;
  for (const char* bad : {"--range 5:2", "--range 3", "--range -1:2", "--range a:b"}) {
    const ViewerRun run = run_viewer({q(data_path("two_stage_predicted.json")), bad});
    EXPECT_EQ(run.status, 2) << bad;
    EXPECT_NE(run.output.find("expected START:END in ms"), std::string::npos) << run.output;
  }
  EXPECT_FALSE(std::filesystem::exists(png));
}

TEST(ViewerCli, MissingFileExitsTwoNamingIt) {
  const ViewerRun run = run_viewer({"/nonexistent/step.json --screenshot /tmp/never.png"});
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.output.find("/nonexistent/step.json: cannot open: No such file or directory"),
            std::string::npos)
      << run.output;
}

TEST(ViewerCli, MalformedTracesExitTwoWithOneLinePerProblem) {
  const std::string syntax = data_path("malformed_syntax.json");
  const std::string fields = data_path("malformed_bad_fields.json");
  const ViewerRun run = run_viewer({q(syntax), q(fields), "--screenshot /tmp/never.png"});
  EXPECT_EQ(run.status, 2);
  std::string expected = syntax;
  expected += ": not valid JSON: line 3 column 3: expected ',' or ']'";
  EXPECT_NE(run.output.find(expected), std::string::npos) << run.output;
  expected = fields;
  expected += ": traceEvents[0].dur must be a number of microseconds >= 0";
  EXPECT_NE(run.output.find(expected), std::string::npos) << run.output;
  expected = fields;
  expected += ": traceEvents[2].tid is missing";
  EXPECT_NE(run.output.find(expected), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists("/tmp/never.png"));
}

TEST(ViewerCli, BadOptionsExitTwo) {
  EXPECT_EQ(run_viewer({"--size 12 x.json"}).status, 2);
  EXPECT_EQ(run_viewer({"--frobnicate"}).status, 2);
  const ViewerRun tab = run_viewer(
      {q(data_path("two_stage_predicted.json")), "--tab sweep --screenshot /tmp/never.png"});
  EXPECT_EQ(tab.status, 2);
  EXPECT_NE(tab.output.find("no such tab"), std::string::npos);
  const ViewerRun help = run_viewer({"--help"});
  EXPECT_EQ(help.status, 0);
  EXPECT_NE(help.output.find("--screenshot FILE.png"), std::string::npos);
}

TEST(ViewerCli, BenchLoadReportsWhatItLoaded) {
  const ViewerRun run = run_viewer({q(data_path("two_stage_predicted.json")), "--bench-load"});
  EXPECT_EQ(run.status, 0) << run.output;
  EXPECT_NE(run.output.find("loaded 22 slices in "), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("load + first paint"), std::string::npos);
}

TEST(ViewerCli, NoDisplayWithoutScreenshotIsARuntimeError) {
  const ViewerRun run = run_viewer({q(data_path("two_stage_predicted.json"))});
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.output.find("no display"), std::string::npos);
}

}  // namespace
