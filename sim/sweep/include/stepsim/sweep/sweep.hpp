#pragma once
// The sweep planner: enumerates the configurations of a SweepSpec in a fixed order, prunes
// the invalid ones (Megatron's rules, validate_workload) and those that clearly do not fit
// (analytic memory), simulates the survivors on a thread pool and hands every result, in
// enumeration order, to sinks (CSV writer, summary). No JSON, no files, no clock here.

#include <atomic>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "stepsim/cost/cost_model.hpp"
#include "stepsim/base/result.hpp"
#include "stepsim/config/scenario.hpp"
#include "stepsim/sweep/sweep_spec.hpp"
#include "stepsim/graph/cost_memo.hpp"
#include "stepsim/schedule/schedule_cache.hpp"

namespace stepsim::sim {

// ---------------------------------------------------------------- enumeration

/// One configuration: its position in enumeration order and its workload (knobs applied,
/// defaulted fields reset; finalize_workload derives and validates it).
struct SweepConfig {
  std::int64_t index = 0;
  std::int32_t system_variant = 0;  ///< index into system_variants(spec)
  Workload workload;
};

/// Enumerates a spec's configurations lazily, outermost knob first (knob_table() order);
/// "auto" ranges are computed from the knobs before them. Deterministic.
class SweepEnumerator {
 public:
  explicit SweepEnumerator(const SweepSpec& spec);
  /// Fills `out` with the next configuration; false when all were produced.
  bool next(SweepConfig& out);

 private:
  void enter(std::size_t level);  // computes the values of `level` from partial_[level]
  const SweepSpec& spec_;
  std::vector<std::vector<KnobValue>> values_;  // per axis, for the current prefix
  std::vector<std::size_t> pos_;                // per axis
  std::vector<Workload> partial_;               // partial_[k]: axes < k applied
  std::int64_t index_ = 0;
  bool started_ = false;
  bool done_ = false;
};

/// The most configurations one sweep enumerates, "auto" axes included (the listed values alone
/// are bounded by the same figure when the spec is loaded). At a few thousand configurations a
/// second a sweep of this size runs for about an hour on 2 cores.
inline constexpr std::int64_t kMaxSweepConfigurations = std::int64_t{1} << 24;

/// Number of configurations the spec enumerates (one pass), or `stop_after + 1` as soon as it
/// is known to enumerate more than `stop_after`.
std::int64_t count_configurations(
    const SweepSpec& spec, std::int64_t stop_after = std::numeric_limits<std::int64_t>::max() - 1);

/// The distinct systems of a sweep (the system file and system.* knobs are outermost, so
/// each configuration's system is one of these); one cost model is built per variant.
std::vector<SystemConfig> system_variants(const SweepSpec& spec);

/// The "auto" values of `knob` given the knobs already set on `w` (exposed for tests).
std::vector<KnobValue> auto_values(KnobId knob, const Workload& w, const SweepSpec& spec);

/// Resets the fields the base scenario left to Megatron's defaults (padded vocabulary,
/// ffn_hidden_size, group size, the derived form of the virtual stages, ...) so that
/// finalize_workload() re-derives them for the configuration's knobs, as the loader would.
void reset_derived_fields(Workload& w, const SweepSpec& spec);

// ---------------------------------------------------------------- evaluation

enum class SweepStatus : std::uint8_t {
  kFeasible,
  kInvalid,      ///< breaks a Megatron rule (validate_workload); not simulated
  kOutOfMemory,  ///< analytic (not simulated) or simulated peak above the usable memory
  kOverBudget,   ///< simulated step time above constraints.step_time_budget_s
  kOverGpus,     ///< world_size above constraints.max_gpus; not simulated
};

std::string_view to_string(SweepStatus s);

struct SweepMetrics {
  double step_time_s = 0;
  double tokens_per_s = 0;
  double mfu = 0;
  double hfu = 0;
  double tflops_per_gpu = 0;
  double bubble_fraction = 0;
  std::int64_t peak_memory_bytes = 0;    ///< simulated
  double memory_headroom = 0;            ///< 1 - peak / device memory (simulated peak)
  std::int64_t analytic_peak_bytes = 0;  ///< analytic model, worst stage
  double cp_compute_s = 0, cp_tp_comm_s = 0, cp_p2p_s = 0, cp_dp_comm_s = 0, cp_optimizer_s = 0,
         cp_bubble_s = 0;  ///< critical-path breakdown of the step
  bool operator==(const SweepMetrics&) const = default;
};

/// The outcome for one configuration: one CSV row.
struct SweepRow {
  std::int64_t index = 0;
  /// Short label ("w2520 t8 p35 v3 dp9 mbs1 m280 sp selective dopt", layout_words() and the
  /// swept knobs it leaves out as key=value): the CSV's `scenario` column, which
  /// stepsim-viewer shows for a point.
  std::string label;
  std::vector<std::string> knobs;  ///< printed knob values, one per sweep_columns() entry
  SweepStatus status = SweepStatus::kFeasible;
  std::string reason_key;  ///< "" when feasible; the key an error names, or memory.analytic ...
  std::string reason;      ///< the rule, in Megatron's vocabulary
  bool simulated = false;
  SweepMetrics metrics;
  bool operator==(const SweepRow&) const = default;
};

/// Knob columns of the CSV: every training knob, the derived sizes, and the swept model and
/// system knobs. Dotted names.
std::vector<std::string> sweep_columns(const SweepSpec& spec);

/// Evaluates configurations; thread-safe (const, shares the cost models read-only).
class SweepEvaluator {
 public:
  /// `cost_models[v]` prices configurations of system variant v; they must outlive this.
  SweepEvaluator(const SweepSpec& spec, std::vector<const CostModel*> cost_models);
  /// Finalizes `config.workload` (finalize_workload: Megatron's derivations and rules) and
  /// evaluates it.
  SweepRow evaluate(SweepConfig& config) const;
  /// The same with a worker's own memos of the cost models (from cost_memos(); one set per
  /// thread): what the thread pool uses.
  SweepRow evaluate(SweepConfig& config, const std::vector<CostMemo>& memos) const;
  /// One CostMemo per cost model, for one worker thread.
  std::vector<CostMemo> cost_memos() const;
  /// Printed knob values of a finalized `w` (the row's `knobs`).
  std::vector<std::string> knob_values(const Workload& w) const;
  /// The row's short label for a finalized `w`.
  std::string label(const Workload& w) const;

