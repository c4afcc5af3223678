#include "stepsim/graph/ddp_buckets.hpp"

#include <algorithm>
#include <string>
#include <string_view>

#include "stepsim/base/assert.hpp"

namespace stepsim::sim {

namespace {

bool ends_with(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

/// Parameters whose gradients `op` makes final, or -1 when it finalises none. The word
/// embedding (the remainder) is resolved by the caller.
std::int64_t module_parameters(const Workload& w, const Op& op) {
  const ModelConfig& m = w.model;
  const std::int64_t norm = m.normalization == Normalization::kLayerNorm ? 2 * m.hidden_size
                                                                         : m.hidden_size;
  if (op.name == "ln1_bwd" || op.name == "ln2_bwd" || op.name == "final_norm_bwd") return norm;
  if (op.name == "pos_embedding_bwd") return m.max_position_embeddings * m.hidden_size;
  const auto* gemm = std::get_if<GemmOp>(&op.shape);
  if (gemm == nullptr || !ends_with(op.name, "_wgrad")) return -1;
  if (op.name == "logits_wgrad") {
    // The output layer has no bias. Tied to the word embedding on the same rank, its
    // gradient accumulates into the embedding's and is final only at embedding_bwd.
    const bool tied = !m.untie_embeddings_and_output_weights;
    if (tied && w.training.pipeline_model_parallel_size == 1) return -1;
    return gemm->m * gemm->n;
  }
  // A weight gradient GEMM (m x n = the weight), plus the bias (m) with add_bias_linear; a
  // grouped GEMM (the local experts of an MoE layer) holds `batch` of them.
  return gemm->batch * (gemm->m * gemm->n + (m.add_bias_linear ? gemm->m : 0));
}

/// The forward op that first uses the parameters `backward_op` finalises (same layer).
std::string forward_name_of(std::string_view backward_op) {
  if (backward_op == "ln1_bwd") return "ln1";
  if (backward_op == "ln2_bwd") return "ln2";
  if (backward_op == "final_norm_bwd") return "final_norm";
  if (backward_op == "pos_embedding_bwd") return "pos_embedding_add";
  if (backward_op == "embedding_bwd") return "embedding_lookup";
  if (ends_with(backward_op, "_wgrad")) {
    // qkv_wgrad -> qkv_gemm, logits_wgrad -> logits_gemm, ...
    return std::string(backward_op.substr(0, backward_op.size() - 6)) + "_gemm";
  }
  return {};
}

std::int32_t first_use(const ChunkPlan& chunk, const Op& backward_op) {
  const std::string want = forward_name_of(backward_op.name);
  for (std::size_t k = 0; k < chunk.forward.size(); ++k) {
    const Op& op = chunk.forward[k];
    if (op.name == want && op.layer == backward_op.layer) return static_cast<std::int32_t>(k);
  }
  return -1;
}

}  // namespace

std::int64_t ddp_bucket_size(const TrainingConfig& t, std::int64_t stage_parameters,
                             std::int32_t stage, std::int32_t chunk) {
  if (!t.overlap_grad_reduce || stage > 0 || chunk > 0) return 0;
  // Apex DistributedFusedAdam reduces a model chunk as one group (core/ops/include/stepsim/ops/dfa.hpp).
  if (t.optimizer_impl == OptimizerImpl::kApexDistributedFusedAdam) return 0;
  if (t.ddp_num_buckets > 0) return std::max<std::int64_t>(1, stage_parameters / t.ddp_num_buckets);
  if (t.ddp_bucket_size > 0) return t.ddp_bucket_size;
  // megatron/training/training.py, resolve_ddp_bucket_size: max(40M, 1M * the size of the
  // data-parallel group with context parallelism).
  return std::max<std::int64_t>(40'000'000,
                                1'000'000 * t.data_parallel_size * t.context_parallel_size);
}

Result<std::vector<DdpBucket>> ddp_buckets(const Workload& w, const ChunkPlan& chunk,
                                           std::int64_t bucket_size) {
  std::vector<DdpBucket> out;
  if (bucket_size <= 0 || chunk.parameters <= bucket_size) {
    // One bucket: final when the whole backward is.
    out.push_back(DdpBucket{.parameters = chunk.parameters,
                            .ready_op = static_cast<std::int32_t>(chunk.backward.size()) - 1,
                            .first_use_op = 0});
    return out;
  }
  std::int64_t found = 0;
  std::int32_t embedding = -1;
  for (std::size_t k = 0; k < chunk.backward.size(); ++k) {
    if (chunk.backward[k].name == "embedding_bwd") embedding = static_cast<std::int32_t>(k);
    const std::int64_t n = module_parameters(w, chunk.backward[k]);
    if (n > 0) found += n;
  }
  const std::int64_t word_embedding = chunk.parameters - found;
  if (word_embedding < 0 || (word_embedding > 0 && embedding < 0)) {
    return Error{w.source_file, "",
                 "plan bug: the backward ops of stage " + std::to_string(chunk.stage) +
                     " chunk " + std::to_string(chunk.chunk) + " finalise " +
                     std::to_string(found) + " parameters' gradients, the chunk holds " +
                     std::to_string(chunk.parameters)};
  }
  DdpBucket open;
  for (std::size_t k = 0; k < chunk.backward.size(); ++k) {
    std::int64_t n = module_parameters(w, chunk.backward[k]);
    if (static_cast<std::int32_t>(k) == embedding) n = std::max<std::int64_t>(0, n) + word_embedding;
    if (n <= 0) continue;
    const std::int32_t use = first_use(chunk, chunk.backward[k]);
    if (use < 0) {
      return Error{w.source_file, "",
                   "plan bug: stage " + std::to_string(chunk.stage) + " chunk " +
                       std::to_string(chunk.chunk) + " has no forward op using the parameters of " +
                       chunk.backward[k].name};
    }
    open.parameters += n;
    open.ready_op = static_cast<std::int32_t>(k);
    open.first_use_op = open.first_use_op < 0 ? use : std::min(open.first_use_op, use);
    if (open.parameters >= bucket_size) {
      out.push_back(open);
      open = DdpBucket{};
    }
  }
  if (open.parameters > 0) out.push_back(open);
  return out;
}

}  // namespace stepsim::sim

namespace stepsim::sim {

std::int64_t scaled_share(std::int64_t total, std::int64_t part, std::int64_t whole) {
  std::int64_t product = 0;
  if (!__builtin_mul_overflow(total, part, &product)) return product / whole;
  const std::int64_t remainder = total % whole;
  return total / whole * part + static_cast<std::int64_t>(static_cast<long double>(remainder) *
                                                          static_cast<long double>(part) /
                                                          static_cast<long double>(whole));
}

std::int64_t bucket_bytes(std::int64_t total, const std::vector<DdpBucket>& buckets, std::size_t b,
                          std::int64_t parameters) {
  STEPSIM_ASSERT(b < buckets.size() && parameters > 0);
  if (b + 1 < buckets.size()) return scaled_share(total, buckets[b].parameters, parameters);
  std::int64_t before = 0;
  for (std::size_t i = 0; i < b; ++i)
    before += scaled_share(total, buckets[i].parameters, parameters);
  return total - before;
}

std::vector<GradSyncLaunch> grad_sync_launches(const RankProgram& program,
                                               std::int32_t virtual_size, bool overlap,
                                               const std::vector<std::vector<DdpBucket>>& buckets) {
  const auto v = static_cast<std::size_t>(virtual_size);
  STEPSIM_ASSERT(buckets.size() == v);
  std::vector<GradSyncLaunch> out;
  // Every bucket of chunk c at (backward, after_op).
  const auto launch = [&](std::int32_t c, std::int32_t backward) {
    for (std::size_t b = 0; b < buckets[static_cast<std::size_t>(c)].size(); ++b) {
      out.push_back(GradSyncLaunch{.chunk = c,
                                   .bucket = static_cast<std::int32_t>(b),
                                   .backward = backward,
                                   .after_op = -1});
    }
  };
  if (!overlap) {
    for (std::int32_t c = 0; c < virtual_size; ++c) launch(c, -1);
    return out;
  }
  std::vector<std::int32_t> chunk_of_backward;
  for (const Action& a : program.actions) {
    if (a.type == ActionType::kBackward) chunk_of_backward.push_back(a.chunk);
  }
  const std::size_t n = chunk_of_backward.size();
  if (virtual_size > 1) {
    std::vector<std::size_t> last(v, 0);
    for (std::size_t j = 0; j < n; ++j) last[static_cast<std::size_t>(chunk_of_backward[j])] = j;
    std::vector<bool> launched(v, false);
    for (std::size_t k = static_cast<std::size_t>(program.rank); k < n; ++k) {
      const std::size_t j = k - static_cast<std::size_t>(program.rank);
      const std::int32_t c = chunk_of_backward[j];
      if (last[static_cast<std::size_t>(c)] != j) continue;
      launch(c, static_cast<std::int32_t>(k));
      launched[static_cast<std::size_t>(c)] = true;
    }
    for (std::int32_t c = 0; c < virtual_size; ++c) {
      if (!launched[static_cast<std::size_t>(c)]) launch(c, -1);
    }
    return out;
  }
  if (program.rank != 0 || n == 0) {
    launch(0, -1);
    return out;
  }
  const auto last = static_cast<std::int32_t>(n - 1);  // the chunk's (the only one) last backward
  for (std::size_t b = 0; b < buckets[0].size(); ++b) {
    out.push_back(GradSyncLaunch{.chunk = 0,
                                 .bucket = static_cast<std::int32_t>(b),
                                 .backward = last,
                                 .after_op = buckets[0][b].ready_op});
  }
  return out;
}

}  // namespace stepsim::sim
