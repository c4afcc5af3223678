#include "stepsim/calibration/microbench.hpp"

#include <algorithm>
#include <initializer_list>
#include <set>
#include <tuple>
#include <type_traits>

namespace stepsim::calib {
namespace {

/// Powers of `step` from `first` to `last` inclusive (`first` times step^i).
std::vector<std::int64_t> log_range(std::int64_t first, std::int64_t last, std::int64_t step) {
  std::vector<std::int64_t> out;
  for (std::int64_t v = first; v <= last; v *= step) out.push_back(v);
  return out;
}

std::int64_t round_up(std::int64_t v, std::int64_t multiple) {
  return std::max<std::int64_t>(multiple, (v + multiple - 1) / multiple * multiple);
}

std::vector<std::int32_t> divisors_from_2(std::int32_t n) {
  std::vector<std::int32_t> out;
  for (std::int32_t g = 2; g <= n; ++g) {
    if (n % g == 0) out.push_back(g);
  }
  return out;
}

/// The layouts worth measuring for groups of g: contiguous, and strided when its groups
/// lie on a different number of nodes.
std::vector<GroupLayout> layouts_for(const std::vector<std::int32_t>& node_ids, std::int32_t g) {
  std::vector<GroupLayout> out{GroupLayout::kContiguous};
  if (nodes_spanned(node_ids, g, GroupLayout::kStrided) !=
      nodes_spanned(node_ids, g, GroupLayout::kContiguous)) {
    out.push_back(GroupLayout::kStrided);
  }
  return out;
}

void add_collectives(std::vector<BenchPoint>& out, const std::vector<std::int32_t>& node_ids,
                     std::int32_t g, const std::vector<std::int64_t>& sizes) {
  for (const GroupLayout layout : layouts_for(node_ids, g)) {
    const std::int64_t spanned = nodes_spanned(node_ids, g, layout);
    // All-to-all too: context parallelism's a2a and the MoE dispatcher run it, and neither
    // NCCL's tuning model nor a ring formula prices it (grouped sends and receives).
    for (const CollectiveKind kind : {CollectiveKind::kAllReduce, CollectiveKind::kAllGather,
                                      CollectiveKind::kReduceScatter, CollectiveKind::kAllToAll}) {
      for (const std::int64_t bytes : sizes) {
        out.emplace_back(CollectivePoint{kind, g, layout, spanned, round_up(bytes, 4 * g)});
      }
    }
  }
}

/// Rank 0's peers for messages: the next rank on its node and the first rank on another.
std::vector<std::pair<std::int32_t, bool>> p2p_peers(const std::vector<std::int32_t>& node_ids) {
  std::vector<std::pair<std::int32_t, bool>> out;
  bool have_intra = false;
  bool have_inter = false;
  for (std::size_t r = 1; r < node_ids.size(); ++r) {
    const bool inter = node_ids[r] != node_ids[0];
    if (inter ? have_inter : have_intra) continue;
    out.emplace_back(static_cast<std::int32_t>(r), inter);
    (inter ? have_inter : have_intra) = true;
  }
  return out;
}

void add_p2p(std::vector<BenchPoint>& out, const std::vector<std::int32_t>& node_ids,
             const std::vector<std::int64_t>& sizes) {
  for (const auto& [peer, inter] : p2p_peers(node_ids)) {
    for (const std::int64_t bytes : sizes) out.emplace_back(P2PPoint{0, peer, inter, bytes});
  }
}

/// `op` (an FP8 GEMM) as Transformer Engine's MXFP8 recipe runs it, in `layouts`.
void add_mx_twins(std::vector<BenchPoint>& out, GemmOp op,
                  std::initializer_list<GemmLayout> layouts) {
  op.fast_accum = false;
  op.scaling = GemmScaling::kMx1x32;
  for (const GemmLayout l : layouts) {
    op.layout = l;
    out.emplace_back(op);
  }
}

}  // namespace

std::int32_t group_color(std::int32_t rank, std::int32_t world_size, std::int32_t group_size,
                         GroupLayout layout) {
  return layout == GroupLayout::kContiguous ? rank / group_size : rank % (world_size / group_size);
}

std::int64_t nodes_spanned(const std::vector<std::int32_t>& node_ids, std::int32_t group_size,
                           GroupLayout layout) {
  const auto world = static_cast<std::int32_t>(node_ids.size());
  if (group_size <= 0 || world % group_size != 0) return 1;
  const std::int32_t color0 = group_color(0, world, group_size, layout);
  std::set<std::int32_t> nodes;
  for (std::int32_t r = 0; r < world; ++r) {
    if (group_color(r, world, group_size, layout) == color0) {
      nodes.insert(node_ids[static_cast<std::size_t>(r)]);
    }
  }
  return static_cast<std::int64_t>(nodes.size());
}

std::string point_key(const BenchPoint& p) {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        auto s = [](std::int64_t x) { return std::to_string(x); };
        if constexpr (std::is_same_v<T, GemmOp>) {
          // Unspecified layouts keep the key they had before layouts were measured.
          const std::string layout(to_string(v.layout));
          return "gemm " + std::string(to_string(v.dtype)) + (layout.empty() ? "" : " " + layout) +
                 " m=" + s(v.m) + " n=" + s(v.n) + " k=" + s(v.k) + " b=" + s(v.batch) +
                 (v.fast_accum ? " fast_accum" : "") +
                 (v.scaling == GemmScaling::kTensor ? "" : " " + std::string(to_string(v.scaling)));
        } else if constexpr (std::is_same_v<T, AttentionOp>) {
          return std::string(v.backward ? "attention_bwd " : "attention_fwd ") +
                 std::string(to_string(v.dtype)) + " b=" + s(v.batch) + " h=" + s(v.heads) +
                 " kv=" + s(v.kv_heads) + " s=" + s(v.seq) + " d=" + s(v.head_dim) +
                 (v.causal ? " causal" : " full");
        } else if constexpr (std::is_same_v<T, MemoryBoundOp>) {
          return "memory bytes=" + s(v.bytes);
        } else if constexpr (std::is_same_v<T, CollectivePoint>) {
          return std::string(to_string(v.kind)) + " g=" + s(v.group_size) +
                 (v.layout == GroupLayout::kContiguous ? " contiguous" : " strided") +
                 " nodes=" + s(v.nodes_spanned) + " bytes=" + s(v.bytes);
        } else {
          return "p2p " + s(v.sender) + "->" + s(v.receiver) +
                 (v.inter_node ? " inter" : " intra") + " bytes=" + s(v.bytes);
        }
      },
      p);
}

