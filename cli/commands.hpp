#pragma once
// Each subcommand registers itself on the top-level CLI11 app. When CLI11 selects it, its
// callback stores the command's exit status in Env::exit_code (0 ok, 1 runtime failure,
// 2 bad input, 3 `check`: a valid job that does not fit in GPU memory).

#include <iosfwd>
#include <string>

namespace CLI {
class Validator;
class App;
}

namespace stepsim::cli {

/// `check`'s status for a scenario that passes Megatron's rules but whose analytic peak
/// exceeds the GPU's memory (docs/cli.md): neither ok (0) nor bad input (2).
inline constexpr int kExitDoesNotFit = 3;

struct Env {
  std::string scenarios_dir;  ///< the project's scenarios/ folder
  std::ostream* out = nullptr;
  std::ostream* err = nullptr;
  int exit_code = 0;
};

// One registration function per subcommand (cmd_<name>.cpp):
void add_schedule_command(CLI::App& app, Env& env);
void add_check_command(CLI::App& app, Env& env);
void add_sweep_command(CLI::App& app, Env& env);
void add_import_hf_command(CLI::App& app, Env& env);
void add_import_megatron_command(CLI::App& app, Env& env);
void add_predict_command(CLI::App& app, Env& env);
void add_memory_command(CLI::App& app, Env& env);
/// stepsim systems: the shipped systems by short name, with the profiles of their GPUs.
void add_systems_command(CLI::App& app, Env& env);
/// stepsim accuracy: predicted against measured for the published runs.
void add_accuracy_command(CLI::App& app, Env& env);

/// stepsim calibrate: microbenchmarks -> calibration profile (initialises MPI).
void add_calibrate_command(CLI::App& app, Env& env);
/// stepsim validate: run the schedule for real under mpirun, compare with the prediction.
void add_validate_command(CLI::App& app, Env& env);
/// stepsim regress: re-predict stored measurements (CI gate).
void add_regress_command(CLI::App& app, Env& env);

}  // namespace stepsim::cli
