// The sweep's summary: counts by outcome and reason, the best configurations by the spec's
// objective and the Pareto front of throughput against peak memory, plus its text report.
// Built from rows in enumeration order, so it is the same for any number of jobs.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <ostream>

#include "stepsim/config/enum_names.hpp"
#include "stepsim/config/shipped.hpp"
#include "stepsim/import/import.hpp"
#include "stepsim/report/report.hpp"
#include "stepsim/sweep/sweep.hpp"

namespace stepsim::sim {

SweepSummary::SweepSummary(const SweepSpec& spec, std::vector<std::string> columns)
    : spec_(spec), columns_(std::move(columns)) {}

namespace {

/// Whole steps to train `tokens` at this row's step time (tokens per step recovered from
/// tokens/s x step time, an integer up to rounding).
double time_to_train_s(const SweepMetrics& m, std::int64_t tokens) {
  const auto per_step = static_cast<std::int64_t>(std::llround(m.tokens_per_s * m.step_time_s));
  if (per_step <= 0) return 0.0;
  const std::int64_t steps = tokens / per_step + (tokens % per_step != 0 ? 1 : 0);
  return static_cast<double>(steps) * m.step_time_s;
}

/// Throughput per GPU; the world size is the first knob column that names it.
double tokens_per_gpu(const SweepRow& r, const std::vector<std::string>& columns) {
  const auto world = std::find(columns.begin(), columns.end(), "training.world_size");
  const auto i = static_cast<std::size_t>(world - columns.begin());
  return r.metrics.tokens_per_s / static_cast<double>(std::stoll(r.knobs[i]));
}

}  // namespace

bool SweepSummary::better(const SweepRow& a, const SweepRow& b) const {
  const SweepMetrics& x = a.metrics;
  const SweepMetrics& y = b.metrics;
  switch (spec_.objective) {
    case SweepObjective::kMaxTokensPerS:
      if (x.tokens_per_s != y.tokens_per_s) return x.tokens_per_s > y.tokens_per_s;
      break;
    case SweepObjective::kMinStepTime:
      if (x.step_time_s != y.step_time_s) return x.step_time_s < y.step_time_s;
      break;
    case SweepObjective::kMinGpus: {
      // The world size is the first knob column that names it; compare it, then throughput.
      const auto world = std::find(columns_.begin(), columns_.end(), "training.world_size");
      const auto i = static_cast<std::size_t>(world - columns_.begin());
      const std::int64_t wa = std::stoll(a.knobs[i]);
      const std::int64_t wb = std::stoll(b.knobs[i]);
      if (wa != wb) return wa < wb;
      if (x.tokens_per_s != y.tokens_per_s) return x.tokens_per_s > y.tokens_per_s;
      break;
    }
    case SweepObjective::kMaxTokensPerSPerGpu: {
      const double pa = tokens_per_gpu(a, columns_);
      const double pb = tokens_per_gpu(b, columns_);
      if (pa != pb) return pa > pb;
      break;
    }
    case SweepObjective::kMinTimeToTrain: {
      const double ta = time_to_train_s(x, spec_.train_tokens);
      const double tb = time_to_train_s(y, spec_.train_tokens);
      if (ta != tb) return ta < tb;
      break;
    }
  }
  return a.index < b.index;
}

void SweepSummary::add(const SweepRow& row, const Workload& workload) {
  ++evaluated_;
  if (row.simulated) ++simulated_;
  if (row.status != SweepStatus::kFeasible) {
    ++cut_[row.reason_key];
    return;
  }
  ++feasible_;
  const auto top = static_cast<std::size_t>(spec_.top);
  if (top_.size() < top || better(row, top_.back().row)) {
    const auto at = std::find_if(top_.begin(), top_.end(),
                                 [&](const RankedConfig& r) { return better(row, r.row); });
    top_.insert(at, RankedConfig{row, workload});
    if (top_.size() > top) top_.pop_back();
  }
  const SweepMetrics& m = row.metrics;
  for (const RankedConfig& q : pareto_) {
    if (q.row.metrics.tokens_per_s >= m.tokens_per_s &&
        q.row.metrics.peak_memory_bytes <= m.peak_memory_bytes) {
      return;  // dominated (or equal to an earlier configuration)
    }
  }
  std::erase_if(pareto_, [&](const RankedConfig& q) {
    return m.tokens_per_s >= q.row.metrics.tokens_per_s &&
           m.peak_memory_bytes <= q.row.metrics.peak_memory_bytes;
  });
  const auto at = std::find_if(pareto_.begin(), pareto_.end(), [&](const RankedConfig& q) {
    return q.row.metrics.peak_memory_bytes > m.peak_memory_bytes;
  });
  pareto_.insert(at, RankedConfig{row, workload});
}

namespace {

std::string fmt(const char* format, double v) {
  std::array<char, 64> buf{};
  std::snprintf(buf.data(), buf.size(), format, v);
  return buf.data();
}

// The granularity, and full recomputation's method (uniform unless block): "full/block".
std::string recompute_label(const TrainingConfig& t) {
  std::string label(to_string(t.recompute_granularity));
  if (t.recompute_granularity == RecomputeGranularity::kFull) {
    label += "/" + std::string(to_string(t.recompute_method == RecomputeMethod::kBlock
                                             ? RecomputeMethod::kBlock
                                             : RecomputeMethod::kUniform));
  }
  return label;
}

std::string layout(const Workload& w) {
  const TrainingConfig& t = w.training;
  std::array<char, 160> buf{};
  std::snprintf(
      buf.data(), buf.size(), "%5lld %3lld %3lld %3lld %4lld %4lld %5lld %-3s %-12s %-4s",
      static_cast<long long>(t.world_size), static_cast<long long>(t.tensor_model_parallel_size),
      static_cast<long long>(t.pipeline_model_parallel_size),
      static_cast<long long>(t.virtual_pipeline_model_parallel_size),
      static_cast<long long>(t.data_parallel_size), static_cast<long long>(t.micro_batch_size),
      static_cast<long long>(t.num_microbatches), t.sequence_parallel ? "on" : "off",
      recompute_label(t).c_str(), t.use_distributed_optimizer ? "on" : "off");
  if (!w.model.moe()) return buf.data();
  // Mixture of experts: the expert parallel sizes and the dispatcher, which a sweep may vary.
  std::array<char, 64> moe{};
  std::snprintf(moe.data(), moe.size(), " %4lld %4lld %-9s",
                static_cast<long long>(t.expert_model_parallel_size),
                static_cast<long long>(t.expert_tensor_parallel()),
                std::string(to_string(t.moe_token_dispatcher_type)).c_str());
  return std::string(buf.data()) + moe.data();
}

constexpr const char* kLayoutHeader = " gpus   t   p   v   dp  mbs     m sp  recompute    dopt";
constexpr const char* kMoeHeader = "   ep  etp dispatch ";

/// A base without cost_model: the cost model it got, why, and how to ask for the other.
void write_default_cost_model(std::ostream& out, const SweepSpec& spec) {
  const CostModelSpec& cm = spec.base.cost_model;
  const std::string note = default_cost_model_note(cm, spec.base.system.gpu_name);
  if (note.empty()) return;
  out << "cost model: "
      << (cm.kind == CostModelSpec::Kind::kProfile
              ? "profile " + std::filesystem::path(cm.profile_path).filename().string()
              : "roofline " + spec.base.system.name)
      << " (" << note << ")\n";
}

std::string layout_header(const Workload& base) {
  return std::string(kLayoutHeader) + (base.model.moe() ? kMoeHeader : "");
}

}  // namespace

void write_sweep_text(std::ostream& out, const SweepSummary& s) {
  const SweepSpec& spec = s.spec();
  out << "sweep " << spec.file << ": " << s.evaluated() << " configurations, " << s.feasible()
      << " feasible, " << s.simulated() << " simulated (objective " << to_string(spec.objective)
      << ")\n";
  write_default_cost_model(out, spec);
  out << "swept:";
  for (const SweepAxis& axis : spec.axes) {
    out << "\n  " << knob_table()[static_cast<std::size_t>(axis.knob)].key << ": ";
    if (axis.automatic) {
      out << "auto";
      continue;
    }
    for (std::size_t i = 0; i < axis.values.size(); ++i) {
      out << (i > 0 ? ", " : "") << format_knob_value(axis.knob, axis.values[i], spec.systems);
    }
  }
  out << "\n";
  const auto after = [](const std::string& key) {
    return key == "memory.simulated" || key == "constraints.step_time_budget_s";
  };
  for (const bool simulated : {false, true}) {
    bool first = true;
    for (const auto& [key, n] : s.cut_by_reason()) {
      if (after(key) != simulated) continue;
      if (first)
        out << (simulated ? "infeasible after simulating:\n" : "cut without simulating:\n");
      first = false;
      out << "  " << key << std::string(key.size() < 44 ? 44 - key.size() : 1, ' ') << n << '\n';
    }
  }
  if (s.top().empty()) {
    out << "no feasible configuration\n";
    return;
  }
  out << "top " << s.top().size() << " by " << to_string(spec.objective) << ":\n";
  out << "  rank  index" << layout_header(spec.base)
      << "   step_s   tokens/s    MFU  headroom | critical path s: compute tp_comm p2p dp_comm "
         "optimizer bubble\n";
  std::int64_t rank = 1;
  for (const RankedConfig& r : s.top()) {
    const SweepMetrics& m = r.row.metrics;
    std::array<char, 256> buf{};
    std::snprintf(buf.data(), buf.size(),
                  "  %4lld %6lld %s %8.3f %10.1f %5.1f%% %8.1f%% | %.3f %.3f %.3f %.3f %.3f %.3f",
                  static_cast<long long>(rank++), static_cast<long long>(r.row.index),
                  layout(r.workload).c_str(), m.step_time_s, m.tokens_per_s, 100.0 * m.mfu,
                  100.0 * m.memory_headroom, m.cp_compute_s, m.cp_tp_comm_s, m.cp_p2p_s,
                  m.cp_dp_comm_s, m.cp_optimizer_s, m.cp_bubble_s);
    out << buf.data() << '\n';
  }
  out << "best as Megatron-LM flags:\n  " << megatron_args_of(s.top().front().workload) << '\n';
  if (spec.train_tokens > 0) {
    const RankedConfig& best = s.top().front();
    const TimeToTrain tt = time_to_train(best.workload, best.row.metrics.step_time_s,
                                         spec.train_tokens);
    out << "the best trains " << fmt("%.4g", static_cast<double>(tt.tokens)) << " tokens in "
        << tt.steps << " steps, " << fmt("%.1f days", tt.time_s / 86400.0) << ", "
        << fmt("%.0f GPU-hours", tt.gpu_hours) << '\n';
  }
  out << "Pareto front (tokens/s vs peak memory), " << s.pareto().size() << " configurations:\n";
  out << "   index" << layout_header(spec.base) << "   tokens/s  peak_GiB   step_s\n";
  for (const RankedConfig& r : s.pareto()) {
    const SweepMetrics& m = r.row.metrics;
    out << "  " << fmt("%6.0f", static_cast<double>(r.row.index)) << layout(r.workload) << ' '
        << fmt("%10.1f", m.tokens_per_s) << ' '
        << fmt("%9.2f", static_cast<double>(m.peak_memory_bytes) / (1024.0 * 1024.0 * 1024.0))
        << ' ' << fmt("%8.3f", m.step_time_s) << '\n';
  }
}

}  // namespace stepsim::sim