namespace {

/// `op` (an FP8 GEMM) block-scaled both ways Transformer Engine's blockwise recipe runs it:
/// 128x128 blocks on one operand (fprop, dgrad) and 1x128 tiles on both (wgrad).
void add_block_scaled_twins(std::vector<BenchPoint>& out, GemmOp op) {
  op.fast_accum = false;
  for (const GemmScaling s : {GemmScaling::kBlock128x128, GemmScaling::kBlock1x128}) {
    op.scaling = s;
    out.emplace_back(op);
  }
}

}  // namespace

std::vector<BenchPoint> make_bench_plan(const BenchPlanOptions& o) {
  std::vector<BenchPoint> out;
  const DType dtype = o.gpu ? DType::kBf16 : DType::kFp32;
  // GEMMs: a log grid of (m, n, k), fine enough to interpolate in log space.
  const std::vector<std::int64_t> dims =
      o.gpu ? (o.quick ? log_range(256, 16384, 4) : log_range(256, 16384, 2))
            : (o.quick ? log_range(64, 1024, 4) : log_range(64, 1024, 2));
  // On GPUs in each layout Transformer Engine runs a linear in (forward TN, dgrad NN, wgrad
  // NT; FP8 only TN); a CPU's Eigen products have no such distinction worth a grid.
  const std::vector<GemmLayout> layouts =
      o.gpu ? std::vector<GemmLayout>{GemmLayout::kTN, GemmLayout::kNN, GemmLayout::kNT}
            : std::vector<GemmLayout>{GemmLayout::kUnspecified};
  for (const std::int64_t m : o.compute_grids ? dims : std::vector<std::int64_t>{}) {
    for (const std::int64_t n : dims) {
      for (const std::int64_t k : dims) {
        for (const GemmLayout layout : layouts) {
          out.emplace_back(
              GemmOp{.m = m, .n = n, .k = k, .batch = 1, .dtype = dtype, .layout = layout});
        }
        if (o.fp8) {
          // The cpu backend emulates FP8 with its fp32 product: no layouts to tell apart. On
          // GPUs also with fast accumulation, as Transformer Engine runs fprop under delayed
          // and current scaling.
          out.emplace_back(GemmOp{.m = m, .n = n, .k = k, .batch = 1, .dtype = DType::kFp8,
                                  .layout = o.gpu ? GemmLayout::kTN : GemmLayout::kUnspecified});
          if (o.gpu) {
            out.emplace_back(GemmOp{.m = m,
                                    .n = n,
                                    .k = k,
                                    .batch = 1,
                                    .dtype = DType::kFp8,
                                    .layout = GemmLayout::kTN,
                                    .fast_accum = true});
          }
          if (o.fp8_block_scaling) {
            add_block_scaled_twins(
                out,
                GemmOp{.m = m, .n = n, .k = k, .dtype = DType::kFp8, .layout = GemmLayout::kTN});
          }
          if (o.fp8_mx_scaling) {
            add_mx_twins(out, GemmOp{.m = m, .n = n, .k = k, .dtype = DType::kFp8},
                         {GemmLayout::kTN, GemmLayout::kNN, GemmLayout::kNT});
          }
        }
      }
    }
  }
  // Attention: one head geometry, a few sequence lengths, forward and backward.
  const std::vector<std::int64_t> seqs =
      o.gpu ? (o.quick ? std::vector<std::int64_t>{1024, 4096}
                       : std::vector<std::int64_t>{512, 1024, 2048, 4096, 8192})
            : (o.quick ? std::vector<std::int64_t>{128, 512}
                       : std::vector<std::int64_t>{128, 256, 512, 1024});
  for (const bool backward : {false, true}) {
    for (const std::int64_t seq : o.compute_grids ? seqs : std::vector<std::int64_t>{}) {
      AttentionOp a;
      a.batch = 1;
      a.heads = o.gpu ? 16 : 4;
      a.kv_heads = a.heads;
      a.seq = seq;
      a.head_dim = o.gpu ? 128 : 64;
      a.backward = backward;
      a.dtype = dtype;
      out.emplace_back(a);
    }
  }
  // Memory-bound kernels: bytes read + written.
  const std::vector<std::int64_t> mem =
      o.gpu ? log_range(std::int64_t{1} << 20, std::int64_t{4} << 30, o.quick ? 16 : 4)
            : log_range(std::int64_t{64} << 10,
                        o.quick ? std::int64_t{64} << 20 : std::int64_t{256} << 20, 4);
  for (const std::int64_t bytes : mem) out.emplace_back(MemoryBoundOp{bytes});

  // Communication: nccl-tests sizes, from bytes to 1 GiB on GPUs, to a few MiB on CPUs.
  const std::vector<std::int64_t> sizes =
      o.gpu ? log_range(1024, std::int64_t{1} << 30, o.quick ? 8 : 2)
            : (o.quick ? log_range(1024, std::int64_t{4} << 20, 4)
                       : log_range(64, std::int64_t{16} << 20, 2));
  const auto world = static_cast<std::int32_t>(o.node_ids.size());
  for (const std::int32_t g : divisors_from_2(world)) add_collectives(out, o.node_ids, g, sizes);
  add_p2p(out, o.node_ids, sizes);
  return merge_points({}, out);
}

