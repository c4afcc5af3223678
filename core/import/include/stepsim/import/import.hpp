#pragma once
// Importers: a scenario from a real Megatron-LM launch line, a model section from a Hugging
// Face config.json, and the inverse of the first (the Megatron flags of a Workload). They
// produce scenario JSON text that load_scenario_text() then validates like any file.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "stepsim/base/result.hpp"
#include "stepsim/config/scenario.hpp"

namespace stepsim {

/// What a launch line does not say.
struct MegatronImportOptions {
  /// GPUs of the run; 0: taken from the launcher in the line (torchrun/torch.distributed.launch
  /// --nnodes x --nproc_per_node), an error if it has none.
  std::int64_t world_size = 0;
  /// The scenario's "system": a system file path (relative to scenarios/ or absolute).
  std::string system;
  /// The scenario's "name".
  std::string name = "megatron-args";
  /// Keep going when the line has flags that change the job and are not modelled: the
  /// scenario lists them under "unmodelled" and every report warns. Without it they are
  /// errors (one per flag), so an import never silently predicts a different job.
  bool allow_unmodelled = false;
};

/// A scenario built from a launch line.
struct ImportedScenario {
  std::string scenario_json;               ///< a scenario file's text (contract v1)
  std::vector<std::string> ignored_flags;  ///< harmless flags (logging, paths, hyper-parameters)
  /// Job-changing flags (with their values) stepsim does not model; non-empty only with
  /// allow_unmodelled.
  std::vector<std::string> unmodelled;
  std::vector<std::string> notes;          ///< assumptions made (e.g. vocabulary of GPT-2's BPE)
};

/// Parses a Megatron-LM launch line ("torchrun ... pretrain_gpt.py --num-layers 96 ...",
/// shell quoting and backslash-newlines allowed). Errors name "--megatron-args" and the flag:
/// every flag that changes the job and is not modelled (the schema's not-modelled arguments,
/// any flag stepsim does not know, a training script other than pretrain_gpt.py) is one,
/// unless options.allow_unmodelled. Assignments before the launcher (or before the first flag
/// of a line of flags) are the job's environment: Transformer Engine's variables the schema
/// maps to keys (KeyInfo::env) set them, NVTE_{FLASH,FUSED,UNFUSED}_ATTN must agree with the
/// attention backend as Megatron-Core asserts, other NVTE_* variables, NCCL's tuning variables
/// and CUDA_DEVICE_MAX_CONNECTIONS other than 1 are not modelled, the rest is ignored (listed
/// in ignored_flags as NAME=VALUE). Without --attention-backend or --use-flash-attn the
/// scenario gets Megatron-Core's default attention_backend "auto" (noted). The scenario names
/// no cost_model: the loader's default, the shipped public profile of the system's GPU.
Result<ImportedScenario> scenario_from_megatron_args(std::string_view launch_line,
                                                     const MegatronImportOptions& options);

/// The Megatron-LM flags that describe `w`'s model and training configuration (the model
/// shape, sizes and parallel settings; no data, optimizer hyper-parameters or paths).
/// scenario_from_megatron_args() of the result loads back to the same model and training,
/// but for what is no Megatron-LM argument: optimizer_impl "apex_distributed_fused_adam"
/// (NeMo's optimizer) comes back as Megatron-Core's distributed optimizer.
std::string megatron_args_of(const Workload& w);

/// A model section built from a Hugging Face config.
struct ImportedModel {
  std::string model_json;          ///< {"model": {...}} with Megatron's key names
  std::string architecture;        ///< e.g. "LlamaForCausalLM"
  std::vector<std::string> notes;  ///< assumptions made and fields stepsim does not model
};

/// Maps a config.json of LlamaForCausalLM, MistralForCausalLM, GPT2LMHeadModel,
/// GPTNeoXForCausalLM or NemotronForCausalLM (or an MoE family of import_hf.cpp) to the
/// scenario's model section. `seq_length` is the training sequence
/// length (0: the model's full context, max_position_embeddings). Errors name `file_label`
/// and the key.
Result<ImportedModel> model_from_hf_config(std::string_view config_json,
                                           const std::string& file_label,
                                           std::int64_t seq_length = 0);

}  // namespace stepsim
