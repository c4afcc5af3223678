// Muon's step as its kernels (see muon_ops.hpp for the sources).

#include "stepsim/ops/muon_ops.hpp"

#include <algorithm>

#include "stepsim/base/assert.hpp"
#include "stepsim/layout/pipeline_split.hpp"
#include "stepsim/ops/optimizer_ops.hpp"

namespace stepsim::detail {

namespace {

/// The attention's matrices: Megatron-Core's linear_qkv (column-parallel; with split_qkv its
/// q, k and v rows per query group, which _get_qkv_split_shapes gives) and linear_proj
/// (row-parallel); multi-latent attention's projections (multi_latent_attention.py: the down
/// projections duplicated on every TP rank, the up projections column-parallel).
void attention_matrices(const Dims& x, bool split_qkv, std::vector<MuonMatrix>& out) {
  if (x.mla) {
    if (x.q_lora > 0) {
      out.push_back({.rows = x.q_lora, .cols = x.h});
      out.push_back({.rows = x.mla_q_n(), .cols = x.q_lora, .partition_dim = 0});
    } else {
      out.push_back({.rows = x.mla_q_n(), .cols = x.h, .partition_dim = 0});
    }
    out.push_back({.rows = x.kv_lora + x.dr, .cols = x.h});
    out.push_back({.rows = x.mla_kv_n(), .cols = x.kv_lora, .partition_dim = 0});
  } else if (split_qkv) {
    out.push_back({.rows = x.a * x.d / x.t, .cols = x.h, .partition_dim = 0});
    out.push_back({.rows = x.g * x.d / x.t, .cols = x.h, .partition_dim = 0});
    out.push_back({.rows = x.g * x.d / x.t, .cols = x.h, .partition_dim = 0});
  } else {
    out.push_back({.rows = x.qkv_n(), .cols = x.h, .partition_dim = 0});
  }
  out.push_back({.rows = x.h, .cols = x.attn_n(), .partition_dim = 1});
}

/// The MLP's: fc1 (column-parallel) and fc2 (row-parallel); an MoE layer's router weight
/// (replicated over TP), shared experts' fc1 and fc2 and each local expert's (TE's
/// GroupedLinear: one weight per expert, over the expert TP group).
void mlp_matrices(const Dims& x, bool moe, std::vector<MuonMatrix>& out) {
  if (!moe) {
    out.push_back({.rows = x.fc1_n(), .cols = x.h, .partition_dim = 0});
    out.push_back({.rows = x.h, .cols = x.ffn_n(), .partition_dim = 1});
    return;
  }
  out.push_back({.rows = x.experts, .cols = x.h});
  if (x.shared_f > 0) {
    out.push_back({.rows = x.shared_fc1_n(), .cols = x.h, .partition_dim = 0});
    out.push_back({.rows = x.h, .cols = x.shared_ffn_n(), .partition_dim = 1});
  }
  for (std::int64_t e = 0; e < x.local_experts(); ++e) {
    out.push_back({.rows = x.expert_fc1_n(), .cols = x.h, .partition_dim = 0, .expert = true});
    out.push_back({.rows = x.h, .cols = x.expert_ffn_n(), .partition_dim = 1, .expert = true});
  }
}

Op gemm_op(const char* name, std::int64_t m, std::int64_t n, std::int64_t k) {
  Op op;
  op.name = name;
  op.phase = Phase::kStep;
  op.stream = Stream::kCompute;
  op.shape = GemmOp{.m = m, .n = n, .k = k, .dtype = DType::kBf16};
  return op;
}

/// The ops of one matrix, appended in order; the collectives wait for the kernel before
/// them and the kernel after a collective waits for it.
class MatrixSteps {
 public:
  explicit MatrixSteps(std::vector<Op>& ops) : ops_(ops) {}
  void compute(Op op) {
    if (pending_ >= 0) op.deps.push_back(pending_);
    pending_ = -1;
    ops_.push_back(std::move(op));
  }
  void collective(const char* name, CollectiveKind kind, std::int64_t bytes,
                  const CollectiveOp& group) {
    if (group.group_size <= 1) return;
    Op& op = ops_.emplace_back();
    op.name = name;
    op.phase = Phase::kStep;
    op.stream = Stream::kTensorComm;
    op.shape = CollectiveOp{.kind = kind,
                            .group = group.group,
                            .bytes = bytes,
                            .group_size = group.group_size,
                            .nodes_spanned = group.nodes_spanned};
    if (ops_.size() > 1) op.deps.push_back(static_cast<std::int32_t>(ops_.size()) - 2);
    pending_ = static_cast<std::int32_t>(ops_.size()) - 1;
  }

