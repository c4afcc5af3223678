#pragma once
// How cuBLAS runs a GEMM on an NVIDIA GPU, as the hardware's documented mechanics: the output
// is cut into CTA tiles, one CTA runs per SM at a time, so the tiles run in waves across the
// SMs (the last one, the tail wave, partly empty), split-K cuts K when the tiles alone leave
// SMs idle, and every kernel pays its launch. The calibrated cost model anchors this on a
// profile's own samples: it interpolates each sample's time over the mechanism's, not over
// its FLOPs (docs/models.md, "GEMM waves").

#include <cstdint>

#include "stepsim/config/scenario.hpp"
#include "stepsim/ops/ops.hpp"

namespace stepsim {

/// One CTA's output tile (rows of the result x columns), and the K step it loads at a time.
struct GemmTile {
  std::int64_t m = 0, n = 0, k = 0;
};

/// The large tile cuBLAS runs compute-bound products with on an architecture (compute
/// capability major * 10 + minor), one CTA per SM; {0, 0, 0} where the mechanics are not
/// modelled (no compute capability: a CPU, a non-NVIDIA accelerator).
GemmTile gemm_cta_tile(std::int64_t compute_capability);

/// The mechanism's account of one GEMM on a system.
struct GemmWaves {
  GemmTile tile;               ///< in the orientation chosen (the faster of the two)
  std::int64_t tiles = 0;      ///< output tiles, batch included
  std::int64_t split_k = 1;    ///< K cut into this many slices (1: no split-K)
  std::int64_t ctas = 0;       ///< tiles * split_k
  std::int64_t waves = 0;      ///< ceil(ctas / sm_count)
  double fill = 0;             ///< ctas / (waves * sm_count): the SMs' busy share
  double compute_s = 0;        ///< waves x one CTA's padded tile at the SM's share of the peak
  double memory_s = 0;         ///< operands and result once through HBM
  double reduce_s = 0;         ///< split-K's partial sums written and read back (fp32)
  double launch_s = 0;         ///< kernels launched (two with split-K) x the launch cost
  double seconds = 0;          ///< max(compute, memory) + reduce + launch
};

/// Whether the system says enough (SMs, compute capability, peak, HBM bandwidth) for the
/// mechanism; false on a CPU system (one "SM").
bool gemm_waves_apply(const SystemConfig& system, DType dtype);

/// The mechanism for `op` on `system` (gemm_waves_apply must hold).
GemmWaves gemm_waves(const GemmOp& op, const SystemConfig& system);

}  // namespace stepsim