namespace {

/// The benchmark points of a scenario's ops, and what of them cannot be measured as they are
/// (each a line of `skipped`).
class ScenarioPoints {
 public:
  explicit ScenarioPoints(const BenchPlanOptions& o)
      : o_(o), world_(static_cast<std::int32_t>(o.node_ids.size())) {}

  void add(const WorkloadPlan& plan) {
    for (const StagePlan& stage : plan.stages) {
      for (const ChunkPlan& chunk : stage.chunks) {
        for (const Op& op : chunk.forward) visit(op);
        for (const Op& op : chunk.backward) visit(op);
        for (const Op& op : chunk.grad_sync) visit(op);
        for (const Op& op : chunk.param_gather) visit(op);
        // Activations cross a pipeline boundary only when there is one.
        if (chunk.p2p_bytes > 0 && plan.stages.size() > 1) p2p_sizes_.insert(chunk.p2p_bytes);
      }
      for (const Op& op : stage.step_ops) visit(op);
    }
  }

  /// The points, compute before communication; what was left out or measured otherwise is
  /// added to `skipped`.
  std::vector<BenchPoint> finish(std::vector<std::string>& skipped) {
    explain(skipped);
    if (world_ < 2 && !p2p_sizes_.empty()) {
      skipped.push_back("pipeline messages: need at least 2 ranks");
    } else {
      std::vector<std::int64_t> sizes(p2p_sizes_.begin(), p2p_sizes_.end());
      add_p2p(comm_, o_.node_ids, sizes);
    }
    compute_.insert(compute_.end(), comm_.begin(), comm_.end());
    return merge_points({}, compute_);
  }

