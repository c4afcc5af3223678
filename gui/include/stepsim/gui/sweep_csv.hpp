#pragma once
// Sweep results (`stepsim sweep --out FILE.csv`): one row per configuration. The viewer
// plots throughput against peak memory and marks the Pareto front; a row with a trace path
// opens that configuration's timeline. Columns are found by their header names.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "stepsim/base/result.hpp"

namespace stepsim::gui {

/// Header names the viewer looks for (exact, case-sensitive).
inline constexpr std::string_view kSweepNameColumn = "scenario";             ///< optional row label
inline constexpr std::string_view kSweepThroughputColumn = "tokens_per_s";   ///< required
inline constexpr std::string_view kSweepMemoryColumn = "peak_memory_bytes";  ///< required
inline constexpr std::string_view kSweepTraceColumn = "trace";  ///< optional trace path
/// Optional status column; rows whose status is not kSweepFeasibleStatus are drawn apart and
/// left out of the Pareto front (`stepsim sweep` writes feasible, out_of_memory, ...).
inline constexpr std::string_view kSweepStatusColumn = "status";
inline constexpr std::string_view kSweepFeasibleStatus = "feasible";
/// Optional: the configuration's index in the sweep's enumeration (what a viewer given the
/// sweep file simulates when the row has no trace), and its step time (shown on hover).
inline constexpr std::string_view kSweepIndexColumn = "index";
inline constexpr std::string_view kSweepStepTimeColumn = "step_time_s";

/// Which columns to read; defaults are the constants above.
struct SweepColumns {
  std::string name{kSweepNameColumn};
  std::string throughput{kSweepThroughputColumn};
  std::string memory{kSweepMemoryColumn};
  std::string trace{kSweepTraceColumn};
  std::string status{kSweepStatusColumn};
  std::string feasible{kSweepFeasibleStatus};
  std::string index{kSweepIndexColumn};
  std::string step_time{kSweepStepTimeColumn};
};

struct SweepPoint {
  std::string label;  ///< the name column, else "column=value ..." of the other columns
  double tokens_per_s = 0;
  double peak_memory_bytes = 0;
  std::string trace_path;  ///< resolved against the CSV's folder; empty when none
  std::string status;      ///< the status cell; empty without a status column
  bool feasible = true;    ///< no status column, or status == SweepColumns::feasible
  std::int64_t index = -1;  ///< the index column; -1 without one
  double step_time_s = 0;   ///< the step time column; 0 without one
  std::size_t line = 0;    ///< line in the file (1-based; header is line 1)
};

struct SweepTable {
  std::string path;
  std::vector<std::string> header;
  std::vector<SweepPoint> points;
  bool has_trace_column = false;
  std::size_t skipped_rows = 0;  ///< rows without throughput or memory (e.g. not feasible)
};

/// Parses CSV text (RFC 4180 quoting). `file` names it in errors; relative trace paths are
/// resolved against `file`'s folder. Errors: missing required column, a row with the wrong
/// number of cells, a non-numeric throughput or memory value.
Result<SweepTable> parse_sweep_csv(std::string_view text, const std::string& file,
                                   const SweepColumns& columns = {});

/// Reads and parses the CSV file at `path`.
Result<SweepTable> read_sweep_csv(const std::string& path, const SweepColumns& columns = {});

/// Indices of the Pareto-optimal feasible points (no other feasible point has at least as
/// much throughput with at most as much memory and is better in one), by memory ascending.
std::vector<std::size_t> pareto_front(const std::vector<SweepPoint>& points);

}  // namespace stepsim::gui
