// Parameter counts per TP rank and for the whole model, from Megatron's module shapes:
// per layer two norms, QKV (h x (a+2g)d, column-parallel; multi-latent attention: its
// projections, mla_parameters), projection (ad x h, row-parallel, full bias), FC1 (h x f
// or 2f with SwiGLU) and FC2 (f x h, full bias); word embedding (V/t x h), learned position
// embedding (max_position_embeddings x h, replicated), final norm, output layer (V/t x h)
// unless tied.

#include "stepsim/ops/mamba_ops.hpp"
#include "stepsim/ops/moe_ops.hpp"
#include "stepsim/layout/pipeline_split.hpp"
#include "stepsim/ops/flops.hpp"
#include "stepsim/layout/moe_layout.hpp"
#include "stepsim/layout/workload_dims.hpp"

namespace stepsim {

namespace {

using detail::Dims;

std::int64_t norm_parameters(const Dims& x) { return x.layernorm ? 2 * x.h : x.h; }

std::int64_t latent_norm_parameters(const Dims& x, std::int64_t width) {
  if (!x.qk_norm) return 0;
  return x.layernorm ? 2 * width : width;
}

/// Multi-latent attention's projections on one TP rank (multi_latent_attention.py): the down
/// projections whole on every rank (duplicated), the up projections and linear_proj sliced,
/// the latents' norms with qk_layernorm; no biases but linear_proj's.
std::int64_t mla_parameters(const Dims& x) {
  const std::int64_t q = x.q_lora > 0 ? x.h * x.q_lora + latent_norm_parameters(x, x.q_lora) +
                                            x.q_lora * x.mla_q_n()
                                      : x.h * x.mla_q_n();
  const std::int64_t kv = x.h * (x.kv_lora + x.dr) + latent_norm_parameters(x, x.kv_lora) +
                          x.kv_lora * x.mla_kv_n();
  return q + kv + x.attn_n() * x.h + (x.bias ? x.h : 0);
}

/// Norms and attention of a layer.
std::int64_t attention_parameters(const Dims& x) {
  if (x.mla) return 2 * norm_parameters(x) + mla_parameters(x);
  const std::int64_t qkv = x.h * x.qkv_n() + (x.bias ? x.qkv_n() : 0);
  const std::int64_t proj = x.attn_n() * x.h + (x.bias ? x.h : 0);
  // Learnable attention sinks: TEDotProductAttention's softmax_offset, one logit per head,
  // split over tensor parallelism (sharded_state_dict {'softmax_offset': 0}).
  const std::int64_t sinks = x.learnable_sink ? x.heads() : 0;
  return 2 * norm_parameters(x) + qkv + proj + sinks;
}

std::int64_t layer_parameters(const Dims& x) {
  const std::int64_t fc1 = x.h * x.fc1_n() + (x.bias ? x.fc1_n() : 0);
  const std::int64_t fc2 = x.ffn_n() * x.h + (x.bias ? x.h : 0);
  return attention_parameters(x) + fc1 + fc2;
}

/// An MoE layer (the dense MLP replaced by router, shared and local routed experts).
std::int64_t moe_layer_parameters(const Dims& x) {
  const detail::MoeParameters mlp = detail::moe_mlp_parameters(x);
  return attention_parameters(x) + mlp.dense + mlp.experts;
}

/// A hybrid model's layer (one residual block, its own norm): Mamba, attention, MLP, MoE.
std::int64_t hybrid_layer_parameters(const Dims& x, HybridLayer kind) {
  const std::int64_t fc1 = x.h * x.fc1_n() + (x.bias ? x.fc1_n() : 0);
  const std::int64_t fc2 = x.ffn_n() * x.h + (x.bias ? x.h : 0);
  switch (kind) {
    case HybridLayer::kMamba: return detail::mamba_parameters(x);
    case HybridLayer::kAttention: return attention_parameters(x) - norm_parameters(x);
    case HybridLayer::kMlp: return norm_parameters(x) + fc1 + fc2;
    case HybridLayer::kMoe: {
      const detail::MoeParameters mlp = detail::moe_mlp_parameters(x);
      return norm_parameters(x) + mlp.dense + mlp.experts;
    }
  }
  return 0;
}

/// Parameters of the layers [first, first + count) on one rank.
std::int64_t range_parameters(const Dims& x, std::int64_t first, std::int64_t count) {
  if (x.is_hybrid()) {
    std::int64_t n = 0;
    for (std::int64_t l = first; l < first + count; ++l) {
      n += hybrid_layer_parameters(x, x.kind_of(static_cast<std::int32_t>(l)));
    }
    return n;
  }
  std::int64_t moe = 0;
  for (std::int64_t l = first; l < first + count; ++l) moe += x.is_moe(static_cast<std::int32_t>(l));
  return (count - moe) * layer_parameters(x) + (moe > 0 ? moe * moe_layer_parameters(x) : 0);
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
  return range_parameters(x, 0, x.layers) + embedding_parameters(x) + norm_parameters(x) +
         (x.tied ? 0 : x.vocab * x.h);
}

std::int64_t count_active_parameters(const ModelConfig& m) {
  if (!m.moe()) return count_parameters(m);
  // The same model with num_experts = topk: each MoE layer's routed experts cut to the topk a
  // token passes, its router (h x num_experts) kept whole.
  ModelConfig active = m;
  active.num_experts = m.moe_router_topk;
  Workload w;
  w.model = m;
  const Dims x = detail::dims_of(w);
  std::int64_t moe_layers = 0;
  for (const bool is_moe : x.moe_layer) moe_layers += is_moe ? 1 : 0;
  const std::int64_t router_cut = (x.h + (x.bias ? 1 : 0)) * (m.num_experts - m.moe_router_topk);
  return count_parameters(active) + moe_layers * router_cut;
}

std::int64_t count_active_parameters_without_input_embedding(const ModelConfig& m) {
  Workload w;
  w.model = m;
  w.training.tensor_model_parallel_size = 1;
  const Dims x = detail::dims_of(w);
  // The input lookups are gathers, no GEMM: the word embedding (unless tied, when the output
  // layer's GEMM uses the same weight) and the learned position embedding.
  const std::int64_t lookups = (x.tied ? 0 : x.vocab * x.h) + (x.learned_pos ? x.max_pos * x.h : 0);
  return count_active_parameters(m) - lookups;
}

namespace {

/// The multi-token prediction modules of the last stage's last chunk
/// (MultiTokenPredictionLayer): enorm, hnorm, eh_proj (2h x h/t, no bias), one transformer
/// layer of the last layer's kind, final_layernorm; and the word embedding the stage builds
/// for them (GPTModel: pre_process or mtp_process) where it holds none: untied with p > 1.
std::int64_t mtp_parameters(const Dims& x) {
  if (x.mtp <= 0) return 0;
  const std::int64_t module = 3 * norm_parameters(x) + 2 * x.h * (x.h / x.t);
  const std::int64_t embedding = !x.tied && x.p > 1 ? x.vocab_n() * x.h : 0;
  return x.mtp * module + range_parameters(x, x.layers, x.mtp) + embedding;
}

bool holds_mtp(const Dims& x, std::int32_t stage, std::int32_t chunk) {
  return x.mtp > 0 && stage == x.p - 1 && chunk == x.v - 1;
}

}  // namespace

std::int64_t chunk_expert_parameters(const Workload& w, std::int32_t stage, std::int32_t chunk) {
  if (!w.model.moe()) return 0;
  const Dims x = detail::dims_of(w);
  const LayerRange range = layers_of(w.training, w.model, stage, chunk);
  std::int64_t moe = 0;
  for (std::int64_t l = range.first; l < range.first + range.count; ++l) {
    moe += x.is_moe(static_cast<std::int32_t>(l));
  }
  if (holds_mtp(x, stage, chunk)) {
    for (std::int64_t l = x.layers; l < x.layers + x.mtp; ++l) {
      moe += x.is_moe(static_cast<std::int32_t>(l));
    }
  }
  return moe * detail::moe_mlp_parameters(x).experts;
}

std::int64_t chunk_parameters(const Workload& w, std::int32_t stage, std::int32_t chunk) {
  const Dims x = detail::dims_of(w);
  const LayerRange range = layers_of(w.training, w.model, stage, chunk);
  std::int64_t n = range_parameters(x, range.first, range.count);
  if (stage == 0 && chunk == 0) n += embedding_parameters(x);
  if (stage == x.p - 1 && chunk == x.v - 1) {
    n += norm_parameters(x);
    // With p > 1 the last stage keeps its own copy of a tied word embedding.
    if (!x.tied || x.p > 1) n += x.vocab_n() * x.h;
  }
  if (holds_mtp(x, stage, chunk)) n += mtp_parameters(x);
  return n;
}

}  // namespace stepsim
