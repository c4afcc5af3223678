// stepsim sweep SWEEP.json: what-if planning over Megatron's parallel knobs. Loads the sweep
// (or takes the base from --megatron-args), builds one cost model per system, runs the
// planner on --jobs threads (or over mpirun ranks), streams the CSV, prints the summary.
// Ctrl-C stops handing out work and keeps every finished row; --resume continues the CSV.

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>

#include "commands.hpp"
#include "common.hpp"
#include "stepsim/import/import.hpp"
#include "stepsim/base/json_input.hpp"
#include "stepsim/config/parse.hpp"
#include "stepsim/cost/make_cost_model.hpp"
#include "stepsim/sweep/sweep.hpp"
#include "stepsim/sweep/sweep_plan.hpp"
#include "sweep_output.hpp"

namespace stepsim::cli {
namespace {

// The one piece of global state: a signal handler can reach nothing else.
std::atomic<bool> g_interrupted{false};
extern "C" void on_sigint(int /*signal*/) { g_interrupted.store(true); }

struct SweepOptions {
  std::string file;
  std::string out;
  std::string format = "text";
  int jobs = 0;
  bool resume = false;
  bool progress = false;
  std::string megatron_args;
  bool allow_unmodelled = false;
  std::int64_t world_size = 0;
  std::string system;
  std::string objective;          ///< "": the sweep file's
  double price_per_gpu_hour = 0;  ///< 0: the sweep file's
  double train_tokens = 0;  ///< 0: the sweep file's (a double: "1e12" as predict takes it)
};

/// The command line's objective, price and token budget over the sweep file's; false (and
/// reported) when the objective then lacks what it needs.
bool apply_overrides(const SweepOptions& o, SweepSpec& spec, Env& env) {
  if (!o.objective.empty()) spec.objective = *sweep_objective_named(o.objective);
  if (o.price_per_gpu_hour > 0) spec.price_per_gpu_hour = o.price_per_gpu_hour;
  if (o.train_tokens > 0) spec.train_tokens = static_cast<std::int64_t>(o.train_tokens);
  const Errors missing = check_sweep_objective(spec);
  if (missing.empty()) return true;
  *env.err << format_errors(missing);
  return false;
}

/// Progress on stderr: done/total, rate and ETA, redrawn at most 5 times a second.
class ProgressBar {
 public:
  ProgressBar(std::ostream& err, std::int64_t total)
      : err_(err), total_(total), start_(std::chrono::steady_clock::now()) {}
  void update(std::int64_t fed, bool force = false) {
    const auto now = std::chrono::steady_clock::now();
    if (already_ < 0) already_ = fed - 1;  // rows resumed from the CSV are not this run's rate
    if (!force && now - last_ < std::chrono::milliseconds(200)) return;
    last_ = now;
    const double s = std::chrono::duration<double>(now - start_).count();
    const double rate = s > 0 ? static_cast<double>(fed - already_) / s : 0.0;
    const double eta = rate > 0 ? static_cast<double>(total_ - fed) / rate : 0.0;
    const std::int64_t width = 30;
    const std::int64_t filled = total_ > 0 ? width * fed / total_ : width;
    std::array<char, 160> buf{};
    std::snprintf(
        buf.data(), buf.size(), "\r[%s%s] %lld/%lld %5.1f%% %8.0f/s ETA %6.1fs ",
        std::string(static_cast<std::size_t>(filled), '#').c_str(),
        std::string(static_cast<std::size_t>(width - filled), ' ').c_str(),
        static_cast<long long>(fed), static_cast<long long>(total_),
        total_ > 0 ? 100.0 * static_cast<double>(fed) / static_cast<double>(total_) : 100.0, rate,
        eta);
    err_ << buf.data() << std::flush;
  }
  void finish(std::int64_t fed) {
    update(fed, true);
    err_ << '\n';
  }

