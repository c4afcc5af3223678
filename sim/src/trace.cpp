// Chrome trace event JSON (the format of sim/README.md): one event per line so that large
// traces stay greppable and diffable.

#include <array>
#include <set>

#include "stepsim/sim/json_writer.hpp"
#include "stepsim/sim/report.hpp"

namespace stepsim::sim {

namespace {

void write_event_prefix(std::ostream& out, bool& first) {
  out << (first ? "\n" : ",\n");
  first = false;
}

void write_us(std::ostream& out, double seconds) { JsonWriter::write_number(out, seconds * 1e6); }

}  // namespace

void write_chrome_trace(const Timeline& timeline, const std::vector<StageSummary>& stages,
                        std::ostream& out) {
  out << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[";
  bool first = true;
  std::set<std::pair<std::int32_t, int>> lanes;
  for (const Slice& s : timeline.slices) lanes.insert({s.rank, static_cast<int>(s.stream)});
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
        << ",\"args\":{\"name\":\"" << to_string(static_cast<Stream>(stream)) << "\"}}";
  }
  for (const Slice& s : timeline.slices) {
    write_event_prefix(out, first);
    out << "{\"ph\":\"X\",\"name\":";
    JsonWriter::write_string(out, s.name);
    out << ",\"cat\":\"" << to_string(s.kind) << "\",\"pid\":" << s.rank
        << ",\"tid\":" << static_cast<int>(s.stream) << ",\"ts\":";
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
  for (std::size_t r = 0; r < timeline.memory.size(); ++r) {
    for (const MemoryPoint& m : timeline.memory[r]) {
      write_event_prefix(out, first);
      out << "{\"ph\":\"C\",\"name\":\"memory\",\"pid\":" << r << ",\"ts\":";
      write_us(out, m.time_s);
      out << ",\"args\":{\"bytes\":" << m.bytes << "}}";
    }
  }
  out << "\n],\n\"stepsim\":";
  JsonWriter j(out, 0);
  j.begin_object();
  j.field("label", std::string_view(timeline.label));
  j.field("step_time_s", timeline.step_time_s);
  j.field("ranks", timeline.ranks);
  j.field("memory_capacity_bytes", timeline.memory_capacity_bytes);
  write_stages_json(j, stages);
  j.end_object();
  out << "}\n";
}

}  // namespace stepsim::sim
