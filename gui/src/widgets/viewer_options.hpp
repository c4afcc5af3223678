#pragma once
// The viewer's command line, parsed into a value (main() reads argv and hands it here).

#include <cstdint>
#include <string>
#include <vector>

#include "stepsim/base/result.hpp"

namespace stepsim::gui {

struct ViewerOptions {
  std::vector<std::string> traces;  ///< trace files (.json), in the order given
  std::string sweep;                ///< a sweep CSV (.csv), or empty
  /// The sweep file the CSV came from: a click on a row without a trace simulates it.
  std::string sweep_file;
  std::int32_t click_point = -1;  ///< click this CSV row's point before the screenshot
  std::string screenshot;           ///< PNG to render to, then exit; empty: interactive
  int width = 1600;                 ///< window size in pixels
  int height = 1000;
  bool critical_path = false;
  std::int32_t select_mb = -1;
  std::string tab;  ///< bottom tab to show: stages, memory or sweep
  /// The timeline's window, in ms from the step start (--range START:END); end <= start: whole step.
  double range_start_ms = 0;
  double range_end_ms = 0;
  bool bench_load = false;
  bool help = false;
};

/// Parses the arguments after the program name. Files ending in .csv are sweeps (at most
/// one), all other files traces.
Result<ViewerOptions> parse_viewer_args(const std::vector<std::string>& args);

/// The --help text.
std::string viewer_usage();

}  // namespace stepsim::gui
