#pragma once
// Helpers shared by the subcommands: loading a scenario and reporting its problems.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "commands.hpp"
#include "stepsim/base/result.hpp"
#include "stepsim/config/scenario.hpp"

namespace CLI {
class App;
}

namespace stepsim::cli {

/// The scenario `stepsim predict` uses when none is given, under Env::scenarios_dir.
inline constexpr const char* kDefaultScenario = "gpt3-175b-a100-64.json";

/// Prints one line per error to *env.err and returns the exit status their kinds map to
/// (exit_status: 2 for bad input, 1 for runtime and internal errors).
int report_errors(const Errors& errors, Env& env);

/// Loads and validates `path` (the default scenario under env.scenarios_dir when empty).
/// On failure prints one line per problem to *env.err, sets env.exit_code = 2 and returns
/// nullopt. `text`, when given, receives the scenario's JSON text (make_it_fit re-derives the
/// keys it left to Megatron's defaults from it).
std::optional<Workload> load_or_report(const std::string& path, Env& env,
                                       std::string* text = nullptr);

/// Before MPI starts in calibrate and validate: a process started without a launcher
/// (mpirun, srun, a PMIx server) becomes a one-rank world on its own, without the helper
/// daemon Open MPI would otherwise start for a singleton (machines with a GPU but no Open
/// MPI installation have none).
void prepare_mpi_launch();

/// What --megatron-args needs besides the launch line.
struct MegatronArgs {
  std::string line;            ///< the launch line; empty: not given
  std::int64_t world_size = 0;  ///< --world-size (0: from the launcher in the line)
  std::string system;          ///< --system
  bool allow_unmodelled = false;       ///< --allow-unmodelled
  std::string name = "megatron-args";  ///< the scenario's name (import-megatron --name)
};

/// Prints what the loader adjusted as Megatron-LM does (Workload::notes) to *env.err.
void print_notes(const Workload& w, Env& env);

/// Registers --allow-unmodelled on `cmd`.
void add_allow_unmodelled_flag(CLI::App* cmd, MegatronArgs& args);

/// Refuses a blank --megatron-args value (it would otherwise mean "not given", and the
/// default scenario would be predicted instead of the job asked for).
CLI::Validator launch_line_validator();

/// Makes every integer option of `app` and its subcommands read decimal numbers only, as
/// Megatron-LM's argparse does (int("010") is 10): CLI11 would read "010" as octal 8 and
/// "0x10" as 16. A leading zero is dropped; a sign, hex, octal or binary prefix on an
/// unsigned option, other characters and values beyond 64 bits are errors naming the option.
void make_integer_options_decimal(CLI::App& app);

/// "did you mean" for a command line CLI11 refused: the first word that is neither a
/// subcommand nor an option of the (sub)command it follows, with the nearest name that is
/// ("predct" -> "predict", "--trce" -> "--trace"); "" when every word is known or nothing is
/// close. `args` are the words after the program name.
std::string suggest_for_command_line(const CLI::App& app, const std::vector<std::string>& args);

/// The options that only apply to a launch line, given without one: an error message
/// naming them, or "" when there is none.
std::string launch_line_options_without_line(const MegatronArgs& args);

/// The value of --system as the scenario gives it: a short name that is no file as given
/// becomes "systems/<stem>.json" of the shipped system it names (stepsim/config/shipped.hpp);
/// anything else is kept. A prefix of several systems: prints them, sets env.exit_code = 2 and
/// returns nullopt.
std::optional<std::string> system_option_or_report(const std::string& value, Env& env);

/// The scenario JSON text built from a Megatron-LM launch line. Prints the flags stepsim
/// ignores and the assumptions made to *env.err. On failure prints the errors, sets
/// env.exit_code = 2 and returns nullopt.
std::optional<std::string> import_megatron_args_or_report(const MegatronArgs& args, Env& env);

/// Loads `args` as predict does: --megatron-args when given, else the scenario file. `text`
/// as load_or_report's.
std::optional<Workload> load_scenario_or_args(const std::string& path, const MegatronArgs& args,
                                              Env& env, std::string* text = nullptr);

}  // namespace stepsim::cli
