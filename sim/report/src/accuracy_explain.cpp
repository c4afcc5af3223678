// stepsim accuracy --explain: per published run, what each mechanism adds to the predicted
// step, by predicting it again with that mechanism switched off (accuracy.hpp).

#include <cstdio>
#include <memory>
#include <ostream>

#include "stepsim/check/load.hpp"
#include "stepsim/cost/make_cost_model.hpp"
#include "stepsim/plan/decompose.hpp"
#include "stepsim/report/accuracy.hpp"
#include "stepsim/simulate/simulate.hpp"

namespace stepsim::sim {
namespace {

enum class Off { kNothing, kHost, kGemmMechanics, kSpread, kCommunication, kContention };
constexpr Off kMechanisms[] = {Off::kHost, Off::kGemmMechanics, Off::kSpread,
                               Off::kCommunication, Off::kContention};

/// The workload's cost model with one of its parts switched off: the host not modelled (no
/// host()), no spread (no spread()), or every collective and transfer free.
class Ablated final : public CostModel {
 public:
  Ablated(const CostModel& base, Off off) : base_(base), off_(off) {}
  double gemm_s(const GemmOp& op) const override { return base_.gemm_s(op); }
  double attention_s(const AttentionOp& op) const override { return base_.attention_s(op); }
  double memory_bound_s(const MemoryBoundOp& op) const override {
    return base_.memory_bound_s(op);
  }
  double collective_s(const CollectiveOp& op) const override {
    return off_ == Off::kCommunication ? 0.0 : base_.collective_s(op);
  }
  double p2p_s(const P2POp& op) const override {
    return off_ == Off::kCommunication ? 0.0 : base_.p2p_s(op);
  }
  std::string describe() const override { return base_.describe(); }
  std::vector<std::string> warnings() const override { return base_.warnings(); }
  Provenance provenance() const override { return base_.provenance(); }
  const HostCosts* host() const override {
    return off_ == Off::kHost ? nullptr : base_.host();
  }
  const MeasuredInterference* interference() const override { return base_.interference(); }
  const KernelSpread* spread() const override {
    return off_ == Off::kSpread ? nullptr : base_.spread();
  }

 private:
  const CostModel& base_;
  Off off_;
};

/// The predicted step of `w` with `off` switched off.
Result<double> step_without(Workload w, Off off) {
  // GEMM mechanics (gemm_waves.hpp) apply only where the system names its CTA tile by its
  // compute capability: without one, a GEMM takes its nearest samples' efficiency.
  if (off == Off::kGemmMechanics) w.system.compute_capability = 0;
  Result<std::unique_ptr<CostModel>> cost = make_cost_model(w);
  if (!cost.ok()) return cost.errors();
  const Ablated ablated(**cost, off);
  SimulateOptions options;
  options.contention = off != Off::kContention;
  Result<SimulationResult> r = simulate(w, decompose(w), ablated, options);
  if (!r.ok()) return r.errors();
  return r->prediction.step_time_s;
}

std::string percent(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", 100.0 * v);
  return buf;
}

}  // namespace

const std::vector<Mechanism>& explained_mechanisms() {
  static const std::vector<Mechanism> kList{
      {"host",
       "the host's issue of every kernel and its synchronisations (the profile's host model); "
       "off: kernels start when their stream and inputs allow"},
      {"GEMM mechanics",
       "tiles, waves, split-K, memory floor and launches of every GEMM (gemm_waves.hpp); off: "
       "a GEMM at its nearest samples' efficiency (the system's compute capability cleared)"},
      {"spread",
       "the wait for the slowest rank at each synchronisation (the profile's kernel spread); "
       "off: no spread"},
      {"communication",
       "every collective and point-to-point transfer; off: all of them free"},
      {"contention",
       "links shared between transfers and compute-communication interference; off: "
       "predict --no-contention"},
  };
  return kList;
}

Result<ExplainReport> accuracy_explain(const std::vector<PublishedRun>& runs,
                                       const std::string& scenarios_dir) {
  Result<AccuracyReport> base = accuracy_report(runs, scenarios_dir);
  if (!base.ok()) return base.errors();
  ExplainReport out;
  out.mean_adds.assign(std::size(kMechanisms), 0.0);
  Errors errors;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const AccuracyRow& row = base->rows[i];
    Result<Workload> w = load_scenario_file(runs[i].scenario, LoadOptions{scenarios_dir});
    if (!w.ok()) return w.errors();
    ExplainRow e{row.name, row.error, {}};
    for (std::size_t m = 0; m < std::size(kMechanisms); ++m) {
      Result<double> without = step_without(*w, kMechanisms[m]);
      if (!without.ok()) return without.errors();
      const double adds = (row.predicted_step_s - *without) / row.measured_step_s;
      e.adds.push_back(adds);
      out.mean_adds[m] += adds / static_cast<double>(runs.size());
    }
    out.rows.push_back(std::move(e));
  }
  return out;
}

void write_explain_table(const ExplainReport& report, std::ostream& out) {
  const std::vector<Mechanism>& mechanisms = explained_mechanisms();
  out << "| run | error |";
  for (const Mechanism& m : mechanisms) out << " " << m.name << " |";
  out << "\n|---|---:|";
  for (std::size_t m = 0; m < mechanisms.size(); ++m) out << "---:|";
  out << "\n";
  for (const ExplainRow& r : report.rows) {
    out << "| " << r.name << " | " << percent(r.error) << " |";
    for (const double a : r.adds) out << " " << percent(a) << " |";
    out << "\n";
  }
  out << "| mean | |";
  for (const double a : report.mean_adds) out << " " << percent(a) << " |";
  out << "\n\neach column: what the mechanism adds to the predicted step, as a share of the "
         "measured one ((predicted - predicted without it) / measured), one mechanism switched "
         "off at a time; it finds what is missing and is never a correction:\n";
  for (const Mechanism& m : mechanisms) out << "  " << m.name << ": " << m.what << "\n";
}

}  // namespace stepsim::sim
