// Hierarchical context parallelism (cp_comm_type "a2a+p2p"): the rules of Megatron-LM and
// Transformer Engine on --hierarchical-context-parallel-sizes.
//
// megatron/training/arguments.py validate_args: context_parallel_size ==
// prod(hierarchical_context_parallel_sizes); "a2a+p2p" in cp_comm_type asserts the sizes are
// set. Transformer Engine's attn_forward_func_with_cp (attention/dot_product_attention/
// context_parallel.py) asserts cp_group = [a2a_cp_group, p2p_cp_group] for "a2a+p2p": two
// levels. flash_attn_a2a_communicate views the heads as [cp_size_a2a, h // cp_size_a2a]:
// the heads (and key/value heads) per tensor-parallel rank divisible by the a2a size.

#include "check_internal.hpp"

namespace stepsim::detail {

namespace {

std::string list_text(const std::vector<std::int64_t>& sizes) {
  std::string out = "[";
  for (std::size_t i = 0; i < sizes.size(); ++i) out += (i > 0 ? ", " : "") + str(sizes[i]);
  return out + "]";
}

}  // namespace

void check_hierarchical_cp(const Workload& w, Checker& check) {
  const TrainingConfig& t = w.training;
  const ModelConfig& m = w.model;
  const std::vector<std::int64_t>& sizes = t.hierarchical_context_parallel_sizes;
  const std::string key = "training.hierarchical_context_parallel_sizes";
  const bool hierarchical = t.cp_comm_type == CpCommType::kA2aP2p;
  if (hierarchical && sizes.empty()) {
    check.fail("training.cp_comm_type",
               "=\"a2a+p2p\" needs hierarchical_context_parallel_sizes (Megatron-LM asserts "
               "\"--hierarchical-context-parallel-sizes must be set when a2a+p2p is used in cp "
               "comm\")");
    return;
  }
  if (sizes.empty()) return;
  const std::string given = "=" + list_text(sizes);
  const std::int64_t cp = t.context_parallel_size;
  if (!hierarchical) {
    // Megatron asserts the product whatever cp_comm_type is, builds the groups, and nothing
    // reads them: the job is the plain one (the loader notes that the sizes go unused).
    std::int64_t rest = cp;
    for (const std::int64_t size : sizes) {  // by division: a product could overflow
      if (rest <= 0 || rest % size != 0) {
        rest = -1;
        break;
      }
      rest /= size;
    }
    if (rest != 1) {
      check.fail(key, given + " must multiply to context_parallel_size=" + str(cp) +
                          " (Megatron-LM asserts context_parallel_size == "
                          "prod(hierarchical_context_parallel_sizes))");
    }
    return;
  }
  if (sizes.size() != 2) {
    check.fail(key, given +
                        " must have two levels [a2a, p2p] with cp_comm_type \"a2a+p2p\" "
                        "(Transformer Engine asserts cp_group = [a2a_cp_group, p2p_cp_group])");
    return;
  }
  // By division: the product of two given sizes could overflow.
  if (cp <= 0 || cp % sizes[0] != 0 || cp / sizes[0] != sizes[1]) {
    check.fail(key, given + " must multiply to context_parallel_size=" + str(cp) +
                        " (Megatron-LM asserts context_parallel_size == "
                        "prod(hierarchical_context_parallel_sizes))");
    return;
  }
  const std::int64_t a2a = sizes[0];
  const std::int64_t tp = t.tensor_model_parallel_size;
  if (tp <= 0 || a2a <= 1) return;
  const std::int64_t a = m.num_attention_heads;
  const std::int64_t g = m.num_query_groups > 0 ? m.num_query_groups : a;
  if (a > 0 && a % tp == 0 && (a / tp) % a2a != 0) {
    check.fail(key, given + ": its a2a size " + str(a2a) +
                        " does not divide the attention heads per tensor-parallel rank "
                        "(num_attention_heads/tensor_model_parallel_size=" +
                        str(a / tp) + "), which the all-to-all scatters");
  }
  if (g > 0 && g % tp == 0 && (g / tp) % a2a != 0) {
    check.fail(key, given + ": its a2a size " + str(a2a) +
                        " does not divide the key/value heads per tensor-parallel rank "
                        "(num_query_groups/tensor_model_parallel_size=" +
                        str(g / tp) + "), which the all-to-all scatters");
  }
}

}  // namespace stepsim::detail
