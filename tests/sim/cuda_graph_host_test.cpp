// CUDA graphs and the host (sim/graph/src/cuda_graph_issue.cpp, StepBuilder::issue_action): a
// captured layer replays with one launch (the profile's op_issue_s) instead of its kernels'
// issue, so a host-bound step loses the time its GPU waited for the host. Synthetic steps
// (hand_step.hpp) whose times are computed by hand.

#include <gtest/gtest.h>

#include "hand_cost.hpp"
#include "hand_step.hpp"
#include "stepsim/simulate/simulate.hpp"

namespace stepsim::sim {
namespace {

HandCost host_cost(double forward, double backward, double launch) {
  HostCosts host;
  host.op_issue_s = launch;
  host.forward_op_issue_s = forward;
  host.backward_op_issue_s = backward;
  host.sync_s = 0.2;
  return HandCost({.host = host});
}

/// p 1, m 2 (hand_step.hpp): each chunk one transformer layer whose three forward and three
/// backward GEMMs (1 s each) are its attention ("qkv_gemm" up to "attn_bda") and MLP.
Step layer_step(CudaGraphImpl impl, const char* modules) {
  Step s = make_step(1, 1, 2, StepOptions{});
  s.w.training.cuda_graph_impl = impl;
  s.w.training.cuda_graph_modules = modules;
  for (ChunkPlan& c : s.plan.stages[0].chunks) {
    for (Op& op : c.forward) op.layer = 0;
    for (Op& op : c.backward) op.layer = 0;
    c.forward[0].name = "attn_bda";     // the attention block ends after the first GEMM
    c.backward[2].name = "attn_bda_bwd";  // and begins with the last backward one
  }
  return s;
}

struct Timing {
  double step_s = 0;
  double host_s = 0;
};

Timing run(const Step& s, const CostModel& cost) {
  Result<SimulationResult> r = simulate(s.w, s.plan, cost, SimulateOptions{});
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : format_errors(r.errors()));
  if (!r.ok()) return {};
  return {r.value().prediction.step_time_s, r.value().prediction.critical_chain.host_s};
}

TEST(CudaGraphHost, AWholeLayerGraphReplacesItsKernelsIssueByOneLaunch) {
  // Forward kernels issued in 2 s each (host-bound), backward 0.25 s, launches 0.1 s.
  // Eager (host_issue_test): F0 [2, 5], B0 [6.25, 9.25], F1 [9.25, 12.25], B1 [13, 16], the
  // all-reduce [16, 16.48]; 13 s of the chain on the host.
  const HandCost cost = host_cost(2, 0.25, 0.1);
  const Timing eager = run(layer_step(CudaGraphImpl::kNone, ""), cost);
  EXPECT_NEAR(eager.step_s, 16.48, 1e-9);
  EXPECT_NEAR(eager.host_s, 13.0, 1e-9);
  // Whole-layer graphs: one 0.1 s replay per action. F0 [0.1, 3.1], B0 [3.1, 6.1] (issued at
  // 0.2), F1 [6.1, 9.1], B1 [9.1, 12.1]; the all-reduce launched at 0.5: [12.1, 12.58]. The
  // host is on the chain for F0's replay only: 3.9 s less host-bound time.
  for (const CudaGraphImpl impl : {CudaGraphImpl::kTransformerEngine, CudaGraphImpl::kLocal}) {
    const Timing graphed = run(layer_step(impl, ""), cost);
    EXPECT_NEAR(graphed.step_s, 12.58, 1e-9);
    EXPECT_NEAR(graphed.host_s, 0.1, 1e-9);
  }
}

TEST(CudaGraphHost, OnlyTheCapturedModuleLosesItsIssue) {
  // cuda_graph_modules ["attn"]: forward = the attention's graph (0.1 s) then the MLP's two
  // kernels eagerly (2 s each): F0's first at 0.1, [0.1, 3.1], the host done at 4.1; backward
  // = two eager MLP kernels then the attention's graph: 0.25 + 0.25 + 0.1, B0's first at 4.35:
  // [4.35, 7.35], the host at 4.7; F1's first at 4.8: [7.35, 10.35], the host at 8.8; B1's at
  // 9.05: [10.35, 13.35]; the all-reduce launched at 9.5: [13.35, 13.83].
  const Timing attn = run(layer_step(CudaGraphImpl::kTransformerEngine, "attn"),
                          host_cost(2, 0.25, 0.1));
  EXPECT_NEAR(attn.step_s, 13.83, 1e-9);
}

TEST(CudaGraphHost, AFullIterationGraphIsOneLaunchPerStep) {
  // The whole forward-backward replays from one 0.1 s launch: F0 [0.1, 3.1] ... B1 [9.1,
  // 12.1]; the gradient reduction is in the graph too: [12.1, 12.58].
  const Timing full = run(layer_step(CudaGraphImpl::kFullIteration, ""), host_cost(2, 0.25, 0.1));
  EXPECT_NEAR(full.step_s, 12.58, 1e-9);
}

}  // namespace
}  // namespace stepsim::sim
