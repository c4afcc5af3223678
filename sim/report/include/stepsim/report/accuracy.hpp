#pragma once
// The accuracy report: every published run (scenarios/published/runs.json) predicted with the
// current code and cost data, against what its authors measured. A report for finding what
// is missing, never a target: no constant may be tuned to it.

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "stepsim/config/published_runs.hpp"
#include "stepsim/base/result.hpp"
#include "stepsim/config/scenario.hpp"
#include "stepsim/report/open_accuracy.hpp"

namespace stepsim::sim {

struct AccuracyRow {
  std::string name;  ///< the scenario's name
  std::int64_t gpus = 0;
  double flops_per_iteration = 0;  ///< by the run's formula
  double measured_tflops_per_gpu = 0;
  double predicted_tflops_per_gpu = 0;
  double measured_step_s = 0;  ///< the iteration time the measured figure implies
  double predicted_step_s = 0;
  double error = 0;  ///< predicted / measured step time - 1 (negative: stepsim is optimistic)
  std::string source;
  CostData cost_data{};  ///< the profile or roofline it was priced with (open_accuracy.hpp)
  bool operator==(const AccuracyRow&) const = default;
};

struct AccuracyReport {
  std::vector<AccuracyRow> rows;
  double mean_absolute_error = 0;  ///< mean of |error|
  bool operator==(const AccuracyReport&) const = default;
};

/// FLOPs of one iteration of `w` counted by `formula`.
double published_flops_per_iteration(const Workload& w, FlopsFormula formula);

/// Loads every run's scenario (resolving systems and profiles under `scenarios_dir` as the
/// CLI does), predicts it and compares. Errors name the scenario file.
Result<AccuracyReport> accuracy_report(const std::vector<PublishedRun>& runs,
                                       const std::string& scenarios_dir);

/// The table `stepsim accuracy` prints (Markdown, so the README can show it as is).
void write_accuracy_table(const AccuracyReport& report, std::ostream& out);

/// A mechanism `stepsim accuracy --explain` switches off, through the model's own switch.
struct Mechanism {
  std::string name;  ///< the column's name, e.g. "host"
  std::string what;  ///< what it is and how it is switched off
};

/// The mechanisms --explain measures, in column order.
const std::vector<Mechanism>& explained_mechanisms();

/// One run explained: its error, and per mechanism (explained_mechanisms' order) what it adds
/// to the predicted step, as a share of the measured one: (predicted with it - predicted
/// without it) / measured step. An ablation, one mechanism off at a time: the shares need not
/// add up to anything, and none is a correction.
struct ExplainRow {
  std::string name;
  double error = 0;
  std::vector<double> adds;
};

struct ExplainReport {
  std::vector<ExplainRow> rows;
  std::vector<double> mean_adds;  ///< per mechanism, over the rows
};

/// Every run of `runs` predicted once with everything and once per mechanism without it.
Result<ExplainReport> accuracy_explain(const std::vector<PublishedRun>& runs,
                                       const std::string& scenarios_dir);

/// The table `stepsim accuracy --explain` prints (Markdown), and what each column switches off.
void write_explain_table(const ExplainReport& report, std::ostream& out);

}  // namespace stepsim::sim