 private:
  std::vector<Op>& ops_;
  std::int32_t pending_ = -1;
};

/// newton_schulz on an r x c fp32 momentum (n_local of its n columns on this rank when the
/// Gram matrices are all-reduced over `gram_group`, tp_mode "distributed").
void append_newton_schulz(MatrixSteps& steps, const TrainingConfig& t, std::int64_t gram_side,
                          std::int64_t other_side, const CollectiveOp* gram_group) {
  const std::int64_t m = gram_side;
  const std::int64_t n = other_side;
  const std::int64_t elements = m * n;
  if (gram_group != nullptr) {
    // distributed_normalize_p2: x * x, .sum(), the sum all-reduced, sqrt, x / norm.
    steps.compute(step_compute_op("muon_ns_normalize", elements * (8 + 4), 3));
    steps.collective("muon_ns_norm_all_reduce", CollectiveKind::kAllReduce, 4, *gram_group);
    steps.compute(step_compute_op("muon_ns_scale", elements * 8, 2));
  } else {
    // torch.nn.functional.normalize over the matrix: its norm, then the division.
    steps.compute(step_compute_op("muon_ns_normalize", elements * (4 + 8), 2));
  }
  // fp32_matmul_prec "medium": X cast to bf16, the iterations in bf16 GEMMs.
  steps.compute(step_compute_op("muon_ns_to_bf16", elements * (4 + 2), 1));
  for (std::int64_t i = 0; i < t.muon_num_ns_steps; ++i) {
    steps.compute(gemm_op("muon_ns_gram", m, m, n));
    if (gram_group != nullptr) {
      steps.collective("muon_ns_gram_all_reduce", CollectiveKind::kAllReduce, m * m * 2,
                       *gram_group);
    }
    steps.compute(gemm_op("muon_ns_poly", m, m, m));
    steps.compute(gemm_op("muon_ns_update", m, n, m));
  }
  steps.compute(step_compute_op("muon_ns_to_fp32", elements * (2 + 4), 1));
}

}  // namespace

std::vector<MuonMatrix> layer_muon_matrices(const Dims& x, std::int64_t first,
                                            std::int64_t count, bool split_qkv) {
  std::vector<MuonMatrix> out;
  for (std::int64_t l = first; l < first + count; ++l) {
    attention_matrices(x, split_qkv, out);
    mlp_matrices(x, x.is_moe(static_cast<std::int32_t>(l)), out);
  }
  return out;
}

std::vector<MuonMatrix> chunk_muon_matrices(const Dims& x, const ChunkPlan& chunk,
                                            bool split_qkv) {
  return layer_muon_matrices(x, chunk.first_layer, chunk.num_layers, split_qkv);
}

MuonStageStates muon_stage_states(const Workload& w, std::int32_t stage) {
  MuonStageStates out;
  if (w.training.optimizer != OptimizerKind::kMuon) return out;
  const Dims x = dims_of(w);
  const bool duplicated = w.training.muon_tp_mode == MuonTpMode::kDuplicated;
  for (std::int32_t c = 0; c < static_cast<std::int32_t>(x.v); ++c) {
    const LayerRange range = layers_of(w.training, w.model, stage, c);
    for (const MuonMatrix& mx :
         layer_muon_matrices(x, range.first, range.count, w.training.muon_split_qkv)) {
      out.elements += mx.elements();
      const std::int64_t tp = mx.expert ? x.etp : x.t;
      const std::int64_t whole = mx.partition_dim >= 0 && duplicated ? mx.elements() * tp
                                                                        : mx.elements();
      const std::int64_t r = mx.partition_dim == 0 && duplicated ? mx.rows * tp : mx.rows;
      const std::int64_t cols = mx.partition_dim == 1 && duplicated ? mx.cols * tp : mx.cols;
      const std::int64_t m = std::min(r, cols);
      // The gathered fp32 copy, its normalized copy, X in bf16 and its next value, the
      // result back in fp32; A and B (m x m, bf16).
      out.step_bytes = std::max(out.step_bytes, whole * (4 + 4 + 2 + 2 + 4) + m * m * 4);
    }
  }
  return out;
}

double newton_schulz_flops(std::int64_t rows, std::int64_t cols, std::int64_t steps) {
  const auto m = static_cast<double>(std::min(rows, cols));
  const auto n = static_cast<double>(std::max(rows, cols));
  return static_cast<double>(steps) * (4 * m * m * n + 2 * m * m * m);
}

std::int32_t append_muon_ops(std::vector<Op>& ops, const TrainingConfig& t,
                             const std::vector<MuonMatrix>& matrices, const MuonGroups& groups,
                             std::int32_t after) {
  STEPSIM_ASSERT(t.muon_num_ns_steps >= 1);
  const auto first = static_cast<std::int32_t>(ops.size());
  for (const MuonMatrix& mx : matrices) {
    MatrixSteps steps(ops);
    const std::int64_t e = mx.elements();
    // _apply_weight_decay_inplace (decoupled: p *= 1 - lr * wd), then
    // momentum_buffer.lerp_(grad) and, with Nesterov, grad.lerp(momentum_buffer).
    steps.compute(step_compute_op("muon_momentum", e * (8 + 12 + (t.muon_nesterov ? 12 : 0)),
                                  2 + (t.muon_nesterov ? 1 : 0)));
    const CollectiveOp& group = mx.expert ? groups.expert_tensor : groups.tensor;
    const bool split = mx.partition_dim >= 0 && group.group_size > 1;
    const std::int64_t tp = group.group_size;
    if (!split || t.muon_tp_mode == MuonTpMode::kBlockwise) {
      // newton_schulz on the local matrix (partition_dim None; blockwise: each shard alone).
      append_newton_schulz(steps, t, std::min(mx.rows, mx.cols), std::max(mx.rows, mx.cols),
                           nullptr);
    } else if (t.muon_tp_mode == MuonTpMode::kDuplicated) {
      // newton_schulz_tp "duplicated": the fp32 shards all-gathered and concatenated along
      // partition_dim, the whole matrix orthogonalized on every rank, this rank's chunk kept.
      steps.collective("muon_tp_all_gather", CollectiveKind::kAllGather, e * tp * 4, group);
      steps.compute(step_compute_op("muon_tp_cat", e * tp * 8, 1));
      const std::int64_t r = mx.partition_dim == 0 ? mx.rows * tp : mx.rows;
      const std::int64_t c = mx.partition_dim == 1 ? mx.cols * tp : mx.cols;
      append_newton_schulz(steps, t, std::min(r, c), std::max(r, c), nullptr);
    } else {
      // "distributed": transposed so that the Gram matrix spans the unsplit dimension; each
      // rank's product over its shard, summed over TP every iteration.
      const std::int64_t whole = mx.partition_dim == 0 ? mx.cols : mx.rows;
      const std::int64_t local = mx.partition_dim == 0 ? mx.rows : mx.cols;
      append_newton_schulz(steps, t, whole, local, &group);
    }
    // The spectral scale (orth * scale * extra_scale_factor), then p.add_(orth, alpha=-lr).
    steps.compute(step_compute_op("muon_scale", e * 16, 2));
    steps.compute(step_compute_op("muon_update", e * 12, 1));
  }
  if (after >= 0 && static_cast<std::size_t>(first) < ops.size())
    ops[static_cast<std::size_t>(first)].deps.push_back(after);
  return static_cast<std::int32_t>(ops.size()) - 1;
}

}  // namespace stepsim::detail
