// The "auto" domains of the sweep's knobs, one function each (sweep_auto_domains.hpp): the
// values Megatron-LM (and stepsim's model) accept given the knobs before it.

#include <algorithm>
#include <string>

#include "stepsim/layout/moe_layout.hpp"
#include "stepsim/layout/pipeline_split.hpp"
#include "sweep_auto_domains.hpp"
#include "sweep_knob_lookup.hpp"

namespace stepsim::sim::auto_domains {

using detail::knob;
using detail::swept;

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

}  // namespace stepsim::sim::auto_domains
