// _stepsim: the C++ half of the `stepsim` Python module. Each function calls the same library
// entry point as the matching `stepsim` command and returns that command's JSON text, so the
// module and the CLI give the same documents; stepsim/__init__.py turns them into dicts and
// problems into stepsim.ScenarioError. Nothing here prints, exits or aborts on bad input:
// problems come back as (file, key, message) tuples.

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "stepsim/import/import.hpp"
#include "stepsim/check/load.hpp"
#include "stepsim/config/layout_words.hpp"
#include "stepsim/config/shipped.hpp"
#include "stepsim/cost/make_cost_model.hpp"
#include "stepsim/sweep/sweep_spec.hpp"
#include "stepsim/report/memory_report.hpp"
#include "stepsim/report/predict.hpp"
#include "stepsim/report/report.hpp"
#include "stepsim/report/schedule_report.hpp"
#include "stepsim/sweep/make_it_fit.hpp"
#include "stepsim/sweep/sweep_plan.hpp"
#include "stepsim/base/json_input.hpp"

namespace py = pybind11;

namespace stepsim::python {
namespace {

using Problem = std::tuple<std::string, std::string, std::string>;  // file, key, message
using Problems = std::vector<Problem>;

Problems problems_of(const Errors& errors) {
  Problems out;
  for (const Error& e : errors) out.emplace_back(e.file, e.key, e.message);
  return out;
}

/// The scenarios/ folder: $STEPSIM_SCENARIOS_DIR, else the source tree's (as the CLI).
std::string scenarios_dir() {
  const char* dir = std::getenv("STEPSIM_SCENARIOS_DIR");
  return dir != nullptr ? dir : STEPSIM_DEFAULT_SCENARIOS_DIR;
}

LoadOptions load_options() { return LoadOptions{scenarios_dir()}; }

/// A loaded, validated scenario: what load() returns and the other functions take.
struct Scenario {
  Workload workload;
  std::string file;  ///< the file it came from, or "<dict>"
  /// The keys it left to Megatron's defaults (make_it_fit re-derives them per change).
  DefaultedKeys defaulted;
};

std::tuple<Problems, std::optional<Scenario>> load_file(const std::string& path) {
  Result<Workload> w = load_scenario_file(path, load_options());
  if (!w) return {problems_of(w.errors()), std::nullopt};
  const Result<std::string> text = read_input_file(path);
  return {Problems{}, Scenario{std::move(w).value(), path,
                               defaulted_keys_of_scenario(text ? *text : std::string("{}"))}};
}

std::tuple<Problems, std::optional<Scenario>> load_text(const std::string& text,
                                                        const std::string& label,
                                                        const std::string& base_dir) {
  Result<Workload> w = load_scenario_text(text, label, base_dir, load_options());
  if (!w) return {problems_of(w.errors()), std::nullopt};
  return {Problems{}, Scenario{std::move(w).value(), label, defaulted_keys_of_scenario(text)}};
}

/// What `stepsim check` checks beyond loading: the cost model (a profile) can be built.
Problems check(const Scenario& s) {
  auto cost = make_cost_model(s.workload);
  return cost ? Problems{} : problems_of(cost.errors());
}

/// How predict() shapes and perturbs the run (the CLI's --straggler, --trace-level, ...).
struct PredictArgs {
  std::string trace;
  bool gpipe = false;
  std::int64_t train_tokens = 0;
  std::vector<std::pair<std::int32_t, double>> stragglers;  ///< (global rank, factor)
  std::string trace_level = "auto";  ///< "auto", "op" or "microbatch" (--trace-level)
  std::optional<std::vector<std::int32_t>> trace_ranks;
  bool contention = true;  ///< false: --no-contention
  bool full_rank = false;  ///< --full-rank
  std::vector<std::pair<std::int32_t, double>> slow_nics;  ///< (node, factor): --slow-nic
  double jitter = 0;       ///< --jitter SIGMA
  std::uint64_t seed = 0;  ///< --seed
};

/// (problems, runtime_failure, predict JSON text). The GIL is released while simulating.
std::tuple<Problems, bool, std::string> predict(const Scenario& s, const PredictArgs& a) {
  sim::PredictOptions options;
  options.keep_timeline = !a.trace.empty();
  options.gpipe = a.gpipe;
  options.contention = a.contention;
  for (const auto& [rank, factor] : a.stragglers) options.stragglers.push_back({rank, factor});
  options.full_rank = a.full_rank;
  for (const auto& [node, factor] : a.slow_nics) options.slow_nics.push_back({node, factor});
  options.jitter_sigma = a.jitter;
  options.seed = a.seed;
  options.scenarios_dir = scenarios_dir();  // the open accuracy table the report quotes
  sim::TraceShape shape;
  shape.level = a.trace_level == "op"           ? sim::TraceLevel::kOp
                : a.trace_level == "microbatch" ? sim::TraceLevel::kMicrobatch
                                                : sim::TraceLevel::kAuto;
  shape.ranks = a.trace_ranks;
  if (Errors bad = sim::check_trace_shape(shape, s.workload); !bad.empty()) {
    return {problems_of(bad), false, ""};
  }
  std::optional<sim::PredictOutcome> outcome;
  {
    py::gil_scoped_release release;
    outcome = sim::predict(s.workload, options);
  }
  if (!outcome->run) return {problems_of(outcome->errors), exit_status(outcome->errors) != 2, ""};
  std::ostringstream out;
  sim::ReportOptions report;
  report.train_tokens = a.train_tokens;
  std::optional<sim::FitAdvice> advice;
  if (!outcome->run->result.prediction.fits_in_memory) {
    py::gil_scoped_release release;
    if (auto cost = make_cost_model(s.workload)) {
      advice = sim::simulated_fit_advice(s.workload, outcome->run->result.prediction,
                                         s.defaulted, **cost);
    }
  }
  report.fit_advice = advice ? &*advice : nullptr;
  sim::write_prediction_json(s.workload, outcome->run->result, outcome->run->cost_model, out,
                             report);
  if (!a.trace.empty()) {
    const Result<sim::TraceWritten> written = sim::write_trace_file(*outcome->run, a.trace, shape);
    if (!written) return {problems_of(written.errors()), true, ""};
  }
  return {Problems{}, false, out.str()};
}

std::string memory(const Scenario& s) {
  std::optional<sim::FitAdvice> advice;
  if (auto cost = make_cost_model(s.workload)) {
    py::gil_scoped_release release;
    advice = sim::analytic_fit_advice(s.workload, s.defaulted, **cost);
  }
  std::ostringstream out;
  sim::write_memory_json(s.workload, out, advice ? &*advice : nullptr);
  return out.str();
}

std::tuple<Problems, std::string> schedule(std::int32_t pp, std::int32_t vpp,
                                           std::int32_t microbatches,
                                           std::optional<std::int32_t> group_size, bool gpipe,
                                           bool overlap_p2p) {
  sim::ScheduleRequest request;
  request.pp = pp;
  request.vpp = vpp;
  request.microbatches = microbatches;
  request.group_size = group_size.value_or(0);
  request.group_size_given = group_size.has_value();
  request.gpipe = gpipe;
  request.overlap_p2p = overlap_p2p;
  Result<sim::Schedule> s = sim::make_requested_schedule(request);
  if (!s) return {problems_of(s.errors()), ""};
  std::ostringstream out;
  sim::write_schedule_json(out, *s);
  return {Problems{}, out.str()};
}

/// Every row as a flat JSON object, in enumeration order.
class RecordsSink final : public sim::SweepSink {
 public:
  RecordsSink(std::vector<std::string> columns, sim::SweepPricing pricing)
      : columns_(std::move(columns)), pricing_(pricing) {}
  void add(const sim::SweepRow& row, const Workload& /*workload*/) override {
    std::ostringstream out;
    sim::write_sweep_record_json(out, row, columns_, pricing_);
    records_.push_back(out.str());
  }
  std::vector<std::string> take() { return std::move(records_); }

