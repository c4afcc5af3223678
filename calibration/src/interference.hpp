#pragma once
// Calibration's interference microbenchmark (issue: compute-communication interference on
// one device). NCCL's kernels take SMs and memory bandwidth from the GEMMs beside them, and
// the GEMMs take them from NCCL; the CPU backend's collective thread shares the rank's core
// with its compute likewise. Measured, on every rank at once, with a GEMM and a collective
// over the world:
//   1. the GEMM alone (each backend call's wall time, several calls, the median);
//   2. the collective alone on the non-blocking path (posted, waited for at once; median);
//   3. copies of the collective posted back to back (enough to outlast three GEMM calls),
//      then the same GEMM called back to back until past their end: compute_slowdown = the
//      median wall time of the calls that ran entirely while collectives were in flight over
//      (1); collective_slowdown = the collectives' mean time over (2).
// Three overlapped runs, the median of each ratio, the largest over the ranks (a
// synchronous step advances at its slowest rank), within [1, 10] (system files' rule).
// Then the latency of a small posted call (64 KiB) on the backend's threads while the caller
// computes: an all-reduce over the world, and (with async_p2p) a send to the next rank with a
// receive from the previous, each posted then followed by about 10 ms of GEMM calls,
// nine times; the median post-to-completion time less the median of the same call posted and
// waited for at once (MeasuredInterference::collective_post_latency_s, p2p_post_latency_s).

#include <vector>

#include "stepsim/calibration/backend.hpp"
#include "stepsim/calibration/microbench.hpp"
#include "stepsim/cost/profile.hpp"
#include "stepsim/base/result.hpp"

namespace stepsim::calib {

/// The GEMM and collective the microbenchmark times for a calibration of `points`: the
/// points' largest GEMM (by FLOPs; 1024^3 in fp32 without one) and an all-reduce over the
/// world of the largest collective size among the points over the whole world (16 MiB
/// without one).
struct InterferencePair {
  GemmOp gemm;
  CollectiveOp collective;
};
InterferencePair interference_pair(const std::vector<BenchPoint>& points, std::int32_t world_size);

/// Runs the microbenchmark (collective over the world: every rank calls it). Needs
/// backend.async_collectives() and two or more ranks.
Result<MeasuredInterference> measure_interference(Backend& backend, InterferencePair pair);

}  // namespace stepsim::calib
