// stepsim predict [SCENARIO] [--format text|json] [--trace FILE [--trace-level auto|op|microbatch]
//                 [--trace-ranks LIST]]

#include <CLI/CLI.hpp>

#include <algorithm>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "commands.hpp"
#include "common.hpp"
#include "stepsim/cost/make_cost_model.hpp"
#include "stepsim/report/predict.hpp"
#include "stepsim/report/report.hpp"
#include "stepsim/sweep/make_it_fit.hpp"

namespace stepsim::cli {

namespace {

struct PredictArgs {
  std::string scenario;
  std::string format = "text";
  std::string trace;
  std::string trace_level = "auto";
  std::string trace_ranks;  ///< "0,3" or "0-3,7"; empty: every rank
  std::vector<std::string> stragglers;  ///< "RANK=FACTOR"
  std::vector<std::string> slow_nics;   ///< "NODE=FACTOR"
  bool full_rank = false;
  double jitter = 0;
  std::uint64_t seed = 0;
  bool gpipe = false;
  bool no_contention = false;
  bool verbose = false;
  double train_tokens = 0;
  MegatronArgs megatron;
};

/// Parses --trace-ranks ("0,3", "0-3,7") against `ranks` pipeline ranks; nullopt (with the
/// message on `err`) when it is not such a list.
std::optional<std::vector<std::int32_t>> parse_trace_ranks(const std::string& text,
                                                           std::int32_t ranks, std::ostream& err) {
  std::vector<std::int32_t> out;
  std::size_t at = 0;
  const auto bad = [&](const std::string& why) {
    err << "stepsim predict: --trace-ranks '" << text << "': " << why
        << " (a list of pipeline ranks such as 0,3 or 0-3,7)\n";
    return std::nullopt;
  };
  while (at <= text.size()) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, comma - at);
    const std::size_t dash = item.find('-');
    const std::string lo_text = item.substr(0, dash);
    const std::string hi_text = dash == std::string::npos ? lo_text : item.substr(dash + 1);
    const auto number = [](const std::string& s) -> std::int64_t {
      if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos) {
        return -1;
      }
      return std::stoll(s);
    };
    const std::int64_t lo = number(lo_text), hi = number(hi_text);
    if (lo < 0 || hi < 0 || hi < lo) return bad("'" + item + "' is not a rank or a range a-b");
    if (hi >= ranks) {  // past the job: sim::check_trace_shape names the rank
      out.push_back(static_cast<std::int32_t>(hi));
      break;
    }
    for (std::int64_t r = lo; r <= hi; ++r) out.push_back(static_cast<std::int32_t>(r));
    at = comma + 1;
  }
  return out;
}

/// Parses `flag` INDEX=FACTOR values (--straggler RANK=FACTOR, --slow-nic NODE=FACTOR);
/// nullopt (with the message on `err`) when one is not of that form.
std::optional<std::vector<std::pair<std::int32_t, double>>> parse_factors(
    const std::vector<std::string>& flags, const char* flag, const char* form,
    std::ostream& err) {
  std::vector<std::pair<std::int32_t, double>> out;
  for (const std::string& s : flags) {
    const std::size_t eq = s.find('=');
    std::pair<std::int32_t, double> g;
    bool ok = eq != std::string::npos && eq > 0 && eq < 10 && eq + 1 < s.size() &&
              s.find_first_not_of("0123456789") == eq;
    if (ok) {
      try {
        std::size_t used = 0;
        g.first = static_cast<std::int32_t>(std::stol(s.substr(0, eq)));
        g.second = std::stod(s.substr(eq + 1), &used);
        ok = used == s.size() - eq - 1;
      } catch (const std::exception&) {
        ok = false;
      }
    }
    if (!ok) {
      err << "stepsim predict: " << flag << " '" << s << "': expected " << form << "\n";
      return std::nullopt;
    }
    out.push_back(g);
  }
  return out;
}

