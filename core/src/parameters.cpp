// Parameter counts per TP rank and for the whole model, from Megatron's module shapes:
// per layer two norms, QKV (h x (a+2g)d, column-parallel), projection (ad x h, row-parallel,
// full bias), FC1 (h x f or 2f with SwiGLU) and FC2 (f x h, full bias); word embedding
// (V/t x h), learned position embedding (max_position_embeddings x h, replicated), final norm,
// output layer (V/t x h) unless tied.

#include "stepsim/core/decompose.hpp"
#include "stepsim/core/flops.hpp"
#include "workload_dims.hpp"

namespace stepsim {

namespace {

using detail::Dims;

std::int64_t norm_parameters(const Dims& x) { return x.layernorm ? 2 * x.h : x.h; }

std::int64_t layer_parameters(const Dims& x) {
  const std::int64_t qkv = x.h * x.qkv_n() + (x.bias ? x.qkv_n() : 0);
  const std::int64_t proj = x.attn_n() * x.h + (x.bias ? x.h : 0);
  const std::int64_t fc1 = x.h * x.fc1_n() + (x.bias ? x.fc1_n() : 0);
  const std::int64_t fc2 = x.ffn_n() * x.h + (x.bias ? x.h : 0);
  return 2 * norm_parameters(x) + qkv + proj + fc1 + fc2;
}

std::int64_t embedding_parameters(const Dims& x) {
  return x.vocab_n() * x.h + (x.learned_pos ? x.max_pos * x.h : 0);
}

}  // namespace

std::int64_t count_parameters(const ModelConfig& m) {
  Workload w;
  w.model = m;
  w.training.tensor_model_parallel_size = 1;
  w.training.pipeline_model_parallel_size = 1;
  w.training.virtual_pipeline_model_parallel_size = 1;
  const Dims x = detail::dims_of(w);
  return x.layers * layer_parameters(x) + embedding_parameters(x) + norm_parameters(x) +
         (x.tied ? 0 : x.vocab * x.h);
}

std::int64_t chunk_parameters(const Workload& w, std::int32_t stage, std::int32_t chunk) {
  const Dims x = detail::dims_of(w);
  const LayerRange range = layers_of(w.training, w.model, stage, chunk);
  std::int64_t n = range.count * layer_parameters(x);
  if (stage == 0 && chunk == 0) n += embedding_parameters(x);
  if (stage == x.p - 1 && chunk == x.v - 1) {
    n += norm_parameters(x);
    // With p > 1 the last stage keeps its own copy of a tied word embedding.
    if (!x.tied || x.p > 1) n += x.vocab_n() * x.h;
  }
  return n;
}

}  // namespace stepsim
