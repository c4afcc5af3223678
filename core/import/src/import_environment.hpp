#pragma once
// The environment a Megatron-LM launch line sets for its job ("NVTE_FWD_LAYERNORM_SM_MARGIN=16
// CUDA_DEVICE_MAX_CONNECTIONS=1 torchrun ..."): Transformer Engine's and NCCL's variables that
// the schema maps to scenario keys (KeyInfo::env), the attention variables Megatron-Core
// checks against the attention backend, and what else changes the job without being
// modelled. Internal to the Megatron importer (import_megatron_args.cpp).

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "stepsim/base/result.hpp"

namespace stepsim::detail {

/// NAME and VALUE of a shell assignment.
using Assignment = std::pair<std::string, std::string>;

/// The assignments among `words[0, end)`: every one (the words before the launcher), or with
/// `leading_only` those before the first other word (a line of flags only).
std::vector<Assignment> environment_of(const std::vector<std::string>& words, std::size_t end,
                                       bool leading_only);

/// What the environment does to the imported scenario.
struct ImportedEnvironment {
  /// Training keys (without "training.") and their values, from the schema's env variables.
  std::vector<std::pair<std::string, std::int64_t>> training;
  /// Likewise for the text keys (NCCL_ALGO, NCCL_PROTO in NCCL's syntax).
  std::vector<std::pair<std::string, std::string>> training_text;
  /// NAME=VALUE of the harmless ones (paths, logging, allocator and launcher settings) and of
  /// attention variables that say what Megatron-Core sets anyway.
  std::vector<std::string> ignored;
  /// (NAME=VALUE, why) of those that change the job and are not modelled.
  std::vector<std::pair<std::string, std::string>> unmodelled;
  /// Values that are no job at all (errors naming `label` and the variable).
  Errors errors;
};

/// Classifies `environment` for a job with attention backend `attention_backend` ("auto" when
/// the line gives none).
ImportedEnvironment import_environment(const std::vector<Assignment>& environment,
                                       std::string_view attention_backend,
                                       const std::string& label);

}  // namespace stepsim::detail
