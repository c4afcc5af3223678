// The sweep's summary: counts by outcome and by rule, the best configurations by the spec's
// objective (overall and per GPU count), the Pareto front of throughput against peak memory
// and which knobs vary among the feasible configurations. Built from rows in enumeration
// order, so it is the same for any number of jobs. The text report is sweep_text.cpp's.

#include <algorithm>
#include <cctype>
#include <cmath>

#include "stepsim/sweep/sweep.hpp"

namespace stepsim::sim {

SweepSummary::SweepSummary(const SweepSpec& spec, std::vector<std::string> columns)
    : spec_(spec),
      columns_(std::move(columns)),
      pricing_(sweep_pricing(spec)),
      varies_(columns_.size(), false) {}

namespace {

/// Whole steps to train `tokens` at this row's step time (tokens per step recovered from
/// tokens/s x step time, an integer up to rounding).
double time_to_train_s(const SweepMetrics& m, std::int64_t tokens) {
  const auto per_step = static_cast<std::int64_t>(std::llround(m.tokens_per_s * m.step_time_s));
  if (per_step <= 0) return 0.0;
  const std::int64_t steps = tokens / per_step + (tokens % per_step != 0 ? 1 : 0);
  return static_cast<double>(steps) * m.step_time_s;
}

/// A validation message's value ("=8", "=\"selective\"", "=4*256"): up to the next space,
/// comma, colon, semicolon or closing bracket.
std::size_t value_end(std::string_view s, std::size_t from) {
  std::size_t i = from;
  while (i < s.size() && s[i] != ' ' && s[i] != ',' && s[i] != ':' && s[i] != ';' && s[i] != ')' &&
         s[i] != ']') {
    ++i;
  }
  return i;
}

/// The rule of a validation message: the message without its "=value" parts (a name's: an
/// operator such as ">=" stays) and without the count of further problems ("(+2 more)").
std::string without_values(std::string_view reason) {
  if (const std::size_t more = reason.find(" (+"); more != std::string_view::npos) {
    reason = reason.substr(0, more);
  }
  std::string out;
  out.reserve(reason.size());
  for (std::size_t i = 0; i < reason.size();) {
    const bool named = i > 0 && (std::isalnum(static_cast<unsigned char>(reason[i - 1])) != 0 ||
                                 reason[i - 1] == '_' || reason[i - 1] == ')');
    if (reason[i] == '=' && named) {
      i = value_end(reason, i + 1);
      continue;
    }
    out += reason[i++];
  }
  return out;
}

}  // namespace

std::string cut_rule_of(const SweepRow& row) {
  if (row.reason_key == "memory.analytic") {
    return "analytic peak memory above the usable memory, (1 - memory_headroom) x the GPU's, "
           "by more than 5%";
  }
  if (row.reason_key == "memory.simulated") {
    return "simulated peak memory above the usable memory, (1 - memory_headroom) x the GPU's";
  }
  if (row.reason_key == "constraints.max_gpus") return "world_size above constraints.max_gpus";
  if (row.reason_key == "constraints.step_time_budget_s") {
    return "step time above constraints.step_time_budget_s";
  }
  return without_values(row.reason);
}

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
      const std::int64_t wa = row_world_size(a, pricing_);
      const std::int64_t wb = row_world_size(b, pricing_);
      if (wa != wb) return wa < wb;
      if (x.tokens_per_s != y.tokens_per_s) return x.tokens_per_s > y.tokens_per_s;
      break;
    }
    case SweepObjective::kMaxTokensPerSPerGpu: {
      const double pa = x.tokens_per_s / static_cast<double>(row_world_size(a, pricing_));
      const double pb = y.tokens_per_s / static_cast<double>(row_world_size(b, pricing_));
      if (pa != pb) return pa > pb;
      break;
    }
    case SweepObjective::kMinTimeToTrain: {
      const double ta = time_to_train_s(x, spec_.train_tokens);
      const double tb = time_to_train_s(y, spec_.train_tokens);
      if (ta != tb) return ta < tb;
      break;
    }
    case SweepObjective::kMinCost: {
      // The whole run's dollars with train_tokens (whole steps), else dollars per token.
      const RowCost ca = row_cost(a, pricing_);
      const RowCost cb = row_cost(b, pricing_);
      const double va = ca.trained ? ca.train_usd : ca.usd_per_million_tokens;
      const double vb = cb.trained ? cb.train_usd : cb.usd_per_million_tokens;
      if (va != vb) return va < vb;
      break;
    }
  }
  return a.index < b.index;
}

