#include "viewer_options.hpp"

#include <charconv>
#include <cmath>

namespace stepsim::gui {

namespace {

bool parse_int(const std::string& s, int& out) {
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

bool parse_ms(const std::string& s, double& out) {
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size() && std::isfinite(out);
}

// "START:END" in ms, 0 <= START < END.
bool parse_range(const std::string& s, double& start, double& end) {
  const auto colon = s.find(':');
  return colon != std::string::npos && parse_ms(s.substr(0, colon), start) &&
         parse_ms(s.substr(colon + 1), end) && start >= 0 && end > start;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::string viewer_usage() {
  return "usage: stepsim-viewer [TRACE.json ...] [SWEEP.csv] [options]\n"
         "  Shows Chrome-trace timelines written by 'stepsim predict --trace' or 'stepsim\n"
         "  validate' (two traces: predicted and measured side by side), per-stage and memory\n"
         "  charts, and a sweep CSV as throughput against memory with the Pareto front.\n"
         "options:\n"
         "  --screenshot FILE.png  render the window to FILE.png without a display, then exit\n"
         "  --size WxH             window size in pixels (default 1600x1000)\n"
         "  --critical-path        highlight the critical path\n"
         "  --select-mb N          highlight micro-batch N on all ranks\n"
         "  --tab NAME             bottom tab to show: stages, memory or sweep\n"
         "  --range START:END      show this window of the step, in ms from its start\n"
         "                         (e.g. --range 120:180 with --screenshot: one window of a\n"
         "                         long step, where its slices and bubbles are wide enough)\n"
         "  --sweep-file SWEEP.json  the sweep the CSV came from: clicking a configuration\n"
         "                         without a trace simulates it and opens its predicted step\n"
         "  --click-point N        click the point of the CSV's row N (0 = first row) before\n"
         "                         the screenshot\n"
         "  --bench-load           print the time to load the files and paint the timeline once\n"
         "  --help                 this text\n"
         "keys: F fit, +/- zoom, arrows pan, C critical path, Esc clear selection; wheel zooms\n"
         "around the cursor, drag pans, click selects a micro-batch, hover shows a slice.\n";
}

Result<ViewerOptions> parse_viewer_args(const std::vector<std::string>& args) {
  ViewerOptions o;
  Errors errors;
  auto bad = [&](const std::string& what) {
    errors.push_back(Error{"", "", "stepsim-viewer: " + what});
  };
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](std::string& out) {
      if (i + 1 >= args.size()) {
        bad(a + " needs a value");
        return false;
      }
      out = args[++i];
      return true;
    };
    std::string v;
    if (a == "--help" || a == "-h") {
      o.help = true;
    } else if (a == "--screenshot") {
      value(o.screenshot);
    } else if (a == "--size") {
      if (!value(v)) continue;
      const auto x = v.find('x');
      if (x == std::string::npos || !parse_int(v.substr(0, x), o.width) ||
          !parse_int(v.substr(x + 1), o.height) || o.width < 200 || o.height < 150 ||
          o.width > 10000 || o.height > 10000) {
        bad("--size " + v + ": expected WxH in pixels, 200x150 to 10000x10000 (e.g. 1600x1000)");
      }
    } else if (a == "--critical-path") {
      o.critical_path = true;
    } else if (a == "--select-mb") {
      int mb = 0;
      if (!value(v)) continue;
      if (!parse_int(v, mb) || mb < 0)
        bad("--select-mb " + v + ": expected a micro-batch number >= 0");
      o.select_mb = mb;
    } else if (a == "--tab") {
      value(o.tab);
    } else if (a == "--range") {
      if (!value(v)) continue;
      if (!parse_range(v, o.range_start_ms, o.range_end_ms))
        bad("--range " + v + ": expected START:END in ms from the step start, 0 <= START < END "
            "(e.g. 120:180)");
    } else if (a == "--sweep-file") {
      value(o.sweep_file);
    } else if (a == "--click-point") {
      int point = 0;
      if (!value(v)) continue;
      if (!parse_int(v, point) || point < 0)
        bad("--click-point " + v + ": expected a row number of the sweep CSV >= 0");
      o.click_point = point;
    } else if (a == "--bench-load") {
      o.bench_load = true;
    } else if (a.size() > 1 && a[0] == '-') {
      bad("unknown option " + a);
    } else if (ends_with(a, ".csv")) {
      if (!o.sweep.empty()) bad("only one sweep CSV at a time (got " + o.sweep + " and " + a + ")");
      o.sweep = a;
    } else {
      o.traces.push_back(a);
    }
  }
  if (!o.sweep_file.empty() && o.sweep.empty())
    bad("--sweep-file " + o.sweep_file + " goes with the sweep CSV it wrote (plan.csv)");
  if (o.click_point >= 0 && o.sweep.empty()) bad("--click-point needs a sweep CSV");
  if (!errors.empty()) return errors;
  return o;
}

}  // namespace stepsim::gui
