#pragma once
// Megatron's pipeline layout text (--pipeline-model-parallel-layout) read into stages.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "stepsim/base/result.hpp"

namespace stepsim {

/// Longest unrolled layout accepted (a bound on hostile repetition counts).
inline constexpr std::size_t kMaxLayoutLength = 1 << 20;
/// Longest layout text a scenario may give (Megatron's are a few dozen characters).
inline constexpr std::size_t kMaxLayoutText = 1 << 16;

/// Megatron's PipelineParallelLayerLayout.parse_str_to_list: commas dropped, `(...)*n` then
/// `x*n` unrolled (one pass each, as its two regular expressions), split at `|`. Each stage
/// is its layer characters: `E` embedding, `t` transformer layer, `L` loss, `m` multi-token
/// prediction layer. Stages are listed as Megatron lists them: index = virtual stage * p +
/// pipeline rank. An error (key training.pipeline_model_parallel_layout) names the first
/// character that is not a layer, or an expansion beyond kMaxLayoutLength characters.
Result<std::vector<std::string>> parse_pipeline_layout(std::string_view layout);

}  // namespace stepsim
