// Apex DistributedFusedAdam's buffers (the bucket layout of ops/dfa.hpp) as memory.

#include "stepsim/memory/memory_model.hpp"

namespace stepsim::detail {

StaticMemory dfa_static_memory(const DfaLayout& d) {
  StaticMemory s;
  std::int64_t fp8_buckets = 0, fp8_elements = 0;
  for (std::size_t c = 0; c < d.fp8_buckets.size(); ++c) {
    fp8_buckets += d.fp8_buckets[c];
    fp8_elements += d.fp8_elements[c];
  }
  // The bf16 and fp32 groups' buffers start one bucket late (last_bucket_id, A 1340-1353).
  const std::int64_t normal = d.normal_buckets > 0 ? d.normal_buckets + 1 : 0;
  const std::int64_t embedding = d.embedding_buckets > 0 ? d.embedding_buckets + 1 : 0;
  // The contiguous parameter buffer (uint8 FP8 weights, bf16 others) and Transformer Engine's
  // cached FP8 transposes; the contiguous gradient buffer (bf16, fp32 for the embeddings).
  s.weights_bytes = (fp8_buckets + 2 * normal + 2 * embedding) * d.bucket + fp8_elements;
  s.gradients_bytes = (2 * fp8_buckets + 2 * normal + 4 * embedding) * d.bucket;
  // Per shard element of every bucket: fp32 master (store_params, NB 803-805), exp_avg,
  // exp_avg_sq, and the reduce-scatter's output shard (bf16; fp32 for the embeddings).
  s.optimizer_bytes =
      d.shard * ((fp8_buckets + d.normal_buckets) * (12 + 2) + d.embedding_buckets * (12 + 4));
  return s;
}

}  // namespace stepsim::detail
