// Chrome trace event JSON (the format of sim/README.md): one event per line so that large
// traces stay greppable and diffable.

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "stepsim/report/json_writer.hpp"
#include "stepsim/report/report.hpp"

namespace stepsim::sim {

namespace {

void write_event_prefix(std::ostream& out, bool& first) {
  out << (first ? "\n" : ",\n");
  first = false;
}

void write_us(std::ostream& out, double seconds) { JsonWriter::write_number(out, seconds * 1e6); }

// Receives get their own track: on one rank a send and a receive overlap in time without
// nesting (Megatron's batched send_forward_recv_backward), and one track must nest.
constexpr int kReceiveTid = static_cast<int>(kStreamCount);

int tid_of(const Slice& s) {
  if (s.stream == Stream::kPipelineComm && s.op.starts_with("recv")) return kReceiveTid;
  return static_cast<int>(s.stream);
}

// Each rank's idle stretches: the bubble's parts on one track, exposed communication on
// another (they never overlap on a rank, but a track per question reads best).
constexpr int kBubbleTid = kReceiveTid + 1;
constexpr int kExposedTid = kReceiveTid + 2;

int tid_of(const IdleSpan& s) { return s.kind == IdleKind::kExposedComm ? kExposedTid : kBubbleTid; }

std::string_view track_name(int tid) {
  if (tid == kReceiveTid) return "pp_recv";
  if (tid == kBubbleTid) return "bubble";
  if (tid == kExposedTid) return "exposed communication";
  return to_string(static_cast<Stream>(tid));
}

// "schedule bubble", "stage imbalance", "wait" or "exposed tp_comm".
std::string idle_name(const IdleSpan& s) {
  if (s.kind != IdleKind::kExposedComm) return std::string(to_string(s.kind));
  return "exposed " + std::string(to_string(s.stream));
}

void write_idle(const IdleSpan& s, std::ostream& out) {
  const bool exposed = s.kind == IdleKind::kExposedComm;
  out << "{\"ph\":\"X\",\"name\":\"" << idle_name(s) << "\",\"cat\":\""
      << (exposed ? "exposed_comm" : "bubble") << "\",\"pid\":" << s.rank
      << ",\"tid\":" << tid_of(s) << ",\"ts\":";
  write_us(out, s.start_s);
  out << ",\"dur\":";
  write_us(out, s.end_s - s.start_s);
  out << ",\"args\":{\"" << (exposed ? "stream" : "kind") << "\":\""
      << (exposed ? to_string(s.stream) : to_string(s.kind)) << "\"}}";
}

// The slice starts of each (rank, track), in time order (slices are sorted by start).
using LaneStarts = std::map<std::pair<std::int32_t, int>, std::vector<double>>;

// The start of the first (first = true) or last slice of `link`'s track that starts inside
// the link's span; nullopt when the track has none there (a rank left out by --trace-ranks).
std::optional<double> bound_start(const LaneStarts& lanes, const ChainLink& link, bool first) {
  auto it = lanes.find({link.rank, static_cast<int>(link.stream)});
  if (it == lanes.end()) return std::nullopt;
  const std::vector<double>& starts = it->second;
  // Slice times are sums of the same doubles as the link's: allow rounding, nothing more.
  const double eps = 1e-12 * std::max(1.0, std::abs(link.end_s));
  const auto lo = std::lower_bound(starts.begin(), starts.end(), link.start_s - eps);
  const auto hi = std::lower_bound(starts.begin(), starts.end(), link.end_s - eps);
  if (lo == hi) return std::nullopt;
  return first ? *lo : *(hi - 1);
}

// The critical chain as flow events, one arrow per step between consecutive links that
// both have slices in the trace: it leaves the last slice of a link and enters the first
// slice of the next ("bp":"e" binds the arrow's head to the enclosing slice).
void write_chain_flows(const Timeline& timeline, std::ostream& out, bool& first) {
  LaneStarts lanes;
  for (const Slice& s : timeline.slices) {
    if (s.end_s > s.start_s) lanes[{s.rank, tid_of(s)}].push_back(s.start_s);
  }
  const std::vector<ChainLink>& chain = timeline.critical_chain;
  std::int64_t id = 0;
  for (std::size_t i = 1; i < chain.size(); ++i) {
    const std::optional<double> from = bound_start(lanes, chain[i - 1], false);
    const std::optional<double> to = bound_start(lanes, chain[i], true);
    if (!from || !to) continue;
    ++id;
    write_event_prefix(out, first);
    out << "{\"ph\":\"s\",\"name\":\"critical path\",\"cat\":\"critical_path\",\"id\":" << id
        << ",\"pid\":" << chain[i - 1].rank << ",\"tid\":" << static_cast<int>(chain[i - 1].stream)
        << ",\"ts\":";
    write_us(out, *from);
    out << "}";
    write_event_prefix(out, first);
    out << "{\"ph\":\"f\",\"bp\":\"e\",\"name\":\"critical path\",\"cat\":\"critical_path\",\"id\":"
        << id << ",\"pid\":" << chain[i].rank << ",\"tid\":" << static_cast<int>(chain[i].stream)
        << ",\"ts\":";
    write_us(out, *to);
    out << "}";
  }
}

}  // namespace

std::int64_t estimate_trace_bytes(const Timeline& timeline) {
  // Each kind of event's fixed text (keys, punctuation, numbers) as written, plus its strings.
  constexpr std::int64_t kSlice = 165, kCounter = 90, kIdle = 150, kFlow = 220;
  std::int64_t bytes = 0;
  for (const Slice& s : timeline.slices) {
    bytes += kSlice + static_cast<std::int64_t>(s.name.size() + s.op.size() + s.detail.size());
  }
  for (const auto& curve : timeline.memory) {
    bytes += kCounter * static_cast<std::int64_t>(curve.size());
  }
  bytes += kIdle * static_cast<std::int64_t>(timeline.idle.size());
  bytes += kFlow * static_cast<std::int64_t>(timeline.critical_chain.size());
  return bytes;
}

void write_chrome_trace(const Timeline& timeline, const std::vector<StageSummary>& stages,
                        std::ostream& out, const TraceMeta& meta) {
  out << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[";
  bool first = true;
  std::set<std::pair<std::int32_t, int>> lanes;
  for (const Slice& s : timeline.slices) lanes.insert({s.rank, tid_of(s)});
  for (const IdleSpan& s : timeline.idle) lanes.insert({s.rank, tid_of(s)});
  for (std::int32_t r = 0; r < timeline.ranks; ++r) {
    write_event_prefix(out, first);
    out << "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" << r
        << ",\"args\":{\"name\":\"stage " << r << "\"}}";
    write_event_prefix(out, first);
    out << "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":" << r
        << ",\"args\":{\"sort_index\":" << r << "}}";
  }
  for (const auto& [rank, stream] : lanes) {
    write_event_prefix(out, first);
    out << "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" << rank << ",\"tid\":" << stream
        << ",\"args\":{\"name\":\"" << track_name(stream) << "\"}}";
  }
  for (const Slice& s : timeline.slices) {
    write_event_prefix(out, first);
    out << "{\"ph\":\"X\",\"name\":";
    JsonWriter::write_string(out, s.name);
    out << ",\"cat\":\"" << to_string(s.kind) << "\",\"pid\":" << s.rank
        << ",\"tid\":" << tid_of(s) << ",\"ts\":";
    write_us(out, s.start_s);
    out << ",\"dur\":";
    write_us(out, s.end_s - s.start_s);
    out << ",\"args\":{\"mb\":" << s.microbatch << ",\"chunk\":" << s.chunk
        << ",\"layer\":" << s.layer << ",\"op\":";
    JsonWriter::write_string(out, s.op);
    out << ",\"detail\":";
    JsonWriter::write_string(out, s.detail);
    out << "}}";
  }
  for (const IdleSpan& s : timeline.idle) {
    write_event_prefix(out, first);
    write_idle(s, out);
  }
  for (std::size_t r = 0; r < timeline.memory.size(); ++r) {
    for (const MemoryPoint& m : timeline.memory[r]) {
      write_event_prefix(out, first);
      out << "{\"ph\":\"C\",\"name\":\"memory\",\"pid\":" << r << ",\"ts\":";
      write_us(out, m.time_s);
      out << ",\"args\":{\"bytes\":" << m.bytes << "}}";
    }
  }
  write_chain_flows(timeline, out, first);
  out << "\n],\n\"stepsim\":";
  JsonWriter j(out, 0);
  j.begin_object();
  j.field("label", std::string_view(timeline.label));
  j.field("step_time_s", timeline.step_time_s);
  j.field("ranks", timeline.ranks);
  j.field("memory_capacity_bytes", timeline.memory_capacity_bytes);
  if (!meta.level.empty()) j.field("trace_level", std::string_view(meta.level));
  if (!meta.note.empty()) j.field("trace_note", std::string_view(meta.note));
  write_stages_json(j, stages);
  if (!timeline.critical_chain.empty()) {
    j.key("critical_chain").begin_array();
    for (const ChainLink& link : timeline.critical_chain) {
      j.begin_object();
      j.field("rank", link.rank);
      j.field("tid", static_cast<std::int64_t>(link.stream));
      j.field("start_s", link.start_s);
      j.field("end_s", link.end_s);
      j.end_object();
    }
    j.end_array();
  }
  j.end_object();
  out << "}\n";
}

}  // namespace stepsim::sim
