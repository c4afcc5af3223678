#include "stepsim/gui/trace_reader.hpp"

#include <cmath>
#include <filesystem>
#include <limits>
#include <unordered_map>

#include "json_scanner.hpp"
#include "summary_reader.hpp"

namespace stepsim::gui {

namespace {

using detail::JsonScanner;
using Token = JsonScanner::Token;

constexpr std::size_t kMaxErrors = 20;
// Times and sizes beyond these are no trace (31,700 years; an exabyte), and bounding them keeps
// ts + dur finite and every conversion to an integer defined.
constexpr double kMaxMicroseconds = 1e18;
constexpr double kMaxBytes = 1e18;

// The fields of an event and of its args the reader interprets, one bit each: a field given
// twice in one object is an error (JSON leaves it open which value counts).
enum FieldBit : std::uint32_t {
  kPh = 1u << 0, kName = 1u << 1, kCat = 1u << 2, kPid = 1u << 3, kTid = 1u << 4,
  kTs = 1u << 5, kDur = 1u << 6, kArgs = 1u << 7, kMb = 1u << 8, kChunk = 1u << 9,
  kLayer = 1u << 10, kBytes = 1u << 11, kOp = 1u << 12, kDetail = 1u << 13, kArgName = 1u << 14,
};

FieldBit field_bit(std::string_view key, bool in_args) {
  if (in_args) {
    if (key == "mb") return kMb;
    if (key == "chunk") return kChunk;
    if (key == "layer") return kLayer;
    if (key == "bytes") return kBytes;
    if (key == "op") return kOp;
    if (key == "detail") return kDetail;
    if (key == "name") return kArgName;
    return FieldBit{};
  }
  if (key == "ph") return kPh;
  if (key == "name") return kName;
  if (key == "cat") return kCat;
  if (key == "pid") return kPid;
  if (key == "tid") return kTid;
  if (key == "ts") return kTs;
  if (key == "dur") return kDur;
  if (key == "args") return kArgs;
  return FieldBit{};
}

// One event's fields as read; reused from event to event. Strings go straight where they
// are kept (the name into the model's name arena, op and detail into its string table), so
// reading an event copies no string.
struct Event {
  std::string ph, arg_name, category;
  Kind kind = Kind::kOther;
  std::size_t name_begin = 0, name_size = 0;
  std::uint32_t op = 0, detail = 0;
  bool has_pid = false, has_tid = false, has_ts = false, has_dur = false, has_bytes = false;
  double pid = 0, tid = 0, ts = 0, dur = 0, bytes = 0;
  double mb = -1, chunk = -1, layer = -1;

  void reset(std::size_t names_end) {
    ph.clear();
    arg_name.clear();
    category.clear();
    kind = Kind::kOther;
    name_begin = names_end;
    name_size = 0;
    op = detail = 0;
    has_pid = has_tid = has_ts = has_dur = has_bytes = false;
    mb = chunk = layer = -1;
  }
};

class TraceParser {
 public:
  TraceParser(std::string_view text, std::string file) : scan_(text), file_(std::move(file)) {
    model_.path = file_;
  }

  Result<TraceModel> run();

 private:
  bool parse_events();
  bool parse_event(std::size_t index);
  bool parse_args(std::size_t index);
  void add_event(std::size_t index);
  bool read_number_field(std::size_t index, std::string_view key, double& out);
  bool read_string_field(std::size_t index, std::string_view key, std::string& out);
  bool read_string_view(std::size_t index, std::string_view key, std::string_view& out);
  std::string_view event_name() const {
    return std::string_view(model_.names).substr(ev_.name_begin, ev_.name_size);
  }
  void problem(std::string key, std::string message);
  static std::string at(std::size_t index, std::string_view key) {
    return "traceEvents[" + std::to_string(index) + "]." + std::string(key);
  }
  Lane& lane_for(std::int32_t rank, std::int32_t stream);
  // Marks `key` of event `index` as read; false (and a problem) when it was read before.
  bool first_time(std::size_t index, std::string_view key, bool in_args);

  JsonScanner scan_;
  std::string file_;
  TraceModel model_;
  Errors errors_;
  bool truncated_ = false;
  Event ev_;
  std::uint32_t seen_ = 0;  // FieldBit of the fields of the current event read so far
  bool ev_valid_ = true;    // false once its args had a problem
  std::unordered_map<std::uint64_t, std::size_t> lane_index_;
  std::unordered_map<std::int32_t, std::size_t> memory_index_;
  std::unordered_map<std::uint64_t, std::string> thread_names_;
  std::uint64_t last_lane_key_ = std::numeric_limits<std::uint64_t>::max();
  std::size_t last_lane_ = 0;
};

std::uint64_t lane_key(std::int32_t rank, std::int32_t stream) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(rank)) << 32) |
         static_cast<std::uint32_t>(stream);
}

