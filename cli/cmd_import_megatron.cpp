// stepsim import-megatron "<launch line>" [--out S.json]: the scenario of a Megatron-LM launch
// line, validated, for check, memory, predict and sweep. A flag that changes the job and is
// not modelled is an error (exit 2) unless --allow-unmodelled; harmless flags and Megatron's
// own adjustments go to stderr as notes.

#include <CLI/CLI.hpp>
#include <fstream>
#include <memory>

#include "commands.hpp"
#include "common.hpp"
#include "stepsim/check/load.hpp"

namespace stepsim::cli {

void add_import_megatron_command(CLI::App& app, Env& env) {
  auto args = std::make_shared<MegatronArgs>();
  auto out_path = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "import-megatron",
      "Write the scenario of a Megatron-LM launch line (torchrun ... pretrain_gpt.py --flags).\n"
      "Flags that change the job and are not modelled are errors (exit 2) unless\n"
      "--allow-unmodelled, which lists them in the scenario's \"unmodelled\".\n"
      "Assignments before the launcher are the job's environment: Transformer Engine's\n"
      "NVTE_FWD/BWD_LAYERNORM_SM_MARGIN=N are read, other NVTE_* and NCCL tuning variables\n"
      "are not modelled (errors), the rest is listed as ignored.");
  cmd->add_option("LINE", args->line, "the launch line (quote it)")->required();
  cmd->add_option("--out", *out_path, "write the scenario to FILE instead of stdout");
  cmd->add_option("--world-size", args->world_size,
                  "GPUs of the run (default: torchrun's --nnodes x --nproc_per_node)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--system", args->system,
                  "a shipped system's name (dgx-h100-80gb; `stepsim systems`) or a system file")
      ->required();
  cmd->add_option("--name", args->name, "the scenario's name")->capture_default_str();
  add_allow_unmodelled_flag(cmd, *args);
  cmd->callback([args, out_path, &env] {
    const std::optional<std::string> text = import_megatron_args_or_report(*args, env);
    if (!text) {
      env.exit_code = 2;
      return;
    }
    // The same validation check and predict apply: a scenario that does not load is not
    // written.
    Result<Workload> w =
        load_scenario_text(*text, "import-megatron", ".", LoadOptions{env.scenarios_dir});
    if (!w.ok()) {
      *env.err << format_errors(w.errors());
      env.exit_code = 2;
      return;
    }
    print_notes(*w, env);
    if (out_path->empty()) {
      *env.out << *text;
    } else {
      std::ofstream out(*out_path, std::ios::binary);
      out << *text;
      if (!out.flush()) {
        *env.err << *out_path << ": cannot write\n";
        env.exit_code = 1;
        return;
      }
    }
    env.exit_code = 0;
  });
}

}  // namespace stepsim::cli
