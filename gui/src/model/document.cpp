#include "stepsim/gui/document.hpp"

#include <algorithm>

namespace stepsim::gui {

TimelineDocument::TimelineDocument(std::vector<TraceModel> traces) {
  std::vector<const TraceModel*> given;
  for (const TraceModel& t : traces) given.push_back(&t);
  for (std::size_t i : comparison_order(given)) traces_.push_back(std::move(traces[i]));
  std::vector<const TraceModel*> ordered;
  for (const TraceModel& t : traces_) ordered.push_back(&t);
  layout_ = build_layout(ordered);
  paths_.resize(traces_.size());
  for (const TraceModel& t : traces_) {
    for (const Lane& lane : t.lanes) {
      for (Kind k : lane.kind) kinds_present_[static_cast<std::size_t>(k)] = true;
    }
  }
}

double TimelineDocument::end_us() const {
  double end = 0;
  for (const TraceModel& t : traces_) end = std::max(end, t.end_us);
  return end;
}

std::size_t TimelineDocument::slice_count() const {
  std::size_t n = 0;
  for (const TraceModel& t : traces_) n += t.slice_count();
  return n;
}

void TimelineDocument::set_show_critical_path(bool on) {
  show_critical_path_ = on;
  if (!on || paths_done_) return;
  for (std::size_t t = 0; t < traces_.size(); ++t) paths_[t] = critical_path(traces_[t]);
  paths_done_ = true;
}

std::string describe_slice(const TraceModel& model, SliceRef ref) {
  const Lane& lane = model.lanes[ref.lane];
  const std::size_t i = ref.index;
  std::string out(model.slice_name(ref));
  auto field = [&](const char* key, const std::string& value) {
    if (value.empty()) return;
    out += '\n';
    out += key;
    out += ": ";
    out += value;
  };
  auto id = [](std::int32_t v) { return v < 0 ? std::string() : std::to_string(v); };
  field("kind", std::string(kind_label(lane.kind[i])));
  field("op", std::string(model.strings.get(lane.op[i])));
  field("micro-batch", id(lane.microbatch[i]));
  field("chunk", id(lane.chunk[i]));
  field("layer", id(lane.layer[i]));
  field("rank", std::to_string(lane.rank) + " (" + lane.name + ")");
  field("start", format_duration_us(lane.time.start_us[i]));
  field("duration", format_duration_us(lane.time.end_us[i] - lane.time.start_us[i]));
  field("detail", std::string(model.strings.get(lane.detail[i])));
  return out;
}

}  // namespace stepsim::gui