void TraceParser::problem(std::string key, std::string message) {
  if (errors_.size() >= kMaxErrors) {
    truncated_ = true;
    return;
  }
  errors_.push_back(Error{file_, std::move(key), std::move(message)});
}

Result<TraceModel> TraceParser::run() {
  bool have_events = false;
  std::string_view summary_text;
  bool ok = true;
  if (scan_.peek() == Token::kArray) {
    have_events = true;
    ok = parse_events();
  } else if (scan_.consume('{')) {
    if (!scan_.consume('}')) {
      do {
        std::string_view key;
        if (!scan_.read_key(key)) {
          ok = false;
          break;
        }
        if (key == "traceEvents") {
          if (scan_.peek() != Token::kArray) {
            problem("traceEvents", " must be an array of events");
            ok = scan_.skip_value();
          } else {
            have_events = true;
            ok = parse_events();
          }
        } else if (key == "stepsim") {
          const std::size_t begin = scan_.offset();
          ok = scan_.skip_value();
          summary_text = scan_.since(begin);
        } else {
          ok = scan_.skip_value();
        }
      } while (ok && scan_.consume(','));
      if (ok && !scan_.consume('}')) ok = scan_.fail("expected ',' or '}' after a member");
    }
  } else {
    ok = scan_.fail("expected a JSON object with traceEvents (a Chrome trace event file)");
  }
  if (ok && !scan_.at_end()) ok = scan_.fail("unexpected text after the end of the JSON value");
  if (!ok) return Error{file_, "", "not valid JSON: " + scan_.error()};

  if (!have_events && errors_.empty()) {
    problem("traceEvents",
            " is missing: expected Chrome trace event JSON with a traceEvents "
            "array of slices");
  }
  if (!summary_text.empty()) detail::read_summary(summary_text, file_, model_.summary, errors_);
  if (have_events && errors_.empty() && model_.slice_count() == 0) {
    problem("traceEvents", " has no slices (no event with ph \"X\"): nothing to show");
  }
  if (truncated_) errors_.push_back(Error{file_, "", "further problems not listed"});
  if (!errors_.empty()) return errors_;

  for (Lane& lane : model_.lanes) {
    auto it = thread_names_.find(lane_key(lane.rank, lane.stream));
    lane.name = it != thread_names_.end() ? it->second : stream_name(lane.stream);
  }
  model_.label = model_.summary.present && !model_.summary.label.empty()
                     ? model_.summary.label
                     : std::filesystem::path(file_).filename().string();
  finish_model(model_);
  return std::move(model_);
}

bool TraceParser::parse_events() {
  if (!scan_.consume('[')) return scan_.fail("expected '['");
  if (scan_.consume(']')) return true;
  std::size_t index = 0;
  do {
    if (!parse_event(index++)) return false;
  } while (scan_.consume(','));
  if (!scan_.consume(']')) return scan_.fail("expected ',' or ']' after an event");
  return true;
}

bool TraceParser::read_number_field(std::size_t index, std::string_view key, double& out) {
  if (scan_.peek() != Token::kNumber) {
    problem(at(index, key), " must be a number");
    return false;
  }
  return scan_.read_number(out);
}

bool TraceParser::read_string_view(std::size_t index, std::string_view key, std::string_view& out) {
  if (scan_.peek() != Token::kString) {
    problem(at(index, key), " must be a string");
    return false;
  }
  return scan_.read_string(out);
}

bool TraceParser::read_string_field(std::size_t index, std::string_view key, std::string& out) {
  std::string_view value;
  if (!read_string_view(index, key, value)) return false;
  out.assign(value);
  return true;
}