 private:
  std::vector<std::string> columns_;
  sim::SweepPricing pricing_;
  std::vector<std::string> records_;
};

/// The Python call's objective, price and token budget over the sweep file's (as the CLI's
/// --objective, --price-per-gpu-hour, --train-tokens); empty or 0: the file's.
struct SweepOverrides {
  std::string objective;
  double price_per_gpu_hour = 0;
  std::int64_t train_tokens = 0;
};

/// (problems, runtime_failure, summary JSON text, row JSON texts). `text` is the sweep
/// file's JSON, `label` names it in errors and `base_dir` resolves its base scenario.
std::tuple<Problems, bool, std::string, std::vector<std::string>> sweep(
    const std::string& text, const std::string& label, const std::string& base_dir, int jobs,
    const std::string& out, const SweepOverrides& over) {
  Result<SweepSpec> loaded = load_sweep_text(text, label, base_dir, load_options());
  if (!loaded) return {problems_of(loaded.errors()), false, "", {}};
  // Held here: the summary refers to it until its JSON is written below.
  SweepSpec spec = std::move(loaded).value();
  if (!over.objective.empty()) {
    const std::optional<SweepObjective> o = sweep_objective_named(over.objective);
    if (!o) {
      return {Problems{{"", "objective", "=\"" + over.objective + "\" is not one of: " +
                                             sweep_objective_names()}},
              false, "", {}};
    }
    spec.objective = *o;
  }
  if (over.price_per_gpu_hour > 0) spec.price_per_gpu_hour = over.price_per_gpu_hour;
  if (over.train_tokens > 0) spec.train_tokens = over.train_tokens;
  if (const Errors missing = check_sweep_objective(spec); !missing.empty()) {
    return {problems_of(missing), false, "", {}};
  }
  RecordsSink records(sim::sweep_columns(spec), sim::sweep_pricing(spec));
  sim::SweepPlanOptions options;
  options.jobs = jobs;
  options.out = out;
  options.sinks.push_back(&records);
  std::optional<sim::SweepPlanOutcome> outcome;
  {
    py::gil_scoped_release release;
    outcome = sim::run_sweep_plan(spec, options);
  }
  if (!outcome->plan) {
    return {problems_of(outcome->errors), exit_status(outcome->errors) != 2, "", {}};
  }
  const sim::SweepPlan& plan = *outcome->plan;
  std::ostringstream summary;
  sim::write_sweep_json(summary, *plan.summary, plan.wall_s, plan.jobs, plan.ranks);
  return {Problems{}, false, summary.str(), records.take()};
}

/// (problems, notes, model section JSON text).
std::tuple<Problems, std::vector<std::string>, std::string> import_hf(
    const std::string& text, const std::string& label, std::int64_t seq_length) {
  Result<ImportedModel> m = model_from_hf_config(text, label, seq_length);
  if (!m) return {problems_of(m.errors()), {}, ""};
  return {Problems{}, m->notes, m->model_json};
}

/// (problems, ignored flags, notes, scenario JSON text).
std::tuple<Problems, std::vector<std::string>, std::vector<std::string>, std::string>
import_megatron(const std::string& line, std::int64_t world_size, const std::string& system) {
  MegatronImportOptions options;
  options.world_size = world_size;
  options.system = system;
  Result<ImportedScenario> s = scenario_from_megatron_args(line, options);
  if (!s) return {problems_of(s.errors()), {}, {}, ""};
  return {Problems{}, s->ignored_flags, s->notes, s->scenario_json};
}

/// (problems, `stepsim systems --format json` text): the shipped systems by short name.
std::tuple<Problems, std::string> systems() {
  Result<std::vector<ShippedSystem>> rows = shipped_systems(scenarios_dir());
  if (!rows) return {problems_of(rows.errors()), ""};
  return {Problems{}, shipped_systems_json(*rows)};
}

}  // namespace
}  // namespace stepsim::python

