// "Make it fit" (make_it_fit.hpp): candidate changes by lever, smallest first; the first of
// each lever that passes Megatron's rules and fits the memory model; pairs of levers where
// too few single changes fit; then the sweep's evaluator simulates them and the fastest that
// also fit when simulated are listed.

#include "stepsim/sweep/make_it_fit.hpp"

#include <algorithm>
#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "stepsim/base/assert.hpp"
#include "stepsim/check/check.hpp"
#include "stepsim/import/import.hpp"
#include "stepsim/memory/memory_model.hpp"
#include "stepsim/sweep/sweep.hpp"

namespace stepsim::sim {
namespace {

/// One candidate change: knob values written over the job's (a knob may drag others along,
/// as full recompute does its method and layer count).
using Edit = std::vector<std::pair<KnobId, KnobValue>>;

/// One way of saving memory: its changes, smallest first.
using Lever = std::vector<Edit>;

KnobId knob_id(std::string_view key) {
  const KnobId id = find_knob(key);
  STEPSIM_ASSERT(id >= 0);
  return id;
}

KnobValue integer(std::int64_t v) { return KnobValue{.integer = v}; }

/// The valid values of `key` ("auto": those Megatron's rules leave given the rest of `w`)
/// larger than its current one, ascending.
std::vector<std::int64_t> larger_values(std::string_view key, const Workload& w,
                                        const SweepSpec& spec) {
  const KnobId id = knob_id(key);
  const std::int64_t now = knob_table()[static_cast<std::size_t>(id)].get(w).integer;
  std::vector<std::int64_t> out;
  for (const KnobValue& v : auto_values(id, w, spec)) {
    if (v.integer > now) out.push_back(v.integer);
  }
  std::sort(out.begin(), out.end());
  return out;
}

/// A single-knob lever: `key` set to each of `values` in turn.
Lever knob_lever(std::string_view key, const std::vector<std::int64_t>& values) {
  Lever lever;
  for (const std::int64_t v : values) lever.push_back({{knob_id(key), integer(v)}});
  return lever;
}

/// Recompute: selective (where none is), then full recompute of the fewest layers per chunk
/// (block method), then every layer (uniform, 1).
Lever recompute_lever(const Workload& w, const SweepSpec& spec) {
  const TrainingConfig& t = w.training;
  const KnobId granularity = knob_id("training.recompute_granularity");
  const KnobId method = knob_id("training.recompute_method");
  const KnobId layers = knob_id("training.recompute_num_layers");
  const auto full = integer(static_cast<std::int64_t>(RecomputeGranularity::kFull));
  Lever lever;
  if (t.recompute_granularity == RecomputeGranularity::kNone) {
    lever.push_back(
        {{granularity, integer(static_cast<std::int64_t>(RecomputeGranularity::kSelective))}});
  }
  const bool full_now = t.recompute_granularity == RecomputeGranularity::kFull;
  if (full_now && t.recompute_method != RecomputeMethod::kBlock) return lever;
  Workload block = w;
  block.training.recompute_granularity = RecomputeGranularity::kFull;
  block.training.recompute_method = RecomputeMethod::kBlock;
  const auto block_method = integer(static_cast<std::int64_t>(RecomputeMethod::kBlock));
  for (const KnobValue& n : auto_values(layers, block, spec)) {
    if (full_now && n.integer <= t.recompute_num_layers) continue;
    lever.push_back({{granularity, full}, {method, block_method}, {layers, n}});
  }
  lever.push_back({{granularity, full},
                   {method, integer(static_cast<std::int64_t>(RecomputeMethod::kUniform))},
                   {layers, integer(1)}});
  return lever;
}

/// Every lever that applies to `w`, in the order ties are listed.
std::vector<Lever> levers_of(const Workload& w, const SweepSpec& spec) {
  const TrainingConfig& t = w.training;
  std::vector<Lever> out;
  out.push_back(recompute_lever(w, spec));
  if (t.tensor_model_parallel_size > 1 && !t.sequence_parallel) {
    out.push_back(knob_lever("training.sequence_parallel", {1}));
  }
  if (!t.use_distributed_optimizer) {
    out.push_back(knob_lever("training.use_distributed_optimizer", {1}));
  }
  std::vector<std::int64_t> smaller;  // micro-batch sizes dividing it: global batch kept
  for (std::int64_t d = t.micro_batch_size - 1; d >= 1; --d) {
    if (t.micro_batch_size % d == 0) smaller.push_back(d);
  }
  out.push_back(knob_lever("training.micro_batch_size", smaller));
  std::vector<std::int64_t> tp;  // inside one NVLink domain
  for (const std::int64_t v : larger_values("training.tensor_model_parallel_size", w, spec)) {
    if (v <= w.system.nvlink_domain()) tp.push_back(v);
  }
  out.push_back(knob_lever("training.tensor_model_parallel_size", tp));
  out.push_back(knob_lever("training.context_parallel_size",
                           larger_values("training.context_parallel_size", w, spec)));
  out.push_back(knob_lever("training.pipeline_model_parallel_size",
                           larger_values("training.pipeline_model_parallel_size", w, spec)));
  if (w.model.moe()) {
    out.push_back(knob_lever("training.expert_model_parallel_size",
                             larger_values("training.expert_model_parallel_size", w, spec)));
  }
  std::erase_if(out, [](const Lever& l) { return l.empty(); });
  return out;
}

/// A candidate that passes Megatron's rules and fits the memory model.
struct Fitting {
  SweepSpec spec;     ///< the job with the candidate's knobs as one-value axes
  SweepConfig config;  ///< as enumerated (the evaluator finalizes it)
  Workload finalized;
  std::int64_t analytic_peak = 0;
};

/// The sweep spec of one candidate: the job as base, each changed knob an axis of one value
/// (in knob-table order, as the enumerator walks them).
SweepSpec spec_of(const SweepSpec& job, const Edit& edit) {
  SweepSpec spec = job;
  for (const auto& [knob, value] : edit) {
    spec.axes.push_back(SweepAxis{.knob = knob, .automatic = false, .values = {value}});
  }
  std::sort(spec.axes.begin(), spec.axes.end(),
            [](const SweepAxis& a, const SweepAxis& b) { return a.knob < b.knob; });
  return spec;
}

/// The candidate, when it passes Megatron's rules (finalize_workload, as the loader and
/// `check` run them) and fits `capacity` by the memory model.
std::optional<Fitting> try_edit(const SweepSpec& job, const Edit& edit, std::int64_t capacity) {
  Fitting f;
  f.spec = spec_of(job, edit);
  SweepEnumerator enumerator(f.spec);
  if (!enumerator.next(f.config)) return std::nullopt;
  f.finalized = f.config.workload;
  if (!finalize_workload(f.finalized, f.spec.file).empty()) return std::nullopt;
  f.analytic_peak = largest_analytic_peak(f.finalized).bytes;
  if (f.analytic_peak > capacity) return std::nullopt;
  return f;
}

/// Walks the levers: the first fitting change of each, then (while fewer than `wanted` levers
/// fit alone) the first fitting pair of changes of two levers, neither of which fits alone.
/// Candidates in the order they are to be simulated: single changes, then pairs.
class CandidateSearch {
 public:
  CandidateSearch(const SweepSpec& job, std::int64_t capacity, std::int64_t max_tried)
      : job_(job), capacity_(capacity), max_tried_(max_tried) {}

