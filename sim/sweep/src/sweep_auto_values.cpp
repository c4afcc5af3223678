// The "auto" domains of a sweep's knobs: for each autoable knob, the values Megatron-LM (and
// stepsim's model) accept given the knobs before it in enumeration order, and the derived
// fields reset so that finalize_workload re-derives them per configuration. Each knob's domain
// is a function of sweep_auto_domains.cpp; here, what they share and the dispatch.

#include <algorithm>

#include "stepsim/base/assert.hpp"
#include "stepsim/layout/moe_layout.hpp"
#include "stepsim/layout/pipeline_split.hpp"
#include "stepsim/sweep/sweep.hpp"
#include "sweep_auto_domains.hpp"
#include "sweep_knob_lookup.hpp"

namespace stepsim::sim {

namespace auto_domains {

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

}  // namespace auto_domains

namespace {

using namespace auto_domains;

std::int64_t data_parallel_of(const TrainingConfig& t) {
  const std::int64_t tp =
      t.tensor_model_parallel_size * t.context_parallel_size * t.pipeline_model_parallel_size;
  return tp > 0 && t.world_size % tp == 0 ? t.world_size / tp : 0;
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
  // FP8 parameters with the distributed optimizer in a 16-bit job, MXFP8 ones through the
  // gradient buffer.
  if (key == "training.fp8_param_gather") {
    return booleans(t.fp8_enabled() && t.use_distributed_optimizer &&
                    t.params_dtype != DType::kFp32);
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
