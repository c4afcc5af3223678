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

#include "stepsim/base/result.hpp"
#include "stepsim/config/pipeline_layout.hpp"
#include "stepsim/config/scenario.hpp"

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

/// Transformer layers [first, first + count) held by one model chunk.
struct LayerRange {
  std::int32_t first = 0;
  std::int32_t count = 0;
  bool operator==(const LayerRange&) const = default;
};

/// Megatron's assignment (chunk_layers): evenly, chunk c of rank r holds
/// the (c*p + r)-th block of num_layers / (p*v) consecutive layers; uneven stages as Megatron
/// assigns them (first/last stage sizes, embedding/loss counted, or a layout).
LayerRange layers_of(const TrainingConfig& t, const ModelConfig& m, std::int32_t stage,
                     std::int32_t chunk);

/// Every chunk's share of a validated configuration.
PipelineSplit pipeline_split(const TrainingConfig& t, const ModelConfig& m);



/// Layers per pipeline stage, "8,16,...,16,6" style, for reports ("" for no pipeline).
std::string stage_layers_text(const PipelineSplit& split);

}  // namespace stepsim
