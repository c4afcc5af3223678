#include "common.hpp"

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <filesystem>
#include <string_view>
#include <ostream>

#include "stepsim/base/json_input.hpp"
#include "stepsim/base/nearest_name.hpp"
#include "stepsim/import/import.hpp"
#include "stepsim/check/load.hpp"
#include "stepsim/config/parse.hpp"
#include "stepsim/config/shipped.hpp"

namespace stepsim::cli {

void prepare_mpi_launch() {
  // Variables that Open MPI's mpirun, PMIx servers, Slurm and MPICH's hydra set in every rank.
  for (const char* launched :
       {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "SLURM_PROCID"}) {
    if (std::getenv(launched) != nullptr) return;
  }
  // Open MPI's singleton then needs no orted: it never spawns, so isolation loses nothing.
  setenv("OMPI_MCA_ess_singleton_isolated", "1", 0);
}

int report_errors(const Errors& errors, Env& env) {
  *env.err << format_errors(errors);
  return exit_status(errors);
}

std::optional<Workload> load_or_report(const std::string& path, Env& env, std::string* text) {
  const std::string file = path.empty() ? env.scenarios_dir + "/" + kDefaultScenario : path;
  LoadOptions options;
  options.scenarios_dir = env.scenarios_dir;
  auto loaded = load_scenario_file(file, options);
  if (!loaded) {
    env.exit_code = report_errors(loaded.errors(), env);
    return std::nullopt;
  }
  if (text != nullptr) {
    // The file was read a moment ago; should it be gone now, every default is re-derived.
    Result<std::string> read = read_input_file(file);
    *text = read ? std::move(read).value() : std::string("{}");
  }
  print_notes(*loaded, env);
  return std::move(loaded).value();
}

void print_notes(const Workload& w, Env& env) {
  for (const std::string& note : w.notes) *env.err << "stepsim: note: " << note << '\n';
}

void add_allow_unmodelled_flag(CLI::App* cmd, MegatronArgs& args) {
  cmd->add_flag("--allow-unmodelled", args.allow_unmodelled,
                "with --megatron-args: predict even when the line has flags that change the job "
                "and are not modelled (the report then warns and lists them)");
}

CLI::Validator launch_line_validator() {
  return CLI::Validator(
      [](const std::string& line) -> std::string {
        if (line.find_first_not_of(" \t\r\n") != std::string::npos) return "";
        return "an empty launch line: give Megatron-LM's command line, e.g. \"torchrun "
               "--nproc_per_node 8 pretrain_gpt.py --num-layers 32 ...\"";
      },
      "LINE");
}

namespace {

// The transform of make_integer_options_decimal: `value` rewritten without leading zeros, or
// the reason it is no decimal integer.
std::string to_decimal(std::string& value, bool is_unsigned) {
  // strtoll skips leading blanks: " 010" must not reach it as octal either.
  constexpr const char* kBlanks = " \t\n\r\f\v";
  const std::size_t begin = value.find_first_not_of(kBlanks);
  if (begin == std::string::npos) return "";
  value = value.substr(begin, value.find_last_not_of(kBlanks) - begin + 1);
  std::size_t i = 0;
  const bool negative = !value.empty() && value[0] == '-';
  if (!value.empty() && (value[0] == '+' || value[0] == '-')) i = 1;
  // A word that is no number at all ("two") keeps CLI11's own "Could not convert" message.
  if (i == value.size() || value[i] < '0' || value[i] > '9') return "";
  if (value.find_first_not_of("0123456789", i) != std::string::npos) {
    return "'" + value +
           "' is not a decimal integer (numbers on stepsim's command line are decimal, as "
           "Megatron-LM reads them)";
  }
  std::size_t first = value.find_first_not_of('0', i);
  if (first == std::string::npos) first = value.size() - 1;  // all zeros: keep one
  const std::string digits = value.substr(first);
  if (negative && is_unsigned && digits != "0") return "'" + value + "' must not be negative";
  constexpr std::string_view kInt64Max = "9223372036854775807";
  if (digits.size() > kInt64Max.size() ||
      (digits.size() == kInt64Max.size() && digits > kInt64Max)) {
    return "'" + value + "' does not fit in a 64-bit integer";
  }
  value = (negative && digits != "0" ? "-" : "") + digits;
  return "";
}

}  // namespace

void make_integer_options_decimal(CLI::App& app) {
  for (CLI::Option* option : app.get_options()) {
    const std::string type = option->get_type_name();
    const bool is_unsigned = type.starts_with("UINT");
    if (!type.starts_with("INT") && !is_unsigned) continue;
    option->transform(
        CLI::Validator([is_unsigned](std::string& value) { return to_decimal(value, is_unsigned); },
                       "", "DECIMAL"));
  }
  for (CLI::App* sub : app.get_subcommands({})) make_integer_options_decimal(*sub);
}

std::string launch_line_options_without_line(const MegatronArgs& args) {
  if (!args.line.empty()) return "";
  std::string given;
  const auto add = [&given](bool present, const char* option) {
    if (present) given += std::string(given.empty() ? "" : ", ") + option;
  };
  add(!args.system.empty(), "--system");
  add(args.world_size != 0, "--world-size");
  add(args.allow_unmodelled, "--allow-unmodelled");
  if (given.empty()) return "";
  const bool several = given.find(',') != std::string::npos;
  return given + (several ? " apply" : " applies") + " only with --megatron-args, which was not given";
}

std::optional<std::string> system_option_or_report(const std::string& value, Env& env) {
  const LoadOptions options{env.scenarios_dir};
  if (!is_short_name(value) || !resolve_path(value, ".", options).empty()) return value;
  const ShortNameMatch match = find_shipped(value, env.scenarios_dir, ShippedKind::kSystem);
  if (!match.candidates.empty()) {
    *env.err << "stepsim: --system=\"" << value << "\""
             << ambiguous_short_name(match, ShippedKind::kSystem) << "\n";
    env.exit_code = 2;
    return std::nullopt;
  }
  if (match.path.empty()) return value;  // the loader says it is not found
  return std::string("systems/") + std::filesystem::path(match.path).filename().string();
}

std::optional<std::string> import_megatron_args_or_report(const MegatronArgs& args, Env& env) {
  MegatronImportOptions import;
  import.world_size = args.world_size;
  const std::optional<std::string> system = system_option_or_report(args.system, env);
  if (!system) return std::nullopt;
  import.system = *system;
  import.name = args.name;
  import.allow_unmodelled = args.allow_unmodelled;
  Result<ImportedScenario> imported = scenario_from_megatron_args(args.line, import);
  if (!imported.ok()) {
    env.exit_code = report_errors(imported.errors(), env);
    return std::nullopt;
  }
  if (!imported->ignored_flags.empty()) {
    *env.err << "stepsim: --megatron-args: ignored (no effect on step time or memory):";
    for (const std::string& f : imported->ignored_flags) *env.err << ' ' << f;
    *env.err << '\n';
  }
  if (!imported->unmodelled.empty()) {
    *env.err << "stepsim: --megatron-args: !!! NOT MODELLED, left out (--allow-unmodelled): ";
    for (std::size_t i = 0; i < imported->unmodelled.size(); ++i) {
      *env.err << (i == 0 ? "" : ", ") << imported->unmodelled[i];
    }
    *env.err << " !!!\n";
  }
  for (const std::string& n : imported->notes) *env.err << "stepsim: --megatron-args: " << n << '\n';
  return std::move(imported->scenario_json);
}

std::optional<Workload> load_scenario_or_args(const std::string& path, const MegatronArgs& args,
                                              Env& env, std::string* text) {
  if (const std::string orphan = launch_line_options_without_line(args); !orphan.empty()) {
    *env.err << "stepsim: " << orphan << "\n";
    env.exit_code = 2;
    return std::nullopt;
  }
  if (args.line.empty()) return load_or_report(path, env, text);
  if (!path.empty()) {
    *env.err << "stepsim: give either a scenario file or --megatron-args, not both\n";
    env.exit_code = 2;
    return std::nullopt;
  }
  const std::optional<std::string> imported = import_megatron_args_or_report(args, env);
  if (!imported) return std::nullopt;
  if (text != nullptr) *text = *imported;
  Result<Workload> w =
      load_scenario_text(*imported, "--megatron-args", ".", LoadOptions{env.scenarios_dir});
  if (!w.ok()) {
    env.exit_code = report_errors(w.errors(), env);
    return std::nullopt;
  }
  print_notes(*w, env);
  return std::move(w).value();
}

namespace {

// The long spellings of `app`'s options ("--trace"); a one-letter option is never guessed
// (every "-x" is one edit from every other).
std::vector<std::string> option_spellings(const CLI::App& app) {
  std::vector<std::string> out;
  for (const CLI::Option* o : app.get_options()) {
    for (const std::string& l : o->get_lnames()) out.push_back("--" + l);
  }
  return out;
}

const CLI::App* subcommand_named(const CLI::App& app, const std::string& word) {
  const auto subs =
      app.get_subcommands([&](const CLI::App* sub) { return sub->check_name(word); });
  return subs.empty() ? nullptr : subs.front();
}

std::string nearest_of(std::string_view typed, const std::vector<std::string>& spellings) {
  const std::vector<std::string_view> names(spellings.begin(), spellings.end());
  const auto near = nearest_name(typed, names);
  return near ? std::string(*near) : "";
}

}  // namespace

std::string suggest_for_command_line(const CLI::App& app, const std::vector<std::string>& args) {
  const CLI::App* at = &app;
  bool positional_seen = false;
  for (const std::string& word : args) {
    if (word == "--") break;
    if (word.size() > 1 && word[0] == '-' && (word[1] < '0' || word[1] > '9') && word[1] != '.') {
      const std::string name = word.substr(0, word.find('='));
      if (at->get_option_no_throw(name) != nullptr) continue;
      const std::string near =
          name.starts_with("--") ? nearest_of(name, option_spellings(*at)) : "";
      if (!near.empty()) return "did you mean " + near + " (for " + name + ")?";
      return "";
    }
    if (const CLI::App* sub = subcommand_named(*at, word); sub != nullptr) {
      at = sub;
      positional_seen = false;
      continue;
    }
    if (at == &app && !positional_seen) {
      std::vector<std::string> subcommands;
      for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
        subcommands.push_back(sub->get_name());
      }
      const std::string near = nearest_of(word, subcommands);
      return near.empty() ? "" : "did you mean stepsim " + near + " (for " + word + ")?";
    }
    positional_seen = true;
  }
  return "";
}

}  // namespace stepsim::cli
