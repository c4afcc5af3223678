// Full-rank mode (SimulateOptions::full_rank, sim/graph/include/stepsim/graph/build_full_rank.hpp): every GPU
// simulated. On symmetric inputs it must give the representative mode's step time; stragglers
// in any replica, slower NICs and seeded jitter act as hand-computed on small cases.

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <sstream>

#include "stepsim/simulate/heterogeneity.hpp"
#include "hand_cost.hpp"
#include "stepsim/plan/decompose.hpp"
#include "stepsim/check/load.hpp"
#include "stepsim/cost/make_cost_model.hpp"
#include "stepsim/report/report.hpp"
#include "stepsim/simulate/simulate.hpp"

namespace stepsim::sim {
namespace {

const std::string kScenarios = STEPSIM_SCENARIOS_DIR;

/// Memory-bound ops and collectives cost bytes * 1 ns; GEMMs and transfers are free.
HandCost unit_cost() { return HandCost({.gemm_s_per_k = 0}); }

Op kernel(const char* name, Phase phase, double seconds) {
  Op op;
  op.name = name;
  op.phase = phase;
  op.shape = MemoryBoundOp{static_cast<std::int64_t>(seconds * 1e9)};
  return op;
}

/// p 2, m 2 (1F1B), tp x dp GPUs per stage, forward 1 s, backward 2 s, free transfers, and
/// a gradient all-reduce of `grad_s` (0: none) over the dp group after the program (no overlap);
/// `gpus_per_node` GPUs a node.
struct Small {
  Workload w;
  WorkloadPlan plan;
};

Small small_case(std::int64_t tp, std::int64_t dp, double grad_s, std::int64_t gpus_per_node,
                 std::int64_t nodes_spanned) {
  Small s;
  Workload& w = s.w;
  w.name = "small";
  w.model.num_layers = 2;
  w.model.seq_length = 1;
  TrainingConfig& t = w.training;
  t.tensor_model_parallel_size = tp;
  t.pipeline_model_parallel_size = 2;
  t.data_parallel_size = dp;
  t.world_size = 2 * tp * dp;
  t.micro_batch_size = 1;
  t.global_batch_size = 2 * dp;
  t.num_microbatches = 2;
  w.system.gpus_per_node = gpus_per_node;
  w.system.memory_bytes = 1 << 30;
  w.system.peak_flops_fp32 = 1;
  for (std::int32_t r = 0; r < 2; ++r) {
    StagePlan stage;
    stage.stage = r;
    stage.static_bytes = 1000;
    ChunkPlan chunk;
    chunk.stage = r;
    chunk.forward.push_back(kernel("fwd", Phase::kForward, 1.0));
    chunk.backward.push_back(kernel("bwd", Phase::kBackwardInput, 2.0));
    chunk.p2p_bytes = 1;
    chunk.stored_activation_bytes = 100;
    chunk.parameters = 1000;
    if (dp > 1 && grad_s > 0) {
      Op& op = chunk.grad_sync.emplace_back();
      op.name = "dp_grad_all_reduce";
      op.phase = Phase::kStep;
      op.stream = Stream::kDataComm;
      op.shape = CollectiveOp{CollectiveKind::kAllReduce, CommGroup::kData,
                              static_cast<std::int64_t>(grad_s * 1e9), dp, nodes_spanned};
    }
    stage.chunks.push_back(chunk);
    stage.parameters = 1000;
    s.plan.stages.push_back(stage);
  }
  return s;
}

double step_time(const Small& s, const SimulateOptions& o, std::int32_t paces = 0) {
  Result<SimulationResult> r = simulate(s.w, s.plan, unit_cost(), o);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : format_errors(r.errors()));
  if (!r.ok()) return -1.0;
  if (paces > 0) {
    EXPECT_EQ(r->prediction.full_rank.value_or(FullRankSummary{}).paces, paces);
  }
  return r->prediction.step_time_s;
}

SimulateOptions full_rank() {
  SimulateOptions o;
  o.full_rank = true;
  return o;
}

struct Loaded {
  Workload w;
  WorkloadPlan plan;
  std::unique_ptr<CostModel> cost;
};

Loaded load(const std::string& name) {
  Result<Workload> w = load_scenario_file(kScenarios + "/" + name, LoadOptions{kScenarios});
  EXPECT_TRUE(w.ok()) << name << (w.ok() ? "" : format_errors(w.errors()));
  Loaded out{*w, decompose(*w), nullptr};
  Result<std::unique_ptr<CostModel>> cost = make_cost_model(out.w);
  EXPECT_TRUE(cost.ok()) << name;
  out.cost = std::move(cost).value();
  return out;
}

void expect_same_step(const Loaded& s, const std::string& what) {
  Result<SimulationResult> rep = simulate(s.w, s.plan, *s.cost, SimulateOptions{});
  Result<SimulationResult> full = simulate(s.w, s.plan, *s.cost, full_rank());
  ASSERT_TRUE(rep.ok()) << what;
  ASSERT_TRUE(full.ok()) << what << ": " << format_errors(full.errors());
  const double a = rep->prediction.step_time_s, b = full->prediction.step_time_s;
  EXPECT_NEAR(b, a, 1e-9 * a) << what;
  // One copy of the representative step per lane (tp, cp, dp position).
  const TrainingConfig& t = s.w.training;
  EXPECT_EQ(full->prediction.engine_tasks, rep->prediction.engine_tasks *
                                               t.tensor_model_parallel_size *
                                               t.context_parallel_size * t.data_parallel_size)
      << what;
  EXPECT_EQ(full->prediction.stages, rep->prediction.stages) << what;
  EXPECT_FALSE(rep->prediction.full_rank.has_value());
  ASSERT_TRUE(full->prediction.full_rank.has_value()) << what;
  EXPECT_EQ(full->prediction.full_rank->gpus, t.world_size) << what;
  EXPECT_EQ(full->prediction.full_rank->paces, 1) << what;
  EXPECT_NEAR(full->prediction.mfu, rep->prediction.mfu, 1e-9) << what;
}

TEST(FullRank, SymmetricInputsGiveTheRepresentativeStepTime) {
  // TP 8, PP 8 interleaved (v 3), DP 1.
  expect_same_step(load("gpt3-175b-a100-64.json"), "gpt3 t8 p8 v3");
  // TP 4, PP 4, DP 4 with the distributed optimizer, overlapped grad reduce and param gather.
  Loaded llama2 = load("llama2-70b-h100-64.json");
  expect_same_step(llama2, "llama2 t4 p4 dp4 overlapped");
  // The same without overlap: every reduction after the program, then the gather.
  llama2.w.training.overlap_grad_reduce = false;
  llama2.w.training.overlap_param_gather = false;
  llama2.plan = decompose(llama2.w);
  expect_same_step(llama2, "llama2 t4 p4 dp4 not overlapped");
  // CP 2 (p2p ring inside each action), DP 4.
  expect_same_step(load("llama31-8b-cp2-h100-8.json"), "llama3.1 8b cp2");
  // TP 2, DP 4, one stage.
  expect_same_step(load("llama3-8b-h100-8.json"), "llama3 8b t2 dp4");
  // PP 8 with 1F1B, TP 8, DP 16 across 128 nodes (dp gradient all-reduce on the NICs).
  expect_same_step(load("gpt3-175b-a100-1024.json"), "gpt3 t8 p8 dp16 1F1B");
  expect_same_step(load("validation/pp2-1f1b.json"), "validation pp2 1F1B");
}

TEST(FullRank, ExpertAndAmaxGroupsJoinActionsAcrossReplicas) {
  // MoE: the experts' all-to-alls (ep 8 across the dp replicas of a stage), FP8 delayed
  // scaling: the amax all-reduce over tp-cp-dp. Symmetric: the representative step.
  const Loaded mixtral = load("mixtral-8x7b-h100-64.json");
  expect_same_step(mixtral, "mixtral t1 p4 ep8 dp16");
  expect_same_step(load("qwen3-30b-a3b-h100-8.json"), "qwen3 30b-a3b");
  const Loaded fp8 = load("llama3-8b-h100-8-fp8.json");
  expect_same_step(fp8, "llama3 8b fp8 dp8");
  // A straggler's actions pace every GPU they exchange with inside an action: in mixtral its
  // expert-parallel group (8 replicas of stage 0), in the FP8 job every replica. Either way
  // the gradient reduction then waits for it, which is what the representative mode assumes
  // when it slows its stage: the same step time, from 2 distinct paces (its set's, 1).
  for (const Loaded* job : {&mixtral, &fp8}) {
    SimulateOptions o;
    o.stragglers = {Straggler{.rank = 5, .factor = 1.5}};
    Result<SimulationResult> rep = simulate(job->w, job->plan, *job->cost, o);
    o.full_rank = true;
    Result<SimulationResult> full = simulate(job->w, job->plan, *job->cost, o);
    ASSERT_TRUE(rep.ok() && full.ok()) << job->w.name;
    EXPECT_NEAR(full->prediction.step_time_s, rep->prediction.step_time_s,
                1e-9 * rep->prediction.step_time_s)
        << job->w.name;
    EXPECT_GT(full->prediction.step_time_s,
              simulate(job->w, job->plan, *job->cost, full_rank())->prediction.step_time_s);
    EXPECT_EQ(full->prediction.full_rank.value_or(FullRankSummary{}).paces,
              job == &fp8 ? 1 : 2)
        << job->w.name;
  }
}

TEST(FullRank, TpOnlyAmaxReductionLeavesTheReplicasApartInsideActions) {
  // Llama 3 8B FP8 on 8 H100 (t 1, dp 8) with tp_only_amax_red: the amax all-reduce spans
  // the tensor x context group, one GPU here, so there is none. The step is shorter than with
  // the reduction over all 8 replicas, representative and full-rank alike ...
  Loaded fp8 = load("llama3-8b-h100-8-fp8.json");
  const double over_dp =
      simulate(fp8.w, fp8.plan, *fp8.cost, SimulateOptions{})->prediction.step_time_s;
  fp8.w.training.tp_only_amax_red = true;
  fp8.plan = decompose(fp8.w);
  expect_same_step(fp8, "llama3 8b fp8 dp8 tp-only amax");
  const double tp_only =
      simulate(fp8.w, fp8.plan, *fp8.cost, SimulateOptions{})->prediction.step_time_s;
  EXPECT_LT(tp_only, over_dp);
  // ... and a straggler no longer paces the other replicas' actions (two paces, not one): only
  // the gradient reduction waits for it.
  SimulateOptions o = full_rank();
  o.stragglers = {Straggler{.rank = 5, .factor = 1.5}};
  Result<SimulationResult> full = simulate(fp8.w, fp8.plan, *fp8.cost, o);
  ASSERT_TRUE(full.ok()) << format_errors(full.errors());
  EXPECT_EQ(full->prediction.full_rank.value_or(FullRankSummary{}).paces, 2);
}

TEST(FullRank, AStragglerInOneReplicaHoldsEveryReplicaAtTheReduction) {
  // tp 2, dp 2, p 2: global rank = tp + 2 dp + 4 pp. Without stragglers: stage 0 F0 [0,1]
  // F1 [1,2], stage 1 F0 [1,2] B0 [2,4], stage 0 B0 [4,6], stage 1 F1 [4,5] B1 [5,7], stage 0
  // B1 [7,9]; every stage's 1 s gradient all-reduce waits for its stage's end in both
  // replicas: stage 0's [9,10]. Step: 10 s.
  const Small s = small_case(2, 2, 1.0, 8, 1);
  EXPECT_NEAR(step_time(s, SimulateOptions{}), 10.0, 1e-12);
  EXPECT_NEAR(step_time(s, full_rank(), 1), 10.0, 1e-12);
  // Rank 5 (tp 1, dp 0, stage 1) twice as slow: its TP peer (rank 4) waits for it inside every
  // action, so replica 0 runs stage 1 at half speed: stage 0 F0 [0,1] F1 [1,2]; stage 1 F0
  // [1,3] B0 [3,7]; stage 0 B0 [7,9]; stage 1 F1 [7,9] B1 [9,13]; stage 0 B1 [13,15]. Replica
  // 1 ends stage 0 at 9 but reduces with replica 0: [15,16]. Step: 16 s.
  SimulateOptions one = full_rank();
  one.stragglers = {Straggler{.rank = 5, .factor = 2.0}};
  EXPECT_NEAR(step_time(s, one, 2), 16.0, 1e-12);
  // Stragglers in two replicas (the representative mode refuses them): rank 3 (tp 1, dp 1,
  // stage 0) three times as slow as well. Replica 1: stage 0 F0 [0,3] F1 [3,6]; stage 1 F0
  // [3,4] B0 [4,6]; stage 0 B0 [6,12]; stage 1 F1 [6,7] B1 [7,9]; stage 0 B1 [12,18]. Stage
  // 0's reduction waits for replica 1 (18) and ends at 19.
  SimulateOptions two = one;
  two.stragglers.push_back(Straggler{.rank = 3, .factor = 3.0});
  EXPECT_NEAR(step_time(s, two, 2), 19.0, 1e-12);
  SimulateOptions representative = two;
  representative.full_rank = false;
  Result<SimulationResult> refused = simulate(s.w, s.plan, unit_cost(), representative);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.errors().front().key, "--straggler");
  // Out of the world: an input error naming the flag.
  two.stragglers.push_back(Straggler{.rank = 8, .factor = 2.0});
  Result<SimulationResult> outside = simulate(s.w, s.plan, unit_cost(), two);
  ASSERT_FALSE(outside.ok());
  EXPECT_EQ(outside.errors().front().key, "--straggler");
  EXPECT_EQ(exit_status(outside.errors()), 2);
}