/// --straggler, --full-rank, --slow-nic, --jitter, --seed into `options`; false (with the
/// message on `err`) when a value is not of its form (ranges: checked by the simulation).
bool read_heterogeneity(const PredictArgs& args, sim::PredictOptions& options, std::ostream& err) {
  auto stragglers = parse_factors(args.stragglers, "--straggler",
                                  "RANK=FACTOR (a global rank and how many times as long its "
                                  "kernels take, e.g. 5=1.2)",
                                  err);
  if (!stragglers) return false;
  for (const auto& [rank, factor] : *stragglers) options.stragglers.push_back({rank, factor});
  auto slow_nics = parse_factors(args.slow_nics, "--slow-nic",
                                 "NODE=FACTOR (a node, global rank / gpus_per_node, and how many "
                                 "times as long its NICs take to move the same bytes, e.g. 3=2)",
                                 err);
  if (!slow_nics) return false;
  for (const auto& [node, factor] : *slow_nics) options.slow_nics.push_back({node, factor});
  options.full_rank = args.full_rank;
  options.jitter_sigma = args.jitter;
  options.seed = args.seed;
  return true;
}

/// What to change when the simulated step of `w` does not fit in memory (nullopt: it fits).
std::optional<sim::FitAdvice> fit_advice(const Workload& w, const sim::Prediction& p,
                                         const std::string& text) {
  if (p.fits_in_memory) return std::nullopt;
  const auto cost = make_cost_model(w);  // predict built it once already: it cannot fail
  if (!cost.ok()) return std::nullopt;
  return sim::simulated_fit_advice(w, p, defaulted_keys_of_scenario(text), **cost);
}

int run_predict(const PredictArgs& args, Env& env) {
  if (args.trace.empty() && (args.trace_level != "auto" || !args.trace_ranks.empty())) {
    *env.err << "stepsim predict: --trace-level and --trace-ranks shape the trace: give --trace "
                "FILE too\n";
    return 2;
  }
  std::string text;
  std::optional<Workload> w = load_scenario_or_args(args.scenario, args.megatron, env, &text);
  if (!w) return 2;
  sim::TraceShape shape;
  shape.level = args.trace_level == "op"           ? sim::TraceLevel::kOp
                : args.trace_level == "microbatch" ? sim::TraceLevel::kMicrobatch
                                                   : sim::TraceLevel::kAuto;
  if (!args.trace_ranks.empty()) {
    shape.ranks = parse_trace_ranks(
        args.trace_ranks, static_cast<std::int32_t>(w->training.pipeline_model_parallel_size),
        *env.err);
    if (!shape.ranks) return 2;
  }
  if (const Errors bad = sim::check_trace_shape(shape, *w); !bad.empty()) {
    *env.err << "stepsim predict: " << format_errors(bad);
    return 2;
  }
  sim::PredictOptions options;
  options.keep_timeline = !args.trace.empty();
  options.gpipe = args.gpipe;
  options.contention = !args.no_contention;
  options.scenarios_dir = env.scenarios_dir;  // the open accuracy table the report quotes
  if (!read_heterogeneity(args, options, *env.err)) return 2;
  const sim::PredictOutcome outcome = sim::predict(*w, options);
  if (!outcome.run) {
    const int status = exit_status(outcome.errors);
    *env.err << (status == 2 ? "" : "stepsim predict: ") << format_errors(outcome.errors);
    return status;
  }
  const sim::PredictRun& run = *outcome.run;
  sim::ReportOptions report;
  report.train_tokens = static_cast<std::int64_t>(args.train_tokens);
  report.verbose = args.verbose;
  const std::optional<sim::FitAdvice> advice = fit_advice(*w, run.result.prediction, text);
  report.fit_advice = advice ? &*advice : nullptr;
  if (args.format == "json") {
    sim::write_prediction_json(*w, run.result, run.cost_model, *env.out, report);
  } else {
    sim::write_prediction_text(*w, run.result, run.cost_model, *env.out, report);
  }
  if (args.trace.empty()) return 0;
  const Result<sim::TraceWritten> written = sim::write_trace_file(run, args.trace, shape);
  if (!written) {
    *env.err << "stepsim predict: " << format_errors(written.errors());
    return 1;
  }
  if (!written->note.empty()) *env.err << "stepsim predict: note: " << written->note << "\n";
  if (args.format != "json") {
    *env.out << "  trace written to " << args.trace << " (" << written->slices
             << (written->microbatch_level ? " slices at micro-batch level" : " slices")
             << "; open in ui.perfetto.dev or stepsim-viewer)\n";
  }
  return 0;
}

}  // namespace

