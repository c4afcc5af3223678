// Megatron-LM's layer assignment (see pipeline_split.hpp). The three cases follow Megatron's
// own branches: an explicit layout (pipeline_parallel_layer_layout.py), first/last stage sizes
// (the uneven branch of get_num_layers_to_build and get_transformer_layer_offset), and the
// even split with the embedding and loss optionally counted as layers (the else branch).

#include "stepsim/layout/pipeline_split.hpp"

#include <algorithm>

#include "stepsim/base/assert.hpp"
#include "stepsim/layout/hybrid_layout.hpp"

namespace stepsim {

namespace {

std::int64_t decoders_in(const std::string& stage) {
  return static_cast<std::int64_t>(std::count(stage.begin(), stage.end(), 't'));
}

/// The layout branch: counts and offsets read off the parsed stages.
PipelineSplit split_by_layout(const std::vector<std::string>& stages, std::int32_t p,
                              std::int32_t v) {
  STEPSIM_ASSERT(static_cast<std::int64_t>(stages.size()) == std::int64_t{p} * v);
  PipelineSplit split{.p = p, .v = v, .chunks = {}};
  split.chunks.resize(stages.size());
  // Megatron's get_layer_offset sums the decoders of every stage before this one in its list
  // order (virtual stage major, pipeline rank minor).
  std::int64_t offset = 0;
  for (std::int32_t c = 0; c < v; ++c) {
    for (std::int32_t r = 0; r < p; ++r) {
      const std::string& stage = stages[static_cast<std::size_t>(c * p + r)];
      ChunkLayers& out = split.chunks[static_cast<std::size_t>(r * v + c)];
      out.first = static_cast<std::int32_t>(offset);
      out.count = static_cast<std::int32_t>(decoders_in(stage));
      out.embedding = r == 0 && c == 0;
      out.loss = r == p - 1 && c == v - 1;
      offset += out.count;
    }
  }
  return split;
}

/// get_num_layers_to_build and get_transformer_layer_offset without a layout.
ChunkLayers split_by_counts(const TrainingConfig& t, const ModelConfig& m, std::int64_t p,
                            std::int64_t v, std::int32_t stage, std::int32_t chunk) {
  ChunkLayers out;
  out.embedding = stage == 0 && chunk == 0;
  out.loss = stage == p - 1 && chunk == v - 1;
  const std::int64_t layers = m.num_layers;
  const std::int64_t first = t.decoder_first_pipeline_num_layers;  // 0: not given
  const std::int64_t last = t.decoder_last_pipeline_num_layers;
  if (first > 0 || last > 0) {
    const std::int64_t middle_stages = p - (first > 0 ? 1 : 0) - (last > 0 ? 1 : 0);
    const std::int64_t middle_layers = layers - first - last;
    const std::int64_t per_middle = middle_stages > 0 ? middle_layers / middle_stages : 0;
    std::int64_t per_rank = per_middle;
    if (stage == 0 && first > 0) per_rank = first;
    if (stage == p - 1 && last > 0) per_rank = last;
    out.count = static_cast<std::int32_t>(per_rank / v);
    // get_transformer_layer_offset: the first stage's chunks, then the middle stages', then
    // the last stage's, per virtual stage.
    const std::int64_t middle_rank = first > 0 ? stage - 1 : stage;
    std::int64_t offset = 0;
    if (stage == 0) {
      offset = 0;
    } else if (v > 1) {
      // Megatron divides the middle layers of a virtual stage by the middle stages even when
      // there are none (p = 2 with both first and last given: a ZeroDivisionError there);
      // the offset is then the first stage's layers of the virtual stage.
      const std::int64_t per_chunk_middle =
          middle_stages > 0 ? middle_layers / v / middle_stages : 0;
      offset = first / v + middle_rank * per_chunk_middle;
    } else {
      offset = first + middle_rank * per_middle;
    }
    if (v > 1) offset += chunk * ((first + middle_layers + last) / v);
    out.first = static_cast<std::int32_t>(offset);
    return out;
  }
  // The even split, with the embedding and the loss each counted as one layer when asked.
  const bool embedding = t.account_for_embedding_in_pipeline_split;
  const bool loss = t.account_for_loss_in_pipeline_split;
  const std::int64_t counted = layers + (embedding ? 1 : 0) + (loss ? 1 : 0);
  const std::int64_t per_rank = counted / p;
  const std::int64_t per_chunk = per_rank / v;
  std::int64_t count = per_chunk;
  if (embedding && out.embedding) --count;
  if (loss && out.loss) --count;
  std::int64_t offset = p > 1 ? chunk * (counted / v) + stage * per_chunk : 0;
  if (p > 1 && embedding && !out.embedding) --offset;
  out.count = static_cast<std::int32_t>(count);
  out.first = static_cast<std::int32_t>(offset);
  return out;
}

}  // namespace

const ChunkLayers& PipelineSplit::at(std::int32_t stage, std::int32_t chunk) const {
  STEPSIM_ASSERT(stage >= 0 && stage < p && chunk >= 0 && chunk < v);
  return chunks[static_cast<std::size_t>(stage * v + chunk)];
}

std::int64_t PipelineSplit::stage_layers(std::int32_t stage) const {
  std::int64_t n = 0;
  for (std::int32_t c = 0; c < v; ++c) n += at(stage, c).count;
  return n;
}

std::int64_t PipelineSplit::max_chunk_layers() const {
  std::int64_t n = 0;
  for (const ChunkLayers& c : chunks) n = std::max<std::int64_t>(n, c.count);
  return n;
}

bool uneven_pipeline(const TrainingConfig& t) {
  return t.decoder_first_pipeline_num_layers > 0 || t.decoder_last_pipeline_num_layers > 0 ||
         t.account_for_embedding_in_pipeline_split || t.account_for_loss_in_pipeline_split ||
         !t.pipeline_model_parallel_layout.empty();
}

ChunkLayers chunk_layers(const TrainingConfig& t, const ModelConfig& m, std::int32_t stage,
                         std::int32_t chunk) {
  const std::int64_t p = std::max<std::int64_t>(1, t.pipeline_model_parallel_size);
  const std::int64_t v = std::max<std::int64_t>(1, t.virtual_pipeline_model_parallel_size);
  if (!t.pipeline_model_parallel_layout.empty() || hybrid_segments(m).size() > 1) {
    return pipeline_split(t, m).at(stage, chunk);
  }
  return split_by_counts(t, m, p, v, stage, chunk);
}

PipelineSplit pipeline_split(const TrainingConfig& t, const ModelConfig& m) {
  const auto p =
      static_cast<std::int32_t>(std::max<std::int64_t>(1, t.pipeline_model_parallel_size));
  const auto v =
      static_cast<std::int32_t>(std::max<std::int64_t>(1, t.virtual_pipeline_model_parallel_size));
  if (!t.pipeline_model_parallel_layout.empty()) {
    const auto stages = parse_pipeline_layout(t.pipeline_model_parallel_layout);
    STEPSIM_ASSERT(stages.ok());
    return split_by_layout(*stages, p, v);
  }
  // A hybrid pattern's '|' segments (select_pipeline_segment: segment vp_stage * pp + pp_rank),
  // as a layout of that many decoder layers each.
  if (const std::vector<std::int64_t> segments = hybrid_segments(m); segments.size() > 1) {
    std::vector<std::string> stages;
    for (const std::int64_t n : segments) stages.emplace_back(static_cast<std::size_t>(n), 't');
    return split_by_layout(stages, p, v);
  }
  PipelineSplit split{.p = p, .v = v, .chunks = {}};
  split.chunks.reserve(static_cast<std::size_t>(p) * static_cast<std::size_t>(v));
  for (std::int32_t r = 0; r < p; ++r) {
    for (std::int32_t c = 0; c < v; ++c) split.chunks.push_back(split_by_counts(t, m, p, v, r, c));
  }
  return split;
}

std::string stage_layers_text(const PipelineSplit& split) {
  std::string out;
  for (std::int32_t r = 0; r < split.p; ++r) {
    if (!out.empty()) out += ',';
    out += std::to_string(split.stage_layers(r));
  }
  return out;
}

LayerRange layers_of(const TrainingConfig& t, const ModelConfig& m, std::int32_t stage,
                     std::int32_t chunk) {
  const ChunkLayers c = chunk_layers(t, m, stage, chunk);
  return {c.first, c.count};
}

}  // namespace stepsim
