// stepsim check SCENARIO: load and validate only. Prints one summary line, or one line per
// problem (exit status 2).

#include <CLI/CLI.hpp>
#include <memory>
#include <ostream>

#include "commands.hpp"
#include "common.hpp"

namespace stepsim::cli {

namespace {

std::string describe_cost_model(const CostModelSpec& spec) {
  return spec.kind == CostModelSpec::Kind::kProfile ? "profile " + spec.profile_path
                                                    : std::string("roofline");
}

}  // namespace

void add_check_command(CLI::App& app, Env& env) {
  auto path = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "check",
      "Validate a scenario file against Megatron-LM's argument rules; print a summary "
      "or every problem found (exit status 2).");
  cmd->add_option("SCENARIO", *path, "scenario JSON file")->required();
  cmd->callback([path, &env] {
    const auto w = load_or_report(*path, env);
    if (!w) return;
    const TrainingConfig& t = w->training;
    *env.out << "ok: " << *path << ": " << w->name << ": t=" << t.tensor_model_parallel_size
             << " p=" << t.pipeline_model_parallel_size
             << " v=" << t.virtual_pipeline_model_parallel_size << " dp=" << t.data_parallel_size
             << " m=" << t.num_microbatches << " (world_size=" << t.world_size
             << ", micro_batch_size=" << t.micro_batch_size
             << ", global_batch_size=" << t.global_batch_size << ") system=" << w->system.name
             << " cost_model=" << describe_cost_model(w->cost_model) << "\n";
    env.exit_code = 0;
  });
}

}  // namespace stepsim::cli
