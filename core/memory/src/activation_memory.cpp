// Activation memory per layer and per model chunk (Korthikanti et al. 2022, "Reducing
// Activation Recomputation in Large Transformer Models", section 4), written per tensor so
// that it also covers GQA, SwiGLU, flash attention and any dtype, and reduces exactly to the
// reference's table for multi-head attention, f = 4h, GeLU and 16-bit activations.

#include <algorithm>
#include <cmath>

#include "stepsim/ops/embedding_ops.hpp"
#include "stepsim/ops/fp8_ops.hpp"
#include "stepsim/ops/mamba_ops.hpp"
#include "stepsim/ops/moe_ops.hpp"
#include "stepsim/ops/mtp_ops.hpp"
#include "stepsim/layout/recompute_layout.hpp"
#include "stepsim/layout/pipeline_split.hpp"
#include "stepsim/memory/memory_model.hpp"
#include "stepsim/layout/workload_dims.hpp"

namespace stepsim {

namespace {

using detail::Dims;

double as_d(std::int64_t v) { return static_cast<double>(v); }

/// Multi-latent attention's latents, kept by its up projections (sequence-sharded with SP):
/// q_compressed and kv_compressed, and with qk_layernorm their normed copies too (Transformer
/// Engine's LayerNormLinear keeps its input and its norm's output). Query, key and value are
/// the core attention's inputs (qkv_n); the projections' shared input is the first norm's
/// output (counted with the other attention's QKV input).
double mla_latent_bytes(const Dims& x) {
  if (!x.mla) return 0.0;
  const double copies = x.qk_norm ? 2.0 : 1.0;
  return as_d(x.sp_tokens * (x.q_lora + x.kv_lora) * x.e) * copies;
}

/// FP8 (Transformer Engine): the linears save their inputs as FP8 (1 byte; the transposed
/// copy wgrad reads, or with SP the row-wise shard that backward re-gathers) instead of
/// 16-bit ones; tensors other ops also save stay as they are. Block scaling saves the
/// column-wise copy with its fp32 scales, one per 128 elements; MXFP8 with its E8M0 scales,
/// one byte per 32: the same 1/32 byte per element. NVFP4 saves the column-wise E2M1 copy
/// (half a byte) with an E4M3 scale per 16.
double linear_input_bytes(const Dims& x) {
  if (x.fp4) return 0.5 + 1.0 / 16.0;
  return x.fp8 ? (x.fp8_block ? 1.0 + 4.0 / 128.0 : 1.0) : as_d(x.e);
}

/// Outside the TP regions (sequence-sharded with SP): the inputs of the two norms, of QKV
/// and of FC1 (SP stores them sharded and re-gathers in backward), two dropout masks (none
/// with hidden_dropout 0). A block-scaled shard that is not gathered in FP8 (dims not
/// multiples of 128) is gathered in 16 bits and quantized whole: QKV and FC1 keep the whole
/// column-wise copy.
double outside_stored_bytes(const Dims& x) {
  const double tok = as_d(x.tokens);
  const double e = as_d(x.e);
  const double t = as_d(x.t);
  const double linear_in = linear_input_bytes(x);
  const double masks = x.hidden_dropout ? 2.0 : 0.0;
  const bool whole_linear_in = x.fp8_block && x.sp && !detail::fp8_block_gathers_fp8(x, x.h);
  return whole_linear_in
             ? tok * as_d(x.h) * (2.0 * e + masks) / t + tok * as_d(x.h) * 2.0 * linear_in
             : tok * as_d(x.h) * (2.0 * e + 2.0 * linear_in + masks) / (x.sp ? t : 1.0);
}

/// MLP: GeLU and squared ReLU keep their input (FC1's output) and FC2 its input; SwiGLU
/// keeps its two-part input. An MoE layer's MLP half keeps moe_mlp_stored_bytes.
double mlp_stored_bytes(const Dims& x, bool moe) {
  if (moe) return detail::moe_mlp_stored_bytes(x);
  return as_d(x.tokens) * as_d(x.ffn_n()) *
         ((x.swiglu ? 2.0 : 1.0) * as_d(x.e) + linear_input_bytes(x));
}

/// Bytes one layer keeps for backward when nothing in it is recomputed; with
/// `core_attention_recomputed` the core attention (selective recompute) keeps only its
/// inputs. `moe`: an MoE layer, whose MLP half keeps moe_mlp_stored_bytes instead.
double layer_stored_bytes(const Dims& x, bool core_attention_recomputed, bool moe = false) {
  const double tok = as_d(x.tokens);
  const double e = as_d(x.e);
  const double linear_in = linear_input_bytes(x);
  const double outside = outside_stored_bytes(x);
  // Core attention inputs: unfused attention keeps Q and the head-expanded K and V for the
  // two batched GEMMs; flash attention and checkpointed core attention keep Q, K, V as
  // the QKV GEMM produced them.
  const bool expanded = !x.flash && !core_attention_recomputed;
  const double qkv = expanded ? 3.0 * tok * as_d(x.attn_n()) * e : tok * as_d(x.qkv_n()) * e;
  // The projection's input is also the fused attention's saved output (not the unfused one's).
  const double proj_in =
      tok * as_d(x.attn_n()) * (x.fp8 ? (x.flash ? e + linear_in : linear_in) : e);
  const double mlp = mlp_stored_bytes(x, moe);
  // Softmax output, dropout mask (1 byte) and dropout output: the 5as/h term. With
  // attention_dropout 0 the softmax output alone (it is also the second GEMM's input).
  const double scores =
      expanded ? as_d(x.score_elems()) * (x.attention_dropout ? 2.0 * e + 1.0 : e) : 0.0;
  return outside + qkv + proj_in + mlp + scores + mla_latent_bytes(x);
}

/// A hybrid model's layer (one residual block: half of the norms, linear inputs and masks
/// outside the TP region): a Mamba layer, an attention block, an MLP or MoE block.
double hybrid_stored_bytes(const Dims& x, std::int32_t layer, bool core_attention_recomputed) {
  switch (x.kind_of(layer)) {
    case HybridLayer::kMamba: return detail::mamba_stored_bytes(x);
    case HybridLayer::kAttention:
      return layer_stored_bytes(x, core_attention_recomputed) - outside_stored_bytes(x) / 2.0 -
             mlp_stored_bytes(x, false);
    case HybridLayer::kMlp: return outside_stored_bytes(x) / 2.0 + mlp_stored_bytes(x, false);
    case HybridLayer::kMoe: return outside_stored_bytes(x) / 2.0 + mlp_stored_bytes(x, true);
  }
  return 0.0;
}

/// Bytes of one stored layer input under full recompute (sharded with SP or distributed
/// saved activations).
double checkpoint_bytes(const Dims& x) {
  return as_d(x.tokens * x.h * x.e) / (x.sp || x.dist_saved ? as_d(x.t) : 1.0);
}

/// Core attention tensors re-materialised by selective recompute for one layer.
double selective_recompute_bytes(const Dims& x) {
  const double context = as_d(x.tokens * x.attn_n() * x.e);
  if (x.flash) return context;
  const double expanded_kv = x.g < x.a ? 2.0 * context : 0.0;
  const double scores = x.attention_dropout ? 2.0 * as_d(x.e) + 1.0 : as_d(x.e);
  return as_d(x.score_elems()) * scores + expanded_kv + context;
}

std::int64_t round_bytes(double v) { return std::llround(v); }

/// A hybrid chunk's stored layers and the recompute peak, as chunk_activations prices a GPT
/// chunk's: each layer by its kind; full recompute keeps checkpoints and re-runs its largest
/// group at the largest layer kind of the chunk.
void hybrid_chunk_layers(const Dims& x, const LayerRange& range,
                         const detail::RecomputeLayout& layout, bool selective, double& layers,
                         double& recompute) {
  double largest = 0.0;
  bool attention = false;
  for (std::int32_t l = range.first; l < range.first + range.count; ++l) {
    const double stored = hybrid_stored_bytes(x, l, selective);
    largest = std::max(largest, hybrid_stored_bytes(x, l, false));
    attention = attention || x.kind_of(l) == HybridLayer::kAttention;
    if (!layout.full()) layers += stored;
  }
  if (layout.full()) {
    layers = as_d(layout.checkpoints()) * checkpoint_bytes(x) + as_d(layout.plain_layers()) * largest;
    if (layout.largest_group() > 0) {
      recompute = as_d(layout.largest_group()) * largest - (x.dist_saved ? 0.0 : checkpoint_bytes(x));
    }
  } else if (selective && attention) {
    recompute = selective_recompute_bytes(x);
  }
}

}  // namespace

double layer_activation_bytes(const Workload& w) {
  const Dims x = detail::dims_of(w);
  switch (w.training.recompute_granularity) {
    case RecomputeGranularity::kNone: return layer_stored_bytes(x, false);
    case RecomputeGranularity::kSelective: return layer_stored_bytes(x, true);
    case RecomputeGranularity::kFull: return checkpoint_bytes(x);
  }
  return 0.0;
}

ChunkActivations chunk_activations(const Workload& w, std::int32_t stage, std::int32_t chunk) {
  const Dims x = detail::dims_of(w);
  const LayerRange range = layers_of(w.training, w.model, stage, chunk);
  const bool selective = w.training.recompute_granularity == RecomputeGranularity::kSelective;
  const detail::RecomputeLayout layout(w.training, range.count);

  ChunkActivations out;
  double layers = 0.0;
  double recompute = 0.0;
  std::int64_t moe_layers = 0;
  for (std::int32_t l = range.first; l < range.first + range.count; ++l) moe_layers += x.is_moe(l);
  if (x.is_hybrid()) {
    hybrid_chunk_layers(x, range, layout, selective, layers, recompute);
  } else if (layout.full()) {
    // With MoE layers the re-run group is priced at the larger of the two layer kinds.
    const double plain = moe_layers > 0 ? std::max(layer_stored_bytes(x, false),
                                                   layer_stored_bytes(x, false, true))
                                        : layer_stored_bytes(x, false);
    layers = as_d(layout.checkpoints()) * checkpoint_bytes(x) + as_d(layout.plain_layers()) * plain;
    if (layout.largest_group() > 0) {
      // The re-run group holds all its activations; its first layer's input is the stored
      // checkpoint itself, unless it was distributed and had to be all-gathered anew.
      recompute = as_d(layout.largest_group()) * plain - (x.dist_saved ? 0.0 : checkpoint_bytes(x));
    }
  } else {
    layers = moe_layers > 0 ? as_d(range.count - moe_layers) * layer_stored_bytes(x, selective) +
                                  as_d(moe_layers) * layer_stored_bytes(x, selective, true)
                            : as_d(range.count) * layer_stored_bytes(x, selective);
    if (selective && range.count > 0) recompute = selective_recompute_bytes(x);
  }
  double extras = 0.0;
  const bool first = stage == 0 && chunk == 0;
  const bool last = stage == x.p - 1 && chunk == x.v - 1;
  // Embedding dropout mask (the reference's s*b*h*p/t over p micro-batches with SP); none
  // with hidden_dropout 0.
  if (first && x.hidden_dropout) extras += as_d(x.sp_tokens * x.h);
  if (last) {
    // Inputs of the final norm and of the logits GEMM, and the fp32 softmax the
    // cross-entropy keeps: the reference's 4*s*b*h/t*(1 + V/h) with SP. Transformer Engine's
    // cross entropy keeps its fp32 gradient instead, of the same size.
    extras += 2.0 * as_d(x.sp_tokens * x.h * x.e) + as_d(x.tokens * x.vocab_n() * 4);
    out.transient_bytes = detail::logits_workspace_bytes(x);
    // Multi-token prediction: each depth's transformer layer (the last layer's kind) and
    // what its projection, norms and output head keep.
    for (std::int64_t k = 0; k < x.mtp; ++k) {
      const bool moe = x.is_moe(static_cast<std::int32_t>(x.layers + k));
      layers += layer_stored_bytes(x, selective, moe);
      extras += as_d(detail::mtp_extra_activation_bytes(x));
    }
  }
  out.layer_stored_bytes = round_bytes(layers);
  out.stored_bytes = out.layer_stored_bytes + round_bytes(extras);
  out.recompute_bytes = round_bytes(std::max(0.0, recompute));
  return out;
}

}  // namespace stepsim
