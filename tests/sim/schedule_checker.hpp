#pragma once
// Test-only checks of a Schedule: every send meets exactly one receive, every compute gets its
// input from a receive posted before it, and a tiny simulation (unit-time compute, zero-time
// transfers, blocking calls return when all their transfers completed, a transfer completes
// when both sides posted it) runs every rank to the end.

#include <cstdint>
#include <string>
#include <vector>

#include "stepsim/schedule/schedule.hpp"

namespace stepsim::sim::testing {

/// Problems found by check_matching / check_dataflow; empty when the schedule is sound.
using Problems = std::vector<std::string>;

/// Every send has exactly one receive of the same tensor on its peer and vice versa, the
/// transfers are exactly the pipeline's boundary crossings (activations of virtual stages
/// 0..pv-2, gradients of 1..pv-1, for every micro-batch), and each `wait` names a transfer
/// its rank posted earlier with a non-blocking call, each such transfer waited at most once.
Problems check_matching(const Schedule& schedule);

/// Each forward/backward gets its input from a receive posted earlier on its rank (in a
/// blocking call unless overlap_p2p_comm), and each send follows the compute producing it.
Problems check_dataflow(const Schedule& schedule);

struct SimResult {
  bool deadlock = false;
  std::int64_t makespan = 0;        ///< time units: forward = backward = 1
  std::vector<std::int32_t> stuck;  ///< item index each rank stopped at (deadlock only)
};

/// Simulates the programs; a compute also waits for its own input transfer to complete.
SimResult simulate_unit(const Schedule& schedule);

}  // namespace stepsim::sim::testing
