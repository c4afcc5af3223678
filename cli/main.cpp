// stepsim: predict the step time, pipeline bubbles and memory of Megatron-style training.

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "common.hpp"
#include "stepsim/base/heap.hpp"
#include "stepsim/base/main_guard.hpp"

namespace {

int run_main(int argc, char** argv) {
  // A sweep simulates thousands of steps: keep their buffers' pages (heap.hpp).
  stepsim::keep_freed_memory();
  stepsim::cli::Env env;
  env.out = &std::cout;
  env.err = &std::cerr;
  const char* dir = std::getenv("STEPSIM_SCENARIOS_DIR");
  env.scenarios_dir = dir != nullptr ? dir : STEPSIM_DEFAULT_SCENARIOS_DIR;

  CLI::App app{
      "stepsim: a discrete-event simulator and planner for Megatron-style parallel training.\n"
      "Predicts the time of one training step, where the pipeline bubbles are and each GPU's\n"
      "memory, from a model, a parallel configuration (Megatron-LM's argument names) and a\n"
      "cluster. Shipped scenarios live in " +
      env.scenarios_dir + " (override with STEPSIM_SCENARIOS_DIR).\n"};
  app.set_version_flag("--version", "stepsim " STEPSIM_VERSION);
  app.require_subcommand(1);
  app.fallthrough(false);
  // In the order a newcomer meets them: check and predict a scenario, then plan, then
  // calibrate and validate on hardware.
  stepsim::cli::add_check_command(app, env);
  stepsim::cli::add_predict_command(app, env);
  stepsim::cli::add_memory_command(app, env);
  stepsim::cli::add_systems_command(app, env);
  stepsim::cli::add_schedule_command(app, env);
  stepsim::cli::add_sweep_command(app, env);
  stepsim::cli::add_import_hf_command(app, env);
  stepsim::cli::add_import_megatron_command(app, env);
  stepsim::cli::add_calibrate_command(app, env);
  stepsim::cli::add_validate_command(app, env);
  stepsim::cli::add_regress_command(app, env);
  stepsim::cli::add_accuracy_command(app, env);
  stepsim::cli::make_integer_options_decimal(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // Bad command lines are bad input: exit 2 like every other input error.
    std::cerr << "stepsim: " << e.what() << "\n";
    const std::vector<std::string> words(argv + 1, argv + argc);
    const std::string hint = stepsim::cli::suggest_for_command_line(app, words);
    if (!hint.empty()) std::cerr << "stepsim: " << hint << "\n";
    std::cerr << "Run 'stepsim --help' for usage.\n";
    return 2;
  }
  return env.exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  return stepsim::guarded_main("stepsim", [&] { return run_main(argc, argv); });
}
