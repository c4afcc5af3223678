// The "auto" domains of a sweep's knobs: for each autoable knob, the values Megatron-LM (and
// stepsim's model) accept given the knobs before it in enumeration order, and the derived
// fields reset so that finalize_workload re-derives them per configuration.

#include <algorithm>

#include "stepsim/base/assert.hpp"
#include "stepsim/layout/moe_layout.hpp"
#include "stepsim/layout/pipeline_split.hpp"
#include "stepsim/sweep/sweep.hpp"
#include "sweep_knob_lookup.hpp"

namespace stepsim::sim {
namespace {

using detail::knob;
using detail::swept;

std::vector<std::int64_t> divisors(std::int64_t n) {
  std::vector<std::int64_t> out;
  for (std::int64_t d = 1; d * d <= n; ++d) {
    if (n % d != 0) continue;
    out.push_back(d);
    if (d != n / d) out.push_back(n / d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

KnobValue integer(std::int64_t v) { return KnobValue{v, 0.0, -1}; }

std::vector<KnobValue> integers(const std::vector<std::int64_t>& v) {
  std::vector<KnobValue> out;
  out.reserve(v.size());
  for (std::int64_t x : v) out.push_back(integer(x));
  return out;
}

std::vector<KnobValue> booleans(bool allow_true) {
  if (!allow_true) return {integer(0)};
  return {integer(0), integer(1)};
}

std::int64_t data_parallel_of(const TrainingConfig& t) {
  const std::int64_t tp =
      t.tensor_model_parallel_size * t.context_parallel_size * t.pipeline_model_parallel_size;
  return tp > 0 && t.world_size % tp == 0 ? t.world_size / tp : 0;
}

/// The layers Megatron's even split divides: the embedding and the loss count when asked.
std::int64_t counted_layers(const TrainingConfig& t, const ModelConfig& m) {
  return m.num_layers + (t.account_for_embedding_in_pipeline_split ? 1 : 0) +
         (t.account_for_loss_in_pipeline_split ? 1 : 0);
}

bool first_or_last_given(const TrainingConfig& t) {
  return t.decoder_first_pipeline_num_layers > 0 || t.decoder_last_pipeline_num_layers > 0;
}

/// Whether a later axis may count the embedding or the loss as a layer in the even split, so
/// that the layers a pipeline rank holds are not known yet at the pipeline and virtual-stage
/// axes above it.
bool counted_layers_swept(const SweepSpec& spec) {
  return swept(spec, knob("training.account_for_embedding_in_pipeline_split")) ||
         swept(spec, knob("training.account_for_loss_in_pipeline_split"));
}

/// A layout's stage count (0 without one, or for a layout that does not parse).
std::int64_t layout_stages(const TrainingConfig& t) {
  if (t.pipeline_model_parallel_layout.empty()) return 0;
  const auto stages = parse_pipeline_layout(t.pipeline_model_parallel_layout);
  return stages ? static_cast<std::int64_t>(stages->size()) : 0;
}

/// Transformer layers of the fullest pipeline rank under `pp` (0: no valid split), for the
/// virtual-stage and recompute domains; a layout is never re-split.
std::int64_t largest_stage_layers(const TrainingConfig& t, const ModelConfig& m, std::int64_t pp) {
  if (pp <= 0 || !t.pipeline_model_parallel_layout.empty()) return 0;
  if (!first_or_last_given(t)) {
    const std::int64_t counted = counted_layers(t, m);
    return counted % pp == 0 ? counted / pp : 0;
  }
  const std::int64_t first = t.decoder_first_pipeline_num_layers;
  const std::int64_t last = t.decoder_last_pipeline_num_layers;
  const std::int64_t middle_stages = pp - (first > 0 ? 1 : 0) - (last > 0 ? 1 : 0);
  const std::int64_t middle = m.num_layers - first - last;
  if (pp < 2 || middle < 0 || (middle_stages == 0) != (middle == 0)) return 0;
  if (middle_stages > 0 && middle % middle_stages != 0) return 0;
  return std::max({first, last, middle_stages > 0 ? middle / middle_stages : 0});
}

std::int64_t virtual_size_of(const TrainingConfig& t, const ModelConfig& m, bool from_layers) {
  if (const std::int64_t stages = layout_stages(t); stages > 0) {
    const std::int64_t p = t.pipeline_model_parallel_size;
    return p > 0 && stages % p == 0 ? stages / p : 0;
  }
  if (!from_layers) return t.virtual_pipeline_model_parallel_size;
  const std::int64_t n = t.num_layers_per_virtual_pipeline_stage;
  if (n <= 0) return 1;
  const std::int64_t per_rank = t.pipeline_model_parallel_size * n;
  const std::int64_t counted = counted_layers(t, m);
  return per_rank > 0 && counted % per_rank == 0 ? counted / per_rank : 0;
}

bool virtual_from_layers(const SweepSpec& spec) {
  if (swept(spec, knob("training.num_layers_per_virtual_pipeline_stage"))) return true;
  if (swept(spec, knob("training.virtual_pipeline_model_parallel_size"))) return false;
  return spec.defaulted.virtual_from_layers_per_stage;
}

/// What every knob's domain reads: the configuration so far and the sizes derived from it.
struct AutoContext {
  const Workload& w;
  const SweepSpec& spec;
  const ModelConfig& m;
  const TrainingConfig& t;
  std::int64_t tp, pp, dp, cp;
  bool full;  // full recompute
  std::int64_t v;
  std::int64_t groups;        // query groups: the heads while defaulted and not swept
  std::int64_t stage_layers;  // the most layers a stage holds; 0 without an even split
};

/// TP sizes: divisors of the world that divide the heads and the query groups.
std::vector<KnobValue> tensor_parallel_values(const AutoContext& c) {
  const ModelConfig& m = c.m;
  const TrainingConfig& t = c.t;
  const std::int64_t groups = c.groups;
  std::vector<std::int64_t> out;
  if (t.world_size <= 0) return {};
  for (std::int64_t d : divisors(t.world_size)) {
    if (m.num_attention_heads % d == 0 && groups % d == 0) out.push_back(d);
  }
  return integers(out);
}

/// CP sizes: divisors of the world over TP that the attention takes.
std::vector<KnobValue> context_parallel_values(const AutoContext& c) {
  const ModelConfig& m = c.m;
  const TrainingConfig& t = c.t;
  const std::int64_t tp = c.tp;
  const std::int64_t groups = c.groups;
  // Megatron's and Transformer Engine's rules (validate.cpp): seq_length a multiple of 2*cp,
  // fused attention, heads per TP rank divisible by cp with a2a (by the a2a level with a2a+p2p).
  std::vector<std::int64_t> out;
  if (tp <= 0 || t.world_size % tp != 0) return {};
  const bool fused = m.attention_backend == AttentionBackend::kAuto ||
                     m.attention_backend == AttentionBackend::kFused;
  for (std::int64_t d : divisors(t.world_size / tp)) {
    if (d == 1) {
      out.push_back(d);
      continue;
    }
    if (!fused) continue;
    if (t.cp_comm_type == CpCommType::kA2aP2p) {
      // The hierarchical sizes are given: only their product, with the a2a level's heads.
      const auto& levels = t.hierarchical_context_parallel_sizes;
      if (levels.size() != 2 || d % levels[0] != 0 || d / levels[0] != levels[1]) continue;
      if ((m.num_attention_heads / tp) % levels[0] != 0 || (groups / tp) % levels[0] != 0) {
        continue;
      }
    }
    if (m.seq_length % (2 * d) != 0) continue;
    if (t.sequence_parallel && tp > 1 && (m.seq_length / d) % tp != 0) continue;
    if (t.cp_comm_type == CpCommType::kA2a &&
        ((m.num_attention_heads / tp) % d != 0 || (groups / tp) % d != 0)) {
      continue;
    }
    out.push_back(d);
  }
  return integers(out);
}

/// PP sizes: those the layers (or the layout's stages) split over.
std::vector<KnobValue> pipeline_parallel_values(const AutoContext& c) {
  const ModelConfig& m = c.m;
  const TrainingConfig& t = c.t;
  const std::int64_t tp = c.tp;
  const std::int64_t cp = c.cp;
  const SweepSpec& spec = c.spec;
  std::vector<std::int64_t> out;
  if (tp <= 0 || cp <= 0 || t.world_size % (tp * cp) != 0) return {};
  // Uneven stages: first/last sizes leave any p > 1 to the rules; a layout fixes p x v.
  const std::int64_t stages = layout_stages(t);
  const std::int64_t layers = m.num_layers;
  const bool accounted = counted_layers_swept(spec) && !first_or_last_given(t);
  for (std::int64_t d : divisors(t.world_size / (tp * cp))) {
    // With the embedding or loss counted on a later axis, num_layers + 0, 1 or 2 may split.
    const bool fits = stages > 0               ? stages % d == 0
                      : first_or_last_given(t) ? d > 1
                      : accounted
                          ? layers % d == 0 || (layers + 1) % d == 0 || (layers + 2) % d == 0
                          : counted_layers(t, m) % d == 0;
    if (fits) out.push_back(d);
  }
  return integers(out);
}

/// Virtual stages, as a size or as layers per virtual stage (`as_size` false).
std::vector<KnobValue> virtual_values(const AutoContext& c, bool as_size) {
  const ModelConfig& m = c.m;
  const TrainingConfig& t = c.t;
  const std::int64_t pp = c.pp;
  const std::int64_t stage_layers = c.stage_layers;
  const SweepSpec& spec = c.spec;
  // A layout sets v; first/last sizes take v, never layers per virtual stage.
  if (!t.pipeline_model_parallel_layout.empty()) return {integer(as_size ? 1 : 0)};
  if (!as_size && first_or_last_given(t)) return {integer(0)};
  // The layers a rank may hold: this split's, or with the embedding or loss counted on a
  // later axis, each split of num_layers + 0, 1 or 2 that pp divides.
  std::vector<std::int64_t> per_rank;
  if (counted_layers_swept(spec) && !first_or_last_given(t) && pp > 0) {
    for (std::int64_t extra = 0; extra <= 2; ++extra) {
      if ((m.num_layers + extra) % pp == 0) per_rank.push_back((m.num_layers + extra) / pp);
    }
  } else if (stage_layers > 0) {
    per_rank.push_back(stage_layers);
  }
  if (per_rank.empty()) return {};
  if (pp == 1) return {integer(as_size ? 1 : 0)};
  std::vector<std::int64_t> out;
  for (const std::int64_t layers : per_rank) {
    for (std::int64_t d : divisors(layers)) {
      const std::int64_t value = as_size ? d : (d == 1 ? 0 : layers / d);
      if (std::find(out.begin(), out.end(), value) == out.end()) out.push_back(value);
    }
  }
  std::sort(out.begin(), out.end());
  return integers(out);
}

/// Layers recomputed: up to a chunk's (divisors of it with the uniform method).
std::vector<KnobValue> recompute_num_layers_values(const AutoContext& c) {
  const TrainingConfig& t = c.t;
  const std::int64_t stage_layers = c.stage_layers;
  const std::int64_t v = c.v;
  const bool full = c.full;
  if (!full) return {integer(0)};
  std::int64_t per_chunk =
      stage_layers > 0 && v > 0 && stage_layers % v == 0 ? stage_layers / v : 0;
  if (!t.pipeline_model_parallel_layout.empty()) {
    // A layout's chunks: the most transformer layers any of its stages holds.
    const auto stages = parse_pipeline_layout(t.pipeline_model_parallel_layout);
    for (const std::string& stage : stages ? *stages : std::vector<std::string>{}) {
      per_chunk = std::max<std::int64_t>(per_chunk, std::count(stage.begin(), stage.end(), 't'));
    }
  }
  if (per_chunk <= 0) return {};
  if (t.recompute_method == RecomputeMethod::kUniform) return integers(divisors(per_chunk));
  std::vector<std::int64_t> out;
  for (std::int64_t n = 1; n <= per_chunk; ++n) out.push_back(n);
  return integers(out);
}

/// Micro-batches per virtual-stage group: pp up to the micro-batches that Megatron takes.
std::vector<KnobValue> microbatch_group_values(const AutoContext& c) {
  const TrainingConfig& t = c.t;
  const std::int64_t pp = c.pp;
  const std::int64_t dp = c.dp;
  const std::int64_t v = c.v;
  const std::int64_t per_step = t.micro_batch_size * dp;
  const std::int64_t mb =
      per_step > 0 && t.global_batch_size % per_step == 0 ? t.global_batch_size / per_step : 0;
  if (v <= 1) return {integer(pp)};
  std::vector<std::int64_t> out;
  for (std::int64_t n = pp; n <= mb; ++n) {
    if (mb % n == 0 || mb % n >= pp) out.push_back(n);
  }
  return integers(out);
}

/// The even split with the embedding (`embedding`) or the loss counted as a layer
/// (Megatron-LM's --account-for-*-in-pipeline-split): not beside first/last stage sizes or a
/// layout, and only where the counted layers still divide over the pipeline (and its virtual
/// stages).
std::vector<KnobValue> counted_split_values(const AutoContext& c, bool embedding) {
  const ModelConfig& m = c.m;
  const TrainingConfig& t = c.t;
  const std::int64_t pp = c.pp;
  const SweepSpec& spec = c.spec;
  const bool current = embedding ? t.account_for_embedding_in_pipeline_split
                                 : t.account_for_loss_in_pipeline_split;
  if (first_or_last_given(t) || !t.pipeline_model_parallel_layout.empty() || pp <= 0) {
    return {integer(0)};
  }
  // The embedding's axis comes first: the loss, when swept after it, may still add a layer.
  const bool loss_later = embedding &&
                          swept(spec, knob("training.account_for_loss_in_pipeline_split")) &&
                          !t.account_for_loss_in_pipeline_split;
  const std::int64_t vs = std::max<std::int64_t>(1, t.virtual_pipeline_model_parallel_size);
  const auto splits = [&](std::int64_t counted) {
    return counted % pp == 0 && (counted / pp) % vs == 0;
  };
  std::vector<std::int64_t> out;
  for (const std::int64_t on : {0, 1}) {
    const std::int64_t counted = counted_layers(t, m) - (current ? 1 : 0) + on;
    if (splits(counted) || (loss_later && splits(counted + 1))) out.push_back(on);
  }
  return integers(out);
}

/// EP sizes (validate_moe.cpp): EP divides num_experts and, with the expert TP, the world over
/// the pipeline (Megatron's expert rank generator: tp-ep-dp-pp).
std::vector<KnobValue> expert_parallel_values(const AutoContext& c) {
  const ModelConfig& m = c.m;
  const TrainingConfig& t = c.t;
  const std::int64_t pp = c.pp;
  const SweepSpec& spec = c.spec;
  const bool experts = m.num_experts > 0;
  if (!experts || pp <= 0) return {integer(1)};
  // An expert TP that a later "auto" axis chooses does not bound EP here (1 fits any EP).
  const std::int64_t etp =
      swept(spec, knob("training.expert_tensor_parallel_size")) ? 1 : t.expert_tensor_parallel();
  std::vector<std::int64_t> out;
  for (const std::int64_t d : divisors(m.num_experts)) {
    if (etp > 0 && t.world_size % (pp * d * etp) == 0) out.push_back(d);
  }
  return integers(out);
}

/// Expert TP sizes: divisors of the world over pp x EP that divide the experts' FFN.
std::vector<KnobValue> expert_tensor_parallel_values(const AutoContext& c) {
  const ModelConfig& m = c.m;
  const TrainingConfig& t = c.t;
  const std::int64_t pp = c.pp;
  const bool experts = m.num_experts > 0;
  const std::int64_t ep = t.expert_model_parallel_size;
  if (!experts || pp <= 0 || ep <= 0 || t.world_size % (pp * ep) != 0) return {integer(0)};
  // Bias in MoE is only supported with ETP 1 (Megatron's check).
  if (m.add_bias_linear) return {integer(1)};
  std::vector<std::int64_t> out;
  for (const std::int64_t d : divisors(t.world_size / (pp * ep))) {
    if (m.moe_ffn() % d == 0) out.push_back(d);
  }
  return integers(out);
}

/// Dispatchers: allgather and alltoall, and "flex" where Megatron and DeepEP take it.
std::vector<KnobValue> dispatcher_values(const AutoContext& c) {
  const Workload& w = c.w;
  const ModelConfig& m = c.m;
  const TrainingConfig& t = c.t;
  const bool experts = m.num_experts > 0;
  if (!experts) return {integer(static_cast<std::int64_t>(t.moe_token_dispatcher_type))};
  std::vector<KnobValue> out = {integer(static_cast<std::int64_t>(MoeDispatcher::kAllGather)),
                                integer(static_cast<std::int64_t>(MoeDispatcher::kAllToAll))};
  // "flex" where Megatron and DeepEP take it (validate_moe.cpp check_flex): the deepep
  // backend (HybridEP and NCCL EP are not modelled), bf16, no capacity padding, an expert
  // TP x EP group DeepEP's kernels run over.
  const std::int64_t etp = t.expert_tensor_parallel();
  if (t.moe_flex_dispatcher_backend == MoeFlexBackend::kDeepEp &&
      t.params_dtype == DType::kBf16 && !t.moe_pad_expert_input_to_capacity &&
      deepep_group_supported(etp * t.expert_model_parallel_size, etp, w.system.gpus_per_node) &&
      (etp * t.expert_model_parallel_size <= 8 || etp * m.moe_router_topk <= 32)) {
    out.push_back(integer(static_cast<std::int64_t>(MoeDispatcher::kFlex)));
  }
  return out;
}

/// FP8 formats (validate_fp8.cpp): none, or both formats where the GPU has FP8 tensor cores.
std::vector<KnobValue> fp8_values(const AutoContext& c) {
  if (c.w.system.peak_flops_fp8 <= 0) return {integer(0)};
  return integers({static_cast<std::int64_t>(Fp8Format::kNone),
                   static_cast<std::int64_t>(Fp8Format::kE4m3),
                   static_cast<std::int64_t>(Fp8Format::kHybrid)});
}

/// FP8 recipes: those the compute capability runs (10.0+: MXFP8; below, or not given: the
/// Hopper ones).
std::vector<KnobValue> fp8_recipe_values(const AutoContext& c) {
  const TrainingConfig& t = c.t;
  if (!t.fp8_enabled()) return {integer(static_cast<std::int64_t>(t.fp8_recipe))};
  if (c.w.system.compute_capability >= 100) {
    return {integer(static_cast<std::int64_t>(Fp8Recipe::kMxfp8))};
  }
  return integers({static_cast<std::int64_t>(Fp8Recipe::kDelayed),
                   static_cast<std::int64_t>(Fp8Recipe::kTensorwise),
                   static_cast<std::int64_t>(Fp8Recipe::kBlockwise)});
}

/// Capacity (validate_moe.cpp): Megatron takes a capacity factor with aux_loss,
/// seq_aux_loss, global_aux_loss or no load balancing, and stepsim prices it with the
/// alltoall dispatcher only. The factors offered beside none (dropless): 1.0, 1.25 and 2.0,
/// those Fedus et al. compare (Switch Transformers, arXiv:2101.03961, table 1).
std::vector<KnobValue> capacity_factor_values(const AutoContext& c) {
  const TrainingConfig& t = c.t;
  const bool experts = c.m.num_experts > 0;
  const MoeLoadBalancing lb = t.moe_router_load_balancing_type;
  const bool capacity_ok = experts && lb != MoeLoadBalancing::kSinkhorn &&
                           lb != MoeLoadBalancing::kQuantileBalancing &&
                           t.moe_token_dispatcher_type == MoeDispatcher::kAllToAll;
  if (!capacity_ok) return {KnobValue{.real = 0.0}};
  return {KnobValue{.real = 0.0}, KnobValue{.real = 1.0}, KnobValue{.real = 1.25},
          KnobValue{.real = 2.0}};
}

AutoContext context_of(const Workload& w, const SweepSpec& spec) {
  const ModelConfig& m = w.model;
  const TrainingConfig& t = w.training;
  const std::int64_t pp = t.pipeline_model_parallel_size;
  return AutoContext{
      .w = w,
      .spec = spec,
      .m = m,
      .t = t,
      .tp = t.tensor_model_parallel_size,
      .pp = pp,
      .dp = data_parallel_of(t),
      .cp = t.context_parallel_size,
      .full = t.recompute_granularity == RecomputeGranularity::kFull,
      .v = virtual_size_of(t, m, virtual_from_layers(spec)),
      .groups = spec.defaulted.num_query_groups && !swept(spec, knob("model.num_query_groups"))
                    ? m.num_attention_heads
                    : m.num_query_groups,
      .stage_layers = largest_stage_layers(t, m, pp)};
}

}  // namespace

void reset_derived_fields(Workload& w, const SweepSpec& spec) {
  const DefaultedKeys& d = spec.defaulted;
  const auto dflt = [&](bool defaulted, std::string_view key) {
    return defaulted && !swept(spec, knob(key));
  };
  ModelConfig& m = w.model;
  TrainingConfig& t = w.training;
  // finalize_workload fills every optional field left at 0 with Megatron's default.
  if (dflt(d.num_query_groups, "model.num_query_groups")) m.num_query_groups = 0;
  if (dflt(d.kv_channels, "model.kv_channels")) m.kv_channels = 0;
  if (dflt(d.ffn_hidden_size, "model.ffn_hidden_size")) m.ffn_hidden_size = 0;
  if (dflt(d.max_position_embeddings, "model.max_position_embeddings")) {
    m.max_position_embeddings = 0;
  }
  if (dflt(d.padded_vocab_size, "model.padded_vocab_size") && m.vocab_size > 0) {
    m.padded_vocab_size = 0;  // re-padded to make_vocab_size_divisible_by * t
  }
  if (dflt(d.microbatch_group_size_per_vp_stage, "training.microbatch_group_size_per_vp_stage")) {
    t.microbatch_group_size_per_vp_stage = 0;
  }
  if (dflt(d.recompute_num_layers, "training.recompute_num_layers")) t.recompute_num_layers = 0;
  // The virtual stages follow the form the base (or the sweep) gives: one is set, the other
  // re-derived from it and the pipeline size.
  if (virtual_from_layers(spec)) {
    t.virtual_pipeline_model_parallel_size = 1;
  } else {
    t.num_layers_per_virtual_pipeline_stage = 0;
  }
  // A layout sets v itself (its stages over p), re-derived for each pipeline size.
  if (!t.pipeline_model_parallel_layout.empty()) t.virtual_pipeline_model_parallel_size = 1;
  if (dflt(d.overlap_p2p_comm, "training.overlap_p2p_comm")) {
    // Megatron's default is on; it is switched off without interleaving.
    t.overlap_p2p_comm = virtual_size_of(t, m, virtual_from_layers(spec)) > 1;
  }
}

std::vector<KnobValue> auto_values(KnobId id, const Workload& w, const SweepSpec& spec) {
  const std::string_view key = knob_table()[static_cast<std::size_t>(id)].key;
  const AutoContext c = context_of(w, spec);
  const TrainingConfig& t = w.training;
  const bool experts = w.model.num_experts > 0;
  if (key == "training.tensor_model_parallel_size") return tensor_parallel_values(c);
  if (key == "training.context_parallel_size") return context_parallel_values(c);
  if (key == "training.pipeline_model_parallel_size") return pipeline_parallel_values(c);
  if (key == "training.virtual_pipeline_model_parallel_size") return virtual_values(c, true);
  if (key == "training.num_layers_per_virtual_pipeline_stage") return virtual_values(c, false);
  if (key == "training.sequence_parallel") return booleans(c.tp > 1);
  if (key == "training.micro_batch_size") {
    if (c.dp <= 0 || t.global_batch_size % c.dp != 0) return {};
    return integers(divisors(t.global_batch_size / c.dp));
  }
  if (key == "training.recompute_granularity") return integers({0, 1, 2});
  if (key == "training.recompute_method") {
    if (!c.full) return {integer(static_cast<std::int64_t>(RecomputeMethod::kNone))};
    return {integer(static_cast<std::int64_t>(RecomputeMethod::kUniform)),
            integer(static_cast<std::int64_t>(RecomputeMethod::kBlock))};
  }
  if (key == "training.recompute_num_layers") return recompute_num_layers_values(c);
  if (key == "training.distribute_saved_activations") {
    return booleans(c.full && c.tp > 1 && !t.sequence_parallel);
  }
  if (key == "training.use_distributed_optimizer") return booleans(c.dp > 1);
  if (key == "training.overlap_grad_reduce") return booleans(c.dp > 1);
  if (key == "training.overlap_param_gather") {
    return booleans(t.use_distributed_optimizer && t.overlap_grad_reduce);
  }
  if (key == "training.overlap_p2p_comm") return booleans(c.v > 1);
  if (key == "training.microbatch_group_size_per_vp_stage") return microbatch_group_values(c);
  if (key == "training.account_for_embedding_in_pipeline_split") {
    return counted_split_values(c, true);
  }
  if (key == "training.account_for_loss_in_pipeline_split") return counted_split_values(c, false);
  if (key == "training.fp8") return fp8_values(c);
  if (key == "training.fp8_recipe") return fp8_recipe_values(c);
  // FP8 parameters with the distributed optimizer, MXFP8 ones through the gradient buffer.
  if (key == "training.fp8_param_gather") {
    return booleans(t.fp8_enabled() && t.use_distributed_optimizer);
  }
  if (key == "training.reuse_grad_buf_for_mxfp8_param_ag") {
    return booleans(t.fp8_param_gather && t.fp8_recipe == Fp8Recipe::kMxfp8);
  }
  // Megatron's validate_args (megatron/training/arguments.py): "Tensor parallel
  // communication/GEMM overlap can happen only when sequence parallelism is enabled".
  // stepsim's own limits (fp8, a TP group across nodes, sm_count) are cut by validation,
  // naming the rule.
  if (key == "training.tp_comm_overlap") return booleans(t.sequence_parallel);
  if (key == "model.use_flash_attn") return booleans(true);
  if (key == "training.expert_model_parallel_size") return expert_parallel_values(c);
  if (key == "training.expert_tensor_parallel_size") return expert_tensor_parallel_values(c);
  if (key == "training.moe_token_dispatcher_type") return dispatcher_values(c);
  if (key == "training.moe_expert_capacity_factor") return capacity_factor_values(c);
  if (key == "training.moe_pad_expert_input_to_capacity") {
    return booleans(experts && t.moe_expert_capacity_factor > 0);
  }
  STEPSIM_UNREACHABLE("auto_values: knob is not autoable");
  return {};
}

}  // namespace stepsim::sim