bool TraceParser::parse_event(std::size_t index) {
  if (scan_.peek() != Token::kObject) {
    problem("traceEvents[" + std::to_string(index) + "]", " must be an object");
    return scan_.skip_value();
  }
  scan_.consume('{');
  ev_.reset(model_.names.size());
  bool valid = true;
  seen_ = 0;
  if (!scan_.consume('}')) {
    do {
      std::string_view key;
      if (!scan_.read_key(key)) return false;
      if (!first_time(index, key, false)) valid = false;
      bool read = true;
      if (key == "ph") {
        read = read_string_field(index, key, ev_.ph);
      } else if (key == "name") {
        std::string_view value;
        read = read_string_view(index, key, value);
        if (read) {
          model_.names.resize(ev_.name_begin);  // a repeated key replaces the name
          model_.names += value;
          ev_.name_size = value.size();
        }
      } else if (key == "cat") {
        std::string_view value;
        read = read_string_view(index, key, value);
        if (read) ev_.category.assign(value);
      } else if (key == "pid") {
        read = ev_.has_pid = read_number_field(index, key, ev_.pid);
      } else if (key == "tid") {
        read = ev_.has_tid = read_number_field(index, key, ev_.tid);
      } else if (key == "ts") {
        read = ev_.has_ts = read_number_field(index, key, ev_.ts);
      } else if (key == "dur") {
        read = ev_.has_dur = read_number_field(index, key, ev_.dur);
      } else if (key == "args") {
        if (scan_.peek() != Token::kObject) {
          problem(at(index, key), " must be an object");
          read = false;
        } else if (!parse_args(index)) {
          return false;
        }
      } else if (!scan_.skip_value()) {
        return false;
      }
      if (!read) {
        valid = false;
        if (!scan_.error().empty() || !scan_.skip_value()) return false;
      }
    } while (scan_.consume(','));
    if (!scan_.consume('}')) return scan_.fail("expected ',' or '}' in an event");
  }
  if (valid && ev_valid_) add_event(index);
  ev_valid_ = true;
  return true;
}

bool TraceParser::first_time(std::size_t index, std::string_view key, bool in_args) {
  const FieldBit bit = field_bit(in_args ? key.substr(5) : key, in_args);
  if (bit == FieldBit{}) return true;
  if ((seen_ & bit) != 0) {
    problem(at(index, key), " is given twice in one event");
    return false;
  }
  seen_ |= bit;
  return true;
}

bool TraceParser::parse_args(std::size_t index) {
  scan_.consume('{');
  if (scan_.consume('}')) return true;
  do {
    std::string_view key;
    if (!scan_.read_key(key)) return false;
    bool read = true;
    std::string full = "args." + std::string(key);
    if (!first_time(index, full, true)) ev_valid_ = false;
    if (key == "mb" || key == "chunk" || key == "layer" || key == "bytes") {
      double value = 0;
      if (scan_.peek() == Token::kNull) {
        value = -1;
        read = scan_.skip_value();
      } else {
        read = read_number_field(index, full, value);
      }
      if (key == "mb") ev_.mb = value;
      if (key == "chunk") ev_.chunk = value;
      if (key == "layer") ev_.layer = value;
      if (key == "bytes") {
        ev_.bytes = value;
        ev_.has_bytes = read;
      }
    } else if (key == "op" || key == "detail") {
      const bool is_op = key == "op";
      std::string_view value;
      read = read_string_view(index, full, value);
      if (read) (is_op ? ev_.op : ev_.detail) = model_.strings.intern(value);
    } else if (key == "name" && scan_.peek() == Token::kString) {
      read = read_string_field(index, full, ev_.arg_name);
    } else if (!scan_.skip_value()) {
      return false;
    }
    if (!read && (!scan_.error().empty() || !scan_.skip_value())) return false;
  } while (scan_.consume(','));
  if (!scan_.consume('}')) return scan_.fail("expected ',' or '}' in args");
  return true;
}

Lane& TraceParser::lane_for(std::int32_t rank, std::int32_t stream) {
  const std::uint64_t key = lane_key(rank, stream);
  if (key != last_lane_key_) {
    auto [it, inserted] = lane_index_.try_emplace(key, model_.lanes.size());
    if (inserted) {
      model_.lanes.emplace_back();
      model_.lanes.back().rank = rank;
      model_.lanes.back().stream = stream;
    }
    last_lane_key_ = key;
    last_lane_ = it->second;
  }
  return model_.lanes[last_lane_];
}

// An id field (pid, tid, mb, chunk, layer) must be a whole number in int32's range.
bool whole(double v, double lowest) {
  return std::isfinite(v) && v >= lowest && v <= 2147483647.0 && std::floor(v) == v;
}