 private:
  void visit(const Op& op) {
    std::visit(
        [&](const auto& s) {
          using T = std::decay_t<decltype(s)>;
          if constexpr (std::is_same_v<T, GemmOp>) {
            add_gemm(s);
          } else if constexpr (std::is_same_v<T, AttentionOp>) {
            add_attention(s);
          } else if constexpr (std::is_same_v<T, MemoryBoundOp>) {
            add_memory_bound(s);
          } else if constexpr (std::is_same_v<T, CollectiveOp>) {
            add_collective(s);
          } else {
            p2p_sizes_.insert(s.bytes);
          }
        },
        op.shape);
  }

  void add_memory_bound(const MemoryBoundOp& s) {
    // A GPU streams a kernel larger than its memory grid's top (4 GiB) at the bandwidth the
    // grid's latency + size/bandwidth fit gives; an optimizer pass over a whole stage's
    // parameters (100+ GiB for a 70B model) could not even be allocated.
    const std::int64_t max_memory_bytes = std::int64_t{4} << 30;
    const std::int64_t launch = (s.bytes + s.kernels - 1) / std::max<std::int64_t>(s.kernels, 1);
    if (o_.gpu && launch > max_memory_bytes) {
      too_large_memory_.insert(launch);
      return;
    }
    auto shape = s;
    // An op of several launches is priced by the size of one (CostModel::shape_s).
    if (s.kernels > 1) shape = MemoryBoundOp{.bytes = (s.bytes + s.kernels - 1) / s.kernels};
    compute_.emplace_back(shape);
  }

  void add_attention(const AttentionOp& s) {
    // Profiles hold self-attention samples (seq_kv = seq); a context-parallel
    // step's rectangle is priced from them by its FLOPs (CalibratedCostModel), so
    // its class (mask, direction) gets a square sample of its query rows.
    if (s.kv_seq() != s.seq) {
      ++rectangular_attention_;
      AttentionOp square = s;
      square.seq_kv = 0;
      square.counted_scores = 0;
      if (!o_.gpu) square.dtype = DType::kFp32;
      compute_.emplace_back(square);
      return;
    }
    auto shape = s;
    // The CPU backend computes in fp32 whatever the op's dtype.
    if (!o_.gpu) shape.dtype = DType::kFp32;
    compute_.emplace_back(shape);
  }

  void add_gemm(const GemmOp& s) {
    // NVFP4 GEMMs are not measured yet (no backend runs VEC16_UE4M3 products): the profile
    // has no fp4 samples and prices them by the roofline, with a warning.
    if (s.dtype == DType::kFp4) return;
    auto shape = s;
    // The CPU backend computes in fp32 whatever the op's dtype, and its Eigen
    // products have no layouts to tell apart; record what ran. An FP8 GEMM stays
    // FP8: the fp32 product is how the backend runs one (emulated FP8), and the
    // profile prices the scenario's FP8 GEMMs with exactly that.
    if (!o_.gpu && s.dtype != DType::kFp8) shape.dtype = DType::kFp32;
    // A chunk of an atomic GEMM is priced as the whole GEMM's share: measure that.
    if (shape.atomic_chunks > 1) {
      shape.n *= shape.atomic_chunks;
      shape.atomic_chunks = 1;
    }
    if (!o_.gpu) shape.layout = GemmLayout::kUnspecified;
    // A backend that cannot run block-scaled FP8 products (the cpu backend, a GPU
    // before Hopper) measures the shape with per-tensor scales and records it so;
    // likewise MXFP8 products (but Blackwell), per-tensor in the TN layout.
    const bool mx = shape.scaling == GemmScaling::kMx1x32;
    if (mx && !o_.fp8_mx_scaling) {
      mx_scaled_.insert(std::tuple{s.m, s.n, s.k, s.batch, s.scaling});
      shape.scaling = GemmScaling::kTensor;
      if (o_.gpu) shape.layout = GemmLayout::kTN;
    } else if (!mx && shape.scaling != GemmScaling::kTensor && !o_.fp8_block_scaling) {
      block_scaled_.insert(std::tuple{s.m, s.n, s.k, s.batch, s.scaling});
      shape.scaling = GemmScaling::kTensor;
    }
    compute_.emplace_back(shape);
    add_fp8_twins(s, shape);
  }

