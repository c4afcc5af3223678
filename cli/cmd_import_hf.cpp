// stepsim import-hf CONFIG.json: prints a scenario's model section (Megatron-LM key names)
// from a Hugging Face config.json; notes about what is not modelled go to stderr.

#include <CLI/CLI.hpp>
#include <fstream>
#include <memory>

#include "commands.hpp"
#include "common.hpp"
#include "stepsim/import/import.hpp"
#include "stepsim/base/json_input.hpp"

namespace stepsim::cli {

void add_import_hf_command(CLI::App& app, Env& env) {
  auto path = std::make_shared<std::string>();
  auto out_path = std::make_shared<std::string>();
  auto seq_length = std::make_shared<std::int64_t>(0);
  CLI::App* cmd = app.add_subcommand(
      "import-hf",
      "Print the model section of a scenario from a Hugging Face config.json "
      "(dense: LlamaForCausalLM, MistralForCausalLM, GPT2LMHeadModel, GPTNeoXForCausalLM, "
      "NemotronForCausalLM; mixture of experts: MixtralForCausalLM, Qwen2MoeForCausalLM, "
      "Qwen3MoeForCausalLM; multi-latent attention with experts: DeepseekV2ForCausalLM, "
      "DeepseekV3ForCausalLM).");
  cmd->add_option("CONFIG", *path, "Hugging Face config.json")->required();
  cmd->add_option("--out", *out_path, "write the model section to FILE instead of stdout");
  cmd->add_option("--seq-length", *seq_length,
                  "training sequence length (default: the model's max_position_embeddings)")
      ->check(CLI::PositiveNumber);
  cmd->callback([path, out_path, seq_length, &env] {
    auto text = read_input_file(*path);  // the one reading path: a size limit
    if (!text) {
      env.exit_code = report_errors(text.errors(), env);
      return;
    }
    auto model = model_from_hf_config(*text, *path, *seq_length);
    if (!model) {
      *env.err << format_errors(model.errors());
      env.exit_code = 2;
      return;
    }
    for (const std::string& note : model->notes) {
      *env.err << "stepsim import-hf: " << model->architecture << ": " << note << '\n';
    }
    if (out_path->empty()) {
      *env.out << model->model_json;
    } else {
      std::ofstream out(*out_path, std::ios::binary);
      out << model->model_json;
      if (!out) {
        *env.err << *out_path << ": cannot write\n";
        env.exit_code = 1;
        return;
      }
    }
    env.exit_code = 0;
  });
}

}  // namespace stepsim::cli