void TraceParser::add_event(std::size_t index) {
  // Only slices keep their name in the arena.
  const std::string name(ev_.ph == "X" ? std::string_view() : event_name());
  bool kept = false;
  struct Rollback {
    TraceModel& m;
    std::size_t begin;
    bool& kept;
    ~Rollback() {
      if (!kept) m.names.resize(begin);
    }
  } rollback{model_, ev_.name_begin, kept};
  if (ev_.ph.empty()) {
    problem(at(index, "ph"), " is missing: every event needs a phase (\"X\", \"C\", \"M\")");
    return;
  }
  const bool slice = ev_.ph == "X";
  const bool counter = ev_.ph == "C" && name == "memory";
  const bool meta = ev_.ph == "M";
  if (!slice && !counter && !meta) return;
  bool ok = true;
  auto require = [&](bool has, std::string_view key) {
    if (!has) {
      problem(at(index, key), " is missing (ph \"" + ev_.ph + "\" needs it)");
      ok = false;
    }
  };
  require(ev_.has_pid, "pid");
  if (ok && !whole(ev_.pid, 0)) {
    problem(at(index, "pid"), " must be a whole number >= 0 (the rank)");
    ok = false;
  }
  if (meta) {
    if (!ok) return;
    const auto rank = static_cast<std::int32_t>(ev_.pid);
    if (name == "process_name" && !ev_.arg_name.empty()) model_.rank_names[rank] = ev_.arg_name;
    if (name == "thread_name" && !ev_.arg_name.empty() && ev_.has_tid && whole(ev_.tid, 0)) {
      thread_names_[lane_key(rank, static_cast<std::int32_t>(ev_.tid))] = ev_.arg_name;
    }
    return;
  }
  require(ev_.has_ts, "ts");
  if (ok && !(std::isfinite(ev_.ts) && std::abs(ev_.ts) <= kMaxMicroseconds)) {
    problem(at(index, "ts"), " must be a number of microseconds within +-1e18");
    ok = false;
  }
  if (counter) {
    require(ev_.has_bytes, "args.bytes");
    if (ok && !(ev_.bytes >= 0 && ev_.bytes <= kMaxBytes)) {
      problem(at(index, "args.bytes"), " must be a number of bytes >= 0 and at most 1e18");
      ok = false;
    }
    if (!ok) return;
    const auto rank = static_cast<std::int32_t>(ev_.pid);
    auto [it, inserted] = memory_index_.try_emplace(rank, model_.memory.size());
    if (inserted) model_.memory.push_back(MemorySeries{rank, {}, {}});
    model_.memory[it->second].time_us.push_back(ev_.ts);
    model_.memory[it->second].bytes.push_back(static_cast<std::int64_t>(ev_.bytes));
    return;
  }
  require(ev_.has_tid, "tid");
  require(ev_.has_dur, "dur");
  if (!ok) return;
  if (!whole(ev_.tid, 0)) {
    problem(at(index, "tid"), " must be a whole number >= 0 (the stream)");
    ok = false;
  }
  if (!(std::isfinite(ev_.dur) && ev_.dur >= 0 && ev_.dur <= kMaxMicroseconds)) {
    problem(at(index, "dur"), " must be a number of microseconds >= 0 and at most 1e18");
    ok = false;
  }
  const std::pair<double, std::string_view> ids[] = {
      {ev_.mb, "args.mb"}, {ev_.chunk, "args.chunk"}, {ev_.layer, "args.layer"}};
  for (const auto& [value, key] : ids) {
    if (!whole(value, -1)) {
      problem(at(index, key), " must be a whole number >= -1 (-1 for per-step work)");
      ok = false;
    }
  }
  if (model_.names.size() > std::numeric_limits<std::uint32_t>::max()) {
    problem(at(index, "name"), " does not fit: slice names exceed 4 GiB in total");
    ok = false;
  }
  if (!ok) return;
  ev_.kind = kind_from_category_and_name(
      ev_.category, std::string_view(model_.names).substr(ev_.name_begin, ev_.name_size));
  Lane& lane = lane_for(static_cast<std::int32_t>(ev_.pid), static_cast<std::int32_t>(ev_.tid));
  lane.time.start_us.push_back(ev_.ts);
  lane.time.end_us.push_back(ev_.ts + ev_.dur);
  lane.kind.push_back(ev_.kind);
  lane.microbatch.push_back(static_cast<std::int32_t>(ev_.mb));
  lane.chunk.push_back(static_cast<std::int32_t>(ev_.chunk));
  lane.layer.push_back(static_cast<std::int32_t>(ev_.layer));
  lane.op.push_back(ev_.op);
  lane.detail.push_back(ev_.detail);
  lane.name_begin.push_back(static_cast<std::uint32_t>(ev_.name_begin));
  lane.name_size.push_back(static_cast<std::uint32_t>(ev_.name_size));
  kept = true;
}

}  // namespace

Result<TraceModel> parse_trace(std::string_view text, const std::string& file) {
  return TraceParser(text, file).run();
}

}  // namespace stepsim::gui
