// Apex's DistributedFusedAdam under NeMo (see dfa.hpp for the sources).

#include "stepsim/ops/dfa.hpp"

#include <algorithm>

#include "stepsim/ops/fp8_ops.hpp"
#include "stepsim/ops/optimizer_ops.hpp"
#include "stepsim/layout/pipeline_split.hpp"
#include "stepsim/ops/flops.hpp"

namespace stepsim::detail {

namespace {

constexpr std::int64_t kMiB = std::int64_t{1} << 20;

/// Elements of the representative rank's shards (the first shard of each bucket, as DP rank 0
/// holds) that hold parameters, for `elements` parameters in `buckets` buckets: full shards
/// but where the last bucket is filled less than a shard.
std::int64_t local_elements(const DfaLayout& d, std::int64_t elements, std::int64_t buckets) {
  if (buckets <= 0) return 0;
  const std::int64_t last = elements - (buckets - 1) * d.bucket;
  return (buckets - 1) * d.shard + std::min(d.shard, last);
}

Op step_collective(const char* name, CollectiveKind kind, const CollectiveOp& group,
                   std::int64_t bytes, Stream stream) {
  Op op;
  op.name = name;
  op.phase = Phase::kStep;
  op.stream = stream;
  op.shape = CollectiveOp{.kind = kind,
                          .group = group.group,
                          .bytes = bytes,
                          .group_size = group.group_size,
                          .nodes_spanned = group.nodes_spanned};
  return op;
}

}  // namespace

std::int64_t DfaLayout::buckets() const {
  std::int64_t n = normal_buckets + embedding_buckets;
  for (const std::int64_t b : fp8_buckets) n += b;
  return n;
}

DfaLayout dfa_layout(const Workload& w, const Dims& x, std::int32_t stage) {
  const TrainingConfig& t = w.training;
  DfaLayout d;
  const std::int64_t dp_cp = std::max<std::int64_t>(1, x.dp * x.cp);
  // A 709-716: shard = floor(bucket_cap_mb MiB / sizeof(bf16) / distributed_size), rounded
  // down to the 128-byte alignment (64 elements), at least one alignment.
  constexpr std::int64_t kAlignment = 128 / 2;
  d.shard =
      std::max(kAlignment, (t.apex_bucket_cap_mb * kMiB / 2 / dp_cp) / kAlignment * kAlignment);
  d.bucket = d.shard * dp_cp;
  const std::int64_t per_layer =
      x.qkv_n() * x.h + x.h * x.attn_n() + x.fc1_n() * x.h + x.h * x.ffn_n();
  std::int64_t params = 0, fp8 = 0, layers = 0;
  for (std::int32_t c = 0; c < static_cast<std::int32_t>(x.v); ++c) {
    const std::int64_t n = layers_of(t, w.model, stage, c).count;
    layers += n;
    d.layers += n;
    d.fp8_elements.push_back(n * per_layer);
    d.fp8_buckets.push_back(ceil_div(n * per_layer, d.bucket));
    fp8 += n * per_layer;
    params += chunk_parameters(w, stage, c);
  }
  // NG 575-613: the word embeddings (first stage; the last stage's copy of tied ones) and the
  // learned position embeddings take fp32 gradients.
  if (stage == 0) d.embedding_elements += x.vocab_n() * x.h + (x.learned_pos ? x.max_pos * x.h : 0);
  if (stage == x.p - 1 && x.tied && x.p > 1) d.embedding_elements += x.vocab_n() * x.h;
  d.normal_elements = std::max<std::int64_t>(0, params - fp8 - d.embedding_elements);
  d.normal_buckets = ceil_div(d.normal_elements, d.bucket);
  d.embedding_buckets = ceil_div(d.embedding_elements, d.bucket);
  if (x.sp && x.t > 1) {
    // Transformer Engine marks sequence_parallel on the norms (weight and bias of a
    // LayerNorm) and the row-parallel linears' biases (proj, fc2); the final norm too.
    const std::int64_t norm = x.layernorm ? 2 * x.h : x.h;
    d.sp_elements = layers * (2 * norm + (x.bias ? 2 * x.h : 0)) + (stage == x.p - 1 ? norm : 0);
  }
  return d;
}

void add_dfa_chunk_ops(ChunkPlan& chunk, const DfaLayout& d, const CollectiveOp& dp_group) {
  chunk.grad_sync.clear();
  chunk.param_gather.clear();
  if (chunk.chunk == 0 || dp_group.group_size <= 1) return;
  const std::int64_t buckets = d.fp8_buckets[static_cast<std::size_t>(chunk.chunk)];
  for (std::int64_t b = 0; b < buckets; ++b) {
    // A 1838-1889: reduce_scatter_tensor of the whole bf16 bucket; A 2022-2037:
    // all_gather_into_tensor of the whole uint8 bucket (N forces uint8 for FP8 weights).
    chunk.grad_sync.push_back(step_collective("dfa_grad_reduce_scatter",
                                              CollectiveKind::kReduceScatter, dp_group,
                                              d.bucket * 2, Stream::kDataComm));
    chunk.param_gather.push_back(step_collective("dfa_param_all_gather", CollectiveKind::kAllGather,
                                                 dp_group, d.bucket, Stream::kDataComm));
  }
}

namespace {

/// The representative rank's shards holding parameters, per group.
struct DfaShards {
  std::int64_t first_fp8 = 0;  ///< the first chunk's FP8 buckets
  std::int64_t fp8_local_first = 0, fp8_local_rest = 0, fp8_buckets_rest = 0;
  std::int64_t normal_local = 0, embedding_local = 0;
};

DfaShards dfa_shards(const DfaLayout& d) {
  DfaShards s;
  s.first_fp8 = d.fp8_buckets.empty() ? 0 : d.fp8_buckets.front();
  for (std::size_t c = 1; c < d.fp8_buckets.size(); ++c) {
    s.fp8_local_rest += local_elements(d, d.fp8_elements[c], d.fp8_buckets[c]);
    s.fp8_buckets_rest += d.fp8_buckets[c];
  }
  s.fp8_local_first =
      d.fp8_buckets.empty() ? 0 : local_elements(d, d.fp8_elements[0], s.first_fp8);
  s.normal_local = local_elements(d, d.normal_elements, d.normal_buckets);
  s.embedding_local = local_elements(d, d.embedding_elements, d.embedding_buckets);
  return s;
}

/// Apex DistributedFusedAdam's step, op by op, appended to `ops`.
class DfaStep {
 public:
  DfaStep(std::vector<Op>& ops, const DfaLayout& d, const CollectiveOp& dp_group)
      : ops_(ops), d_(d), dp_group_(dp_group), reduce_(dp_group.group_size > 1) {}

