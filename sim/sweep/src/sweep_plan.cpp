// A whole sweep run (sweep_plan.hpp): cost models per system variant, the planner, the rows
// file (CSV streamed and resumable, or JSON), the split over ranks and rank 0's merge.

#include "stepsim/sweep/sweep_plan.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "stepsim/base/json_input.hpp"
#include "stepsim/config/shipped.hpp"
#include "stepsim/cost/make_cost_model.hpp"
#include "stepsim/check/check.hpp"

namespace stepsim::sim {
namespace {

/// A sweep's rows file is its own output, resumed from: at most 2^24 rows (the sweep bound) of
/// a few hundred bytes each stay well under this; a larger file is not one stepsim wrote.
constexpr std::size_t kMaxRowsFileBytes = std::size_t{4} << 30;

bool json_out(const std::string& out) { return out.ends_with(".json"); }
bool csv_out(const std::string& out) { return !out.empty() && !json_out(out); }

/// One cost model per distinct system, shared read-only by every thread.
struct CostModels {
  std::vector<std::unique_ptr<CostModel>> owned;
  std::vector<const CostModel*> views;
};

/// The cost model of the configurations on one system variant: the base's, except that a
/// profile measured on one GPU prices only systems with that GPU (the others: their roofline)
/// and a base without cost_model gives each GPU its own shipped public profile, as a scenario
/// of that system without cost_model would get.
CostModelSpec variant_cost_model(const SweepSpec& spec, const SystemConfig& system) {
  const CostModelSpec& base = spec.base.cost_model;
  if (base.defaulted) return default_cost_model(system.gpu_name, spec.scenarios_dir);
  if (base.kind == CostModelSpec::Kind::kProfile &&
      system.gpu_name != spec.base.system.gpu_name) {
    return CostModelSpec{};
  }
  return base;
}

/// The note a system variant's cost model deserves: a GPU the base's profile does not price,
/// or (once) system what-ifs a profile answers only in part.
void note_cost_model(const SweepSpec& spec, const Workload& w, bool& noted_what_ifs,
                     std::vector<std::string>& notes) {
  const CostModelSpec& base = spec.base.cost_model;
  if (w.system.gpu_name != spec.base.system.gpu_name) {
    if (base.defaulted) {
      notes.push_back("system " + w.system.name + " (" + w.system.gpu_name + ") is priced by " +
                      (w.cost_model.kind == CostModelSpec::Kind::kProfile
                           ? "its GPU's shipped public profile " + w.cost_model.profile_path
                           : std::string("its roofline (no public profile of its GPU ships)")) +
                      ": the base gives no cost_model");
    } else if (base.kind == CostModelSpec::Kind::kProfile) {
      notes.push_back("system " + w.system.name + " (" + w.system.gpu_name +
                      ") is priced by its roofline, not by the base's profile of " +
                      spec.base.system.gpu_name);
    }
  } else if (w.cost_model.kind == CostModelSpec::Kind::kProfile && !noted_what_ifs &&
             !(w.system == spec.base.system)) {
    noted_what_ifs = true;
    notes.push_back("system.* what-ifs change only what the profile " + w.cost_model.profile_path +
                    " does not measure; give the base \"cost_model\": \"roofline\" to price "
                    "them all");
  }
}

Result<CostModels> build_cost_models(const SweepSpec& spec, std::vector<std::string>& notes) {
  std::map<std::string, std::shared_ptr<const Profile>> profiles;  // by path, each loaded once
  CostModels models;
  bool noted_what_ifs = false;
  for (const SystemConfig& system : system_variants(spec)) {
    Workload w = spec.base;
    w.system = system;
    w.cost_model = variant_cost_model(spec, system);
    std::shared_ptr<const Profile>& profile = profiles[w.cost_model.profile_path];
    if (w.cost_model.kind == CostModelSpec::Kind::kProfile && profile == nullptr) {
      auto loaded = load_shared_profile(w.cost_model.profile_path);
      if (!loaded) return loaded.errors();
      profile = *loaded;
    }
    note_cost_model(spec, w, noted_what_ifs, notes);
    auto model = make_cost_model(w, profile);
    if (!model) return model.errors();
    models.views.push_back(model->get());
    models.owned.push_back(std::move(model).value());
  }
  return models;
}

/// The partial CSV's complete rows; truncates the torn tail (rank 0 only). `header` tells
/// whether the file still needs its header line.
Result<std::vector<SweepRow>> resume_rows(const SweepPlanOptions& o,
                                          const std::vector<std::string>& columns, bool& header) {
  std::error_code ec;
  if (!std::filesystem::exists(o.out, ec)) return std::vector<SweepRow>{};
  auto text = read_input_file(o.out, kMaxRowsFileBytes);
  if (!text) return text.errors();
  auto parsed = parse_sweep_csv(*text, columns, o.out);
  if (!parsed) return parsed.errors();
  header = parsed->complete_bytes == 0;
  if (o.rank == 0) std::filesystem::resize_file(o.out, parsed->complete_bytes);
  return std::move(parsed.value().rows);
}

/// The outputs rank 0 (or a single process) feeds: rows file, summary, the caller's sinks.
struct Outputs {
  std::ofstream csv_file;
  std::unique_ptr<CsvSink> csv;
  std::unique_ptr<JsonRowsSink> json_rows;
  std::vector<SweepSink*> sinks;
};

Errors open_outputs(const SweepPlanOptions& o, const std::vector<std::string>& columns,
                    bool header, std::int64_t first_new, SweepSummary& summary, Outputs& out) {
  if (csv_out(o.out)) {
    out.csv_file.open(o.out, o.resume ? std::ios::app | std::ios::binary
                                      : std::ios::trunc | std::ios::binary);
    if (!out.csv_file) return {Error{o.out, "", "cannot open for writing"}};
    out.csv = std::make_unique<CsvSink>(out.csv_file, columns, header, first_new,
                                        summary.pricing());
    out.sinks.push_back(out.csv.get());
  }
  if (json_out(o.out)) {
    out.json_rows = std::make_unique<JsonRowsSink>(columns, summary.pricing());
    out.sinks.push_back(out.json_rows.get());
  }
  out.sinks.push_back(&summary);
  for (SweepSink* s : o.sinks) out.sinks.push_back(s);
  return {};
}

/// Rank 0: every rank's rows (as CSV text, gathered) with the resumed ones, in index order.
Result<std::vector<SweepRow>> merged_rows(std::vector<SweepRow> known, const std::string& gathered,
                                          const std::vector<std::string>& columns) {
  auto parsed = parse_sweep_csv(csv_header(columns) + "\n" + gathered, columns, "ranks' rows");
  if (!parsed) return parsed.errors();
  for (SweepRow& r : parsed.value().rows) known.push_back(std::move(r));
  std::sort(known.begin(), known.end(),
            [](const SweepRow& a, const SweepRow& b) { return a.index < b.index; });
  return known;
}

/// The options and the size of the search space, checked before any work (bad input).
Errors check_plan_options(const SweepSpec& spec, const SweepPlanOptions& o) {
  if (o.resume && !csv_out(o.out)) {
    return {Error{o.out, "", "--resume continues a CSV given with --out FILE.csv"}};
  }
  if (o.ranks > 1 && !o.gather)
    return {Error{"", "", "a split over ranks needs a gather function"}};
  // The listed values are bounded when the spec loads; "auto" axes multiply them by counts
  // known only while enumerating, so the whole search space is bounded here, before any work.
  const std::int64_t total = count_configurations(spec, o.max_configurations);
  if (total > o.max_configurations) {
    return {Error{spec.file, "search",
                  " enumerates more than " + std::to_string(o.max_configurations) +
                      " configurations with its \"auto\" knobs, beyond stepsim's limit for one "
                      "sweep; list the values of some \"auto\" knobs or split the sweep"}};
  }
  return {};
}

/// Where rank 0 (or a single process) writes the rows.
struct RowsFile {
  const std::vector<std::string>& columns;
  bool header = true;          ///< the file still needs its header line
  std::int64_t first_new = 0;  ///< index of the first row not resumed
};

/// Rank 0 of a split: merges every rank's rows (`gathered`) with the resumed ones (`known`)
/// and feeds them, in order, to the real outputs; nothing is evaluated again. Runtime errors.
Errors merge_ranks(const SweepSpec& spec, const SweepEvaluator& evaluator,
                   const SweepPlanOptions& o, const RowsFile& file, std::vector<SweepRow> known,
                   const std::string& gathered, SweepPlan& plan, Outputs& outputs) {
  auto all = merged_rows(std::move(known), gathered, file.columns);
  if (!all) return all.errors();
  SweepRunOptions merge;
  merge.known = std::move(all).value();
  Errors e = open_outputs(o, file.columns, file.header, file.first_new, *plan.summary, outputs);
  if (!e.empty()) return e;
  auto merged = run_sweep(spec, evaluator, merge, outputs.sinks);
  if (!merged) return merged.errors();
  // Totals over every rank: rows of this run (not resumed) that any rank evaluated.
  plan.stats.fed = plan.summary->evaluated();
  plan.stats.evaluated = plan.summary->evaluated() - plan.resumed;
  return {};
}

/// Closes the rows file, or writes the JSON rows (runtime errors).
Errors close_outputs(const SweepPlanOptions& o, Outputs& outputs) {
  if (outputs.csv_file.is_open()) {
    outputs.csv_file.close();
    if (!outputs.csv_file) return {Error{o.out, "", "writing the rows failed"}};
  }
  if (outputs.json_rows) {
    std::ofstream f(o.out, std::ios::binary);
    outputs.json_rows->write(f);
    if (!f.flush()) return {Error{o.out, "", "cannot write the rows"}};
  }
  return {};
}

/// This process's share of the planner's work (threads, rank of a split, cancel flag).
SweepRunOptions run_options(const SweepPlanOptions& o) {
  SweepRunOptions run;
  run.jobs =
      o.jobs > 0 ? o.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  run.rank = o.rank;
  run.ranks = o.ranks;
  run.cancel = o.cancel;
  return run;
}

SweepPlanOutcome bad_input(Errors errors) { return {std::nullopt, std::move(errors)}; }
/// The outputs failed: what the errors describe is a runtime failure, whatever reported it.
SweepPlanOutcome runtime(Errors errors) {
  for (Error& e : errors) {
    if (e.kind == ErrorKind::kInput) e.kind = ErrorKind::kRuntime;
  }
  return {std::nullopt, std::move(errors)};
}

}  // namespace

SweepPlanOutcome run_sweep_plan(const SweepSpec& spec, const SweepPlanOptions& o) {
  if (Errors bad = check_plan_options(spec, o); !bad.empty()) return bad_input(std::move(bad));
  SweepPlan plan;
  plan.root = o.rank == 0;
  plan.ranks = o.ranks;
  auto models = build_cost_models(spec, plan.notes);
  if (!models) return bad_input(models.errors());
  const std::vector<std::string> columns = sweep_columns(spec);
  const SweepEvaluator evaluator(spec, models->views);

  SweepRunOptions run = run_options(o);
  bool header = true;
  if (o.resume) {
    auto known = resume_rows(o, columns, header);
    if (!known) return bad_input(known.errors());
    run.known = std::move(known).value();
  }
  plan.resumed = static_cast<std::int64_t>(run.known.size());
  const std::int64_t first_new = run.known.empty() ? 0 : run.known.back().index + 1;
  plan.jobs = run.jobs;
  plan.total = count_configurations(spec);
  plan.summary = std::make_unique<SweepSummary>(spec, columns);
  const auto start = std::chrono::steady_clock::now();

  Outputs outputs;
  std::ostringstream rank_rows;  // split: this rank's new rows, gathered on rank 0
  CsvSink rank_csv(rank_rows, columns, false, first_new);
  std::vector<SweepSink*> sinks{&rank_csv};
  if (o.ranks <= 1) {
    Errors e = open_outputs(o, columns, header, first_new, *plan.summary, outputs);
    if (!e.empty()) return runtime(std::move(e));
    sinks = outputs.sinks;
    run.progress = [&o, &outputs](std::int64_t fed) {
      if (outputs.csv_file.is_open()) outputs.csv_file.flush();
      if (o.progress) o.progress(fed);
    };
  } else if (o.progress) {
    run.progress = o.progress;
  }
  auto stats = run_sweep(spec, evaluator, run, sinks);
  if (!stats) {
    Errors errors = stats.errors();
    for (Error& e : errors) e.file = o.out;
    return bad_input(std::move(errors));
  }
  plan.stats = *stats;
  if (o.ranks > 1) {
    const std::string gathered = o.gather(rank_rows.str());
    if (!plan.root) return {std::move(plan), {}};
    Errors e = merge_ranks(spec, evaluator, o, RowsFile{columns, header, first_new},
                           std::move(run.known), gathered, plan, outputs);
    if (!e.empty()) return runtime(std::move(e));
  }
  if (Errors e = close_outputs(o, outputs); !e.empty()) return runtime(std::move(e));
  plan.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return {std::move(plan), {}};
}

Result<Workload> sweep_configuration(const SweepSpec& spec, std::int64_t index) {
  SweepEnumerator enumerator(spec);
  SweepConfig config;
  while (enumerator.next(config)) {
    if (config.index != index) continue;
    Errors errors = finalize_workload(config.workload, spec.file);
    if (!errors.empty()) return errors;
    config.workload.cost_model = variant_cost_model(spec, config.workload.system);
    return std::move(config.workload);
  }
  return Error{spec.file, "", "has no configuration with index " + std::to_string(index) +
                                  " (it enumerates " + std::to_string(count_configurations(spec)) +
                                  ")"};
}

}  // namespace stepsim::sim
