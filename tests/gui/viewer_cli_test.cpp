// End-to-end: runs the stepsim-viewer binary as a user would, without a display.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <QImage>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <utility>
#include <iterator>
#include <cstdlib>

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

// Runs of image rows holding hatch pixels (more than 10 each): one per hatched timeline row.
int hatch_bands(const QImage& image) {
  int bands = 0;
  bool in_band = false;
  for (int y = 0; y < image.height(); ++y) {
    int n = 0;
    for (int x = 0; x < image.width(); ++x) n += image.pixelColor(x, y) == QColor(214, 120, 120);
    if (n > 10 && !in_band) ++bands;
    in_band = n > 10;
  }
  return bands;
}

// The lines of `from` (one trace event a line) without stepsim's idle tracks: their slices
// ("cat":"bubble", "cat":"exposed_comm") and their thread_name events.
void strip_idle_tracks(const std::string& from, const std::string& to) {
  std::ifstream in(from);
  std::ofstream out(to);
  for (std::string line; std::getline(in, line);) {
    if (line.find("\"cat\":\"bubble\"") != std::string::npos ||
        line.find("\"cat\":\"exposed_comm\"") != std::string::npos ||
        line.find("\"args\":{\"name\":\"bubble\"}") != std::string::npos ||
        line.find("\"args\":{\"name\":\"exposed communication\"}") != std::string::npos) {
      continue;
    }
    out << line << '\n';
  }
}

// Issue 40: stepsim's own trace of a 512-sample step (mixtral-8x7b-h100-64 at global batch
// 512: p 4, 32 micro-batches), zoomed with --range to its first 600 ms. Its "bubble" tracks
// are drawn hatched (Qt::BDiagPattern), as the idle time on the compute lanes is, and they
// do not hide that idle time (they are not work): with them the window has the compute
// lanes' hatching and as much again on the bubble tracks.
TEST(ViewerCli, StepsimBubbleTracksShowHatchedInARange) {
  std::ifstream in(std::string(STEPSIM_SCENARIOS_DIR) + "/mixtral-8x7b-h100-64.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string from = "\"global_batch_size\": 256";
  ASSERT_NE(text.find(from), std::string::npos);
  text.replace(text.find(from), from.size(), "\"global_batch_size\": 512");
  const std::string scenario = temp_png("mixtral-512.json");
  std::ofstream(scenario) << text;
  const std::string trace = temp_png("mixtral-512-trace.json");
  const std::string predict = q(STEPSIM_BIN) + " predict " + q(scenario) +
                              " --trace-level op --trace " + q(trace) + " >/dev/null 2>&1";
  ASSERT_EQ(std::system(predict.c_str()), 0) << predict;
  const std::string stripped = temp_png("mixtral-512-stripped.json");
  strip_idle_tracks(trace, stripped);
  const std::string with_tracks = temp_png("mixtral-512-tracks.png");
  const std::string without = temp_png("mixtral-512-gaps.png");
  for (const auto& [file, png] : {std::pair{trace, with_tracks}, std::pair{stripped, without}}) {
    const ViewerRun run =
        run_viewer({q(file), "--size 1200x700 --range 0:600 --screenshot", q(png)});
    ASSERT_EQ(run.status, 0) << run.output;
  }
  const QImage tracks(QString::fromStdString(with_tracks));
  const QImage gaps(QString::fromStdString(without));
  EXPECT_GT(hatch_pixels(gaps), 500);  // the compute lanes' idle time, hatched
  EXPECT_GT(hatch_pixels(tracks), 500);
  // Hatched rows: each rank's compute lane (and the legend's swatch) in both, each rank's
  // bubble track besides with the tracks.
  EXPECT_GE(hatch_bands(tracks), hatch_bands(gaps) + 4)
      << hatch_bands(tracks) << " hatched bands with the tracks, " << hatch_bands(gaps)
      << " without";
  std::filesystem::remove(trace);
  std::filesystem::remove(stripped);
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
