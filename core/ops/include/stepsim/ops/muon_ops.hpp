#pragma once
// Muon's step (optimizer "muon"): the 2-D weights' momentum orthogonalized by Newton-Schulz
// iterations, as Megatron-Core's TensorParallelMuon (megatron/core/optimizer/
// emerging_optimizers.py) runs emerging_optimizers' OrthogonalizedOptimizer.step and
// newton_schulz / newton_schulz_tp (emerging_optimizers/orthogonalized_optimizers/
// orthogonalized_optimizer.py, muon_utils.py); the other parameters (embeddings, output layer,
// norms, biases: _is_muon_excluded) step with Adam.

#include <cstdint>
#include <vector>

#include "stepsim/config/scenario.hpp"
#include "stepsim/layout/workload_dims.hpp"
#include "stepsim/ops/ops.hpp"
#include "stepsim/ops/plan.hpp"

namespace stepsim::detail {

/// One weight matrix Muon steps, as this rank holds it ([out, in], torch's layout).
struct MuonMatrix {
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  /// The dimension tensor parallelism splits (0: column-parallel, 1: row-parallel); -1: the
  /// whole matrix on every rank (partition_dim None: the MLA down projections, the router).
  std::int32_t partition_dim = -1;
  bool expert = false;  ///< a routed expert's: its TP group is the expert TP group
  std::int64_t elements() const { return rows * cols; }
  bool operator==(const MuonMatrix&) const = default;
};

/// The matrices of the layers of `chunk` on one rank, in the order the optimizer meets them;
/// with `split_qkv` the fused QKV weight is three (q, k, v: orthogonalize's split by
/// qkv_split_shapes). Embeddings and the output layer are Adam's.
std::vector<MuonMatrix> chunk_muon_matrices(const Dims& x, const ChunkPlan& chunk,
                                            bool split_qkv);

/// The same for the layers [first, first + count).
std::vector<MuonMatrix> layer_muon_matrices(const Dims& x, std::int64_t first,
                                            std::int64_t count, bool split_qkv);

/// What Muon holds on a pipeline stage's rank (zero unless optimizer "muon"): the elements of
/// its matrices (a momentum buffer each instead of Adam's two moments) and the largest
/// matrix's Newton-Schulz working set, alive during the step.
struct MuonStageStates {
  std::int64_t elements = 0;
  std::int64_t step_bytes = 0;
};
MuonStageStates muon_stage_states(const Workload& w, std::int32_t stage);

/// FLOPs of `steps` Newton-Schulz iterations on an r x c matrix (newton_schulz_step): with m =
/// min(r, c), n = max(r, c) (it transposes to whiten the smaller side) each iteration is
/// A = X X^T (2 m^2 n), B = b A + c A A (2 m^3) and X = a X + B X (2 m^2 n).
double newton_schulz_flops(std::int64_t rows, std::int64_t cols, std::int64_t steps);

/// The communication groups of a rank's matrices: TP (dense) and expert TP, size and span.
struct MuonGroups {
  CollectiveOp tensor;
  CollectiveOp expert_tensor;
};

/// Appends Muon's kernels for `matrices` to `ops` (compute stream; the TP collectives on the
/// TP stream, each waited for by the kernel after it), in OrthogonalizedOptimizer.step's order
/// per matrix: decoupled weight decay, the momentum's lerp (and Nesterov's), Newton-Schulz as
/// muon_tp_mode runs it, the spectral scale and the update. `after`: the kernel the first
/// waits for (-1: none). Returns the last op's index.
std::int32_t append_muon_ops(std::vector<Op>& ops, const TrainingConfig& t,
                             const std::vector<MuonMatrix>& matrices, const MuonGroups& groups,
                             std::int32_t after);

/// Muon's states per parameter it steps: the fp32 momentum buffer (zeros_like of the main
/// parameter), beside the fp32 main parameter of mixed precision.
inline constexpr std::int64_t kMuonMomentumBytes = 4;

}  // namespace stepsim::detail
