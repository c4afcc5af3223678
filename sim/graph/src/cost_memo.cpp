#include "stepsim/graph/cost_memo.hpp"

namespace stepsim::sim {
namespace {

// Distinct shapes of a sweep number in the thousands; a memo past this is dropped and
// refilled rather than grown without bound.
constexpr std::size_t kMaxRemembered = std::size_t{1} << 16;

enum class Kind : std::int64_t { kGemm, kAttention, kMemoryBound, kCollective, kP2P };

std::int64_t tag(Kind kind, std::int64_t low) {
  return static_cast<std::int64_t>(kind) << 32 | low;
}

}  // namespace

std::size_t CostMemo::KeyHash::operator()(const Key& k) const {
  // splitmix64's finalizer over each field.
  std::uint64_t h = 0x9e3779b97f4a7c15ULL;
  for (const std::int64_t f : k.fields) {
    h ^= static_cast<std::uint64_t>(f) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
    h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
    h ^= h >> 31;
  }
  return static_cast<std::size_t>(h);
}

template <typename Query>
double CostMemo::remembered(const Key& key, Query&& query) const {
  if (const auto it = memo_.find(key); it != memo_.end()) return it->second;
  if (memo_.size() >= kMaxRemembered) memo_.clear();
  const double seconds = query();
  memo_.emplace(key, seconds);
  return seconds;
}

double CostMemo::gemm_s(const GemmOp& op) const {
  // The layout too: a profile with per-layout samples prices NN, NT and TN apart; and an FP8
  // GEMM's scaling and accumulation, whose kernels are priced apart.
  const std::int64_t flags =
      static_cast<std::int64_t>(op.dtype) | static_cast<std::int64_t>(op.layout) << 8 |
      static_cast<std::int64_t>(op.scaling) << 16 | std::int64_t{op.fast_accum} << 24;
  const Key key{{tag(Kind::kGemm, flags), op.m, op.n, op.k, op.batch}};
  return remembered(key, [&] { return model_->gemm_s(op); });
}

double CostMemo::attention_s(const AttentionOp& op) const {
  const std::int64_t flags = static_cast<std::int64_t>(op.dtype) << 2 |
                             std::int64_t{op.causal} << 1 | std::int64_t{op.backward};
  // Every field a cost model reads: a context-parallel step's keys (seq_kv), MLA's value
  // width and a sliding window change its price; counted_scores is FLOP accounting only.
  const Key key{{tag(Kind::kAttention, flags), op.batch, op.heads, op.kv_heads, op.seq, op.head_dim,
                 op.seq_kv, op.v_head_dim, op.window}};
  return remembered(key, [&] { return model_->attention_s(op); });
}

double CostMemo::memory_bound_s(const MemoryBoundOp& op) const {
  // CostModel::shape_s hands over one launch at a time; kernels keyed all the same.
  const Key key{{tag(Kind::kMemoryBound, 0), op.bytes, op.kernels}};
  return remembered(key, [&] { return model_->memory_bound_s(op); });
}

double CostMemo::collective_s(const CollectiveOp& op) const {
  const std::int64_t flags = std::int64_t{op.nccl} << 16 | static_cast<std::int64_t>(op.kind) << 8 |
                             static_cast<std::int64_t>(op.group);
  const Key key{{tag(Kind::kCollective, flags), op.bytes, op.group_size, op.nodes_spanned}};
  return remembered(key, [&] { return model_->collective_s(op); });
}

double CostMemo::p2p_s(const P2POp& op) const {
  const Key key{
      {tag(Kind::kP2P, std::int64_t{op.nccl} << 1 | std::int64_t{op.inter_node}), op.bytes}};
  return remembered(key, [&] { return model_->p2p_s(op); });
}

}  // namespace stepsim::sim
