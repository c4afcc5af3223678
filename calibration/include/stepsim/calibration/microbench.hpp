#pragma once
// What calibration measures: log grids of GEMM shapes, attention, memory-bound sizes,
// collectives over every group size that divides the world (and, where the machine has
// several nodes, groups laid across nodes) and point-to-point between ranks; plus, for a
// scenario, the exact shapes and sizes of its decomposition.

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "stepsim/ops/ops.hpp"
#include "stepsim/ops/plan.hpp"

namespace stepsim::calib {

/// How a world of N ranks is cut into groups of g: contiguous blocks (color = rank / g, like
/// Megatron's tensor-parallel groups) or strided (color = rank % (N / g), like its
/// data-parallel groups, which span nodes).
enum class GroupLayout : std::uint8_t { kContiguous, kStrided };

/// One collective measurement: all groups of the layout run it at once; rank 0's group is
/// recorded.
struct CollectivePoint {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  std::int32_t group_size = 2;
  GroupLayout layout = GroupLayout::kContiguous;
  std::int64_t nodes_spanned = 1;  ///< nodes rank 0's group lives on
  std::int64_t bytes = 0;          ///< nccl-tests size, a multiple of 4 * group_size
  bool operator==(const CollectivePoint&) const = default;
};

/// One message from world rank `sender` to world rank `receiver`.
struct P2PPoint {
  std::int32_t sender = 0;
  std::int32_t receiver = 1;
  bool inter_node = false;
  std::int64_t bytes = 0;
  bool operator==(const P2PPoint&) const = default;
};

using BenchPoint = std::variant<GemmOp, AttentionOp, MemoryBoundOp, CollectivePoint, P2PPoint>;

/// A stable, unique text id of a point ("gemm bf16 m=256 n=256 k=256 b=1"): the journal key.
std::string point_key(const BenchPoint& p);

struct BenchPlanOptions {
  bool gpu = false;    ///< GPU-sized grids (cuda) or CPU-sized ones (cpu)
  bool quick = false;  ///< coarser grids: a CPU run of 2 ranks in well under 2 minutes
  /// The GEMM and attention grids too; without them, only the memory and communication
  /// grids that the size fits need (a scenario's own shapes are measured exactly).
  bool compute_grids = true;
  /// Every GEMM of the grid and of a scenario measured in FP8 (E4M3 operands, bf16 result)
  /// too, as Transformer Engine runs them: Hopper and Ada GPUs only.
  bool fp8 = false;
  /// With fp8: every FP8 GEMM also block-scaled as Transformer Engine's blockwise recipe runs
  /// it (block_128x128: fprop and dgrad; block_1x128: wgrad), and a scenario's block-scaled
  /// GEMMs measured so (Backend::runs_block_scaled_fp8). Without it a scenario's block-scaled
  /// GEMMs are measured with per-tensor scales.
  bool fp8_block_scaling = false;
  /// With fp8: every GEMM of the grid also measured as Transformer Engine's MXFP8 recipe runs
  /// it (mx_1x32 in each layout), a scenario's 16-bit GEMMs also in MXFP8 in their layout, and
  /// a scenario's MXFP8 GEMMs measured so (Backend::runs_mxfp8). Without it a scenario's
  /// MXFP8 GEMMs are measured with per-tensor scales, TN.
  bool fp8_mx_scaling = false;
  /// Node id of every world rank (equal ids share a node); its size is the world size.
  std::vector<std::int32_t> node_ids{0};
};

/// The generic grids for this machine, in measuring order (compute first, then
/// communication), without duplicates.
std::vector<BenchPoint> make_bench_plan(const BenchPlanOptions& o);

/// The exact GEMMs, attention kernels, memory-bound sizes, collectives and pipeline
/// messages of a decomposed scenario that this world can measure (collectives whose group
/// size divides the world size; messages when there are at least 2 ranks). `skipped` gets
/// one line per kind of op that could not be measured here, and why.
std::vector<BenchPoint> scenario_points(const WorkloadPlan& plan, const BenchPlanOptions& o,
                                        std::vector<std::string>& skipped);

/// `base` followed by the points of `extra` that are not in it yet.
std::vector<BenchPoint> merge_points(std::vector<BenchPoint> base,
                                     const std::vector<BenchPoint>& extra);

/// Nodes that rank 0's group of `group_size` spans under `layout`.
std::int64_t nodes_spanned(const std::vector<std::int32_t>& node_ids, std::int32_t group_size,
                           GroupLayout layout);

/// The MPI_Comm_split color of world rank `rank` for groups of `group_size` under `layout`.
std::int32_t group_color(std::int32_t rank, std::int32_t world_size, std::int32_t group_size,
                         GroupLayout layout);

}  // namespace stepsim::calib
