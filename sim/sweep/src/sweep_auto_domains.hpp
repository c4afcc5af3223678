#pragma once
// Internal to the sweep planner (sweep_auto_values.cpp, sweep_auto_domains.cpp): the "auto"
// domain of each autoable knob given the configuration so far, and the helpers they share.

#include <cstdint>
#include <vector>

#include "stepsim/sweep/sweep.hpp"

namespace stepsim::sim::auto_domains {

std::vector<std::int64_t> divisors(std::int64_t n);
KnobValue integer(std::int64_t v);
std::vector<KnobValue> integers(const std::vector<std::int64_t>& v);
/// {0}, or {0, 1} when true is allowed.
std::vector<KnobValue> booleans(bool allow_true);
/// The layers Megatron's even split divides: the embedding and the loss count when asked.
std::int64_t counted_layers(const TrainingConfig& t, const ModelConfig& m);
bool first_or_last_given(const TrainingConfig& t);
/// Whether a later axis may count the embedding or the loss as a layer in the even split.
bool counted_layers_swept(const SweepSpec& spec);
/// A layout's stage count (0 without one, or for a layout that does not parse).
std::int64_t layout_stages(const TrainingConfig& t);

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
std::vector<KnobValue> tensor_parallel_values(const AutoContext& c);

/// CP sizes: divisors of the world over TP that the attention takes.
std::vector<KnobValue> context_parallel_values(const AutoContext& c);

/// PP sizes: those the layers (or the layout's stages) split over.
std::vector<KnobValue> pipeline_parallel_values(const AutoContext& c);

/// Virtual stages, as a size or as layers per virtual stage (`as_size` false).
std::vector<KnobValue> virtual_values(const AutoContext& c, bool as_size);

/// Layers recomputed: up to a chunk's (divisors of it with the uniform method).
std::vector<KnobValue> recompute_num_layers_values(const AutoContext& c);

/// Micro-batches per virtual-stage group: pp up to the micro-batches that Megatron takes.
std::vector<KnobValue> microbatch_group_values(const AutoContext& c);

/// The even split with the embedding (`embedding`) or the loss counted as a layer
/// (Megatron-LM's --account-for-*-in-pipeline-split): not beside first/last stage sizes or a
/// layout, and only where the counted layers still divide over the pipeline (and its virtual
/// stages).
std::vector<KnobValue> counted_split_values(const AutoContext& c, bool embedding);

/// EP sizes (validate_moe.cpp): EP divides num_experts and, with the expert TP, the world over
/// the pipeline (Megatron's expert rank generator: tp-ep-dp-pp).
std::vector<KnobValue> expert_parallel_values(const AutoContext& c);

/// Expert TP sizes: divisors of the world over pp x EP that divide the experts' FFN.
std::vector<KnobValue> expert_tensor_parallel_values(const AutoContext& c);

/// Dispatchers: allgather and alltoall, and "flex" where Megatron and DeepEP take it.
std::vector<KnobValue> dispatcher_values(const AutoContext& c);

/// FP8 formats (validate_fp8.cpp): none, or both formats where the GPU has FP8 tensor cores.
std::vector<KnobValue> fp8_values(const AutoContext& c);

/// FP8 recipes: those the compute capability runs (10.0+: MXFP8; below, or not given: the
/// Hopper ones).
std::vector<KnobValue> fp8_recipe_values(const AutoContext& c);

/// Capacity (validate_moe.cpp): Megatron takes a capacity factor with aux_loss,
/// seq_aux_loss, global_aux_loss or no load balancing, and stepsim prices it with the
/// alltoall dispatcher only. The factors offered beside none (dropless): 1.0, 1.25 and 2.0,
/// those Fedus et al. compare (Switch Transformers, arXiv:2101.03961, table 1).
std::vector<KnobValue> capacity_factor_values(const AutoContext& c);

}  // namespace stepsim::sim::auto_domains
