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

/// What a trace file holds: every op or one slice per action (microbatch level), and which
/// pipeline ranks (all when absent).
struct TraceShape {
  bool microbatch_level = false;
  std::optional<std::vector<std::int32_t>> ranks;
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

/// Writes the run's Chrome trace, shaped, to `trace_path`; returns the slices written.
/// Errors: the trace file cannot be written.
Result<std::size_t> write_trace_file(const PredictRun& run, const std::string& trace_path,
                                     const TraceShape& shape = {});

}  // namespace stepsim::sim