  /// Analytic peaks above usable memory by more than this fraction are cut without
  /// simulating; closer ones are simulated and judged by the simulated peak.
  static constexpr double kAnalyticPruneMargin = 0.05;

 private:
  const SweepSpec& spec_;
  std::vector<const CostModel*> cost_models_;
  std::vector<KnobId> extra_knobs_;  // swept model/system knobs printed as columns
  std::vector<KnobId> label_knobs_;  // swept knobs the label adds as key=value
  // Configurations differing only in knobs the schedule ignores share its schedule.
  std::unique_ptr<ScheduleCache> schedules_ = std::make_unique<ScheduleCache>();
};

// ---------------------------------------------------------------- running

/// Receives results in enumeration order (never concurrently).
class SweepSink {
 public:
  virtual ~SweepSink() = default;
  virtual void add(const SweepRow& row, const Workload& workload) = 0;
};

struct SweepRunOptions {
  int jobs = 1;  ///< worker threads (>= 1)
  /// Rows already known (resumed from a CSV, or gathered from other ranks), sorted by
  /// index: fed to the sinks in order instead of being evaluated.
  std::vector<SweepRow> known;
  /// Split over ranks: evaluate only indices with index % ranks == rank; others are skipped
  /// (unless known).
  std::int64_t rank = 0;
  std::int64_t ranks = 1;
  /// Set (e.g. by a SIGINT handler) to stop handing out work; what finished is still fed.
  const std::atomic<bool>* cancel = nullptr;
  /// Called after each row reached the sinks, with rows fed so far (under the runner's lock).
  std::function<void(std::int64_t fed)> progress;
};

struct SweepRunStats {
  std::int64_t enumerated = 0;  ///< configurations walked (all when not cancelled)
  std::int64_t evaluated = 0;   ///< evaluated in this run
  std::int64_t fed = 0;         ///< rows given to the sinks (known + evaluated)
  bool cancelled = false;
};

/// Runs the sweep. Known rows must match the enumeration (their knob values are compared);
/// a mismatch is an Error naming the row (the CSV is from another sweep).
Result<SweepRunStats> run_sweep(const SweepSpec& spec, const SweepEvaluator& evaluator,
                                const SweepRunOptions& options, std::vector<SweepSink*> sinks);

// ---------------------------------------------------------------- output

/// What a sweep's prices need: the price of a GPU-hour, the training run's tokens and where
/// the world size is among the knob columns (from sweep_pricing()).
struct SweepPricing {
  double price_per_gpu_hour = 0;  ///< 0: no price given
  std::int64_t train_tokens = 0;  ///< 0: no training run given
  std::size_t world_column = 0;   ///< index of training.world_size in sweep_columns()
};
SweepPricing sweep_pricing(const SweepSpec& spec);

/// A simulated configuration's cost and training time. Tokens per step are the row's
/// tokens/s x step time (global_batch_size x seq_length, rounded), a run takes whole steps.
struct RowCost {
  bool priced = false;                ///< a price was given
  bool trained = false;               ///< train_tokens was given
  double usd_per_million_tokens = 0;  ///< gpus x price / 3600 / tokens_per_s x 1e6
  double train_time_s = 0;            ///< ceil(train_tokens / tokens per step) x step_time_s
  double train_usd = 0;               ///< gpus x train_time_s / 3600 x price
};
/// The row's cost (all zero when it was not simulated).
RowCost row_cost(const SweepRow& row, const SweepPricing& pricing);
/// The row's world size (its training.world_size knob column).
std::int64_t row_world_size(const SweepRow& row, const SweepPricing& pricing);

/// Writes rows as CSV (RFC 4180), the header first when `write_header` (not when appending
/// to a resumed file); rows with index < first_index (already in the file) are not written.
class CsvSink final : public SweepSink {
 public:
  CsvSink(std::ostream& out, const std::vector<std::string>& columns, bool write_header,
          std::int64_t first_index, SweepPricing pricing = {});
  void add(const SweepRow& row, const Workload& workload) override;

