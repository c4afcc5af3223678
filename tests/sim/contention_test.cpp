// Resource contention (sim/engine/include/stepsim/engine/resource_model.hpp, engine.cpp, chunk_template.cpp): max-min
// fair link sharing and compute-communication interference, on cases computed by hand.

#include <gtest/gtest.h>

#include <optional>
#include <span>
#include <sstream>
#include <utility>
#include <vector>

#include "stepsim/graph/chunk_template.hpp"
#include "stepsim/engine/resource_model.hpp"
#include "stepsim/plan/decompose.hpp"
#include "stepsim/check/load.hpp"
#include "stepsim/cost/make_cost_model.hpp"
#include "stepsim/engine/engine.hpp"
#include "stepsim/report/report.hpp"
#include "stepsim/simulate/simulate.hpp"

namespace stepsim::sim {
namespace {

TEST(MaxMin, ThreeFlowsOnTwoLinksGetTheirFairShares) {
  // Link 0 carries 10 units/s, link 1 20. Flow A uses link 0, B link 1, C both; each could
  // go at 25 alone. Progressive filling: all three rise together until link 0 saturates at
  // 5 + 5 = 10 (A = C = 5); B rises on alone until link 1 holds 20 - 5 = 15 for it.
  const std::vector<double> rates = max_min_rates(
      {10, 20}, {{FlowUse{.resource = 0}}, {FlowUse{.resource = 1}},
                 {FlowUse{.resource = 0}, FlowUse{.resource = 1}}},
      {25, 25, 25});
  ASSERT_EQ(rates.size(), 3u);
  EXPECT_DOUBLE_EQ(rates[0], 5);
  EXPECT_DOUBLE_EQ(rates[1], 15);
  EXPECT_DOUBLE_EQ(rates[2], 5);
}

TEST(MaxMin, BoundsAndWeights) {
  // One link of 12: A is bounded at 2, B uses the link at weight 2 (each unit of its rate
  // takes 2 of capacity), C at weight 1. A stops at 2; B and C rise to x with 2 + 2x + x =
  // 12: x = 10/3.
  const std::vector<double> rates = max_min_rates(
      {12}, {{FlowUse{.resource = 0}}, {FlowUse{.resource = 0, .weight = 2}}, {FlowUse{.resource = 0}}},
      {2, 100, 100});
  EXPECT_DOUBLE_EQ(rates[0], 2);
  EXPECT_NEAR(rates[1], 10.0 / 3, 1e-12);
  EXPECT_NEAR(rates[2], 10.0 / 3, 1e-12);
}

Task transfer(std::int32_t from, std::int32_t to, double seconds) {
  TaskResources res;
  res.links[0] = ResourceRef{from, ResourceKind::kNicTx};
  res.links[1] = ResourceRef{to, ResourceKind::kNicRx};
  res.link_count = 2;
  return Task{.rank = from,
              .stream = Stream::kPipelineComm,
              .kind = TaskKind::kTransfer,
              .duration_s = seconds,
              .resources = res};
}

// Each update's reports as (flow, rate), in the order the model gives them.
std::vector<std::pair<std::uint32_t, double>> updated(ResourceModel& model) {
  std::vector<std::pair<std::uint32_t, double>> out;
  model.update([&](std::uint32_t f, double rate) { out.emplace_back(f, rate); });
  return out;
}

TEST(ResourceModelUpdates, FlowsStartingAloneAndJoinedBeforeTheUpdate) {
  // Two links of capacity 2 and 1; resource 2 is a GPU's SMs (where compute and NCCL kernels
  // interfere: compute at 1/2, NCCL at 1/4 beside each other).
  ResourceModel model({2, 1, 1}, {false, false, true},
                      Interference{.compute_slowdown = 2, .collective_slowdown = 4}, 8);
  using R = std::vector<std::pair<std::uint32_t, double>>;
  // Alone on link 1: its bound (3 exceeds the capacity, so the capacity 1).
  const FlowUse link1{.resource = 1};
  model.add_flow(0, std::span(&link1, 1), 3);
  EXPECT_EQ(updated(model), (R{{0, 1.0}}));
  // Flow 1 starts alone on link 0, flow 2 joins it before the update: both are solved
  // together (each half of link 0), each reported once.
  const FlowUse link0{.resource = 0};
  model.add_flow(1, std::span(&link0, 1), 5);
  model.add_flow(2, std::span(&link0, 1), 5);
  EXPECT_EQ(updated(model), (R{{1, 1.0}, {2, 1.0}}));
  // Flow 2 ends: flow 1 takes the whole link; flow 0, apart, is not reported.
  model.remove_flow(2);
  EXPECT_EQ(updated(model), (R{{1, 2.0}}));
  // A compute flow alone on the SMs, then an NCCL kernel beside it (on link 1 too, shared
  // with flow 0): the compute flow slows by 2, the kernel takes a quarter of link 1's 1 ...
  const FlowUse compute{.resource = 2};
  model.add_flow(3, std::span(&compute, 1), 1);
  EXPECT_EQ(updated(model), (R{{3, 1.0}}));
  const std::vector<FlowUse> nccl{FlowUse{.resource = 2, .weight = 0, .nccl_kernel = true},
                                  FlowUse{.resource = 1}};
  model.add_flow(4, nccl, 1);
  EXPECT_EQ(updated(model), (R{{0, 0.75}, {3, 0.5}, {4, 0.25}}));
  // ... and when the compute flow ends, the kernel rises to its half of link 1.
  model.remove_flow(3);
  EXPECT_EQ(updated(model), (R{{0, 0.5}, {4, 0.5}}));
  // Flows ending alone change nobody's rate.
  model.remove_flow(1);
  EXPECT_TRUE(updated(model).empty());
}

TEST(ResourceModelUpdates, AFlowPlannedByItsCallerIsReportedOnlyWhenItsRateChanges) {
  // Link 0 of capacity 1, link 1 of capacity 0.5 (a slow NIC rail).
  ResourceModel model({1, 0.5}, {false, false}, Interference{}, 8);
  using R = std::vector<std::pair<std::uint32_t, double>>;
  const FlowUse link0{.resource = 0};
  const FlowUse link1{.resource = 1};
  // Alone: add_flow gives its rate, capped by the link, and the update does not report it.
  EXPECT_EQ(model.add_flow(0, std::span(&link1, 1), 1, /*report_alone=*/false), 0.5);
  EXPECT_TRUE(updated(model).empty());
  // Alone again, then joined before the update: its rate halves, so it is reported with the
  // flow that joined (which shares a resource: add_flow gives 0).
  EXPECT_EQ(model.add_flow(1, std::span(&link0, 1), 1, /*report_alone=*/false), 1.0);
  EXPECT_EQ(model.add_flow(2, std::span(&link0, 1), 1), 0.0);
  EXPECT_EQ(updated(model), (R{{1, 0.5}, {2, 0.5}}));
  // A flow the caller hands back is reported as if added with report_alone.
  model.remove_flow(0);
  EXPECT_EQ(model.add_flow(3, std::span(&link1, 1), 1, /*report_alone=*/false), 0.5);
  model.report_at_update(3);
  EXPECT_EQ(updated(model), (R{{3, 0.5}}));
}

TEST(EngineContention, TwoTransfersSharingOneNicTakeTwiceAsLong) {
  // Rank 0 sends 2 s worth to rank 1 and 2 s worth to rank 2 at once: both leave through
  // rank 0's NIC, each at half its speed alone, and end at 4 s; alone, one ends at 2 s.
  TaskGraph g;
  const TaskId a = g.add_task(transfer(0, 1, 2.0));
  const TaskId b = g.add_task(transfer(0, 2, 2.0));
  g.finalize();
  const Result<EngineResult> shared = run_engine(g);
  ASSERT_TRUE(shared.ok());
  EXPECT_DOUBLE_EQ(shared->timings[a.value].end_s, 4.0);
  EXPECT_DOUBLE_EQ(shared->timings[b.value].end_s, 4.0);
  EXPECT_EQ(shared->contended_tasks, 2);

  TaskGraph one;
  const TaskId alone = one.add_task(transfer(0, 1, 2.0));
  one.finalize();
  const Result<EngineResult> single = run_engine(one);
  ASSERT_TRUE(single.ok());
  EXPECT_DOUBLE_EQ(single->timings[alone.value].end_s, 2.0);
  EXPECT_DOUBLE_EQ(shared->makespan_s, 2 * single->makespan_s);

  // Without contention each takes its own 2 s.
  EngineOptions off;
  off.contention = false;
  const Result<EngineResult> free = run_engine(g, off);
  ASSERT_TRUE(free.ok());
  EXPECT_DOUBLE_EQ(free->makespan_s, 2.0);
}

TEST(EngineContention, RatesChangeAtEvents) {
  // A (2 s) starts at 0; B (2 s, same NIC) starts at 1 after a 1 s compute. [0,1]: A alone,
  // 1 s of work left. [1,3]: both at half speed, A ends at 3 with B half done (1 s left).
  // [3,4]: B alone, ends at 4. Transfers into different NICs of the receivers do not share.
  TaskGraph g;
  const TaskId a = g.add_task(transfer(0, 1, 2.0));
  const TaskId wait =
      g.add_task(Task{.rank = 0, .kind = TaskKind::kCompute, .duration_s = 1.0});
  const TaskId b = g.add_task(transfer(0, 2, 2.0));
  const TaskId c = g.add_task(transfer(3, 4, 2.0));
  g.add_edge(wait, b);
  g.finalize();
  const Result<EngineResult> r = run_engine(g);
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(r->timings[a.value].end_s, 3.0);
  EXPECT_DOUBLE_EQ(r->timings[b.value].start_s, 1.0);
  EXPECT_DOUBLE_EQ(r->timings[b.value].end_s, 4.0);
  EXPECT_DOUBLE_EQ(r->timings[c.value].end_s, 2.0);
  EXPECT_FALSE(r->timings[c.value].contended);
}

TEST(EngineContention, GemmBesideACollectiveSlowsByTheCoefficients) {
  // A 10 s compute action and a 4 s NCCL all-reduce on GPU 0 start together; compute slows
  // by 1.2 and the collective by 1.5 while both run. The collective ends at 4 * 1.5 = 6;
  // by then the action has done 6 / 1.2 = 5 s of its work and does the other 5 alone: 11.
  TaskGraph g;
  const TaskId gemm = g.add_task(Task{.rank = 0,
                                      .kind = TaskKind::kCompute,
                                      .duration_s = 10.0,
                                      .resources = {.compute_gpu = 0}});
  TaskResources coll_res{.nccl_gpu = 0};
  coll_res.links[0] = ResourceRef{0, ResourceKind::kNicTx};
  coll_res.links[1] = ResourceRef{0, ResourceKind::kNicRx};
  coll_res.link_count = 2;
  const TaskId coll = g.add_task(Task{.rank = 0,
                                      .stream = Stream::kDataComm,
                                      .kind = TaskKind::kCollective,
                                      .duration_s = 4.0,
                                      .resources = coll_res});
  g.finalize();
  const EngineOptions options{.contention = true,
                              .interference = {.compute_slowdown = 1.2, .collective_slowdown = 1.5},
                              .nic_capacity = {}};
  const Result<EngineResult> r = run_engine(g, options);
  ASSERT_TRUE(r.ok());
  EXPECT_NEAR(r->timings[coll.value].end_s, 6.0, 1e-12);
  EXPECT_NEAR(r->timings[gemm.value].end_s, 11.0, 1e-12);
  EXPECT_NEAR(r->timings[gemm.value].stretch(10.0), 1.1, 1e-12);
  // On another GPU nothing interferes.
  TaskGraph apart;
  apart.add_task(Task{.rank = 0, .kind = TaskKind::kCompute, .duration_s = 10.0,
                      .resources = {.compute_gpu = 0}});
  apart.add_task(Task{.rank = 1, .kind = TaskKind::kCollective, .duration_s = 4.0,
                      .resources = {.nccl_gpu = 1}});
  apart.finalize();
  const Result<EngineResult> r2 = run_engine(apart, options);
  ASSERT_TRUE(r2.ok());
  EXPECT_DOUBLE_EQ(r2->makespan_s, 10.0);
  EXPECT_EQ(r2->contended_tasks, 0);
}

/// GEMMs cost their k in seconds, collectives 1 s per byte.
class UnitCost final : public CostModel {
 public:
  double gemm_s(const GemmOp& op) const override { return static_cast<double>(op.k); }
  double attention_s(const AttentionOp&) const override { return 0.0; }
  double memory_bound_s(const MemoryBoundOp&) const override { return 0.0; }
  double collective_s(const CollectiveOp& op) const override { return static_cast<double>(op.bytes); }
  double p2p_s(const P2POp& op) const override { return static_cast<double>(op.bytes); }
  std::string describe() const override { return "unit"; }
};

TEST(TimeOpsInterference, TensorCollectiveBesideAWgradGemm) {
  // Backward-like: dgrad GEMM (2 s), then its TP all-gather (1 s, NCCL) on the TP stream
  // beside the wgrad GEMM (4 s), then a GEMM that needs the all-gather. With factors 1.25
  // (compute) and 2 (collective): [2, 4] both run, the all-gather at half speed ends at 4,
  // the wgrad has done 2 / 1.25 = 1.6 s; [4, 6.4] the wgrad alone finishes its 2.4 s; the
  // last GEMM (1 s) waits for it on the compute stream: 7.4 (free overlap: 7).
  std::vector<Op> ops(4);
  ops[0].shape = GemmOp{.m = 1, .n = 1, .k = 2};
  ops[1].stream = Stream::kTensorComm;
  ops[1].shape = CollectiveOp{.kind = CollectiveKind::kAllGather, .bytes = 1, .group_size = 2};
  ops[1].deps = {0};
  ops[2].shape = GemmOp{.m = 1, .n = 1, .k = 4};
  ops[3].shape = GemmOp{.m = 1, .n = 1, .k = 1};
  ops[3].deps = {1};
  const ChunkTemplate free = time_ops(ops, UnitCost(), false);
  EXPECT_DOUBLE_EQ(free.duration_s, 7.0);
  const Interference k{.compute_slowdown = 1.25, .collective_slowdown = 2};
  const ChunkTemplate slow = time_ops(ops, UnitCost(), false, k);
  EXPECT_NEAR(slow.ops[1].end_s, 4.0, 1e-12);
  EXPECT_NEAR(slow.ops[2].end_s, 6.4, 1e-12);
  EXPECT_NEAR(slow.duration_s, 7.4, 1e-12);
  EXPECT_NEAR(slow.compute_busy_s, 7.4, 1e-12);
  // Not NCCL (userbuffers): no interference.
  ops[1].shape = CollectiveOp{.kind = CollectiveKind::kAllGather, .bytes = 1, .group_size = 2,
                              .nccl = false};
  EXPECT_DOUBLE_EQ(time_ops(ops, UnitCost(), false, k).duration_s, 7.0);
  // The serial (validator) mode never overlaps: 2 + 1 + 4 + 1.
  EXPECT_DOUBLE_EQ(time_ops(ops, UnitCost(), true, k).duration_s, 8.0);
}

TEST(TimeOpsReuse, SameTimingIgnoresNamesAndLayersOnly) {
  // build_step copies a template to every op list timed alike: lists that differ in what
  // time_ops does not read (names, layer indices) are alike; any field it reads tells them apart.
  std::vector<Op> ops(2);
  ops[0].name = "fc1_gemm";
  ops[0].layer = 3;
  ops[0].shape = GemmOp{.m = 2, .n = 3, .k = 4};
  ops[1].name = "tp_all_gather";
  ops[1].layer = 3;
  ops[1].stream = Stream::kTensorComm;
  ops[1].shape = CollectiveOp{.kind = CollectiveKind::kAllGather, .bytes = 8, .group_size = 2};
  ops[1].deps = {0};
  std::vector<Op> other = ops;
  other[0].layer = other[1].layer = 11;
  other[0].name = "renamed";
  EXPECT_TRUE(same_timing(ops, other));
  EXPECT_EQ(time_ops(ops, UnitCost(), false).duration_s,
            time_ops(other, UnitCost(), false).duration_s);
  const auto differs = [&](auto&& change) {
    std::vector<Op> changed = ops;
    change(changed);
    return !same_timing(ops, changed);
  };
  EXPECT_TRUE(differs([](std::vector<Op>& o) { o[0].shape = GemmOp{.m = 2, .n = 3, .k = 5}; }));
  EXPECT_TRUE(differs([](std::vector<Op>& o) { o[1].deps.clear(); }));
  EXPECT_TRUE(differs([](std::vector<Op>& o) { o[1].stream = Stream::kCompute; }));
  EXPECT_TRUE(differs([](std::vector<Op>& o) { o[0].phase = Phase::kRecompute; }));
  EXPECT_TRUE(differs([](std::vector<Op>& o) { o[0].sm_share = 0.5; }));
  EXPECT_TRUE(differs([](std::vector<Op>& o) { o[0].workspace_bytes = 1; }));
  EXPECT_TRUE(differs([](std::vector<Op>& o) { o.pop_back(); }));
}

Workload shipped(const std::string& name) {
  LoadOptions options;
  options.scenarios_dir = STEPSIM_SCENARIOS_DIR;
  Result<Workload> loaded =
      load_scenario_file(std::string(STEPSIM_SCENARIOS_DIR) + "/" + name, options);
  EXPECT_TRUE(loaded.ok()) << format_errors(loaded.errors());
  return std::move(loaded).value();
}

TEST(EngineContention, ShippedScenarioIsDeterministicAndSlowerThanFreeOverlap) {
  const Workload w = shipped("llama2-70b-h100-64.json");
  EXPECT_DOUBLE_EQ(w.system.interference.compute_slowdown, 1.189);
  Result<std::unique_ptr<CostModel>> cost = make_cost_model(w);
  ASSERT_TRUE(cost.ok());
  const WorkloadPlan plan = decompose(w);
  std::string json[2];
  double step[2] = {0, 0};
  for (int i = 0; i < 2; ++i) {
    SimulateOptions with_timeline;
    with_timeline.keep_timeline = true;
    Result<SimulationResult> r = simulate(w, plan, **cost, with_timeline);
    ASSERT_TRUE(r.ok()) << format_errors(r.errors());
    std::ostringstream out;
    write_prediction_json(w, *r, "roofline", out);
    for (const Slice& slice : r->timeline.slices) out << slice.start_s << ' ' << slice.end_s << '\n';
    json[i] = out.str();
    step[i] = r->prediction.step_time_s;
  }
  EXPECT_EQ(json[0], json[1]);
  SimulateOptions no_contention;
  no_contention.contention = false;
  Result<SimulationResult> free = simulate(w, plan, **cost, no_contention);
  ASSERT_TRUE(free.ok());
  EXPECT_GT(step[0], free->prediction.step_time_s);
}

}  // namespace
}  // namespace stepsim::sim
