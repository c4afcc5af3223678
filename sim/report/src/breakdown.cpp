// The report's summaries of a prediction: the bubble as one figure with its parts, and the
// warnings as one short line each (report.hpp).

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "stepsim/report/report.hpp"

namespace stepsim::sim {

BubbleBreakdown bubble_breakdown(const Prediction& p, const ScheduleParams& schedule) {
  BubbleBreakdown b;
  if (p.stages.empty()) return b;
  const std::vector<BubbleParts> parts = stage_bubble_parts(p.stages, schedule);
  for (std::size_t i = 0; i < parts.size(); ++i) {
    b.schedule_s += parts[i].schedule_s;
    b.imbalance_s += parts[i].imbalance_s;
    b.waits_s += parts[i].waits_s;
    b.total_s += p.stages[i].bubble_s;
  }
  const auto n = static_cast<double>(p.stages.size());
  b.total_s /= n;
  b.schedule_s /= n;
  b.imbalance_s /= n;
  b.waits_s /= n;
  b.fraction_of_step = p.step_time_s > 0 ? b.total_s / p.step_time_s : 0.0;
  return b;
}

namespace {

/// The cases a warning lists: "a; b; and 3 more" is 5, no list is 1.
std::size_t cases_of(const std::string& details) {
  std::size_t cases = 1, at = 0;
  while ((at = details.find("; ", at)) != std::string::npos) {
    at += 2;
    if (details.compare(at, 4, "and ") == 0 && at + 4 < details.size() &&
        std::isdigit(static_cast<unsigned char>(details[at + 4])) != 0) {
      cases += std::stoul(details.substr(at + 4));
      break;
    }
    ++cases;
  }
  return cases;
}

}  // namespace

std::vector<std::string> short_warnings(const std::vector<std::string>& warnings,
                                        std::size_t columns) {
  std::vector<std::string> out;
  for (const std::string& w : warnings) {
    // The category ends at the last ": " before the first detail's end ("; "): categories
    // hold colons themselves ("GEMM shape beyond ...: efficiency clamped at its edge").
    const std::size_t colon = w.rfind(": ", w.find("; "));
    std::string head = w.substr(0, colon);
    std::string tail;
    if (colon != std::string::npos) {
      const std::size_t cases = cases_of(w.substr(colon + 2));
      tail = " (" + std::to_string(cases) + (cases == 1 ? " case" : " cases") + ")";
    }
    if (head.size() + tail.size() > columns) {  // cut at a word: "... measured ..."
      const std::size_t limit = columns > tail.size() + 4 ? columns - tail.size() - 4 : 0;
      const std::size_t cut = head.rfind(' ', limit);
      head = head.substr(0, cut == std::string::npos ? limit : cut) + " ...";
    }
    out.push_back(head + tail);
  }
  return out;
}

}  // namespace stepsim::sim