 private:
  std::ostream& out_;
  std::int64_t first_index_;
  SweepPricing pricing_;
};

/// The CSV header line (no newline).
std::string csv_header(const std::vector<std::string>& columns);
/// One CSV line (no newline); the cost columns are filled from `pricing` when given.
std::string csv_line(const SweepRow& row, const SweepPricing* pricing = nullptr);

/// Parses a CSV written by CsvSink for `columns`. Returns the complete rows in file order and
/// the byte length of the file prefix they occupy (a torn last line is not counted).
struct ParsedCsv {
  std::vector<SweepRow> rows;
  std::size_t complete_bytes = 0;
};
Result<ParsedCsv> parse_sweep_csv(std::string_view text, const std::vector<std::string>& columns,
                                  const std::string& file_label);

/// A configuration kept for the summary.
struct RankedConfig {
  SweepRow row;
  Workload workload;
};

/// Configurations cut by one rule: the rule without the configuration's values
/// ("training.world_size is not divisible by tensor_model_parallel_size*..."), and the first
/// configuration cut by it with its values (the CSV's reason).
struct CutRule {
  std::string key;   ///< the reason key (the JSON's "cut" groups by it)
  std::string rule;  ///< the rule, without values
  bool after_simulating = false;
  std::int64_t count = 0;
  std::int64_t example_index = 0;
  std::string example;  ///< the first configuration's reason, with its values
};

/// The rule of a cut row: its reason without the configuration's values.
std::string cut_rule_of(const SweepRow& row);

/// Counts, top configurations, the best per GPU count and the Pareto front; deterministic
/// given rows in order.
class SweepSummary final : public SweepSink {
 public:
  SweepSummary(const SweepSpec& spec, std::vector<std::string> columns);
  void add(const SweepRow& row, const Workload& workload) override;

  std::int64_t evaluated() const { return evaluated_; }
  std::int64_t feasible() const { return feasible_; }
  std::int64_t simulated() const { return simulated_; }
  /// Configurations cut, by reason key (validation key, memory.analytic, ...).
  const std::map<std::string, std::int64_t>& cut_by_reason() const { return cut_; }
  /// Configurations cut, by rule: most configurations first, then by rule.
  std::vector<CutRule> cut_rules() const;
  /// The best feasible configurations by the spec's objective, best first.
  const std::vector<RankedConfig>& top() const { return top_; }
  /// The best feasible configuration of each world size, by the spec's objective.
  const std::map<std::int64_t, RankedConfig>& best_per_gpu_count() const { return per_gpus_; }
  /// Feasible configurations not beaten on both tokens/s and peak memory, by peak memory.
  const std::vector<RankedConfig>& pareto() const { return pareto_; }
  /// At most `rows` points of the front, evenly spaced along it (by position in peak-memory
  /// order), both ends included; all of it when it has no more.
  std::vector<const RankedConfig*> pareto_summary(std::size_t rows = kParetoSummaryRows) const;
  static constexpr std::size_t kParetoSummaryRows = 8;
  /// Indices into columns() of the knobs whose value differs between feasible configurations
  /// (the text tables show these, besides the layout's sizes).
  std::vector<std::size_t> varying_columns() const;
  const std::vector<std::string>& columns() const { return columns_; }
  const SweepSpec& spec() const { return spec_; }
  const SweepPricing& pricing() const { return pricing_; }
  /// Whether `a` ranks before `b` by the spec's objective (then by index).
  bool better(const SweepRow& a, const SweepRow& b) const;

 private:
  void add_cut(const SweepRow& row);
  void add_pareto(const SweepRow& row, const Workload& workload);
  const SweepSpec& spec_;
  std::vector<std::string> columns_;
  SweepPricing pricing_;
  std::int64_t evaluated_ = 0, feasible_ = 0, simulated_ = 0;
  std::map<std::string, std::int64_t> cut_;
  std::map<std::pair<bool, std::string>, CutRule> rules_;
  std::vector<RankedConfig> top_;
  std::map<std::int64_t, RankedConfig> per_gpus_;
  std::vector<RankedConfig> pareto_;
  std::vector<std::string> first_knobs_;  ///< the first feasible configuration's knob values
  std::vector<bool> varies_;              ///< per column: differs from first_knobs_
};

/// The text report: counts and the rules configurations were cut by, the top configurations
/// (the layout and every knob that varies as columns; step time, MFU, memory headroom, cost,
/// critical-path breakdown; Megatron flags of the best), the best per GPU count when the
/// sweep has several, and a summary of the Pareto front.
void write_sweep_text(std::ostream& out, const SweepSummary& summary);

}  // namespace stepsim::sim
