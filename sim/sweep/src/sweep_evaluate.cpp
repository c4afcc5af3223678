// Evaluation of one sweep configuration: the cheap cuts first (max_gpus, Megatron's rules,
// analytic memory), then the simulation of a step, then the simulated constraints.

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>

#include "stepsim/config/layout_words.hpp"
#include "stepsim/plan/decompose.hpp"
#include "stepsim/memory/memory_model.hpp"
#include "stepsim/check/check.hpp"
#include "stepsim/simulate/simulate.hpp"
#include "stepsim/sweep/sweep.hpp"

namespace stepsim::sim {
namespace {

constexpr std::string_view kDataParallelColumn = "training.data_parallel_size";
constexpr std::string_view kMicrobatchesColumn = "training.num_microbatches";

std::string shortest(double v) {
  std::array<char, 32> buf{};
  const auto r = std::to_chars(buf.data(), buf.data() + buf.size(), v);
  return std::string(buf.data(), r.ptr);
}

std::string gib(double bytes) {
  std::array<char, 32> buf{};
  std::snprintf(buf.data(), buf.size(), "%.2f GiB", bytes / (1024.0 * 1024.0 * 1024.0));
  return buf.data();
}

bool is_training(KnobId id) {
  return knob_table()[static_cast<std::size_t>(id)].key.starts_with("training.");
}

}  // namespace

std::string_view to_string(SweepStatus s) {
  switch (s) {
    case SweepStatus::kFeasible:
      return "feasible";
    case SweepStatus::kInvalid:
      return "invalid";
    case SweepStatus::kOutOfMemory:
      return "out_of_memory";
    case SweepStatus::kOverBudget:
      return "over_budget";
    case SweepStatus::kOverGpus:
      return "over_max_gpus";
  }
  return "?";
}

std::vector<std::string> sweep_columns(const SweepSpec& spec) {
  std::vector<std::string> out;
  for (const SweepAxis& a : spec.axes) {
    if (!is_training(a.knob)) out.emplace_back(knob_table()[static_cast<std::size_t>(a.knob)].key);
  }
  const auto table = knob_table();
  for (std::size_t i = 0; i < table.size(); ++i) {
    if (is_training(static_cast<KnobId>(i))) out.emplace_back(table[i].key);
  }
  out.emplace_back(kDataParallelColumn);
  out.emplace_back(kMicrobatchesColumn);
  return out;
}

SweepEvaluator::SweepEvaluator(const SweepSpec& spec, std::vector<const CostModel*> cost_models)
    : spec_(spec), cost_models_(std::move(cost_models)) {
  for (const SweepAxis& a : spec.axes) {
    if (!is_training(a.knob)) extra_knobs_.push_back(a.knob);
    const std::string_view key = knob_table()[static_cast<std::size_t>(a.knob)].key;
    if (key != "training.world_size" && !layout_words_show(key)) {
      label_knobs_.push_back(a.knob);
    }
  }
}

std::vector<std::string> SweepEvaluator::knob_values(const Workload& w) const {
  std::vector<std::string> out;
  for (KnobId id : extra_knobs_) {
    const KnobInfo& info = knob_table()[static_cast<std::size_t>(id)];
    out.push_back(info.kind == KnobKind::kSystem ? w.system.name
                                                 : format_knob_value(id, info.get(w), {}));
  }
  const auto table = knob_table();
  for (std::size_t i = 0; i < table.size(); ++i) {
    const auto id = static_cast<KnobId>(i);
    if (is_training(id)) out.push_back(format_knob_value(id, table[i].get(w), {}));
  }
  out.push_back(std::to_string(w.training.data_parallel_size));
  out.push_back(std::to_string(w.training.num_microbatches));
  return out;
}

std::string SweepEvaluator::label(const Workload& w) const {
  std::string out = "w" + std::to_string(w.training.world_size) + ' ' + layout_words(w);
  for (KnobId id : label_knobs_) {
    const KnobInfo& info = knob_table()[static_cast<std::size_t>(id)];
    const std::string_view key = info.key.substr(info.key.rfind('.') + 1);
    out += ' ';
    out += key;
    out += '=';
    out += info.kind == KnobKind::kSystem ? w.system.name : format_knob_value(id, info.get(w), {});
  }
  return out;
}

std::vector<CostMemo> SweepEvaluator::cost_memos() const {
  std::vector<CostMemo> memos;
  memos.reserve(cost_models_.size());
  for (const CostModel* model : cost_models_) memos.emplace_back(*model);
  return memos;
}

SweepRow SweepEvaluator::evaluate(SweepConfig& config) const {
  return evaluate(config, cost_memos());
}

SweepRow SweepEvaluator::evaluate(SweepConfig& config, const std::vector<CostMemo>& memos) const {
  STEPSIM_ASSERT(memos.size() == cost_models_.size());
  Workload& w = config.workload;
  const Errors errors = finalize_workload(w, spec_.file);
  SweepRow row;
  row.index = config.index;
  row.knobs = knob_values(w);
  row.label = label(w);
  const SweepConstraints& c = spec_.constraints;
  if (c.max_gpus > 0 && w.training.world_size > c.max_gpus) {
    row.status = SweepStatus::kOverGpus;
    row.reason_key = "constraints.max_gpus";
    row.reason = "world_size=" + std::to_string(w.training.world_size) +
                 " exceeds max_gpus=" + std::to_string(c.max_gpus);
    return row;
  }
  if (!errors.empty()) {
    row.status = SweepStatus::kInvalid;
    row.reason_key = errors.front().key;
    row.reason = errors.front().key + errors.front().message;
    if (errors.size() > 1) row.reason += " (+" + std::to_string(errors.size() - 1) + " more)";
    return row;
  }
  const double usable = static_cast<double>(w.system.memory_bytes) * (1.0 - c.memory_headroom);
  std::int64_t analytic_peak = 0;
  for (const StageMemory& s : analytic_memory(w))
    analytic_peak = std::max(analytic_peak, s.peak_bytes);
  row.metrics.analytic_peak_bytes = analytic_peak;
  if (static_cast<double>(analytic_peak) > usable * (1.0 + kAnalyticPruneMargin)) {
    row.status = SweepStatus::kOutOfMemory;
    row.reason_key = "memory.analytic";
    row.reason = "analytic peak " + gib(static_cast<double>(analytic_peak)) + " exceeds usable " +
                 gib(usable) + " (memory_headroom " + shortest(c.memory_headroom) + ")";
    return row;
  }
  const CostModel& cost = memos.at(static_cast<std::size_t>(config.system_variant));
  SimulateOptions options;
  if (Result<std::shared_ptr<const Schedule>> shared = schedules_->get(schedule_params_of(w));
      shared.ok()) {
    options.schedule = std::move(shared).value();
  }  // else simulate() builds it and reports the same error
  const Result<SimulationResult> sim = simulate(w, decompose(w), cost, options);
  if (!sim.ok()) {
    // An internal inconsistency, not bad input: keep going, but count and name it.
    row.status = SweepStatus::kInvalid;
    row.reason_key = "simulate";
    row.reason = sim.errors().front().key + sim.errors().front().message;
    return row;
  }
  const Prediction& p = sim->prediction;
  row.simulated = true;
  SweepMetrics& m = row.metrics;
  m.step_time_s = p.step_time_s;
  m.tokens_per_s = p.tokens_per_s;
  m.mfu = p.mfu;
  m.hfu = p.hfu;
  m.tflops_per_gpu = p.tflops_per_gpu;
  m.bubble_fraction = p.bubble_fraction;
  m.peak_memory_bytes = p.peak_memory_bytes;
  m.memory_headroom = w.system.memory_bytes > 0
                          ? 1.0 - static_cast<double>(p.peak_memory_bytes) /
                                      static_cast<double>(w.system.memory_bytes)
                          : 0.0;
  m.cp_compute_s = p.critical_path.compute_s;
  m.cp_tp_comm_s = p.critical_path.tp_comm_s;
  m.cp_p2p_s = p.critical_path.p2p_s;
  m.cp_dp_comm_s = p.critical_path.dp_comm_s;
  m.cp_optimizer_s = p.critical_path.optimizer_s;
  m.cp_bubble_s = p.critical_path.bubble_s;
  if (static_cast<double>(p.peak_memory_bytes) > usable) {
    row.status = SweepStatus::kOutOfMemory;
    row.reason_key = "memory.simulated";
    row.reason = "simulated peak " + gib(static_cast<double>(p.peak_memory_bytes)) +
                 " exceeds usable " + gib(usable);
    return row;
  }
  if (c.step_time_budget_s > 0 && p.step_time_s > c.step_time_budget_s) {
    row.status = SweepStatus::kOverBudget;
    row.reason_key = "constraints.step_time_budget_s";
    row.reason = "step time " + shortest(p.step_time_s) +
                 " s exceeds step_time_budget_s=" + shortest(c.step_time_budget_s);
  }
  return row;
}

}  // namespace stepsim::sim