  std::int32_t index() const { return static_cast<std::int32_t>(ops_.size()) - 1; }

  /// One coalesced group of `buckets` buckets of `bytes` per element over the data-parallel
  /// group, after `deps`; its index is added to `out`.
  void tail_group(const char* name, std::int64_t buckets, std::int64_t bytes, CollectiveKind kind,
                  std::vector<std::int32_t> deps, std::vector<std::int32_t>& out) {
    if (!reduce_ || buckets <= 0) return;
    Op op = step_collective(name, kind, dp_group_, buckets * d_.bucket * bytes, Stream::kDataComm);
    op.deps = std::move(deps);
    ops_.push_back(std::move(op));
    out.push_back(index());
  }

  /// The reductions before the tail: the sequence-parallel parameters' gradients over TP
  /// and the tied embeddings' over the embedding group.
  std::vector<std::int32_t> before_tail(const Dims& x, const CollectiveOp& tp_group,
                                        const CollectiveOp* embedding_group) {
    std::vector<std::int32_t> before;
    // NG 883-887, 1025-1043: the sequence-parallel parameters' bf16 gradients, flattened and
    // all-reduced over the TP group.
    if (d_.sp_elements > 0 && tp_group.group_size > 1) {
      ops_.push_back(step_collective("dfa_sp_grad_all_reduce", CollectiveKind::kAllReduce,
                                     tp_group, d_.sp_elements * 2, Stream::kTensorComm));
      before.push_back(index());
    }
    // NG 915-923, 1059-1090: the tied embeddings' fp32 main gradient over the embedding group.
    if (embedding_group != nullptr) {
      ops_.push_back(step_collective("embedding_grad_all_reduce", CollectiveKind::kAllReduce,
                                     *embedding_group, x.vocab_n() * x.h * 4, Stream::kDataComm));
      before.push_back(index());
    }
    return before;
  }

  /// The gradient norm after the reduce-scatters, summed over the world; returns its last op.
  std::int32_t grad_norm(const DfaShards& s, const std::vector<std::int32_t>& tail,
                         const std::vector<std::int32_t>& before_tail,
                         const CollectiveOp& grad_stats) {
    const std::int64_t bf16_local = s.fp8_local_first + s.fp8_local_rest + s.normal_local;
    // One fragment list per bucket and parameter: about two fragments a bucket.
    const std::int64_t fragments = 2 * d_.buckets();
    // N 496-524: multi_tensor_l2norm over the local shards' gradients, one call per gradient
    // dtype (bf16, fp32), after the reduce-scatters; then the squared norm summed over the
    // world.
    Op norm = step_compute_op("dfa_grad_norm", bf16_local * 2 + s.embedding_local * 4,
                              multi_tensor_launches(bf16_local, fragments, 1) +
                                  multi_tensor_launches(s.embedding_local, fragments, 1) + 1);
    norm.deps = tail;
    if (tail.empty()) norm.deps = before_tail;
    ops_.push_back(std::move(norm));
    std::int32_t last = index();
    if (grad_stats.group_size > 1) {
      Op reduce_norm = step_collective("grad_norm_all_reduce", CollectiveKind::kAllReduce,
                                       grad_stats, 4, Stream::kDataComm);
      reduce_norm.deps.push_back(last);
      ops_.push_back(std::move(reduce_norm));
      last = index();
    }
    return last;
  }

