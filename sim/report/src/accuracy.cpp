#include "stepsim/report/accuracy.hpp"

#include <cmath>
#include <cstdio>
#include <ostream>

#include "stepsim/plan/decompose.hpp"
#include "stepsim/ops/flops.hpp"
#include "stepsim/check/load.hpp"
#include "stepsim/cost/make_cost_model.hpp"
#include "stepsim/simulate/simulate.hpp"

namespace stepsim::sim {

namespace {

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string percent(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%+.1f%%", 100.0 * v);
  return buf;
}

}  // namespace

double published_flops_per_iteration(const Workload& w, FlopsFormula formula) {
  switch (formula) {
    case FlopsFormula::kNarayanan2021Eq3: {
      // Narayanan et al. 2021 (arXiv:2104.04473), Section 5.1, eq. (3), the formula behind
      // Table 1: F = 96 B s l h^2 (1 + s/(6h) + V/(16 l h)), "All models use a vocabulary size
      // of 51,200".
      const double b = static_cast<double>(w.training.global_batch_size);
      const double s = static_cast<double>(w.model.seq_length);
      const double l = static_cast<double>(w.model.num_layers);
      const double h = static_cast<double>(w.model.hidden_size);
      const double v = 51200.0;
      return 96.0 * b * s * l * h * h * (1.0 + s / (6.0 * h) + v / (16.0 * l * h));
    }
    case FlopsFormula::kMegatron:
      return megatron_logged_flops_per_step(w);
  }
  return 0.0;
}

Result<AccuracyReport> accuracy_report(const std::vector<PublishedRun>& runs,
                                       const std::string& scenarios_dir) {
  AccuracyReport report;
  Errors errors;
  double sum_abs = 0;
  for (const PublishedRun& run : runs) {
    Result<Workload> w = load_scenario_file(run.scenario, LoadOptions{scenarios_dir});
    if (!w.ok()) {
      errors.insert(errors.end(), w.errors().begin(), w.errors().end());
      continue;
    }
    Result<std::unique_ptr<CostModel>> cost = make_cost_model(*w);
    Result<CostData> cost_data = cost_data_of(*w);
    if (!cost.ok() || !cost_data.ok()) {
      const Errors& bad = cost.ok() ? cost_data.errors() : cost.errors();
      errors.insert(errors.end(), bad.begin(), bad.end());
      continue;
    }
    const WorkloadPlan plan = decompose(*w);
    Result<SimulationResult> result = simulate(*w, plan, **cost, SimulateOptions{});
    if (!result.ok()) {
      for (const Error& e : result.errors()) {
        errors.push_back(Error{run.scenario, e.key, e.message});
      }
      continue;
    }
    AccuracyRow row;
    row.name = w->name;
    row.gpus = w->training.world_size;
    row.flops_per_iteration = published_flops_per_iteration(*w, run.formula);
    const double n = static_cast<double>(row.gpus);
    if (run.measured_step_s > 0) {  // the step time itself was published
      row.measured_step_s = run.measured_step_s;
      row.measured_tflops_per_gpu = row.flops_per_iteration / (run.measured_step_s * n) / 1e12;
    } else {
      row.measured_tflops_per_gpu = run.measured_tflops_per_gpu;
      row.measured_step_s = row.flops_per_iteration / (run.measured_tflops_per_gpu * 1e12 * n);
    }
    row.predicted_step_s = result->prediction.step_time_s;
    row.predicted_tflops_per_gpu = row.flops_per_iteration / (row.predicted_step_s * n) / 1e12;
    row.error = row.predicted_step_s / row.measured_step_s - 1.0;
    row.source = run.source;
    row.cost_data = std::move(cost_data).value();
    sum_abs += std::abs(row.error);
    report.rows.push_back(std::move(row));
  }
  if (!errors.empty()) return errors;
  if (!report.rows.empty())
    report.mean_absolute_error = sum_abs / static_cast<double>(report.rows.size());
  return report;
}

void write_accuracy_table(const AccuracyReport& report, std::ostream& out) {
  out << "| run | GPUs | measured TFLOP/s per GPU | predicted | measured step s | predicted step s "
         "| error |\n";
  out << "|---|---:|---:|---:|---:|---:|---:|\n";
  for (const AccuracyRow& r : report.rows) {
    out << "| " << r.name << " | " << r.gpus << " | " << fixed(r.measured_tflops_per_gpu, 1)
        << " | " << fixed(r.predicted_tflops_per_gpu, 1) << " | " << fixed(r.measured_step_s, 2)
        << " | " << fixed(r.predicted_step_s, 2) << " | " << percent(r.error) << " |\n";
  }
  out << "\nmean absolute error of the step time: " << fixed(100.0 * report.mean_absolute_error, 1)
      << "% over " << report.rows.size()
      << " runs (error = predicted / measured step time - 1; negative: stepsim is optimistic)\n";
}

}  // namespace stepsim::sim