  /// FP8 twins of the scenario's GEMMs, where cuBLASLt can run them (TN only).
  void add_fp8_twins(const GemmOp& s, const GemmOp& shape) {
    if (o_.fp8 && s.dtype != DType::kFp8 && s.m % 16 == 0 && s.n % 16 == 0 && s.k % 16 == 0) {
      auto twin = s;
      twin.dtype = DType::kFp8;
      if (!o_.gpu) {
        twin.layout = GemmLayout::kUnspecified;
      } else if (twin.layout != GemmLayout::kUnspecified) {
        // A forward GEMM (TN in 16 bits) runs with fast accumulation in FP8.
        twin.fast_accum = twin.layout == GemmLayout::kTN;
        twin.layout = GemmLayout::kTN;
      }
      compute_.emplace_back(twin);
      if (o_.fp8_block_scaling) add_block_scaled_twins(compute_, twin);
      if (o_.fp8_mx_scaling && s.m % 32 == 0 && s.n % 32 == 0 && s.k % 32 == 0 &&
          s.layout != GemmLayout::kUnspecified) {
        add_mx_twins(compute_, twin, {s.layout});
      }
    } else if (o_.fp8 && o_.fp8_block_scaling && s.dtype == DType::kFp8) {
      add_block_scaled_twins(compute_, shape);
    }
  }

  void add_collective(const CollectiveOp& s) {
    const auto g = static_cast<std::int32_t>(s.group_size);
    if (g < 2) return;
    if (g > world_ || world_ % g != 0) {
      unmeasurable_groups_.insert(g);
      return;
    }
    for (const GroupLayout layout : layouts_for(o_.node_ids, g)) {
      comm_.emplace_back(CollectivePoint{s.kind, g, layout, nodes_spanned(o_.node_ids, g, layout),
                                         round_up(s.bytes, 4 * g)});
    }
  }

  /// A line of `skipped` for each kind of op measured otherwise or not at all.
  void explain(std::vector<std::string>& skipped) const {
    if (!unmeasurable_groups_.empty()) {
      std::string groups;
      for (const std::int64_t g : unmeasurable_groups_)
        groups += (groups.empty() ? "" : ", ") + std::to_string(g);
      skipped.push_back("collectives over groups of " + groups + " ranks: the world has " +
                        std::to_string(world_) + " ranks (a group size must divide it)");
    }
    if (rectangular_attention_ > 0) {
      skipped.push_back(std::to_string(rectangular_attention_) +
                        " attention kernels over another block of keys (context parallelism): "
                        "measured as self-attention of their query rows, priced by their FLOPs");
    }
    if (!mx_scaled_.empty()) {
      skipped.push_back(std::to_string(mx_scaled_.size()) +
                        " MXFP8 GEMM shapes (fp8_recipe \"mxfp8\"): measured with per-tensor "
                        "scales in the TN layout (this backend runs no MXFP8 products: the cuda "
                        "backend does on Blackwell with cuBLASLt 12.8 or newer)");
    }
    if (!block_scaled_.empty()) {
      skipped.push_back(std::to_string(block_scaled_.size()) +
                        " block-scaled FP8 GEMM shapes (fp8_recipe \"blockwise\"): measured with "
                        "per-tensor scales (this backend runs no block-scaled products: the cuda "
                        "backend does on Hopper with cuBLASLt 12.9 or newer)");
    }
    if (!too_large_memory_.empty()) {
      skipped.push_back(std::to_string(too_large_memory_.size()) +
                        " memory-bound kernel sizes over 4 GiB: priced by the memory grid's "
                        "latency + size/bandwidth fit");
    }
  }

  const BenchPlanOptions& o_;
  const std::int32_t world_;
  std::vector<BenchPoint> compute_;
  std::vector<BenchPoint> comm_;
  std::set<std::int64_t> p2p_sizes_;
  std::set<std::int64_t> unmeasurable_groups_;
  std::set<std::int64_t> too_large_memory_;
  std::int64_t rectangular_attention_ = 0;
  std::set<std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, GemmScaling>>
      block_scaled_, mx_scaled_;
};

}  // namespace

std::vector<BenchPoint> scenario_points(const WorkloadPlan& plan, const BenchPlanOptions& o,
                                        std::vector<std::string>& skipped) {
  ScenarioPoints points(o);
  points.add(plan);
  return points.finish(skipped);
}

std::vector<BenchPoint> merge_points(std::vector<BenchPoint> base,
                                     const std::vector<BenchPoint>& extra) {
  std::set<std::string> seen;
  std::vector<BenchPoint> out;
  out.reserve(base.size() + extra.size());
  auto add = [&](const BenchPoint& p) {
    if (seen.insert(point_key(p)).second) out.push_back(p);
  };
  for (const BenchPoint& p : base) add(p);
  for (const BenchPoint& p : extra) add(p);
  return out;
}

}  // namespace stepsim::calib
