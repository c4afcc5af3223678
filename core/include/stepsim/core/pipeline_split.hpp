#pragma once
// Megatron-LM's assignment of transformer layers, the embedding and the loss to pipeline ranks
// and virtual stages (model chunks): the even split, --decoder-first/last-pipeline-num-layers,
// --account-for-embedding/loss-in-pipeline-split and --pipeline-model-parallel-layout, as
// megatron/core/transformer/transformer_block.py (get_num_layers_to_build),
// transformer_layer.py (get_transformer_layer_offset) and pipeline_parallel_layer_layout.py
// compute them. The rules these settings obey are checked at load (validate.cpp); the
// functions here expect a validated configuration.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "stepsim/core/result.hpp"
#include "stepsim/core/scenario.hpp"

namespace stepsim {

/// What one model chunk (pipeline rank, virtual stage) builds.
struct ChunkLayers {
  std::int32_t first = 0;  ///< global index of its first transformer layer (Megatron's offset)
  std::int32_t count = 0;  ///< transformer layers it builds (may be 0)
  /// The input embedding: Megatron's pre_process, pipeline rank 0's virtual stage 0.
  bool embedding = false;
  /// The final norm, output layer and loss: post_process, the last rank's last virtual stage.
  bool loss = false;
  bool operator==(const ChunkLayers&) const = default;
};

/// The whole assignment.
struct PipelineSplit {
  std::int32_t p = 1;               ///< pipeline ranks
  std::int32_t v = 1;               ///< virtual stages (model chunks) per rank
  std::vector<ChunkLayers> chunks;  ///< index = stage * v + chunk

  const ChunkLayers& at(std::int32_t stage, std::int32_t chunk) const;
  /// Transformer layers held by pipeline rank `stage` (all its chunks).
  std::int64_t stage_layers(std::int32_t stage) const;
  /// The most transformer layers any one chunk holds.
  std::int64_t max_chunk_layers() const;
  bool operator==(const PipelineSplit&) const = default;
};

/// Whether `t` asks for anything but Megatron's even split (first/last stage sizes, the
/// embedding or loss counted as a layer, or an explicit layout).
bool uneven_pipeline(const TrainingConfig& t);

/// One chunk's share of a validated configuration.
ChunkLayers chunk_layers(const TrainingConfig& t, const ModelConfig& m, std::int32_t stage,
                         std::int32_t chunk);

/// Every chunk's share of a validated configuration.
PipelineSplit pipeline_split(const TrainingConfig& t, const ModelConfig& m);

/// Megatron's PipelineParallelLayerLayout.parse_str_to_list: commas dropped, `(...)*n` then
/// `x*n` unrolled (one pass each, as its two regular expressions), split at `|`. Each stage
/// is its layer characters: `E` embedding, `t` transformer layer, `L` loss, `m` multi-token
/// prediction layer. Stages are listed as Megatron lists them: index = virtual stage * p +
/// pipeline rank. An error (key training.pipeline_model_parallel_layout) names the first
/// character that is not a layer, or an expansion beyond kMaxLayoutLength characters.
Result<std::vector<std::string>> parse_pipeline_layout(std::string_view layout);

/// Longest unrolled layout accepted (a bound on hostile repetition counts).
inline constexpr std::size_t kMaxLayoutLength = 1 << 20;
/// Longest layout text a scenario may give (Megatron's are a few dozen characters).
inline constexpr std::size_t kMaxLayoutText = 1 << 16;

/// Layers per pipeline stage, "8,16,...,16,6" style, for reports ("" for no pipeline).
std::string stage_layers_text(const PipelineSplit& split);

}  // namespace stepsim
