#include "stepsim/cost/gemm_waves.hpp"

#include <algorithm>

namespace stepsim {

namespace {

constexpr std::int64_t kMaxSplitK = 16;      // slices cuBLAS's split-K kernels go to
constexpr std::int64_t kMinSliceK = 256;     // K a slice keeps (four 64-deep K steps)
constexpr double kAccumulatorBytes = 4;      // split-K's partial sums are fp32

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

GemmWaves waves_with(const GemmOp& op, const SystemConfig& s, GemmTile tile,
                     std::int64_t split) {
  GemmWaves w;
  w.tile = tile;
  w.split_k = split;
  w.tiles = ceil_div(op.m, tile.m) * ceil_div(op.n, tile.n) * op.batch;
  w.ctas = w.tiles * split;
  w.waves = ceil_div(w.ctas, s.sm_count);
  w.fill = static_cast<double>(w.ctas) / static_cast<double>(w.waves * s.sm_count);
  // Tile quantisation: a CTA computes its whole tile, K padded to its K step, whatever part of
  // the tile lies inside the result; every SM of a wave runs at its share of the peak.
  const std::int64_t k_slice = ceil_div(ceil_div(op.k, split), tile.k) * tile.k;
  const double cta_flops = 2.0 * static_cast<double>(tile.m * tile.n * k_slice);
  const double sm_peak = s.peak_flops(op.dtype) / static_cast<double>(s.sm_count);
  w.compute_s = static_cast<double>(w.waves) * cta_flops / sm_peak;
  w.memory_s = gemm_bytes_of(op.dtype, op.m, op.n, op.k, op.batch) / s.hbm_bandwidth_bytes_per_s;
  if (split > 1) {
    // cuBLAS's split-K writes each slice's fp32 partial result and a second kernel (or the
    // last CTA) reads them back to sum: 2 x split x m x n x 4 bytes through HBM.
    w.reduce_s = 2.0 * static_cast<double>(split) * kAccumulatorBytes *
                 static_cast<double>(op.m * op.n * op.batch) / s.hbm_bandwidth_bytes_per_s;
  }
  w.launch_s = (split > 1 ? 2.0 : 1.0) * s.efficiency.kernel_launch_s;
  w.seconds = std::max(w.compute_s, w.memory_s) + w.reduce_s + w.launch_s;
  return w;
}

}  // namespace

// NVIDIA, "Matrix Multiplication Background User's Guide" (Deep Learning Performance
// Documentation, https://docs.nvidia.com/deeplearning/performance/dl-performance-matrix-multiplication/),
// sections "Tile Quantization" and "Wave Quantization": cuBLAS cuts the output into thread-block
// tiles, and on an A100 (108 SMs) its 256x128 tiles run one thread block per SM, a wave of
// 108 tiles. Hopper's cuBLAS kernels (sm90_xmma_gemm_*_tilesize128x256x64 in Nsight Systems
// traces of Transformer Engine's GEMMs) run 128x256 tiles, one warp-specialised CTA per SM;
// Blackwell's (sm100, 2-SM UMMA) a 256x256 tile per pair of SMs, the same 128x256 per SM. K is
// loaded 64 deep per stage on every one.
GemmTile gemm_cta_tile(std::int64_t compute_capability) {
  if (compute_capability >= 90) return {128, 256, 64};
  if (compute_capability >= 80) return {256, 128, 64};
  return {0, 0, 0};
}

bool gemm_waves_apply(const SystemConfig& s, DType dtype) {
  return gemm_cta_tile(s.compute_capability).m > 0 && s.sm_count > 1 &&
         s.peak_flops(dtype) > 0 && s.hbm_bandwidth_bytes_per_s > 0;
}

// cuBLAS's heuristics pick, per shape, among kernels of both tile orientations and split-K
// (CUTLASS's "Parallelized Reductions" in media/docs/efficient_gemm.md: split-K for problems
// whose M x N leaves SMs idle while K is large; cublasLtMatmulAlgoConfigAttributes_t
// CUBLASLT_ALGO_CONFIG_SPLITK_NUM). Modelled as the fastest of those by the mechanism itself:
// the heuristic's aim, with no per-shape choice of cuBLAS's guessed.
GemmWaves gemm_waves(const GemmOp& op, const SystemConfig& s) {
  const GemmTile wide = gemm_cta_tile(s.compute_capability);
  GemmWaves best;
  bool first = true;
  for (const GemmTile tile : {wide, GemmTile{wide.n, wide.m, wide.k}}) {
    const std::int64_t tiles = ceil_div(op.m, tile.m) * ceil_div(op.n, tile.n) * op.batch;
    // Split-K only while the tiles leave SMs idle, each slice keeps at least kMinSliceK of K.
    const std::int64_t max_split =
        tiles >= s.sm_count ? 1
                            : std::clamp<std::int64_t>(std::min(s.sm_count / tiles,
                                                                op.k / kMinSliceK),
                                                       1, kMaxSplitK);
    for (std::int64_t split = 1; split <= max_split; ++split) {
      const GemmWaves w = waves_with(op, s, tile, split);
      if (first || w.seconds < best.seconds) best = w;
      first = false;
    }
  }
  return best;
}

}  // namespace stepsim
