#pragma once
// TimelineDocument: what the timeline shows, independent of how it is drawn: the loaded
// traces in display order, their lane layout, the selected micro-batch and, on demand,
// each trace's critical path.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "stepsim/gui/critical_path.hpp"
#include "stepsim/gui/lanes.hpp"
#include "stepsim/gui/trace_model.hpp"

namespace stepsim::gui {

class TimelineDocument {
 public:
  TimelineDocument() = default;
  /// Takes the traces, puts predicted before measured and builds the layout.
  explicit TimelineDocument(std::vector<TraceModel> traces);

  const std::vector<TraceModel>& traces() const { return traces_; }
  const LaneLayout& layout() const { return layout_; }
  /// Latest slice end over all traces (relative µs).
  double end_us() const;
  std::size_t slice_count() const;
  /// Whether any slice of the open traces is of `kind` (the legend lists only those).
  bool has_kind(Kind kind) const { return kinds_present_[static_cast<std::size_t>(kind)]; }

  /// Micro-batch highlighted across all ranks; -1 for none.
  std::int32_t selected_microbatch() const { return selected_microbatch_; }
  void set_selected_microbatch(std::int32_t mb) { selected_microbatch_ = mb; }

  bool show_critical_path() const { return show_critical_path_; }
  /// Turning it on computes the paths once.
  void set_show_critical_path(bool on);
  /// Critical path of trace `t`; empty until set_show_critical_path(true).
  const CriticalPath& critical_path_of(std::size_t t) const { return paths_[t]; }

 private:
  std::vector<TraceModel> traces_;
  LaneLayout layout_;
  std::vector<CriticalPath> paths_;
  bool paths_done_ = false;
  bool show_critical_path_ = false;
  std::int32_t selected_microbatch_ = -1;
  std::array<bool, kKindCount> kinds_present_{};
};

/// Hover text of a slice, one "field: value" per line: name, kind, op, micro-batch, chunk,
/// layer, start, duration, detail (fields that are -1 or empty left out).
std::string describe_slice(const TraceModel& model, SliceRef ref);

}  // namespace stepsim::gui