TEST(FullRank, TheReportDescribesThePipelineThatEndedTheStep) {
  // No gradient reduction: the replicas are independent. Rank 3 (tp 1, dp 1, stage 0) twice
  // as slow: replica 1's stage 0 F0 [0,2] F1 [2,4]; stage 1 F0 [2,3] B0 [3,5] F1 [5,6] B1
  // [6,8]; stage 0 B0 [5,9] B1 [9,13]. Replica 0 ends at 9 s. Its lowest rank, 2 (tp 0, dp 1, stage 0), ended the step; the stages are
  // replica 1's: stage 0 busy 2 x (1 + 1 + 2 + 2) = 12 s.
  const Small s = small_case(2, 2, 0.0, 8, 1);
  SimulateOptions o = full_rank();
  o.stragglers = {Straggler{.rank = 3, .factor = 2.0}};
  Result<SimulationResult> r = simulate(s.w, s.plan, unit_cost(), o);
  ASSERT_TRUE(r.ok());
  const Prediction& p = r->prediction;
  EXPECT_NEAR(p.step_time_s, 13.0, 1e-12);
  ASSERT_TRUE(p.full_rank.has_value());
  EXPECT_EQ(p.full_rank->critical_rank, 2);
  EXPECT_EQ(p.full_rank->tp, 0);
  EXPECT_EQ(p.full_rank->dp, 1);
  EXPECT_EQ(p.full_rank->paces, 2);
  ASSERT_EQ(p.stages.size(), 2u);
  EXPECT_NEAR(p.stages[0].busy_s, 12.0, 1e-12);
  EXPECT_EQ(p.critical_path.rank, 0);  // a stage, as in the representative mode
  std::ostringstream json;
  write_prediction_json(s.w, *r, "unit", json);
  const std::string text = json.str();
  const std::size_t at = text.find("\"full_rank\": {");
  ASSERT_NE(at, std::string::npos) << text;
  const std::string block = text.substr(at, text.find('}', text.find('}', at) + 1) - at);
  for (const char* field : {"\"gpus\": 8", "\"critical_rank\": 2", "\"dp\": 1", "\"paces\": 2"}) {
    EXPECT_NE(block.find(field), std::string::npos) << field << " in " << block;
  }
}

