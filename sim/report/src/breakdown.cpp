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
  const auto heaviest = std::max_element(
      p.stages.begin(), p.stages.end(),
      [](const StageSummary& a, const StageSummary& c) { return a.busy_s < c.busy_s; });
  // The schedule's own bubble on equal stages: (p-1) micro-batch slots of forward and
  // backward at the start and end of the step out of m (v*m with virtual stages).
  const double slots = static_cast<double>(schedule.virtual_size) * schedule.microbatches;
  const double per_microbatch_work = heaviest->busy_s - heaviest->optimizer_s;
  const double ideal =
      slots > 0 ? (schedule.pipeline_size - 1) * per_microbatch_work / slots : 0.0;
  for (const StageSummary& s : p.stages) {
    double idle = s.bubble_s;
    const double sched = std::min(idle, ideal);
    idle -= sched;
    const double imbalance = std::min(idle, heaviest->busy_s - s.busy_s);
    b.schedule_s += sched;
    b.imbalance_s += imbalance;
    b.waits_s += idle - imbalance;
    b.total_s += s.bubble_s;
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
