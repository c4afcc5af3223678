#pragma once
// TraceModel: one trace file held as flat arrays, one lane per (rank, stream), each lane's
// slices sorted by start, so that millions of slices can be queried and drawn per pixel.
// Pure data: no Qt, no drawing, no I/O (trace_reader.hpp fills it).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace stepsim::gui {

/// Slice category, the trace's `cat`; one colour each. kBubble is the idle time of a rank:
/// drawn hatched on compute lanes, and the kind of the slices of stepsim's "bubble" track.
enum class Kind : std::uint8_t {
  kForward,
  kBackwardInput,
  kBackwardWeight,
  kRecompute,
  kTensorComm,
  kPipelineComm,
  kDataComm,
  kOptimizer,
  // Categories of foreign traces: the PyTorch profiler's (Kineto) `cat` values.
  kGpuKernel,       ///< "kernel" (a GPU kernel that is not NCCL's)
  kNcclKernel,      ///< "kernel" whose name starts with "nccl": a collective or P2P on the GPU
  kMemcpy,          ///< "gpu_memcpy", "gpu_memset"
  kCudaRuntime,     ///< "cuda_runtime", "cuda_driver": host-side CUDA API calls
  kCpuOp,           ///< "cpu_op" (ATen operators)
  kPythonFunction,  ///< "python_function"
  kAnnotation,      ///< "user_annotation", "gpu_user_annotation" (record_function ranges)
  kOther,           ///< a `cat` neither format defines
  kBubble,
  kContextComm,  ///< "cp_comm": context-parallel exchanges of keys and values
  kWait,         ///< "wait": a measured call waiting for its last peer (stepsim validate)
};
inline constexpr std::size_t kKindCount = 19;

/// A kind from a slice's `cat` and name: stepsim's categories, the PyTorch profiler's (and
/// its older capitalised names: Kernel, Memcpy, Memset, Runtime, Operator, Python), NCCL
/// kernels told apart by name; kOther for anything else.
Kind kind_from_category_and_name(std::string_view category, std::string_view name);

/// The trace format's `cat` string of a kind ("forward", "tp_comm", ...; "bubble", "other").
std::string_view kind_category(Kind kind);
/// Human name for the legend ("Forward", "Backward (input grad)", ...).
std::string_view kind_label(Kind kind);
/// Kind of a `cat` string; kOther for strings the format does not define ("bubble" too: use
/// kind_from_category_and_name for slices).
Kind kind_from_category(std::string_view category);
/// True for TP, P2P and DP communication.
bool is_comm(Kind kind);

/// Stream ids (the trace's `tid`).
inline constexpr std::int32_t kStreamCompute = 0;
inline constexpr std::int32_t kStreamTensorComm = 1;
inline constexpr std::int32_t kStreamPipelineComm = 2;
inline constexpr std::int32_t kStreamDataComm = 3;
inline constexpr std::int32_t kStreamContextComm = 4;
/// "compute", "tp_comm", "pp_comm", "dp_comm", or "stream N" for other ids.
std::string stream_name(std::int32_t stream);

/// Interned strings (op names, details): many slices share few distinct values.
class StringTable {
 public:
  StringTable();
  /// Id of `text`, adding it when new. Id 0 is the empty string.
  std::uint32_t intern(std::string_view text);
  std::string_view get(std::uint32_t id) const { return strings_[id]; }
  std::size_t size() const { return strings_.size(); }

 private:
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::vector<std::string> strings_;
  std::unordered_map<std::string, std::uint32_t, Hash, std::equal_to<>> ids_;
};

/// Sorted, non-overlapping-or-not intervals with a running maximum of their ends, so that
/// the first interval reaching past a time is found by binary search. Times in microseconds.
struct Intervals {
  std::vector<double> start_us;
  std::vector<double> end_us;
  std::vector<double> max_end_us;  ///< max_end_us[i] = max(end_us[0..i]); non-decreasing

  std::size_t size() const { return start_us.size(); }
  /// First index whose interval may reach past `t_us` (max_end_us > t_us).
  std::size_t first_reaching(double t_us) const;
  /// First index with start_us >= t_us.
  std::size_t first_starting_at_or_after(double t_us) const;
  /// Recomputes max_end_us from end_us.
  void finish();
};