TEST(FullRank, ASlowNicSlowsTheCrossNodeCollectiveByItsFactor) {
  // One GPU a node: tp 1, dp 2, p 2, the 1 s gradient all-reduce crosses nodes (NIC rails).
  // Step 10 s as above; node 1 (global rank 1: dp 1, stage 0) with a NIC three times as slow:
  // stage 0's reduction holds that NIC, so it takes 3 s: [9,12].
  const Small s = small_case(1, 2, 1.0, 1, 2);
  EXPECT_NEAR(step_time(s, full_rank()), 10.0, 1e-12);
  SimulateOptions slow = full_rank();
  slow.slow_nics = {SlowNic{.node = 1, .factor = 3.0}};
  EXPECT_NEAR(step_time(s, slow), 12.0, 1e-9);
  // Node 2 holds stage 1's dp 0 GPU: its reduction [7,8] becomes [7,10], inside stage 0's.
  slow.slow_nics = {SlowNic{.node = 2, .factor = 3.0}};
  EXPECT_NEAR(step_time(s, slow), 10.0, 1e-9);
  // Errors name the flag: a node outside the job, a factor out of range, no link model,
  // the representative mode.
  for (const SlowNic bad : {SlowNic{.node = 4, .factor = 2.0}, SlowNic{.node = 0, .factor = 0.0},
                            SlowNic{.node = 0, .factor = 1e9}}) {
    slow.slow_nics = {bad};
    Result<SimulationResult> r = simulate(s.w, s.plan, unit_cost(), slow);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.errors().front().key, "--slow-nic");
    EXPECT_EQ(exit_status(r.errors()), 2);
  }
  slow.slow_nics = {SlowNic{.node = 1, .factor = 2.0}};
  slow.contention = false;
  EXPECT_FALSE(simulate(s.w, s.plan, unit_cost(), slow).ok());
  slow.contention = true;
  slow.full_rank = false;
  Result<SimulationResult> r = simulate(s.w, s.plan, unit_cost(), slow);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.errors().front().key, "--slow-nic");
}

