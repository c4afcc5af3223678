// Megatron-LM's rules on multi-latent attention, and what stepsim does not model of it yet.
// Sources: megatron/training/arguments.py (validate_args: "Group query attention is mutually
// exclusive with multi latent attention"; _add_mla_args: the defaults), megatron/core/
// transformer/transformer_config.py (MLATransformerConfig), multi_latent_attention.py.

#include "check_internal.hpp"

namespace stepsim::detail {

namespace {

constexpr std::string_view kNotModelled = " is not modelled yet";

/// Megatron reads the MLA sizes only with --multi-latent-attention; a size other than its
/// default without it is a scenario that asks for a model it would not build.
void check_without_mla(const ModelConfig& m, Checker& check) {
  if (m.q_lora_rank > 0) {
    check.fail("model.q_lora_rank",
               "=" + str(m.q_lora_rank) + " needs multi_latent_attention (Megatron ignores it "
                                          "without)");
  }
  const struct {
    std::string_view key;
    std::int64_t value;
    std::int64_t megatron_default;
  } sizes[] = {{"model.kv_lora_rank", m.kv_lora_rank, 32},
               {"model.qk_head_dim", m.qk_head_dim, 128},
               {"model.qk_pos_emb_head_dim", m.qk_pos_emb_head_dim, 64},
               {"model.v_head_dim", m.v_head_dim, 128}};
  for (const auto& s : sizes) {
    if (s.value > 0 && s.value != s.megatron_default) {  // <= 0: the loader reported it
      check.fail(std::string(s.key),
                 "=" + str(s.value) +
                     " needs multi_latent_attention (Megatron ignores it without)");
    }
  }
  if (m.qk_layernorm) {
    check.fail("model.qk_layernorm",
               std::string("=true without multi_latent_attention (norms on the query and key "
                           "heads)") +
                   std::string(kNotModelled));
  }
}

}  // namespace

void check_mla(const Workload& w, Checker& check) {
  const ModelConfig& m = w.model;
  const TrainingConfig& t = w.training;
  if (!m.multi_latent_attention) {
    check_without_mla(m, check);
    return;
  }
  const std::string key = "model.multi_latent_attention";
  // The sizes' positivity is the loader's (positive integers).
  if (m.num_query_groups > 0 && m.num_attention_heads > 0 &&
      m.num_query_groups != m.num_attention_heads) {
    check.fail(key, "=true with num_query_groups=" + str(m.num_query_groups) +
                        ": Group query attention is mutually exclusive with multi latent "
                        "attention (leave num_query_groups out)");
  }
  if (t.context_parallel_size > 1) {
    check.fail(key, std::string("=true with context_parallel_size > 1") +
                        std::string(kNotModelled));
  }
  if (t.fp8_enabled()) {
    check.fail(key, std::string("=true with fp8 (FP8 MLA projections)") +
                        std::string(kNotModelled));
  }
  if (t.tp_comm_overlap) {
    check.fail(key, std::string("=true with tp_comm_overlap (userbuffers around the MLA "
                                "projections)") +
                        std::string(kNotModelled));
  }
  if (!m.fused_attention()) {
    check.fail(key, std::string("=true with attention_backend \"unfused\" or \"local\" "
                                "(unfused attention with query/key and value head dims "
                                "apart)") +
                        std::string(kNotModelled) + " (give \"auto\" or \"fused\")");
  }
}

}  // namespace stepsim::detail
