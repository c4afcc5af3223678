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
#include "stepsim/core/import.hpp"
#include "stepsim/core/load.hpp"
#include "stepsim/core/make_cost_model.hpp"
#include "stepsim/sim/sweep.hpp"
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
  std::int64_t world_size = 0;
  std::string system;
};

bool read_file(const std::string& path, std::string& text) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream s;
  s << in.rdbuf();
  text = s.str();
  return true;
}

/// Progress on stderr: done/total, rate and ETA, redrawn at most 5 times a second.
class ProgressBar {
 public:
  ProgressBar(std::ostream& err, std::int64_t total, std::int64_t already)
      : err_(err), total_(total), already_(already), start_(std::chrono::steady_clock::now()) {}
  void update(std::int64_t fed, bool force = false) {
    const auto now = std::chrono::steady_clock::now();
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
  void finish() { err_ << '\n'; }

 private:
  std::ostream& err_;
  std::int64_t total_, already_;
  std::chrono::steady_clock::time_point start_, last_{};
};

/// Loads the sweep, taking the base from --megatron-args when given. nullopt: reported.
std::optional<SweepSpec> load_spec(const SweepOptions& o, Env& env) {
  LoadOptions options;
  options.scenarios_dir = env.scenarios_dir;
  std::string base_override;
  if (!o.megatron_args.empty()) {
    MegatronImportOptions import;
    import.world_size = o.world_size;
    import.system = o.system;
    auto imported = scenario_from_megatron_args(o.megatron_args, import);
    if (!imported) {
      *env.err << format_errors(imported.errors());
      return std::nullopt;
    }
    if (!imported->ignored_flags.empty()) {
      *env.err << "stepsim: --megatron-args: ignored (not modelled):";
      for (const std::string& f : imported->ignored_flags) *env.err << ' ' << f;
      *env.err << '\n';
    }
    for (const std::string& n : imported->notes)
      *env.err << "stepsim: --megatron-args: " << n << '\n';
    base_override = imported->scenario_json;
  }
  std::string text;
  if (!read_file(o.file, text)) {
    *env.err << o.file << ": cannot open the file (missing or unreadable)\n";
    return std::nullopt;
  }
  const std::string dir = std::filesystem::path(o.file).parent_path().string();
  auto spec = load_sweep_text(text, o.file, dir.empty() ? "." : dir, options, base_override);
  if (!spec) {
    *env.err << format_errors(spec.errors());
    return std::nullopt;
  }
  return std::move(spec).value();
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
  if (o.resume && (o.out.empty() || o.out.ends_with(".json"))) {
    err << "stepsim sweep: --resume continues a CSV given with --out FILE.csv\n";
    return 2;
  }

  // One cost model per distinct system, shared read-only by every thread.
  std::shared_ptr<const Profile> profile;
  if (spec->base.cost_model.kind == CostModelSpec::Kind::kProfile) {
    auto loaded = load_shared_profile(spec->base.cost_model.profile_path);
    if (!loaded) {
      err << format_errors(loaded.errors());
      return 2;
    }
    profile = *loaded;
  }
  std::vector<std::unique_ptr<CostModel>> models;
  std::vector<const CostModel*> model_ptrs;
  bool warned_profile = false;
  for (const SystemConfig& system : sim::system_variants(*spec)) {
    Workload w = spec->base;
    w.system = system;
    if (profile && system.gpu_name != spec->base.system.gpu_name) {
      // A profile measured on another GPU says nothing about this one.
      w.cost_model = CostModelSpec{};
      err << "stepsim sweep: system " << system.name << " (" << system.gpu_name
          << ") is priced by its roofline, not by the base's profile of "
          << spec->base.system.gpu_name << "\n";
    } else if (profile && !warned_profile && !(system == spec->base.system)) {
      warned_profile = true;
      err << "stepsim sweep: system.* what-ifs change only what the profile "
          << spec->base.cost_model.profile_path
          << " does not measure; give the base \"cost_model\": \"roofline\" to price them all\n";
    }
    auto model = make_cost_model(w, profile);
    if (!model) {
      err << format_errors(model.errors());
      return 2;
    }
    model_ptrs.push_back(model->get());
    models.push_back(std::move(model).value());
  }
  const std::vector<std::string> columns = sim::sweep_columns(*spec);
  const sim::SweepEvaluator evaluator(*spec, model_ptrs);

  sim::SweepRunOptions run;
  run.jobs =
      o.jobs > 0 ? o.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  bool write_header = true;
  std::int64_t first_new = 0;
  if (o.resume) {
    std::string text;
    if (read_file(o.out, text)) {
      auto parsed = sim::parse_sweep_csv(text, columns, o.out);
      if (!parsed) {
        err << format_errors(parsed.errors());
        return 2;
      }
      run.known = std::move(parsed.value().rows);
      write_header = parsed->complete_bytes == 0;
      first_new = run.known.empty() ? 0 : run.known.back().index + 1;
      if (root) std::filesystem::resize_file(o.out, parsed->complete_bytes);
    }
  }
  const std::int64_t total = sim::count_configurations(*spec);
  const auto start = std::chrono::steady_clock::now();

  std::ofstream csv_file;
  std::ostringstream rank_rows;  // MPI: this rank's new rows, gathered on rank 0
  sim::SweepSummary summary(*spec, columns);
  JsonRowsSink json_rows(columns);
  std::vector<sim::SweepSink*> sinks;
  std::unique_ptr<sim::CsvSink> csv;
  if (mpi) {
    run.rank = mpi->rank;
    run.ranks = mpi->size;
    csv = std::make_unique<sim::CsvSink>(rank_rows, columns, false, first_new);
    sinks.push_back(csv.get());
  } else {
    if (!o.out.empty() && !o.out.ends_with(".json")) {
      csv_file.open(
          o.out, o.resume ? std::ios::app | std::ios::binary : std::ios::trunc | std::ios::binary);
      if (!csv_file) {
        err << o.out << ": cannot open for writing\n";
        return 1;
      }
      csv = std::make_unique<sim::CsvSink>(csv_file, columns, write_header, first_new);
      sinks.push_back(csv.get());
    }
    if (o.out.ends_with(".json")) sinks.push_back(&json_rows);
    sinks.push_back(&summary);
    std::signal(SIGINT, on_sigint);
    run.cancel = &g_interrupted;
  }
  const bool show_progress = root && (o.progress || isatty(STDERR_FILENO) != 0);
  ProgressBar bar(err, total, static_cast<std::int64_t>(run.known.size()));
  if (show_progress) {
    run.progress = [&bar, &csv_file](std::int64_t fed) {
      bar.update(fed);
      csv_file.flush();
    };
  }
  auto stats = sim::run_sweep(*spec, evaluator, run, sinks);
  if (!mpi) std::signal(SIGINT, SIG_DFL);
  if (show_progress) {
    bar.update(stats ? stats->fed : 0, true);
    bar.finish();
  }
  if (!stats) {
    Error e = stats.errors().front();
    e.file = o.out;
    err << e.to_string() << '\n';
    return 2;
  }
  if (mpi) {
    // Rank 0 merges everyone's rows with the resumed ones and feeds them, in order, to the
    // real outputs; nothing is evaluated again.
    const std::string gathered = mpi_gather_text(rank_rows.str(), *mpi);
    if (!root) return 0;
    auto parsed = sim::parse_sweep_csv(sim::csv_header(columns) + "\n" + gathered, columns, "mpi");
    if (!parsed) {
      err << format_errors(parsed.errors());
      return 1;
    }
    std::vector<sim::SweepRow> all = std::move(run.known);
    for (sim::SweepRow& r : parsed.value().rows) all.push_back(std::move(r));
    std::sort(all.begin(), all.end(),
              [](const sim::SweepRow& a, const sim::SweepRow& b) { return a.index < b.index; });
    sim::SweepRunOptions merge;
    merge.known = std::move(all);
    sinks.clear();
    if (!o.out.empty() && !o.out.ends_with(".json")) {
      csv_file.open(
          o.out, o.resume ? std::ios::app | std::ios::binary : std::ios::trunc | std::ios::binary);
      csv = std::make_unique<sim::CsvSink>(csv_file, columns, write_header, first_new);
      sinks.push_back(csv.get());
    }
    if (o.out.ends_with(".json")) sinks.push_back(&json_rows);
    sinks.push_back(&summary);
    auto merged = sim::run_sweep(*spec, evaluator, merge, sinks);
    if (!merged) {
      err << format_errors(merged.errors());
      return 1;
    }
  }
  csv_file.close();
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (o.out.ends_with(".json")) {
    std::ofstream f(o.out, std::ios::binary);
    json_rows.write(f);
  }
  const std::int64_t ranks = mpi ? mpi->size : 1;
  if (o.format == "json") {
    write_sweep_json(*env.out, summary, wall_s, run.jobs, ranks);
  } else {
    sim::write_sweep_text(*env.out, summary);
  }
  std::array<char, 200> line{};
  std::snprintf(line.data(), line.size(),
                "stepsim sweep: %lld of %lld configurations evaluated in %.2f s (%.0f/s, %d jobs x "
                "%lld ranks)\n",
                static_cast<long long>(stats->evaluated), static_cast<long long>(total), wall_s,
                wall_s > 0 ? static_cast<double>(stats->evaluated) / wall_s : 0.0, run.jobs,
                static_cast<long long>(ranks));
  err << line.data();
  if (stats->cancelled) {
    err << "stepsim sweep: interrupted; " << stats->fed << " rows kept"
        << (o.out.empty() ? std::string() : " in " + o.out + " (continue with --resume)") << '\n';
    return 130;
  }
  return 0;
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
  std::string knobs = "Sweepable knobs (\"auto\" = every valid value given the knobs above it):\n";
  for (const KnobInfo& k : knob_table()) {
    knobs += "  " + std::string(k.key) + (k.autoable ? "  [auto]" : "") + "\n";
  }
  cmd->footer(knobs);
  cmd->add_option("SWEEP", o->file, "sweep JSON file")->required();
  cmd->add_option("--out", o->out, "write every configuration to FILE.csv (or FILE.json)");
  cmd->add_option("--jobs", o->jobs, "worker threads (default: hardware concurrency)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--format", o->format, "summary format: text or json")
      ->check(CLI::IsMember({"text", "json"}));
  cmd->add_flag("--resume", o->resume, "continue a partial --out CSV: skip its rows");
  cmd->add_flag("--progress", o->progress, "draw the progress bar even when stderr is no tty");
  cmd->add_option("--megatron-args", o->megatron_args,
                  "take the base scenario from a Megatron-LM launch line");
  cmd->add_option("--world-size", o->world_size, "with --megatron-args: GPUs of the run")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--system", o->system, "with --megatron-args: system file");
  cmd->callback([o, &env] { env.exit_code = run(*o, env); });
}

}  // namespace stepsim::cli
