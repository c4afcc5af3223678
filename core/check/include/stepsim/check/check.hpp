#pragma once
// Megatron-LM's argument rules for what stepsim models, checked once at load. After
// validate_workload() returns no errors, the Workload's invariants hold.

#include <string>

#include "stepsim/base/result.hpp"
#include "stepsim/config/scenario.hpp"

namespace stepsim {

/// Every rule broken by `w`, each naming `file` and the key in Megatron's vocabulary.
/// Expects derived fields filled (see finalize_workload); a size left at 0 (not given or
/// invalid) skips the rules that involve it instead of producing follow-on errors.
Errors validate_workload(const Workload& w, const std::string& file);

/// Completes a Workload as Megatron-LM's validate_args does, then validates it:
/// fills the optional fields still at 0 with Megatron's defaults (num_query_groups = heads,
/// kv_channels = hidden/heads, ffn_hidden_size = 4h or int(8h/3/64)*64 with SwiGLU,
/// max_position_embeddings = seq_length, padded_vocab_size = vocab_size rounded up to
/// make_vocab_size_divisible_by * t, microbatch_group_size_per_vp_stage = p,
/// recompute_num_layers = 1 with full recompute), derives virtual_pipeline_model_parallel_size
/// from num_layers_per_virtual_pipeline_stage (or the reverse), data_parallel_size and
/// num_microbatches. Returns every problem found (empty: `w` is a valid Workload).
/// Used by the loader and by code that builds Workloads (sweeps).
Errors finalize_workload(Workload& w, const std::string& file);

}  // namespace stepsim
