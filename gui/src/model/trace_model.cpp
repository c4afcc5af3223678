#include "stepsim/gui/trace_model.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <numeric>

namespace stepsim::gui {

namespace {

struct KindInfo {
  Kind kind;
  std::string_view category;
  std::string_view label;
};

constexpr std::array<KindInfo, kKindCount> kKinds = {{
    {Kind::kForward, "forward", "Forward"},
    {Kind::kBackwardInput, "backward_input", "Backward (input grad)"},
    {Kind::kBackwardWeight, "backward_weight", "Backward (weight grad)"},
    {Kind::kRecompute, "recompute", "Recompute"},
    {Kind::kTensorComm, "tp_comm", "TP comm"},
    {Kind::kPipelineComm, "pp_comm", "P2P (pipeline)"},
    {Kind::kDataComm, "dp_comm", "DP comm"},
    {Kind::kOptimizer, "optimizer", "Optimizer"},
    {Kind::kGpuKernel, "kernel", "GPU kernel"},
    {Kind::kNcclKernel, "nccl_kernel", "NCCL kernel"},
    {Kind::kMemcpy, "gpu_memcpy", "Memcpy / memset"},
    {Kind::kCudaRuntime, "cuda_runtime", "CUDA runtime"},
    {Kind::kCpuOp, "cpu_op", "CPU op"},
    {Kind::kPythonFunction, "python_function", "Python"},
    {Kind::kAnnotation, "user_annotation", "Annotation"},
    {Kind::kOther, "other", "Other"},
    {Kind::kBubble, "bubble", "Bubble (idle)"},
    {Kind::kContextComm, "cp_comm", "CP comm"},
    {Kind::kWait, "wait", "Waiting for a peer"},
}};

template <typename T>
void permute(std::vector<T>& values, const std::vector<std::size_t>& order) {
  std::vector<T> out;
  out.reserve(values.size());
  for (std::size_t i : order) out.push_back(values[i]);
  values = std::move(out);
}

void sort_lane(Lane& lane) {
  const auto& start = lane.time.start_us;
  if (std::is_sorted(start.begin(), start.end())) return;
  std::vector<std::size_t> order(lane.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return start[a] < start[b]; });
  permute(lane.time.start_us, order);
  permute(lane.time.end_us, order);
  permute(lane.kind, order);
  permute(lane.microbatch, order);
  permute(lane.chunk, order);
  permute(lane.layer, order);
  permute(lane.op, order);
  permute(lane.detail, order);
  permute(lane.name_begin, order);
  permute(lane.name_size, order);
}

// Alternates at each change of (micro-batch, chunk) in start order; slices of no micro-batch
// (optimizer, gradient reduction) are band 0 and leave the alternation where it was.
void band_lane(Lane& lane) {
  lane.band.assign(lane.size(), 0);
  std::uint8_t band = 0;
  std::int32_t mb = -1;
  std::int32_t chunk = -1;
  for (std::size_t i = 0; i < lane.size(); ++i) {
    if (lane.microbatch[i] >= 0 && (lane.microbatch[i] != mb || lane.chunk[i] != chunk)) {
      if (mb >= 0) band ^= 1U;
      mb = lane.microbatch[i];
      chunk = lane.chunk[i];
    }
    lane.band[i] = lane.microbatch[i] >= 0 ? band : 0;
  }
}

// Gaps in the union of the rank's lanes over [0, end_us]: a k-way merge by start time.
Intervals idle_of_rank(const TraceModel& model, std::int32_t rank) {
  std::vector<const Intervals*> lanes;
  for (const Lane& lane : model.lanes) {
    if (lane.rank == rank && lane.size() > 0 && !is_idle_track(lane)) lanes.push_back(&lane.time);
  }
  std::vector<std::size_t> next(lanes.size(), 0);
  Intervals idle;
  double covered = 0;
  while (true) {
    std::size_t best = lanes.size();
    double best_start = std::numeric_limits<double>::infinity();
    for (std::size_t l = 0; l < lanes.size(); ++l) {
      if (next[l] < lanes[l]->size() && lanes[l]->start_us[next[l]] < best_start) {
        best = l;
        best_start = lanes[l]->start_us[next[l]];
      }
    }
    if (best == lanes.size()) break;
    if (best_start > covered) {
      idle.start_us.push_back(covered);
      idle.end_us.push_back(best_start);
    }
    covered = std::max(covered, lanes[best]->end_us[next[best]]);
    ++next[best];
  }
  if (model.end_us > covered) {
    idle.start_us.push_back(covered);
    idle.end_us.push_back(model.end_us);
  }
  idle.finish();
  return idle;
}

}  // namespace

