// Size limits: derived products that would overflow 64-bit integers downstream (memory in
// bytes, element counts) and sizes beyond what a simulation can enumerate. Not Megatron rules:
// they keep every later computation defined.

#include <array>
#include <initializer_list>
#include <set>

#include "check_internal.hpp"

namespace stepsim::detail {

namespace {

constexpr std::int64_t kMaxWorldSize = std::int64_t{1} << 24;  // GPUs
constexpr std::int64_t kMaxLayers = std::int64_t{1} << 14;
constexpr std::int64_t kMaxVirtualMicrobatches = std::int64_t{1} << 20;  // m * v per rank

struct Factor {
  const char* key;     // dotted key the factor comes from; nullptr for a constant
  const char* name;    // how the product names it
  std::int64_t value;  // 0 when the key is unset (the product is then skipped)
};

// true when the product of the factors fits in int64; false on overflow.
bool product_fits(std::initializer_list<Factor> factors) {
  std::int64_t acc = 1;
  for (const Factor& f : factors) {
    if (__builtin_mul_overflow(acc, f.value, &acc)) return false;
  }
  return true;
}

}  // namespace

void check_limits(const Workload& w, Checker& check) {
  const ModelConfig& m = w.model;
  const TrainingConfig& t = w.training;
  if (t.world_size > kMaxWorldSize) {
    check.fail("training.world_size", std::string("=") + str(t.world_size) +
                                          " exceeds stepsim's limit of " + str(kMaxWorldSize) +
                                          " GPUs");
  }
  if (m.num_layers > kMaxLayers) {
    check.fail("model.num_layers", std::string("=") + str(m.num_layers) +
                                       " exceeds stepsim's limit of " + str(kMaxLayers));
  }
  std::int64_t steps = 0;
  if (t.num_microbatches > 0 && t.virtual_pipeline_model_parallel_size > 0 &&
      (__builtin_mul_overflow(t.num_microbatches, t.virtual_pipeline_model_parallel_size, &steps) ||
       steps > kMaxVirtualMicrobatches)) {
    check.fail("training.global_batch_size",
               std::string("=") + str(t.global_batch_size) +
                   " gives num_microbatches=" + str(t.num_microbatches) + " times " +
                   str(t.virtual_pipeline_model_parallel_size) +
                   " model chunks per pipeline rank, beyond stepsim's limit of " +
                   str(kMaxVirtualMicrobatches) + " to simulate");
  }

  // Products that later code forms in int64 (bytes of activations, logits, parameters and
  // optimizer state, with headroom for per-element byte counts). Each overflow is blamed on
  // the largest of its factors, once per key.
  const Factor s{"model.seq_length", "seq_length", m.seq_length};
  const Factor b{"training.micro_batch_size", "micro_batch_size", t.micro_batch_size};
  const Factor h{"model.hidden_size", "hidden_size", m.hidden_size};
  const Factor l{"model.num_layers", "num_layers", m.num_layers};
  const Factor a{"model.num_attention_heads", "num_attention_heads", m.num_attention_heads};
  const Factor v{"model.padded_vocab_size", "padded_vocab_size", m.padded_vocab_size};
  const Factor f{"model.ffn_hidden_size", "ffn_hidden_size", m.ffn_hidden_size};
  const Factor g{"training.global_batch_size", "global_batch_size", t.global_batch_size};
  const Factor w64{nullptr, "64", 64};
  const std::array<std::initializer_list<Factor>, 8> products = {{
      {s, b, h, l, w64},     // activation bytes of a micro-batch over all layers
      {a, s, s, b, l, w64},  // attention score bytes without flash attention
      {s, b, v, w64},        // fp32 logits and their gradient
      {l, h, h, w64, w64},   // parameters and their 18 bytes of state
      {l, h, f, w64, w64},
      {v, h, w64, w64},  // embedding table and its state
      {g, s, h, w64},    // tokens of one step times hidden size
      {g, s, v},         // logits of one step
  }};
  std::set<std::string> blamed;
  for (const auto& product : products) {
    bool unset = false;
    for (const Factor& x : product) unset = unset || x.value <= 0;
    if (unset || product_fits(product)) continue;
    const Factor* largest = nullptr;
    std::string expr;
    for (const Factor& x : product) {
      expr += expr.empty() ? x.name : std::string("*") + x.name;
      if (x.key != nullptr && (largest == nullptr || x.value > largest->value)) largest = &x;
    }
    if (largest == nullptr || !blamed.insert(largest->key).second) continue;
    check.fail(largest->key, std::string("=") + str(largest->value) + " makes " + expr +
                                 " overflow a 64-bit integer");
  }
}

}  // namespace stepsim::detail