  std::vector<Fitting> run(const std::vector<Lever>& levers, std::size_t wanted) {
    std::vector<std::size_t> first_fit(levers.size());
    std::vector<Fitting> out;
    for (std::size_t i = 0; i < levers.size(); ++i) {
      first_fit[i] = levers[i].size();
      for (std::size_t k = 0; k < levers[i].size() && budget(); ++k) {
        if (auto f = attempt(levers[i][k])) {
          first_fit[i] = k;
          out.push_back(std::move(*f));
          break;
        }
      }
    }
    if (out.size() >= wanted) return out;
    for (std::size_t i = 0; i < levers.size(); ++i) {
      for (std::size_t j = i + 1; j < levers.size(); ++j) {
        if (auto f = first_pair(levers[i], first_fit[i], levers[j], first_fit[j])) {
          out.push_back(std::move(*f));
        }
      }
    }
    return out;
  }

  std::int64_t tried() const { return tried_; }

 private:
  bool budget() const { return tried_ < max_tried_; }

  std::optional<Fitting> attempt(const Edit& edit) {
    ++tried_;
    return try_edit(job_, edit, capacity_);
  }

  /// The pair (a[x], b[y]) with x < na, y < nb (changes that do not fit alone) of the smallest
  /// x + y (then x) that fits.
  std::optional<Fitting> first_pair(const Lever& a, std::size_t na, const Lever& b,
                                    std::size_t nb) {
    if (na == 0 || nb == 0) return std::nullopt;
    for (std::size_t sum = 0; sum <= na + nb - 2; ++sum) {
      for (std::size_t x = 0; x <= sum && x < na; ++x) {
        if (sum - x >= nb) continue;
        if (!budget()) return std::nullopt;
        Edit both = a[x];
        both.insert(both.end(), b[sum - x].begin(), b[sum - x].end());
        if (auto f = attempt(both)) return f;
      }
    }
    return std::nullopt;
  }