std::string_view kind_category(Kind kind) {
  return kKinds[static_cast<std::size_t>(kind)].category;
}

std::string_view kind_label(Kind kind) { return kKinds[static_cast<std::size_t>(kind)].label; }

Kind kind_from_category(std::string_view category) {
  for (const KindInfo& info : kKinds) {
    if (info.category == category && info.kind != Kind::kBubble) return info.kind;
  }
  return Kind::kOther;
}

Kind kind_from_category_and_name(std::string_view category, std::string_view name) {
  struct Alias {
    std::string_view category;
    Kind kind;
  };
  // Kineto's categories and the older profiler's capitalised ones.
  constexpr std::array<Alias, 12> kAliases = {{
      {"gpu_memset", Kind::kMemcpy},
      {"cuda_driver", Kind::kCudaRuntime},
      {"gpu_user_annotation", Kind::kAnnotation},
      {"Kernel", Kind::kGpuKernel},
      {"Memcpy", Kind::kMemcpy},
      {"Memset", Kind::kMemcpy},
      {"Runtime", Kind::kCudaRuntime},
      {"Operator", Kind::kCpuOp},
      {"Python", Kind::kPythonFunction},
      {"python_function", Kind::kPythonFunction},
      {"user_annotation", Kind::kAnnotation},
      {"cpu_op", Kind::kCpuOp},
  }};
  // stepsim's idle tracks (docs/trace.md): the bubble's parts, drawn as the idle fill, and
  // exposed communication, drawn as the communication it is ("exposed tp_comm").
  if (category == "bubble") return Kind::kBubble;
  if (category == "exposed_comm" && name.starts_with("exposed ")) {
    return kind_from_category(name.substr(8));
  }
  Kind kind = kind_from_category(category);
  if (kind == Kind::kOther) {
    for (const Alias& a : kAliases) {
      if (a.category == category) kind = a.kind;
    }
  }
  if (kind == Kind::kGpuKernel && name.starts_with("nccl")) kind = Kind::kNcclKernel;
  return kind;
}

bool is_idle_track(const Lane& lane) {
  return lane.name == "bubble" || lane.name == "exposed communication";
}

bool is_comm(Kind kind) {
  return kind == Kind::kTensorComm || kind == Kind::kPipelineComm || kind == Kind::kDataComm ||
         kind == Kind::kContextComm;
}

std::string stream_name(std::int32_t stream) {
  switch (stream) {
    case kStreamCompute:
      return "compute";
    case kStreamTensorComm:
      return "tp_comm";
    case kStreamPipelineComm:
      return "pp_comm";
    case kStreamDataComm:
      return "dp_comm";
    case kStreamContextComm:
      return "cp_comm";
    default:
      return "stream " + std::to_string(stream);
  }
}

StringTable::StringTable() { intern(""); }

std::uint32_t StringTable::intern(std::string_view text) {
  auto it = ids_.find(text);
  if (it != ids_.end()) return it->second;
  const auto id = static_cast<std::uint32_t>(strings_.size());
  strings_.emplace_back(text);
  ids_.emplace(strings_.back(), id);
  return id;
}

std::size_t Intervals::first_reaching(double t_us) const {
  auto it = std::upper_bound(max_end_us.begin(), max_end_us.end(), t_us);
  return static_cast<std::size_t>(it - max_end_us.begin());
}

