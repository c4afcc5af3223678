#pragma once
// A whole sweep run, as `stepsim sweep` and the Python module's stepsim.sweep() do it: one
// cost model per system variant (the base's profile shared where it applies), the planner on
// a thread pool, the CSV or JSON rows file streamed (resumed from a partial CSV), and the
// split over ranks with rank 0 merging every rank's rows. The caller brings the transport
// (a gather function: MPI in the CLI) and the interruption flag; nothing here knows MPI,
// signals or terminals. Also the sweep's JSON writers.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "stepsim/cost/cost_model.hpp"
#include "stepsim/base/result.hpp"
#include "stepsim/sweep/sweep_spec.hpp"
#include "stepsim/sweep/sweep.hpp"

namespace stepsim::sim {

struct SweepPlanOptions {
  int jobs = 0;     ///< worker threads; 0: the hardware's concurrency
  std::string out;  ///< "" none; "*.json": every row as JSON; otherwise a CSV streamed
  bool resume = false;  ///< continue the partial CSV `out`: its complete rows are kept
  /// Split over ranks: this process evaluates indices with index % ranks == rank. With
  /// ranks > 1, `gather` must concatenate every rank's text on rank 0 (rank order) and
  /// return "" elsewhere; rank 0 then writes `out` and the summary.
  std::int64_t rank = 0;
  std::int64_t ranks = 1;
  std::function<std::string(const std::string&)> gather;
  const std::atomic<bool>* cancel = nullptr;  ///< set to stop handing out work
  /// After each row reached the outputs: rows fed so far (resumed ones included).
  std::function<void(std::int64_t fed)> progress;
  /// More receivers of every row in enumeration order (rank 0 only when split).
  std::vector<SweepSink*> sinks;
  /// A spec enumerating more configurations than this ("auto" knobs included) is refused
  /// before any is evaluated (bad input, naming "search").
  std::int64_t max_configurations = kMaxSweepConfigurations;
};

/// What a sweep run produced. With ranks > 1, only rank 0's is complete (`root`).
struct SweepPlan {
  bool root = true;
  std::unique_ptr<SweepSummary> summary;  ///< refers to the spec given to run_sweep_plan
  SweepRunStats stats;
  std::int64_t total = 0;    ///< configurations the sweep enumerates
  std::int64_t resumed = 0;  ///< rows taken from the partial CSV
  double wall_s = 0;
  int jobs = 1;
  std::int64_t ranks = 1;
  /// Which systems are priced how, when a profile cannot price them all (for stderr).
  std::vector<std::string> notes;
};

/// A failed run; the errors' kinds tell bad input (a profile, a CSV from another sweep: exit
/// 2) from a runtime failure (an output that cannot be written: exit 1), see exit_status.
struct SweepPlanOutcome {
  std::optional<SweepPlan> plan;
  Errors errors;
};

/// Runs the sweep `spec` (which must outlive the returned summary).
SweepPlanOutcome run_sweep_plan(const SweepSpec& spec, const SweepPlanOptions& options);

/// The workload of configuration `index` of the sweep (as enumerated, derived and checked
/// like the loader does), ready for sim::predict: what a viewer simulates when a sweep row
/// has no trace. A system the base's profile was not measured on is priced by its roofline,
/// as run_sweep_plan prices it. Errors: no such index, or the configuration breaks a rule.
Result<Workload> sweep_configuration(const SweepSpec& spec, std::int64_t index);

/// The `sweep --format json` summary: sweep, objective, evaluated, feasible, simulated,
/// wall_s, jobs, ranks, configurations_per_s, cut (by reason key), cut_rules, best (index,
/// Megatron flags, knob values, status, metrics), best_per_gpu_count, pareto (the whole
/// front), pareto_summary (the indices the text report shows).
void write_sweep_json(std::ostream& out, const SweepSummary& summary, double wall_s, int jobs,
                      std::int64_t ranks);

/// Collects every row; write() emits {"rows": [...]} in index order (`--out FILE.json`).
class JsonRowsSink final : public SweepSink {
 public:
  JsonRowsSink(std::vector<std::string> columns, SweepPricing pricing)
      : columns_(std::move(columns)), pricing_(pricing) {}
  void add(const SweepRow& row, const Workload& workload) override;
  void write(std::ostream& out) const;

 private:
  std::vector<std::string> columns_;
  SweepPricing pricing_;
  std::vector<SweepRow> rows_;
};

/// Writes one row as a flat JSON object keyed like the CSV's columns (index, the knob
/// columns, status, ..., cp_bubble_s): what a data frame takes as one record. Knob and metric
/// values are typed (numbers, booleans); an empty CSV cell is null. The cost columns
/// (usd_per_million_tokens, train_time_s, train_usd) come from `pricing`.
void write_sweep_record_json(std::ostream& out, const SweepRow& row,
                             const std::vector<std::string>& columns,
                             const SweepPricing& pricing);

}  // namespace stepsim::sim