/// The slices of one (rank, stream), structure of arrays, sorted by start time.
struct Lane {
  std::int32_t rank = 0;
  std::int32_t stream = 0;
  std::string name;  ///< from thread_name metadata, else stream_name(stream)
  Intervals time;    ///< relative to the trace's origin
  std::vector<Kind> kind;
  std::vector<std::int32_t> microbatch;   ///< -1 for per-step work
  std::vector<std::int32_t> chunk;        ///< -1 for per-step work
  std::vector<std::int32_t> layer;        ///< -1 for per-step work
  std::vector<std::uint32_t> op;          ///< StringTable id
  std::vector<std::uint32_t> detail;      ///< StringTable id
  std::vector<std::uint32_t> name_begin;  ///< offset of the slice's name in TraceModel::names
  std::vector<std::uint32_t> name_size;
  /// 0 or 1, alternating at each change of (micro-batch, model chunk) along the lane (per-step
  /// work is band 0). Zoomed out, where a whole interleaved step is thousands
  /// of slices per pixel column, the painter shades odd bands so each micro-batch's span stays
  /// visible instead of one solid band. Filled by finish_model().
  std::vector<std::uint8_t> band;

  std::size_t size() const { return time.size(); }
};

/// True for stepsim's idle tracks, "bubble" and "exposed communication" (docs/trace.md):
/// they draw the rank's idle time, so they do not count as work when the viewer finds it.
bool is_idle_track(const Lane& lane);

/// A slice: lane index in TraceModel::lanes and index in that lane.
struct SliceRef {
  std::uint32_t lane = 0;
  std::uint32_t index = 0;
  bool operator==(const SliceRef&) const = default;
};

/// One stage's row of the `stepsim` summary (seconds, bytes).
struct StageSummary {
  std::int32_t stage = 0;
  double busy_s = 0;
  double bubble_s = 0;
  double exposed_comm_s = 0;
  std::int64_t peak_memory_bytes = 0;
  bool operator==(const StageSummary&) const = default;
};

/// One task of the simulator's critical chain (the `stepsim` object's `critical_chain`):
/// a span on one lane. Times in microseconds from the step's start (absolute, like `ts`).
struct ChainLink {
  std::int32_t rank = 0;
  std::int32_t stream = 0;
  double start_us = 0;
  double end_us = 0;
  bool operator==(const ChainLink&) const = default;
};

/// The trace's `stepsim` object, when present.
struct TraceSummary {
  bool present = false;
  std::string label;  ///< "predicted" | "measured"
  double step_time_s = 0;
  std::int32_t ranks = 0;
  std::int64_t memory_capacity_bytes = 0;  ///< 0 when unknown
  std::vector<StageSummary> stages;
  /// The engine's critical chain, first to last; empty for measured traces and traces of
  /// other tools (the viewer then recovers a path from the slices alone).
  std::vector<ChainLink> critical_chain;
};

/// Memory in use on one rank: a step function, bytes[i] from time_us[i] on.
struct MemorySeries {
  std::int32_t rank = 0;
  std::vector<double> time_us;  ///< relative to the trace's origin, non-decreasing
  std::vector<std::int64_t> bytes;
};

/// A whole trace file. Times are microseconds relative to `origin_us` (the earliest event).
struct TraceModel {
  std::string path;   ///< as given on the command line
  std::string label;  ///< summary label, else the file's name
  TraceSummary summary;
  double origin_us = 0;              ///< absolute `ts` of the earliest event
  double end_us = 0;                 ///< latest slice end, relative
  std::vector<Lane> lanes;           ///< sorted by (rank, stream)
  std::vector<MemorySeries> memory;  ///< sorted by rank
  /// Idle time per rank (gaps in the union of all its lanes within [0, end_us]), indexed
  /// like ranks().
  std::vector<Intervals> idle;
  std::vector<std::int32_t> rank_ids;  ///< ranks with slices or memory counters, ascending
  std::unordered_map<std::int32_t, std::string> rank_names;  ///< process_name metadata
  bool has_chunks = false;  ///< some slice has chunk > 0 (interleaved 1F1B): label chunks
  StringTable strings;
  std::string names;  ///< all slice names back to back (see Lane::name_begin)

  /// Total number of slices over all lanes.
  std::size_t slice_count() const;
  /// Ranks that have at least one slice or memory counter, ascending.
  const std::vector<std::int32_t>& ranks() const { return rank_ids; }
  /// Position of `rank` in ranks(), or -1.
  std::int64_t rank_position(std::int32_t rank) const;
  /// Index in `lanes` of (rank, stream), or -1.
  std::int64_t find_lane(std::int32_t rank, std::int32_t stream) const;
  /// Step time: the summary's when present, else the span of all slices.
  double step_time_s() const;
  /// Name of a slice.
  std::string_view slice_name(SliceRef ref) const;
  /// Latest end of the rank's slices (relative µs); 0 when it has none.
  double rank_end_us(std::int32_t rank) const;
};

/// Puts a model filled with absolute times in order: moves the origin to the earliest
/// event, sorts lanes by (rank, stream) and slices by start, and computes the running
/// maxima, the rank list and each rank's idle intervals. Every reader calls it last.
void finish_model(TraceModel& model);

}  // namespace stepsim::gui
