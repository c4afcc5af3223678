#include "stepsim/gui/lanes.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <utility>

namespace stepsim::gui {

LaneLayout build_layout(const std::vector<const TraceModel*>& traces) {
  // (rank, stream) -> for each trace the lane index, or -1.
  std::map<std::pair<std::int32_t, std::int32_t>, std::vector<std::int64_t>> keys;
  for (std::size_t t = 0; t < traces.size(); ++t) {
    const auto& lanes = traces[t]->lanes;
    for (std::size_t l = 0; l < lanes.size(); ++l) {
      if (lanes[l].size() == 0) continue;
      auto& slot = keys[{lanes[l].rank, lanes[l].stream}];
      slot.resize(traces.size(), -1);
      slot[t] = static_cast<std::int64_t>(l);
    }
  }
  LaneLayout layout;
  std::int32_t previous_rank = -1;
  bool first = true;
  for (const auto& [key, per_trace] : keys) {
    for (std::size_t t = 0; t < per_trace.size(); ++t) {
      if (per_trace[t] < 0) continue;
      LaneRow row;
      row.trace = static_cast<std::uint32_t>(t);
      row.lane = static_cast<std::uint32_t>(per_trace[t]);
      row.rank = key.first;
      row.stream = key.second;
      const Lane& lane = traces[t]->lanes[row.lane];
      row.title = "r";
      row.title += std::to_string(key.first);
      row.title += ' ';
      row.title += lane.name;
      if (traces.size() > 1) {
        row.title += " \u00b7 ";
        row.title += traces[t]->label;
      }
      row.first_of_rank = first || key.first != previous_rank;
      first = false;
      previous_rank = key.first;
      layout.rows.push_back(std::move(row));
    }
  }
  return layout;
}

std::vector<std::size_t> comparison_order(const std::vector<const TraceModel*>& traces) {
  std::vector<std::size_t> order(traces.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto rank_of = [&](std::size_t i) {
    const std::string& label = traces[i]->label;
    if (label == "predicted") return 0;
    if (label == "measured") return 2;
    return 1;
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return rank_of(a) < rank_of(b); });
  return order;
}

StepComparison compare_steps(const TraceModel& a, const TraceModel& b) {
  StepComparison c;
  c.label_a = a.label;
  c.label_b = b.label;
  c.step_a_s = a.step_time_s();
  c.step_b_s = b.step_time_s();
  c.difference_s = c.step_b_s - c.step_a_s;
  c.relative = c.step_a_s > 0 ? c.difference_s / c.step_a_s : 0;
  return c;
}

std::string format_duration_us(double us) {
  char buffer[64];
  const double magnitude = std::fabs(us);
  if (magnitude >= 1e6) {
    std::snprintf(buffer, sizeof buffer, "%.4g s", us * 1e-6);
  } else if (magnitude >= 1e3) {
    std::snprintf(buffer, sizeof buffer, "%.4g ms", us * 1e-3);
  } else {
    std::snprintf(buffer, sizeof buffer, "%.4g us", us);
  }
  return buffer;
}

std::string comparison_text(const StepComparison& c) {
  char relative[32];
  std::snprintf(relative, sizeof relative, "%+.1f%%", c.relative * 100.0);
  std::string out = c.label_a;
  out += ' ';
  out += format_duration_us(c.step_a_s * 1e6);
  out += " | ";
  out += c.label_b;
  out += ' ';
  out += format_duration_us(c.step_b_s * 1e6);
  out += " | difference ";
  if (c.difference_s >= 0) out += '+';
  out += format_duration_us(c.difference_s * 1e6);
  out += " (";
  out += relative;
  out += ')';
  return out;
}

}  // namespace stepsim::gui