std::size_t Intervals::first_starting_at_or_after(double t_us) const {
  auto it = std::lower_bound(start_us.begin(), start_us.end(), t_us);
  return static_cast<std::size_t>(it - start_us.begin());
}

void Intervals::finish() {
  max_end_us.resize(end_us.size());
  double running = -std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < end_us.size(); ++i) {
    running = std::max(running, end_us[i]);
    max_end_us[i] = running;
  }
}

std::size_t TraceModel::slice_count() const {
  std::size_t n = 0;
  for (const Lane& lane : lanes) n += lane.size();
  return n;
}

std::int64_t TraceModel::rank_position(std::int32_t rank) const {
  auto it = std::lower_bound(rank_ids.begin(), rank_ids.end(), rank);
  if (it == rank_ids.end() || *it != rank) return -1;
  return it - rank_ids.begin();
}

std::int64_t TraceModel::find_lane(std::int32_t rank, std::int32_t stream) const {
  for (std::size_t i = 0; i < lanes.size(); ++i) {
    if (lanes[i].rank == rank && lanes[i].stream == stream) return static_cast<std::int64_t>(i);
  }
  return -1;
}

double TraceModel::step_time_s() const {
  if (summary.present && summary.step_time_s > 0) return summary.step_time_s;
  return end_us * 1e-6;
}

std::string_view TraceModel::slice_name(SliceRef ref) const {
  const Lane& lane = lanes[ref.lane];
  return std::string_view(names).substr(lane.name_begin[ref.index], lane.name_size[ref.index]);
}

double TraceModel::rank_end_us(std::int32_t rank) const {
  double end = 0;
  for (const Lane& lane : lanes) {
    if (lane.rank == rank && lane.size() > 0) end = std::max(end, lane.time.max_end_us.back());
  }
  return end;
}

void finish_model(TraceModel& model) {
  double origin = std::numeric_limits<double>::infinity();
  for (const Lane& lane : model.lanes) {
    for (double s : lane.time.start_us) origin = std::min(origin, s);
  }
  for (const MemorySeries& series : model.memory) {
    for (double t : series.time_us) origin = std::min(origin, t);
  }
  if (origin == std::numeric_limits<double>::infinity()) origin = 0;
  model.origin_us = origin;

  std::sort(model.lanes.begin(), model.lanes.end(), [](const Lane& a, const Lane& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.stream < b.stream;
  });
  model.end_us = 0;
  model.has_chunks = false;
  for (Lane& lane : model.lanes) {
    for (std::int32_t c : lane.chunk) model.has_chunks = model.has_chunks || c > 0;
    for (double& s : lane.time.start_us) s -= origin;
    for (double& e : lane.time.end_us) e -= origin;
    sort_lane(lane);
    band_lane(lane);
    lane.time.finish();
    if (lane.size() > 0) model.end_us = std::max(model.end_us, lane.time.max_end_us.back());
  }

  std::stable_sort(model.memory.begin(), model.memory.end(),
                   [](const MemorySeries& a, const MemorySeries& b) { return a.rank < b.rank; });
  for (MemorySeries& series : model.memory) {
    for (double& t : series.time_us) t -= origin;
    if (!std::is_sorted(series.time_us.begin(), series.time_us.end())) {
      std::vector<std::size_t> order(series.time_us.size());
      std::iota(order.begin(), order.end(), std::size_t{0});
      std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return series.time_us[a] < series.time_us[b];
      });
      permute(series.time_us, order);
      permute(series.bytes, order);
    }
  }

  model.rank_ids.clear();
  for (const Lane& lane : model.lanes) model.rank_ids.push_back(lane.rank);
  for (const MemorySeries& series : model.memory) model.rank_ids.push_back(series.rank);
  std::sort(model.rank_ids.begin(), model.rank_ids.end());
  model.rank_ids.erase(std::unique(model.rank_ids.begin(), model.rank_ids.end()),
                       model.rank_ids.end());

  model.idle.clear();
  for (std::int32_t rank : model.rank_ids) model.idle.push_back(idle_of_rank(model, rank));
}

}  // namespace stepsim::gui