void SweepSummary::add_cut(const SweepRow& row) {
  ++cut_[row.reason_key];
  const bool after = row.simulated;
  std::string rule = cut_rule_of(row);
  auto [it, inserted] = rules_.try_emplace({after, rule});
  CutRule& r = it->second;
  if (inserted) {
    r.key = row.reason_key;
    r.rule = std::move(rule);
    r.after_simulating = after;
    r.example_index = row.index;
    r.example = row.reason;
  }
  ++r.count;
}

std::vector<CutRule> SweepSummary::cut_rules() const {
  std::vector<CutRule> out;
  out.reserve(rules_.size());
  for (const auto& [key, rule] : rules_) out.push_back(rule);
  std::stable_sort(out.begin(), out.end(), [](const CutRule& a, const CutRule& b) {
    if (a.after_simulating != b.after_simulating) return !a.after_simulating;
    return a.count > b.count;
  });
  return out;
}

void SweepSummary::add(const SweepRow& row, const Workload& workload) {
  ++evaluated_;
  if (row.simulated) ++simulated_;
  if (row.status != SweepStatus::kFeasible) {
    add_cut(row);
    return;
  }
  ++feasible_;
  if (first_knobs_.empty()) first_knobs_ = row.knobs;
  for (std::size_t i = 0; i < varies_.size() && i < row.knobs.size(); ++i) {
    if (!varies_[i] && row.knobs[i] != first_knobs_[i]) varies_[i] = true;
  }
  const auto top = static_cast<std::size_t>(spec_.top);
  if (top_.size() < top || better(row, top_.back().row)) {
    const auto at = std::find_if(top_.begin(), top_.end(),
                                 [&](const RankedConfig& r) { return better(row, r.row); });
    top_.insert(at, RankedConfig{row, workload});
    if (top_.size() > top) top_.pop_back();
  }
  const std::int64_t gpus = row_world_size(row, pricing_);
  if (const auto it = per_gpus_.find(gpus); it == per_gpus_.end()) {
    per_gpus_.emplace(gpus, RankedConfig{row, workload});
  } else if (better(row, it->second.row)) {
    it->second = RankedConfig{row, workload};
  }
  add_pareto(row, workload);
}

void SweepSummary::add_pareto(const SweepRow& row, const Workload& workload) {
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

std::vector<const RankedConfig*> SweepSummary::pareto_summary(std::size_t rows) const {
  std::vector<const RankedConfig*> out;
  const std::size_t n = pareto_.size();
  if (n == 0 || rows == 0) return out;
  if (n <= rows || rows == 1) {
    for (std::size_t i = 0; i < (n <= rows ? n : 1); ++i) out.push_back(&pareto_[i]);
    return out;
  }
  // Positions round(k (n - 1) / (rows - 1)): both ends, evenly spaced, strictly increasing
  // (n > rows, so consecutive positions differ).
  for (std::size_t k = 0; k < rows; ++k) {
    const std::size_t at = (k * (n - 1) + (rows - 1) / 2) / (rows - 1);
    out.push_back(&pareto_[at]);
  }
  return out;
}

std::vector<std::size_t> SweepSummary::varying_columns() const {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < varies_.size(); ++i) {
    if (varies_[i]) out.push_back(i);
  }
  return out;
}

}  // namespace stepsim::sim