TEST(FullRank, TheScenarioHeterogeneitySectionActsAsTheFlags) {
  // llama2 70b (64 GPUs, 8 nodes) with the section, and without it but with the same options.
  const std::string path = kScenarios + "/llama2-70b-h100-64.json";
  Result<Workload> plain = load_scenario_file(path, LoadOptions{kScenarios});
  ASSERT_TRUE(plain.ok());
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string section =
      "\"heterogeneity\": {\"full_rank\": true, \"stragglers\": {\"20\": 1.2, \"40\": 1.1}, "
      "\"slow_nics\": {\"3\": 2}, \"jitter_sigma\": 0.05, \"jitter_seed\": 11},";
  const auto with = [&](const std::string& inserted) {
    std::string t = text;
    t.insert(t.find('{') + 1, inserted);
    return load_scenario_text(t, "h.json", kScenarios, LoadOptions{kScenarios});
  };
  Result<Workload> het = with(section);
  ASSERT_TRUE(het.ok()) << format_errors(het.errors());
  EXPECT_TRUE(het->heterogeneity.full_rank);
  ASSERT_EQ(het->heterogeneity.stragglers.size(), 2u);
  std::unique_ptr<CostModel> cost = std::move(make_cost_model(*plain)).value();
  const WorkloadPlan plan = decompose(*plain);
  SimulateOptions flags = full_rank();
  flags.stragglers = {Straggler{.rank = 20, .factor = 1.2}, Straggler{.rank = 40, .factor = 1.1}};
  flags.slow_nics = {SlowNic{.node = 3, .factor = 2.0}};
  flags.jitter_sigma = 0.05;
  flags.seed = 11;
  Result<SimulationResult> a = simulate(*plain, plan, *cost, flags);
  Result<SimulationResult> b = simulate(*het, plan, *cost, SimulateOptions{});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->prediction, b->prediction);
  // Bad values name the file and the key; per-GPU heterogeneity needs full_rank.
  Result<Workload> bad = with(
      "\"heterogeneity\": {\"stragglers\": {\"64\": 1.2, \"3\": 0}, \"jitter_sigma\": 0.1},");
  ASSERT_FALSE(bad.ok());
  std::string keys;
  for (const Error& e : bad.errors()) keys += e.key + " ";
  EXPECT_NE(keys.find("heterogeneity.stragglers.64"), std::string::npos) << keys;
  EXPECT_NE(keys.find("heterogeneity.stragglers.3"), std::string::npos) << keys;
  EXPECT_NE(keys.find("heterogeneity.jitter_sigma"), std::string::npos) << keys;
  EXPECT_EQ(bad.errors().front().file, "h.json");
  EXPECT_FALSE(with("\"heterogeneity\": {\"stragglers\": {\"20\": 1.2, \"40\": 1.1}},").ok());
  EXPECT_TRUE(with("\"heterogeneity\": {\"stragglers\": {\"20\": 1.2, \"36\": 1.1}},").ok());  // both dp 1
}