void add_predict_command(CLI::App& app, Env& env) {
  auto args = std::make_shared<PredictArgs>();
  CLI::App* cmd = app.add_subcommand(
      "predict",
      "Simulate one training step: step time, pipeline bubbles, exposed communication, MFU/HFU,\n"
      "per-stage memory and the critical chain. Without SCENARIO, predicts the default\n"
      "scenario (GPT-3 175B on 64 A100s, t8 p8 v3, sequence parallel, selective recompute).");
  cmd->add_option("scenario", args->scenario, "scenario JSON file (see scenarios/)");
  cmd->add_option("--format", args->format, "output format")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  cmd->add_option("--trace", args->trace,
                  "write the simulated timeline as a Chrome trace (Perfetto, stepsim-viewer), with the "
                  "critical path as flow arrows; FILE.json.gz writes it gzip-compressed");
  cmd->add_option("--trace-level", args->trace_level,
                  "op: a slice per op; microbatch: per action and stream; auto: op up to ~50 MB")
      ->check(CLI::IsMember({"auto", "op", "microbatch"}))
      ->capture_default_str();
  cmd->add_option("--trace-ranks", args->trace_ranks,
                  "only these pipeline ranks in the trace, e.g. 0,3 or 0-3,7");
  cmd->add_option("--straggler", args->stragglers,
                  "RANK=FACTOR: global rank RANK's kernels take FACTOR times as long, FACTOR in "
                  "[0.001, 1000] (repeat the flag for several; all in one data-parallel replica "
                  "unless --full-rank)");
  cmd->add_flag("--full-rank", args->full_rank,
                "simulate every GPU (each TP, CP peer and DP replica, collectives over their real "
                "members on their real links) instead of one representative rank per stage; "
                "stragglers anywhere, --slow-nic and --jitter need it");
  cmd->add_option("--slow-nic", args->slow_nics,
                  "NODE=FACTOR (with --full-rank): node NODE's NIC rails (global rank / "
                  "gpus_per_node) move bytes FACTOR times as slowly, FACTOR in [0.001, 1000]");
  cmd->add_option("--jitter", args->jitter,
                  "SIGMA (with --full-rank): each GPU's kernels take exp(SIGMA * z) times as long, "
                  "z a standard normal drawn per global rank from --seed; SIGMA in [0, 1]");
  cmd->add_option("--seed", args->seed, "the --jitter and spread draws' seed (std::mt19937_64)")
      ->capture_default_str();
  cmd->add_option("--train-tokens", args->train_tokens,
                  "also report steps, time and GPU-hours to train this many tokens (e.g. 300e9)")
      ->check(CLI::Range(1.0, 1e18));
  cmd->add_flag("--verbose", args->verbose,
                "every warning with all its cases (default: one short line per warning)");
  cmd->add_flag("--gpipe", args->gpipe,
                "simulate the GPipe schedule (all forwards, then all backwards) for comparison");
  cmd->add_flag("--no-contention", args->no_contention,
                "every overlap free: no link sharing between concurrent transfers and "
                "collectives, no slowdown of compute beside NCCL kernels (system.interference); "
                "to see what contention costs");
  cmd->add_option("--megatron-args", args->megatron.line,
                  "build the scenario from a Megatron-LM launch line instead of a file "
                  "(a flag that changes the job and is not modelled is an error)")
      ->check(launch_line_validator());
  cmd->add_option("--world-size", args->megatron.world_size,
                  "with --megatron-args: GPUs of the run (default: from torchrun's "
                  "--nnodes x --nproc_per_node in the line)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--system", args->megatron.system,
                  "with --megatron-args: a shipped system's name (`stepsim systems`) or a file");
  add_allow_unmodelled_flag(cmd, args->megatron);
  cmd->callback([args, &env] { env.exit_code = run_predict(*args, env); });
}

}  // namespace stepsim::cli