 private:
  std::ostream& err_;
  std::int64_t total_, already_ = -1;
  std::chrono::steady_clock::time_point start_, last_{};
};

/// Loads the sweep, taking the base from --megatron-args when given. nullopt: reported.
std::optional<SweepSpec> load_spec(const SweepOptions& o, Env& env) {
  LoadOptions options;
  options.scenarios_dir = env.scenarios_dir;
  std::string base_override;
  const std::string orphan = launch_line_options_without_line(
      MegatronArgs{.line = o.megatron_args, .world_size = o.world_size, .system = o.system,
                   .allow_unmodelled = o.allow_unmodelled});
  if (!orphan.empty()) {
    *env.err << "stepsim sweep: " << orphan << "\n";
    return std::nullopt;
  }
  if (!o.megatron_args.empty()) {
    const std::optional<std::string> imported =
        import_megatron_args_or_report(MegatronArgs{.line = o.megatron_args,
                                                    .world_size = o.world_size,
                                                    .system = o.system,
                                                    .allow_unmodelled = o.allow_unmodelled},
                                       env);
    if (!imported) return std::nullopt;
    base_override = *imported;
  }
  auto text = read_input_file(o.file);  // the size limit every input file has
  if (!text) {
    *env.err << format_errors(text.errors());
    return std::nullopt;
  }
  const std::string dir = std::filesystem::path(o.file).parent_path().string();
  auto spec = load_sweep_text(*text, o.file, dir.empty() ? "." : dir, options, base_override);
  if (!spec) {
    *env.err << format_errors(spec.errors());
    return std::nullopt;
  }
  SweepSpec loaded = std::move(spec).value();
  if (!apply_overrides(o, loaded, env)) return std::nullopt;
  return loaded;
}

/// The summary on stdout, the run's figures (and an interruption) on stderr.
int report(const SweepOptions& o, const sim::SweepPlan& plan, Env& env, std::ostream& err) {
  if (o.format == "json") {
    sim::write_sweep_json(*env.out, *plan.summary, plan.wall_s, plan.jobs, plan.ranks);
  } else {
    sim::write_sweep_text(*env.out, *plan.summary);
  }
  std::array<char, 200> line{};
  std::snprintf(line.data(), line.size(),
                "stepsim sweep: %lld of %lld configurations evaluated in %.2f s (%.0f/s, %d jobs x "
                "%lld ranks)\n",
                static_cast<long long>(plan.stats.evaluated), static_cast<long long>(plan.total),
                plan.wall_s,
                plan.wall_s > 0 ? static_cast<double>(plan.stats.evaluated) / plan.wall_s : 0.0,
                plan.jobs, static_cast<long long>(plan.ranks));
  err << line.data();
  if (plan.stats.cancelled) {
    err << "stepsim sweep: interrupted; " << plan.stats.fed << " rows kept"
        << (o.out.empty() ? std::string() : " in " + o.out + " (continue with --resume)") << '\n';
    return 130;
  }
  return 0;
}

int run(const SweepOptions& o, Env& env) {
  const std::optional<MpiPlace> mpi = mpi_start_if_launched();
  const bool root = !mpi || mpi->rank == 0;
  struct MpiGuard {
    bool on;
    ~MpiGuard() {
      if (on) mpi_stop();
    }
  } guard{mpi.has_value()};
  std::ostringstream null_sink;
  std::ostream& err = root ? *env.err : null_sink;

  Env quiet = env;
  quiet.err = &err;
  std::optional<SweepSpec> spec = load_spec(o, quiet);
  if (!spec) return 2;

  sim::SweepPlanOptions plan_options;
  plan_options.jobs = o.jobs;
  plan_options.out = o.out;
  plan_options.resume = o.resume;
  if (mpi) {
    plan_options.rank = mpi->rank;
    plan_options.ranks = mpi->size;
    plan_options.gather = [place = *mpi](const std::string& text) {
      return mpi_gather_text(text, place);
    };
  } else {
    std::signal(SIGINT, on_sigint);
    std::signal(SIGTERM, on_sigint);  // as SIGINT: finish the rows under way, keep the CSV
    plan_options.cancel = &g_interrupted;
  }
  std::optional<ProgressBar> bar;
  if (root && (o.progress || isatty(STDERR_FILENO) != 0)) {
    bar.emplace(err, sim::count_configurations(*spec));
    plan_options.progress = [&bar](std::int64_t fed) { bar->update(fed); };
  }
  sim::SweepPlanOutcome outcome = sim::run_sweep_plan(*spec, plan_options);
  if (!mpi) {
    std::signal(SIGINT, SIG_DFL);
    std::signal(SIGTERM, SIG_DFL);
  }
  if (bar) bar->finish(outcome.plan ? outcome.plan->stats.fed : 0);
  if (!outcome.plan) {
    err << format_errors(outcome.errors);
    return exit_status(outcome.errors);
  }
  for (const std::string& note : outcome.plan->notes) err << "stepsim sweep: " << note << '\n';
  if (!outcome.plan->root) return 0;
  return report(o, *outcome.plan, env, err);
}

}  // namespace

namespace {
/// The sweepable knobs as "section: leaf leaf* ..." lines wrapped at 100 columns, in
/// enumeration order ("system" itself under "system").
std::string knob_list() {
  std::string out;
  std::string section;
  std::size_t column = 0;
  for (const KnobInfo& k : knob_table()) {
    const std::size_t dot = k.key.find('.');
    const std::string prefix(k.key.substr(0, dot));
    const std::string leaf =
        std::string(dot == std::string_view::npos ? k.key : k.key.substr(dot + 1)) +
        (k.autoable ? "*" : "");
    if (prefix != section) {
      section = prefix;
      out += (out.empty() ? "  " : "\n  ") + section + ":";
      column = section.size() + 3;
    } else if (column + leaf.size() + 1 > 100) {
      out += "\n   ";
      column = 3;
    }
    out += " " + leaf;
    column += leaf.size() + 1;
  }
  return out + "\n";
}

std::vector<std::string> objective_names() {
  std::vector<std::string> out;
  std::string names = sweep_objective_names();
  std::size_t start = 0;
  while (start < names.size()) {
    const std::size_t comma = names.find(", ", start);
    out.push_back(names.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 2;
  }
  return out;
}
}  // namespace

void add_sweep_command(CLI::App& app, Env& env) {
  auto o = std::make_shared<SweepOptions>();
  CLI::App* cmd = app.add_subcommand(
      "sweep",
      "Plan a run: enumerate the configurations of a sweep file (base scenario, search space "
      "with value lists or \"auto\", constraints, objective, top), cut those that break "
      "Megatron-LM's rules or clearly do not fit in memory, simulate the rest in parallel and "
      "report the best, the Pareto front of throughput vs memory, and what was cut why. "
      "Under mpirun the space is split over the ranks and rank 0 writes the results.");
  std::string knobs =
      "Example sweep file (scenarios/sweeps/llama3-70b-h100-cost.json; keys: docs/scenario.md "
      "\"Sweep file\"):\n"
      "  {\"base\": \"llama3-70b-h100-64-fp8.json\",\n"
      "   \"search\": {\"training.world_size\": [64, 128],\n"
      "              \"training.tensor_model_parallel_size\": [4, 8],\n"
      "              \"training.pipeline_model_parallel_size\": \"auto\",\n"
      "              \"training.context_parallel_size\": [1, 2],\n"
      "              \"training.recompute_granularity\": \"auto\"},\n"
      "   \"constraints\": {\"memory_headroom\": 0.05},\n"
      "   \"objective\": \"min_cost\", \"price_per_gpu_hour\": 2.5, \"train_tokens\": 1e12,\n"
      "   \"top\": 5}\n"
      "Sweepable knobs, by section (*: also \"auto\", every valid value given the knobs "
      "before it;\nthe full list with types and rules: docs/scenario-keys.md):\n";
  knobs += knob_list();
  cmd->footer(knobs);
  cmd->add_option("SWEEP", o->file, "sweep JSON file")->required();
  cmd->add_option("--out", o->out, "write every configuration to FILE.csv (or FILE.json)");
  cmd->add_option("--jobs", o->jobs, "worker threads (default: hardware concurrency)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--format", o->format, "summary format: text or json")
      ->check(CLI::IsMember({"text", "json"}));
  cmd->add_option("--objective", o->objective,
                  "rank by this instead of the file's objective (min_cost: $ per token at "
                  "--price-per-gpu-hour; per run with --train-tokens)")
      ->check(CLI::IsMember(objective_names()));
  cmd->add_option("--price-per-gpu-hour", o->price_per_gpu_hour,
                  "price of one GPU for an hour (over the file's price_per_gpu_hour): $ per "
                  "million tokens for every configuration")
      ->check(CLI::Range(1e-9, kMaxPricePerGpuHour));
  cmd->add_option("--train-tokens", o->train_tokens,
                  "tokens of the training run (over the file's train_tokens): its time and, "
                  "with a price, its cost")
      ->check(CLI::Range(1.0, 1e18));
  cmd->add_flag("--resume", o->resume, "continue a partial --out CSV: skip its rows");
  cmd->add_flag("--progress", o->progress, "draw the progress bar even when stderr is no tty");
  cmd->add_option("--megatron-args", o->megatron_args,
                  "take the base scenario from a Megatron-LM launch line")
      ->check(launch_line_validator());
  cmd->add_option("--world-size", o->world_size, "with --megatron-args: GPUs of the run")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--system", o->system, "with --megatron-args: a system's short name or file");
  cmd->add_flag("--allow-unmodelled", o->allow_unmodelled,
                "with --megatron-args: sweep even when the line has flags that change the job "
                "and are not modelled (they are left out)");
  cmd->callback([o, &env] { env.exit_code = run(*o, env); });
}

}  // namespace stepsim::cli