PYBIND11_MODULE(_stepsim, m) {
  using namespace stepsim::python;
  m.doc() = "C++ half of the stepsim module; use `import stepsim`.";
  py::class_<Scenario>(m, "Scenario", "A loaded and validated scenario (stepsim.load()).")
      .def_property_readonly("name", [](const Scenario& s) { return s.workload.name; })
      .def_property_readonly("file", [](const Scenario& s) { return s.file; })
      .def_property_readonly("megatron_args",
                             [](const Scenario& s) { return stepsim::megatron_args_of(s.workload); },
                             "the scenario's model and parallel settings as Megatron-LM flags")
      .def("__repr__", [](const Scenario& s) {
        return "<stepsim.Scenario " + s.workload.name + ": " + stepsim::layout_words(s.workload) +
               " on " + std::to_string(s.workload.training.world_size) + " GPUs>";
      });
  m.def("version", [] { return std::string(STEPSIM_VERSION); });
  m.def("scenarios_dir", &scenarios_dir);
  m.def("load_file", &load_file);
  m.def("load_text", &load_text);
  m.def("check", &check);
  m.def("predict", [](const Scenario& s, const std::string& trace, bool gpipe,
                      std::int64_t train_tokens,
                      std::vector<std::pair<std::int32_t, double>> stragglers,
                      const std::string& trace_level, std::optional<std::vector<std::int32_t>> trace_ranks,
                      bool contention, bool full_rank,
                      std::vector<std::pair<std::int32_t, double>> slow_nics, double jitter,
                      std::uint64_t seed) {
    return predict(s, PredictArgs{trace, gpipe, train_tokens, std::move(stragglers),
                                  trace_level, std::move(trace_ranks), contention, full_rank,
                                  std::move(slow_nics), jitter, seed});
  });
  m.def("memory", &memory);
  m.def("schedule", &schedule);
  m.def("sweep", [](const std::string& text, const std::string& label, const std::string& base_dir,
                    int jobs, const std::string& out, const std::string& objective,
                    double price_per_gpu_hour, std::int64_t train_tokens) {
    return sweep(text, label, base_dir, jobs, out,
                 SweepOverrides{objective, price_per_gpu_hour, train_tokens});
  });
  m.def("import_hf", &import_hf);
  m.def("import_megatron", &import_megatron);
  m.def("systems", &systems);
}
