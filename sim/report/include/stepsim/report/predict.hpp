#pragma once
// `stepsim predict` as a library call: the scenario's cost model, decomposition and one
// simulated step, with the report's writers in report.hpp. The CLI and the Python module
// both call this, so their JSON is the same document.

#include <optional>
#include <cstdint>
#include <string>
#include <vector>

#include "stepsim/base/result.hpp"
#include "stepsim/config/scenario.hpp"
#include "stepsim/simulate/simulate.hpp"

namespace stepsim::sim {

struct PredictOptions {
  bool keep_timeline = false;  ///< fill the timeline (for a trace file)
  bool gpipe = false;          ///< GPipe instead of Megatron's 1F1B
  std::vector<Straggler> stragglers;  ///< slower GPUs (see SimulateOptions)
  bool contention = true;  ///< false: `--no-contention`, every overlap free (SimulateOptions)
  bool full_rank = false;  ///< `--full-rank`: every GPU simulated (SimulateOptions)
  std::vector<SlowNic> slow_nics;  ///< `--slow-nic NODE=FACTOR` (full-rank)
  double jitter_sigma = 0;         ///< `--jitter SIGMA` (full-rank)
  std::uint64_t seed = 0;          ///< `--seed N`: the jitter's draws
  /// The scenarios folder whose open accuracy table (open_accuracy.hpp) the provenance
  /// quotes; empty: none quoted.
  std::string scenarios_dir;
};

/// How finely a trace draws the actions: every op, one slice per action and stream
/// (microbatch_level), or (kAuto, the default) every op when that trace stays within
/// kTraceBudgetBytes, else one slice per action.
enum class TraceLevel : std::uint8_t { kAuto, kOp, kMicrobatch };

/// The most bytes (uncompressed JSON) the default trace level writes at op level: a trace
/// Perfetto and chrome://tracing open in a browser tab (~50 MB).
inline constexpr std::int64_t kTraceBudgetBytes = 50'000'000;

/// What a trace file holds: its level, and which pipeline ranks (all when absent).
struct TraceShape {
  TraceLevel level = TraceLevel::kAuto;
  std::optional<std::vector<std::int32_t>> ranks;
};

/// What write_trace_file wrote: the slices, whether at micro-batch level, and the note
/// saying why when the default level chose it (empty otherwise).
struct TraceWritten {
  std::size_t slices = 0;
  bool microbatch_level = false;
  std::string note;
};

/// Errors of `shape` for the job `w`: a pipeline rank outside [0, pipeline_model_parallel_size)
/// (key "--trace-ranks"). Empty when the shape applies.
Errors check_trace_shape(const TraceShape& shape, const Workload& w);

struct PredictRun {
  SimulationResult result;
  std::string cost_model;  ///< the cost model's description (report's `cost_model`)
};

/// The run, or why not; the errors' kinds tell bad input (the cost model's profile, a
/// straggler outside the job, GPipe with virtual stages: exit 2) from an internal failure of
/// the simulation (a deadlock, a non-finite prediction: exit 1), see exit_status.
struct PredictOutcome {
  std::optional<PredictRun> run;
  Errors errors;
};

PredictOutcome predict(const Workload& w, const PredictOptions& options);

/// Writes the run's Chrome trace, shaped, to `trace_path` (gzip-compressed when it ends in
/// ".gz"); returns what it wrote. Errors: the trace file cannot be written.
Result<TraceWritten> write_trace_file(const PredictRun& run, const std::string& trace_path,
                                     const TraceShape& shape = {});

}  // namespace stepsim::sim