  /// A 2386-2414: Adam on the first chunk's group (multi_tensor_fused_adam, depth 5: read p,
  /// m, v in fp32 and the gradient, write p, m, v and the output parameter: fp32 for FP8
  /// buckets, bf16 otherwise), its FP8 casts (N 614-650: fp32 master -> uint8), its
  /// all-gather (into `gathers`); then the rest, beside the gather.
  void adam(const DfaShards& s, std::int32_t last, std::vector<std::int32_t>& gathers) {
    const std::int64_t first_local = s.fp8_local_first + s.normal_local + s.embedding_local;
    Op adam_first = step_compute_op(
        "dfa_adam_step", s.fp8_local_first * 30 + s.normal_local * 28 + s.embedding_local * 30,
        multi_tensor_launches(first_local,
                              2 * (s.first_fp8 + d_.normal_buckets + d_.embedding_buckets), 5));
    adam_first.deps.push_back(last);
    ops_.push_back(std::move(adam_first));
    last = index();
    if (s.fp8_local_first > 0) {
      ops_.push_back(step_compute_op("fp8_param_cast", s.fp8_local_first * 5, 2 * s.first_fp8));
      last = index();
    }
    tail_group("dfa_param_all_gather_first", s.first_fp8, 1, CollectiveKind::kAllGather, {last},
               gathers);
    tail_group("dfa_param_all_gather_first", d_.normal_buckets, 2, CollectiveKind::kAllGather,
               {last}, gathers);
    tail_group("dfa_param_all_gather_first", d_.embedding_buckets, 2, CollectiveKind::kAllGather,
               {last}, gathers);
    // The rest, beside the gather (the compute stream does not wait for it).
    if (s.fp8_local_rest > 0) {
      Op adam_rest =
          step_compute_op("dfa_adam_step", s.fp8_local_rest * 30,
                          multi_tensor_launches(s.fp8_local_rest, 2 * s.fp8_buckets_rest, 5));
      adam_rest.deps.push_back(last);
      ops_.push_back(std::move(adam_rest));
      ops_.push_back(step_compute_op("fp8_param_cast", s.fp8_local_rest * 5, 2 * s.fp8_buckets_rest));
    }
  }

  /// N 674-707: the scales' reciprocal, the amaxes packed and MAX-reduced over the
  /// data-parallel group: on the communicator of the gathers, behind them. Returns the last op.
  std::int32_t amax(const std::vector<std::int32_t>& gathers) {
    const std::int64_t fp8_tensors = d_.layers * kFp8LinearsPerLayer;
    const std::int64_t values = std::max<std::int64_t>(1, fp8_tensors) * 4;
    const std::int64_t value_copy = multi_tensor_launches(fp8_tensors, fp8_tensors, 2);
    ops_.push_back(step_compute_op("fp8_param_amax_pack", values * 2, 2 * value_copy + 1));
    std::int32_t last = index();
    if (reduce_) {
      Op amax = step_collective("fp8_param_amax_all_reduce", CollectiveKind::kAllReduce,
                                dp_group_, values, Stream::kDataComm);
      amax.deps.push_back(last);
      amax.deps.insert(amax.deps.end(), gathers.begin(), gathers.end());
      ops_.push_back(std::move(amax));
      last = index();
    }
    Op unpack = step_compute_op("fp8_param_amax_unpack", values * 2, value_copy);
    unpack.deps.push_back(last);
    ops_.push_back(std::move(unpack));
    return index();
  }

 private:
  std::vector<Op>& ops_;
  const DfaLayout& d_;
  const CollectiveOp& dp_group_;
  const bool reduce_;
};

}  // namespace

std::int32_t append_dfa_step_ops(std::vector<Op>& ops, const Dims& x, const DfaLayout& d,
                                 const CollectiveOp& dp_group, const CollectiveOp& tp_group,
                                 const CollectiveOp* embedding_group,
                                 const CollectiveOp& grad_stats) {
  DfaStep step(ops, d, dp_group);
  const std::vector<std::int32_t> before_tail = step.before_tail(x, tp_group, embedding_group);
  const DfaShards shards = dfa_shards(d);
  // A 2079-2091, 1741-1759 (grad_sync in clipping): the first chunk's FP8 buckets, the bf16
  // bucket(s) of the other parameters, the fp32 embedding buckets, one coalesced group.
  std::vector<std::int32_t> tail;
  step.tail_group("dfa_grad_reduce_scatter_first", shards.first_fp8, 2,
                  CollectiveKind::kReduceScatter, before_tail, tail);
  step.tail_group("dfa_grad_reduce_scatter_first", d.normal_buckets, 2,
                  CollectiveKind::kReduceScatter, before_tail, tail);
  step.tail_group("dfa_grad_reduce_scatter_first", d.embedding_buckets, 4,
                  CollectiveKind::kReduceScatter, before_tail, tail);
  const std::int32_t norm = step.grad_norm(shards, tail, before_tail, grad_stats);
  std::vector<std::int32_t> gathers;
  step.adam(shards, norm, gathers);
  return step.amax(gathers);
}

}  // namespace stepsim::detail
