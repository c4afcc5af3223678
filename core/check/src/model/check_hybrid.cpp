// Hybrid models (hybrid_layer_pattern): Megatron-LM's rules (megatron/training/arguments.py,
// "Hybrid layer pattern: deprecation handling and validation"; MambaMixer.__init__'s asserts;
// hybrid_layer_allocation.select_pipeline_segment) and what stepsim does not model yet.

#include "check_internal.hpp"
#include "stepsim/layout/hybrid_layout.hpp"

namespace stepsim::detail {

namespace {

constexpr const char* kPattern = "model.hybrid_layer_pattern";

/// arguments.py's refusals of pipeline flags beside a pattern, and of first/last stage sizes
/// beside '|' separators.
void check_pipeline_flags(const TrainingConfig& t, std::int64_t segments, Checker& check) {
  const bool pipes = segments > 1;
  const std::int64_t p = t.pipeline_model_parallel_size;
  // The v the segments give (a workload finalized again keeps it).
  const std::int64_t derived = pipes && p > 0 && segments % p == 0 ? segments / p : 1;
  const std::string why =
      " cannot be given with hybrid_layer_pattern (Megatron-LM: the pipeline layout is defined "
      "by '|' separators in the pattern)";
  if (t.num_layers_per_virtual_pipeline_stage > 0) {
    check.fail("training.num_layers_per_virtual_pipeline_stage",
               "=" + str(t.num_layers_per_virtual_pipeline_stage) + why);
  }
  if (t.virtual_pipeline_model_parallel_size > 1 &&
      t.virtual_pipeline_model_parallel_size != derived) {
    check.fail("training.virtual_pipeline_model_parallel_size",
               "=" + str(t.virtual_pipeline_model_parallel_size) + why +
                   "; virtual stages are the '|' segments over pipeline_model_parallel_size");
  }
  if (!t.pipeline_model_parallel_layout.empty()) {
    check.fail("training.pipeline_model_parallel_layout", "=\"" + t.pipeline_model_parallel_layout + "\"" + why);
  }
  if (t.account_for_embedding_in_pipeline_split) {
    check.fail("training.account_for_embedding_in_pipeline_split", "=true" + why);
  }
  if (t.account_for_loss_in_pipeline_split) {
    check.fail("training.account_for_loss_in_pipeline_split", "=true" + why);
  }
  if (!pipes) return;
  if (t.decoder_first_pipeline_num_layers > 0) {
    check.fail("training.decoder_first_pipeline_num_layers",
               "=" + str(t.decoder_first_pipeline_num_layers) + why);
  }
  if (t.decoder_last_pipeline_num_layers > 0) {
    check.fail("training.decoder_last_pipeline_num_layers",
               "=" + str(t.decoder_last_pipeline_num_layers) + why);
  }
}

}  // namespace

void apply_hybrid_defaults(Workload& w, Checker& check) {
  ModelConfig& m = w.model;
  TrainingConfig& t = w.training;
  if (!m.hybrid()) return;
  auto parsed = parse_hybrid_layer_pattern(m.hybrid_layer_pattern);
  if (!parsed) {
    for (const Error& e : parsed.errors()) check.fail(e.key, e.message);
    return;
  }
  const HybridPattern& pattern = parsed.value();
  const auto segments = static_cast<std::int64_t>(pattern.segments.size());
  check_pipeline_flags(t, segments, check);
  // arguments.py: the pattern's layer count overrides --num-layers.
  m.num_layers = static_cast<std::int64_t>(pattern.layers.size());
  const std::int64_t p = t.pipeline_model_parallel_size;
  if (segments == 1 || p <= 0) return;
  if (segments % p != 0) {
    check.fail(kPattern, "=\"" + m.hybrid_layer_pattern + "\" has " + str(segments) +
                             " pipeline segments, not a multiple of "
                             "pipeline_model_parallel_size=" + str(p) +
                             " (Megatron-LM: must be evenly divisible)");
    return;
  }
  t.virtual_pipeline_model_parallel_size = segments / p;
  t.num_layers_per_virtual_pipeline_stage = 0;
}

void check_hybrid(const Workload& w, Checker& check) {
  const ModelConfig& m = w.model;
  const TrainingConfig& t = w.training;
  if (!m.hybrid()) {
    if (m.mamba_num_heads > 0) {
      check.fail("model.mamba_num_heads", "=" + str(m.mamba_num_heads) +
                                              " needs hybrid_layer_pattern (a GPT model has no "
                                              "Mamba layers)");
    }
    return;
  }
  const std::vector<HybridLayer> kinds = hybrid_layer_kinds(m);
  bool mamba = false;
  bool moe = false;
  for (const HybridLayer k : kinds) {
    mamba = mamba || k == HybridLayer::kMamba;
    moe = moe || k == HybridLayer::kMoe;
  }
  if (moe && !m.moe()) {
    check.fail(kPattern, "=\"" + m.hybrid_layer_pattern + "\" has MoE layers (E) but num_experts "
                                                          "is not given");
  }
  if (m.multi_latent_attention) {
    check.fail("model.multi_latent_attention",
               "=true with hybrid_layer_pattern is not modelled yet (Megatron marks MLA layers "
               "'+' in the pattern)");
  }
  // The MTP block and the FSDP units are built for GPT layers (an attention + MLP pair each).
  if (m.mtp_num_layers > 0) {
    check.fail("model.mtp_num_layers",
               "=" + str(m.mtp_num_layers) + " with hybrid_layer_pattern is not modelled yet");
  }
  if (t.use_megatron_fsdp || t.use_torch_fsdp2) {
    check.fail(t.use_megatron_fsdp ? "training.use_megatron_fsdp" : "training.use_torch_fsdp2",
               "=true with hybrid_layer_pattern is not modelled yet");
  }
  if (!mamba) return;
  const std::int64_t tp = t.tensor_model_parallel_size;
  const std::int64_t heads = m.mamba_heads();
  const std::int64_t groups = m.mamba_num_groups;
  // MambaMixer.__init__'s asserts.
  if (heads <= 0) {
    check.fail("model.mamba_num_heads", "=" + str(heads) + " must be > 0");
    return;
  }
  if (tp > 0 && heads % tp != 0) {
    check.fail("model.mamba_num_heads", "=" + str(heads) + " is not divisible by "
                                        "tensor_model_parallel_size=" + str(tp) +
                                        " (MambaMixer: nheads must be evenly divisible by tp_size)");
  }
  if (groups > 0 && tp > 0 && groups % tp != 0) {
    check.fail("model.mamba_num_groups", "=" + str(groups) + " is not divisible by "
                                         "tensor_model_parallel_size=" + str(tp) +
                                         " (MambaMixer: ngroups must be evenly divisible by "
                                         "tp_size)");
  }
  if (groups > 0 && heads % groups != 0) {
    check.fail("model.mamba_num_heads", "=" + str(heads) + " is not divisible by "
                                        "mamba_num_groups=" + str(groups) +
                                        " (MambaMixer: nheads must be evenly divisible by ngroups)");
  }
  // What stepsim does not model of a Mamba layer yet.
  const std::string not_yet = " with Mamba layers (M in hybrid_layer_pattern) is not modelled yet";
  if (t.context_parallel_size > 1) {
    check.fail("training.context_parallel_size",
               "=" + str(t.context_parallel_size) + not_yet +
                   " (MambaContextParallel's all-to-alls of the mixer's heads)");
  }
  if (t.fp8_enabled()) check.fail("training.fp8", "=" + std::string(to_string(t.fp8)) + not_yet);
  if (t.tp_comm_overlap) check.fail("training.tp_comm_overlap", "=true" + not_yet);
}

}  // namespace stepsim::detail
