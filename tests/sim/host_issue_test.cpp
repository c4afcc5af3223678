// The host issuing kernels (sim/graph/src/build_step.cpp, issue_on_host; a profile's "host"
// section): Megatron runs eagerly, so a kernel starts no earlier than the host has issued it,
// and after a batched P2P call (batch_p2p_sync) the host waits for the GPU before it issues
// more. Synthetic steps whose times are computed by hand.

#include <gtest/gtest.h>

#include <string>

#include "hand_cost.hpp"
#include "hand_step.hpp"
#include "stepsim/graph/cost_memo.hpp"
#include "stepsim/simulate/simulate.hpp"

namespace stepsim::sim {
namespace {

/// GEMMs cost their k in seconds (hand_cost.hpp); the host issues a forward kernel in
/// `forward` seconds, a backward one in `backward`, other launches (P2P calls, collectives)
/// in `launch` and wakes from a synchronisation in 0.2 s.
HandCost host_cost(double forward, double backward, double launch = 0.1) {
  HostCosts host;
  host.op_issue_s = launch;
  host.forward_op_issue_s = forward;
  host.backward_op_issue_s = backward;
  host.sync_s = 0.2;
  return HandCost({.host = host});
}

/// p stages of one chunk, m micro-batches, dp 2 (hand_step.hpp): forward three 1 s GEMMs,
/// backward three, and a 0.48 s gradient all-reduce per stage after its program.
Step step_of(std::int32_t p, std::int32_t m) { return make_step(p, 1, m, StepOptions{}); }

double step_time(const Step& s, const CostModel& cost, bool serialize = false) {
  SimulateOptions options;
  options.serialize_streams = serialize;
  Result<SimulationResult> r = simulate(s.w, s.plan, cost, options);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : format_errors(r.errors()));
  return r.ok() ? r.value().prediction.step_time_s : -1;
}

TEST(HostIssue, TheFirstKernelWaitsForItsIssueAndTheHostRunsAhead) {
  // p 1, m 2, forward kernels issued in 0.5 s, backward in 0.25 s. The host issues F0's
  // first kernel at 0.5: F0 [0.5, 3.5], the host done with F0 at 1.5; B0's first at 1.75, so
  // B0 follows F0 on its stream: [3.5, 6.5]; F1 [6.5, 9.5], B1 [9.5, 12.5] (the host, at
  // 4.5, is far ahead); the all-reduce [12.5, 12.98]. Without a host: 12.48.
  const Step s = step_of(1, 2);
  EXPECT_NEAR(step_time(s, host_cost(0.5, 0.25)), 12.98, 1e-9);
  EXPECT_NEAR(step_time(s, host_cost(0, 0)), 12.48, 1e-9);
}

TEST(HostIssue, KernelsShorterThanTheirIssueLeaveTheGpuWaiting) {
  // Forward kernels issued in 2 s (longer than the 1 s they run): F0 [2, 5], the host done
  // with its three at 6; B0's first at 6.25: B0 [6.25, 9.25], the host at 6.75; F1's first at
  // 8.75, its stream free at 9.25: [9.25, 12.25], the host done at 12.75; B1's first at 13:
  // [13, 16]; the all-reduce [16, 16.48]. The GPU waited 2 + 1 + 0.75 s for the host.
  EXPECT_NEAR(step_time(step_of(1, 2), host_cost(2, 0.25)), 16.48, 1e-9);
  // The critical chain runs through the host until B1 can start: 13 s of issuing (F0 6,
  // B0 0.75, F1 6, B1's first 0.25), then B1's 3 s and the 0.48 s all-reduce.
  const Step s = step_of(1, 2);
  Result<SimulationResult> r = simulate(s.w, s.plan, host_cost(2, 0.25), SimulateOptions{});
  ASSERT_TRUE(r.ok()) << format_errors(r.errors());
  const CriticalChain& chain = r.value().prediction.critical_chain;
  EXPECT_NEAR(chain.host_s, 13.0, 1e-9);
  EXPECT_NEAR(chain.compute_s, 3.0, 1e-9);
  EXPECT_NEAR(chain.dp_comm_s, 0.48, 1e-9);
}

TEST(HostIssue, BatchedPipelineTransfersSynchroniseTheHost) {
  // p 2, m 1, 1F1B without interleaving: Megatron's batch_isend_irecv calls end in
  // torch.cuda.synchronize() (batch_p2p_sync). Stage 0: F0's first kernel at 0.5, F0
  // [0.5, 3.5], the host at 1.5, send_forward issued at 1.6. Stage 1 issued recv_forward at
  // 0.1; the transfer runs at 3.5 (free), both hosts wake at 3.7. Stage 1: F0 [4.2, 7.2] (the
  // host at 5.2), B0's first at 5.45, B0 [7.2, 10.2] (the host at 5.95), send_backward at
  // 6.05; stage 0 issued recv_backward at 3.8; the transfer at 10.2, both wake at 10.4. Stage
  // 0: B0 [10.65, 13.65], its all-reduce [13.65, 14.13]. Without a host: 12.48.
  const Step s = step_of(2, 1);
  EXPECT_NEAR(step_time(s, host_cost(0.5, 0.25)), 14.13, 1e-9);
  EXPECT_NEAR(step_time(s, host_cost(0, 0)), 12.48, 1e-9);
}

TEST(HostIssue, SweepsAndStragglersSeeTheSameHost) {
  // A sweep prices through a CostMemo, a straggler through a scaled copy of the model: both
  // pass the host on (a straggler's kernels are slower, its host is not).
  const Step s = step_of(2, 1);
  const HandCost cost = host_cost(0.5, 0.25);
  EXPECT_NEAR(step_time(s, CostMemo(cost)), 14.13, 1e-9);
  SimulateOptions slow;
  slow.stragglers = {Straggler{.rank = 2, .factor = 2}};  // stage 1, replica 0: F0 [4.2, 10.2]
  Result<SimulationResult> r = simulate(s.w, s.plan, cost, slow);
  ASSERT_TRUE(r.ok()) << format_errors(r.errors());
  // Stage 1: B0's first kernel issued at 5.45, after F0: [10.2, 16.2]; the transfer at 16.2,
  // both wake at 16.4; stage 0's B0 [16.65, 19.65] and its all-reduce: 20.13.
  EXPECT_NEAR(r.value().prediction.step_time_s, 20.13, 1e-9);
}

TEST(HostIssue, TheHostLaunchesTheGradientReductionAfterTheProgram) {
  // The first case with 9 s per launch: the host has issued B1 at 4.5 and launches the
  // all-reduce (finish_grad_sync) at 13.5, after B1's end at 12.5: [13.5, 13.98].
  EXPECT_NEAR(step_time(step_of(1, 2), host_cost(0.5, 0.25, 9)), 13.98, 1e-9);
  EXPECT_NEAR(step_time(step_of(1, 2), host_cost(0.5, 0.25, 0.1)), 12.98, 1e-9);
}

TEST(HostIssue, BackwardHooksLaunchTheBucketsFromTheHost) {
  // overlap_grad_reduce, p 1, m 2: GPU F0 [0.5, 3.5] B0 [3.5, 6.5] F1 [6.5, 9.5] B1 [9.5,
  // 12.5]; B1's three buckets (0.16 s each) become final 1, 2 and 3 s into it (10.5, 11.5,
  // 12.5). The host issues B1 by 4.5 and then launches them, 4 s each: at 8.5, 12.5, 16.5.
  // b0 [10.5, 10.66], b1 [12.5, 12.66], b2 [16.5, 16.66]. With 0.1 s launches (by 4.8) the
  // buckets wait only for their gradients: b2 ends at 12.66.
  const Step s = make_step(1, 1, 2, StepOptions{.overlap_grad_reduce = true});
  EXPECT_NEAR(step_time(s, host_cost(0.5, 0.25, 4)), 16.66, 1e-9);
  EXPECT_NEAR(step_time(s, host_cost(0.5, 0.25, 0.1)), 12.66, 1e-9);
}

TEST(HostIssue, TheHostLaunchesEachParameterGatherBeforeTheForwardsKernels) {
  // overlap_param_gather, distributed optimizer (2 bytes per parameter), p 1, m 2: the
  // forward pre-hook launches the three buckets' 0.08 s all-gathers at 0.1, 0.2 and 0.3
  // before F0's first kernel is issued at 0.8: F0 [0.8, 3.8] ... B1 [9.8, 12.8], its last
  // bucket's reduction [12.8, 12.96], the 0.5 s optimizer: 13.46 (12.74 without a host).
  StepOptions o{.overlap_grad_reduce = true, .param_bytes = 2, .overlap_param_gather = true};
  EXPECT_NEAR(step_time(make_step(1, 1, 2, o), host_cost(0.5, 0.25, 0.1)), 13.46, 1e-9);
  EXPECT_NEAR(step_time(make_step(1, 1, 2, o), host_cost(0, 0, 0)), 12.74, 1e-9);
}

TEST(HostIssue, TheValidatorsSerialisedExecutorHasNoSeparateHost) {
  // serialize_streams (the validator's single-threaded executor blocks on every call): the
  // framework's host costs do not apply.
  const Step s = step_of(2, 1);
  EXPECT_NEAR(step_time(s, host_cost(0.5, 0.25), true), step_time(s, host_cost(0, 0), true), 1e-12);
}

}  // namespace
}  // namespace stepsim::sim
