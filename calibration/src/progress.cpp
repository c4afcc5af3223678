#include <chrono>
#include <cmath>
#include <ostream>
#include <string>
#include <utility>

#include "stepsim/calibration/calibrate.hpp"

namespace stepsim::calib {
namespace {

double steady_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string clock_text(double seconds) {
  const auto s = static_cast<long long>(std::llround(std::max(0.0, seconds)));
  const std::string sec = std::to_string(s % 60);
  return std::to_string(s / 60) + ":" + (sec.size() < 2 ? "0" : "") + sec;
}

}  // namespace

StreamProgress::StreamProgress(std::ostream& out, bool terminal, double line_every_s,
                               std::string label)
    : out_(out),
      terminal_(terminal),
      line_every_s_(line_every_s),
      label_(std::move(label)),
      start_s_(steady_s()),
      last_line_s_(start_s_) {}

void StreamProgress::update(std::int64_t done, std::int64_t total, const std::string& last) {
  if (first_done_ < 0) first_done_ = done;
  const double now = steady_s();
  const double elapsed = now - start_s_;
  const std::int64_t new_done = done - first_done_;
  std::string eta = "--:--";
  if (new_done > 0) {
    eta = clock_text(elapsed / static_cast<double>(new_done) * static_cast<double>(total - done));
  }
  const double fraction = total > 0 ? static_cast<double>(done) / static_cast<double>(total) : 1.0;
  const std::string counts = std::to_string(done) + "/" + std::to_string(total) + " (" +
                             std::to_string(std::lround(100.0 * fraction)) + "%) elapsed " +
                             clock_text(elapsed) + " ETA " + eta;
  if (terminal_) {
    constexpr int kWidth = 30;
    const auto filled = static_cast<int>(std::lround(fraction * kWidth));
    out_ << "\r[" << std::string(static_cast<std::size_t>(filled), '#')
         << std::string(static_cast<std::size_t>(kWidth - filled), '.') << "] " << counts << "  "
         << last.substr(0, 40) << "\x1b[K" << std::flush;
    return;
  }
  if (now - last_line_s_ < line_every_s_ && done != total && done != first_done_) return;
  last_line_s_ = now;
  out_ << label_ << ": " << counts << (last.empty() ? "" : ", last: " + last) << '\n' << std::flush;
}

void StreamProgress::finish() {
  if (terminal_) out_ << '\n' << std::flush;
}

}  // namespace stepsim::calib