  const SweepSpec& job_;
  std::int64_t capacity_;
  std::int64_t max_tried_;
  std::int64_t tried_ = 0;
};

/// The values the candidate changed, in knob-table order, as reports print them.
std::vector<FitChange> changes_of(const Workload& job, const Fitting& f) {
  std::vector<FitChange> out;
  for (const SweepAxis& axis : f.spec.axes) {
    const KnobInfo& info = knob_table()[static_cast<std::size_t>(axis.knob)];
    const std::string from = format_knob_value(axis.knob, info.get(job), {});
    const std::string to = format_knob_value(axis.knob, info.get(f.finalized), {});
    if (from != to) out.push_back(FitChange{std::string(info.key), from, to});
  }
  return out;
}

/// A launch line's flags with their values ("--micro-batch-size" -> "1"), and assignments
/// before them as flags of their own.
std::vector<std::pair<std::string, std::string>> flags_of(const std::string& line) {
  std::vector<std::pair<std::string, std::string>> out;
  std::size_t at = 0;
  while (at < line.size()) {
    std::size_t end = line.find(' ', at);
    if (end == std::string::npos) end = line.size();
    const std::string word = line.substr(at, end - at);
    const bool flag = word.starts_with("--");
    const bool assignment = !flag && word.find('=') != std::string::npos;
    if (flag || out.empty() || (assignment && !out.back().first.starts_with("--"))) {
      out.emplace_back(word, "");
    } else {
      out.back().second += (out.back().second.empty() ? "" : " ") + word;
    }
    at = end + 1;
  }
  return out;
}

/// The flags of `changed` that `job` does not have with the same value, then "without --x"
/// for a flag `job` has and `changed` drops.
std::string flags_changed(const Workload& job, const Workload& changed) {
  const auto before = flags_of(megatron_args_of(job));
  const auto after = flags_of(megatron_args_of(changed));
  const std::map<std::string, std::string> had(before.begin(), before.end());
  const std::map<std::string, std::string> has(after.begin(), after.end());
  std::string out;
  const auto add = [&out](const std::string& s) { out += (out.empty() ? "" : " ") + s; };
  for (const auto& [flag, value] : after) {
    const auto it = had.find(flag);
    if (it == had.end() || it->second != value) add(value.empty() ? flag : flag + " " + value);
  }
  for (const auto& [flag, value] : before) {
    if (!has.contains(flag)) add("without " + flag);
  }
  return out;
}

/// The sweep's evaluation of every candidate (Megatron's rules, the memory model, one
/// simulated step), on up to one thread per core; rows in the candidates' order.
std::vector<SweepRow> simulate_all(std::vector<Fitting>& fitting, const CostModel& cost) {
  std::vector<SweepRow> rows(fitting.size());
  std::atomic<std::size_t> next{0};
  const auto work = [&] {
    for (std::size_t i = next++; i < fitting.size(); i = next++) {
      const SweepEvaluator evaluator(fitting[i].spec, {&cost});
      rows[i] = evaluator.evaluate(fitting[i].config);
    }
  };
  const std::size_t threads =
      std::min<std::size_t>(fitting.size(), std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  return rows;
}

}  // namespace

LargestPeak largest_analytic_peak(const Workload& w) {
  LargestPeak out;
  for (const StageMemory& s : analytic_memory(w)) {
    if (s.peak_bytes > out.bytes) out = LargestPeak{s.peak_bytes, s.stage};
  }
  return out;
}

FitAdvice make_it_fit(const Workload& w, const DefaultedKeys& defaulted, const CostModel& cost,
                      const MakeItFitOptions& options) {
  FitAdvice advice;
  const LargestPeak peak = largest_analytic_peak(w);
  advice.peak_bytes = peak.bytes;
  advice.stage = peak.stage;
  advice.capacity_bytes = w.system.memory_bytes;
  SweepSpec job;
  job.file = w.source_file.empty() ? w.name : w.source_file;
  job.base = w;
  job.defaulted = defaulted;
  CandidateSearch search(job, advice.capacity_bytes, options.max_tried);
  std::vector<Fitting> fitting = search.run(levers_of(w, job), options.max_suggestions);
  advice.tried = search.tried();
  if (fitting.size() > options.max_simulated) fitting.resize(options.max_simulated);
  const std::vector<SweepRow> rows = simulate_all(fitting, cost);
  for (std::size_t i = 0; i < fitting.size(); ++i) {
    const Fitting& f = fitting[i];
    const SweepRow& row = rows[i];
    if (row.status != SweepStatus::kFeasible || !row.simulated) continue;
    advice.suggestions.push_back(FitSuggestion{
        .changes = changes_of(w, f),
        .megatron_args = flags_changed(w, f.finalized),
        .analytic_peak_bytes = f.analytic_peak,
        .simulated_peak_bytes = row.metrics.peak_memory_bytes,
        .step_time_s = row.metrics.step_time_s});
  }
  std::stable_sort(advice.suggestions.begin(), advice.suggestions.end(),
                   [](const FitSuggestion& a, const FitSuggestion& b) {
                     return a.step_time_s < b.step_time_s;
                   });
  if (advice.suggestions.size() > options.max_suggestions) {
    advice.suggestions.resize(options.max_suggestions);
  }
  return advice;
}

std::optional<FitAdvice> analytic_fit_advice(const Workload& w, const DefaultedKeys& defaulted,
                                             const CostModel& cost) {
  if (largest_analytic_peak(w).bytes <= w.system.memory_bytes) return std::nullopt;
  return make_it_fit(w, defaulted, cost);
}

std::optional<FitAdvice> simulated_fit_advice(const Workload& w, const Prediction& p,
                                              const DefaultedKeys& defaulted,
                                              const CostModel& cost) {
  if (p.fits_in_memory) return std::nullopt;
  FitAdvice advice = make_it_fit(w, defaulted, cost);
  advice.simulated_peak = true;
  advice.peak_bytes = p.peak_memory_bytes;
  for (const StageSummary& s : p.stages) {
    if (s.peak_memory_bytes == p.peak_memory_bytes) {
      advice.stage = s.stage;
      break;
    }
  }
  return advice;
}

}  // namespace stepsim::sim
