#pragma once
// Lane layout: which rows the timeline shows, in which order, for one trace or several
// (paired lanes: for each rank and stream, one row per trace, predicted above measured),
// and the step-time comparison of two traces.

#include <cstdint>
#include <string>
#include <vector>

#include "stepsim/gui/trace_model.hpp"

namespace stepsim::gui {

/// One row of the timeline: a lane of one trace.
struct LaneRow {
  std::uint32_t trace = 0;  ///< index into the list of traces
  std::uint32_t lane = 0;   ///< index into that trace's lanes
  std::int32_t rank = 0;
  std::int32_t stream = 0;
  std::string title;           ///< "r0 compute", with " · measured" when several traces
  bool first_of_rank = false;  ///< first row of its rank's group
};

struct LaneLayout {
  std::vector<LaneRow> rows;
};

/// Rows for `traces`: ranks ascending; within a rank streams ascending; within a stream one
/// row per trace, in the order given. Lanes without slices get no row.
LaneLayout build_layout(const std::vector<const TraceModel*>& traces);

/// Indices of `traces` in display order: a trace labelled "predicted" before one labelled
/// "measured", otherwise as given (stable).
std::vector<std::size_t> comparison_order(const std::vector<const TraceModel*>& traces);

/// Step times of two traces and their difference.
struct StepComparison {
  std::string label_a;  ///< the reference, e.g. "predicted"
  std::string label_b;  ///< e.g. "measured"
  double step_a_s = 0;
  double step_b_s = 0;
  double difference_s = 0;  ///< step_b_s - step_a_s
  double relative = 0;      ///< difference_s / step_a_s (0 when step_a_s is 0)
};

StepComparison compare_steps(const TraceModel& a, const TraceModel& b);

/// "predicted 1.234 s | measured 1.301 s | difference +67.0 ms (+5.4%)".
std::string comparison_text(const StepComparison& c);

/// A duration in the unit that reads best: "12.5 us", "3.20 ms", "1.234 s".
std::string format_duration_us(double us);

}  // namespace stepsim::gui