std::string json_of(const Small& s, const SimulateOptions& o) {
  Result<SimulationResult> r = simulate(s.w, s.plan, unit_cost(), o);
  EXPECT_TRUE(r.ok());
  std::ostringstream out;
  if (r.ok()) write_prediction_json(s.w, *r, "unit", out);
  return out.str();
}

TEST(FullRank, JitterIsDeterministicForASeed) {
  const Small s = small_case(2, 2, 1.0, 8, 1);
  SimulateOptions a = full_rank();
  a.jitter_sigma = 0.2;
  a.seed = 7;
  const std::string first = json_of(s, a);
  EXPECT_EQ(json_of(s, a), first);
  SimulateOptions b = a;
  b.seed = 8;
  EXPECT_NE(json_of(s, b), first);
  // The step is what the draws make it: every stage's pace is its group's slowest GPU.
  const std::vector<double> f = jitter_scales(8, 0.2, 7);
  EXPECT_GT(step_time(s, a), 0.0);
  for (const double x : f) EXPECT_TRUE(x > 0 && std::isfinite(x));
  // Out of range: an input error naming the flag; without --full-rank: refused.
  a.jitter_sigma = 1.5;
  Result<SimulationResult> bad = simulate(s.w, s.plan, unit_cost(), a);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.errors().front().key, "--jitter");
  a.jitter_sigma = 0.2;
  a.full_rank = false;
  Result<SimulationResult> refused = simulate(s.w, s.plan, unit_cost(), a);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.errors().front().key, "--jitter");
}

TEST(FullRank, JitterDrawsAreLognormalWithMedianOne) {
  // ln(factor) / sigma is a standard normal: mean 0, variance 1 (200,000 draws: standard
  // errors 0.0022 and 0.0032).
  const double sigma = 0.3;
  const std::vector<double> f = jitter_scales(200'000, sigma, 1);
  double sum = 0, sum2 = 0;
  for (const double x : f) {
    const double z = std::log(x) / sigma;
    sum += z;
    sum2 += z * z;
  }
  const double n = static_cast<double>(f.size());
  EXPECT_NEAR(sum / n, 0.0, 0.015);
  EXPECT_NEAR(sum2 / n, 1.0, 0.02);
  EXPECT_EQ(jitter_scales(5, sigma, 1), std::vector<double>(f.begin(), f.begin() + 5));
  EXPECT_EQ(jitter_scales(3, 0.0, 9), std::vector<double>(3, 1.0));
}

}  // namespace
}  // namespace stepsim::sim
