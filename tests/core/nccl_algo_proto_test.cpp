// training.nccl_algo / nccl_proto: NCCL's NCCL_ALGO and NCCL_PROTO of the job. Parsed as
// github.com/NVIDIA/nccl (commit 5067397c, 2.30.7) src/graph/tuning.cc parseList parses them;
// the pairs they disable get no bandwidth in NCCL's model (ncclTopoTuneModel), a profile's
// collective is scaled by the model's restricted choice over its default one, a collective
// left no algorithm stops the job as NCCL does, and a launch line's assignments are the keys.

#include <gtest/gtest.h>

#include <string>

#include "shipped_scenario.hpp"
#include "stepsim/config/nccl_env.hpp"
#include "stepsim/cost/make_cost_model.hpp"
#include "stepsim/cost/nccl_model.hpp"
#include "stepsim/cost/roofline_cost_model.hpp"
#include "stepsim/import/import.hpp"
#include "stepsim/report/predict.hpp"

namespace stepsim {
namespace {

constexpr std::int64_t kMiB = 1 << 20;
constexpr int kAG = kNcclFuncAllGather, kRS = kNcclFuncReduceScatter, kAR = kNcclFuncAllReduce;
constexpr int kTree = 0, kRing = 1, kNvls = 4, kNvlsTree = 5, kPat = 6;  // ncclAlgoStr
constexpr int kLL = 0, kLL128 = 1, kSimple = 2;                          // ncclProtoStr

NcclEnabled parsed(const std::string& algo, const std::string& proto = "") {
  NcclEnabled e;
  EXPECT_EQ(apply_nccl_enable_list(algo, true, e), "") << algo;
  EXPECT_EQ(apply_nccl_enable_list(proto, false, e), "") << proto;
  return e;
}

std::string problem(const std::string& value, bool algorithms) {
  NcclEnabled e;
  return apply_nccl_enable_list(value, algorithms, e);
}

TEST(NcclAlgoProto, ParsesAsNcclsParseList) {
  // A list for every function, in any case (strcasecmp).
  const NcclEnabled ring = parsed("ring");
  for (int f = 0; f < 5; ++f) EXPECT_EQ(ring.algos[static_cast<std::size_t>(f)], 1 << kRing);
  EXPECT_EQ(parsed("TREE,Ring").algos[kAR], (1 << kTree) | (1 << kRing));
  // '^': every algorithm but those.
  const NcclEnabled no_nvls = parsed("^NVLS,nvlstree");
  EXPECT_TRUE(no_nvls.algo(kAR, kRing) && no_nvls.algo(kAR, kPat) && no_nvls.algo(kAG, kTree));
  EXPECT_FALSE(no_nvls.algo(kAR, kNvls) || no_nvls.algo(kAR, kNvlsTree));
  // Per function, after an optional first list for all (tuning.cc's own examples).
  const NcclEnabled per = parsed("Ring;allreduce:Tree,Ring");
  EXPECT_EQ(per.algos[kAR], (1 << kTree) | (1 << kRing));
  EXPECT_EQ(per.algos[kAG], 1 << kRing);
  const NcclEnabled protos = parsed("", "^LL128;allreduce:LL128");
  EXPECT_EQ(protos.protos[kAR], 1 << kLL128);
  EXPECT_EQ(protos.protos[kRS], (1 << kLL) | (1 << kSimple));
  EXPECT_EQ(parsed("", "LL,Simple;AllReduce:^LL").protos[kAR], (1 << kLL128) | (1 << kSimple));
  // A function-only entry: the others keep NCCL's defaults.
  const NcclEnabled only_ag = parsed("allgather:ring");
  EXPECT_EQ(only_ag.algos[kAG], 1 << kRing);
  EXPECT_EQ(only_ag.algos[kAR], NcclEnabled{}.algos[kAR]);
  // Empty value, empty entries (strtok_r skips them), a lone '^': NCCL's defaults.
  EXPECT_FALSE(parsed("").restricted());
  EXPECT_FALSE(parsed("^").restricted());
  EXPECT_EQ(parsed("Ring,,Tree;").algos[kRS], (1 << kTree) | (1 << kRing));
  EXPECT_EQ(nccl_enabled("Ring", "Simple"), parsed("Ring", "Simple"));
}

TEST(NcclAlgoProto, RefusesWhatNcclRefusesWithASuggestion) {
  const std::string typo = problem("Rign", true);
  EXPECT_NE(typo.find("\"Rign\" is not an NCCL algorithm (Tree, Ring, CollNetDirect"),
            std::string::npos)
      << typo;
  EXPECT_NE(typo.find("did you mean \"Ring\"?"), std::string::npos) << typo;
  EXPECT_NE(problem("LL127", false).find("did you mean \"LL128\"?"), std::string::npos);
  EXPECT_NE(problem("AllRedcue:Ring", true).find("\"AllRedcue\" is not an NCCL function"),
            std::string::npos);
  // Only the first entry may lack a function ("All entries except the first must have a
  // prefix"); NCCL trims no spaces; '^' only leads a list.
  EXPECT_NE(problem("Ring;Tree", true).find("\"Tree\" has no function"), std::string::npos);
  EXPECT_NE(problem("Ring, Tree", true).find("\" Tree\" is not an NCCL algorithm"),
            std::string::npos);
  EXPECT_NE(problem("Ring,^Tree", true).find("\"^Tree\""), std::string::npos);
  EXPECT_NE(problem("Simple", true), "");  // a protocol is no algorithm
  EXPECT_NE(problem(":", true).find("holds no list"), std::string::npos);  // NCCL would crash
}

SystemConfig dgx_h100(const std::string& algo = "", const std::string& proto = "") {
  SystemConfig s;
  s.name = "dgx";
  s.gpu_name = "NVIDIA H100-SXM5-80GB";
  s.gpus_per_node = 8;
  s.nics_per_node = 8;
  s.intra_node = {450e9, 1.9e-6};
  s.inter_node = {50e9, 4e-6};
  s.efficiency = {0.8, 0.0, 0.9, 1e-6, 0.8};
  s.nccl_enabled = nccl_enabled(algo, proto);
  return s;
}

NcclModel model(const SystemConfig& s, std::int64_t ranks, std::int64_t nodes) {
  const auto comm = nccl_comm(s, ranks, nodes);
  EXPECT_TRUE(comm.has_value());
  return NcclModel(*comm);
}

CollectiveOp all_reduce(std::int64_t bytes, std::int64_t ranks = 8, std::int64_t nodes = 1) {
  return CollectiveOp{.kind = CollectiveKind::kAllReduce,
                      .group = CommGroup::kData,
                      .bytes = bytes,
                      .group_size = ranks,
                      .nodes_spanned = nodes};
}

// NCCL_ALGO=Ring on one DGX H100: NCCL's default for a 64 MiB all-reduce is NVLS; the ring is
// what runs, slower by the model's own ratio, and the roofline prices that choice.
TEST(NcclAlgoProto, RingOnlyTakesNvlsAway) {
  const NcclModel defaults = model(dgx_h100(), 8, 1);
  const NcclModel ring = model(dgx_h100("Ring"), 8, 1);
  const auto kind = CollectiveKind::kAllReduce;
  const NcclChoice d = defaults.choose(kind, 64 * kMiB);
  const NcclChoice r = ring.choose(kind, 64 * kMiB);
  EXPECT_EQ(d.algo, NcclAlgo::kNvls);
  EXPECT_EQ(r.algo, NcclAlgo::kRing);
  EXPECT_GT(r.seconds, d.seconds);
  EXPECT_FALSE(ring.time_s(kind, NcclAlgo::kNvls, NcclProto::kSimple, 64 * kMiB).has_value());
  EXPECT_FALSE(ring.time_s(kind, NcclAlgo::kTree, NcclProto::kLL, 64 * kMiB).has_value());
  EXPECT_EQ(ring.time_s(kind, NcclAlgo::kRing, r.proto, 64 * kMiB).value_or(-1), r.seconds);
  EXPECT_DOUBLE_EQ(nccl_tuning_factor(dgx_h100("Ring"), all_reduce(64 * kMiB)),
                   r.seconds / d.seconds);
  EXPECT_DOUBLE_EQ(RooflineCostModel(dgx_h100("Ring")).collective_s(all_reduce(64 * kMiB)),
                   r.seconds);
  // Where NCCL picks the same pair anyway, nothing changes: exactly 1.
  EXPECT_EQ(nccl_tuning_factor(dgx_h100("^PAT"), all_reduce(64 * kMiB)), 1.0);
  EXPECT_EQ(nccl_tuning_factor(dgx_h100(), all_reduce(64 * kMiB)), 1.0);
  // Transformer Engine's userbuffers kernels are not NCCL's: NCCL_ALGO does not reach them.
  CollectiveOp ub = all_reduce(64 * kMiB);
  ub.nccl = false;
  EXPECT_EQ(nccl_tuning_factor(dgx_h100("Ring"), ub), 1.0);
  EXPECT_DOUBLE_EQ(RooflineCostModel(dgx_h100("Ring")).collective_s(ub), d.seconds);
}

// NCCL_PROTO=Simple: a small all-reduce NCCL runs with LL runs with Simple, slower.
TEST(NcclAlgoProto, SimpleOnlyTakesLlAway) {
  const auto kind = CollectiveKind::kAllReduce;
  const NcclChoice d = model(dgx_h100(), 16, 2).choose(kind, 4096);
  const NcclChoice s = model(dgx_h100("", "Simple"), 16, 2).choose(kind, 4096);
  EXPECT_EQ(d.proto, NcclProto::kLL);
  EXPECT_EQ(s.proto, NcclProto::kSimple);
  EXPECT_GT(s.seconds, d.seconds);
  EXPECT_DOUBLE_EQ(nccl_tuning_factor(dgx_h100("", "Simple"), all_reduce(4096, 16, 2)),
                   s.seconds / d.seconds);
  // Per function: "allgather:^LL" leaves the all-reduce as it was.
  EXPECT_EQ(nccl_tuning_factor(dgx_h100("", "allgather:^LL"), all_reduce(4096, 16, 2)), 1.0);
}

// What NCCL's tuning leaves: Tree has no all-gather or reduce-scatter (tuning.cc runs those
// with Ring, PAT, NVLS or CollNet only), NVLS none across nodes without CollNet.
TEST(NcclAlgoProto, ARestrictionCanLeaveACollectiveNoAlgorithm) {
  const NcclModel tree = model(dgx_h100("Tree"), 8, 1);
  EXPECT_TRUE(tree.available(CollectiveKind::kAllReduce));
  EXPECT_FALSE(tree.available(CollectiveKind::kAllGather));
  EXPECT_FALSE(tree.available(CollectiveKind::kReduceScatter));
  EXPECT_TRUE(model(dgx_h100("NVLS"), 8, 1).available(CollectiveKind::kAllGather));
  EXPECT_FALSE(model(dgx_h100("NVLS"), 16, 2).available(CollectiveKind::kAllReduce));
  EXPECT_TRUE(model(dgx_h100("NVLS,NVLSTree"), 16, 2).available(CollectiveKind::kAllReduce));
  EXPECT_FALSE(model(dgx_h100("", "^LL,LL128,Simple"), 8, 1).available(CollectiveKind::kAllReduce));
}

/// Llama 3 8B FP8 on one DGX H100 (dp 8, distributed optimizer: reduce-scatter and all-gather
/// of the gradients and parameters), priced by the public H100 profile, with `training` keys.
Result<Workload> llama(const std::string& training) {
  return testing::shipped_with("llama3-8b-h100-8-fp8.json", training,
                               {{"\"profile\": \"profiles/h100-sxm5-80gb-measured.json\"",
                                 "\"profile\": \"profiles/h100-sxm5-80gb-public.json\""}});
}

double seconds(const Workload& w, const CollectiveOp& op) {
  auto cost = make_cost_model(w);
  EXPECT_TRUE(cost.ok());
  return cost.ok() ? (*cost)->collective_s(op) : 0.0;
}

// A profile's 8-GPU all-reduce was measured at NCCL's default (NVLS): with NCCL_ALGO=Ring
// it costs the measurement times the model's ratio.
TEST(NcclAlgoProto, AMeasuredCollectiveIsScaledByTheModelsRatio) {
  auto at_defaults = llama("");
  auto ring = llama("\"nccl_algo\": \"ring\"");
  ASSERT_TRUE(at_defaults.ok() && ring.ok()) << format_errors(ring.errors());
  EXPECT_EQ(ring->training.nccl_algo, "ring");
  const double factor = nccl_tuning_factor(dgx_h100("Ring"), all_reduce(64 * kMiB));
  EXPECT_GT(factor, 1.0);
  EXPECT_DOUBLE_EQ(seconds(*ring, all_reduce(64 * kMiB)),
                   seconds(*at_defaults, all_reduce(64 * kMiB)) * factor);
}

TEST(NcclAlgoProto, LoadRefusesNamingTheKeyAndTheToken) {
  auto bad = llama("\"nccl_algo\": \"Ring,Trea\"");
  ASSERT_FALSE(bad.ok());
  const std::string e = format_errors(bad.errors());
  EXPECT_NE(e.find("training.nccl_algo=\"Ring,Trea\" (NCCL_ALGO): \"Trea\" is not an NCCL "
                   "algorithm"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("did you mean \"Tree\"?"), std::string::npos) << e;
  auto number = llama("\"nccl_proto\": 2");
  ASSERT_FALSE(number.ok());
  EXPECT_NE(format_errors(number.errors())
                .find("training.nccl_proto=2 (NCCL_PROTO) must be a "
                      "string"),
            std::string::npos);
}

// NCCL_ALGO=Tree leaves the distributed optimizer's all-gather and reduce-scatter no
// algorithm: NCCL stops, and so does predict (exit 2 naming the key); "allreduce:tree" is fine.
TEST(NcclAlgoProto, PredictStopsWhereNcclHasNoAlgorithm) {
  auto tree = llama("\"nccl_algo\": \"Tree\"");
  ASSERT_TRUE(tree.ok()) << format_errors(tree.errors());
  const sim::PredictOutcome stopped = sim::predict(*tree, {});
  ASSERT_FALSE(stopped.run.has_value());
  ASSERT_FALSE(stopped.errors.empty());
  EXPECT_EQ(stopped.errors.front().key, "training.nccl_algo");
  EXPECT_EQ(stopped.errors.front().kind, ErrorKind::kInput);
  const std::string e = format_errors(stopped.errors);
  EXPECT_NE(e.find("=\"Tree\" (NCCL_ALGO) leaves NCCL no algorithm and protocol for the "),
            std::string::npos)
      << e;
  auto per_function = llama("\"nccl_algo\": \"allreduce:tree\"");
  ASSERT_TRUE(per_function.ok());
  const sim::PredictOutcome ran = sim::predict(*per_function, {});
  ASSERT_TRUE(ran.run.has_value()) << format_errors(ran.errors);
  // Ring for everything: a slower step than NCCL's own choice (NVLS where it wins).
  auto ring = llama("\"nccl_algo\": \"Ring\"");
  auto defaults = llama("");
  ASSERT_TRUE(ring.ok() && defaults.ok());
  const sim::PredictOutcome r = sim::predict(*ring, {});
  const sim::PredictOutcome d = sim::predict(*defaults, {});
  ASSERT_TRUE(r.run && d.run);
  EXPECT_GE(r.run->result.prediction.step_time_s, d.run->result.prediction.step_time_s);
}

TEST(NcclAlgoProto, TheLaunchLinesAssignmentsAreTheKeysAndRoundTrip) {
  const std::string& flags = testing::kSmallLaunchFlags;
  MegatronImportOptions o;
  o.system = "systems/dgx-h100-80gb.json";
  const auto load = testing::load_imported;
  auto r =
      scenario_from_megatron_args("NCCL_ALGO=Ring NCCL_PROTO='^LL128;allreduce:LL128'" + flags, o);
  ASSERT_TRUE(r.ok()) << format_errors(r.errors());
  const Workload w = load(r->scenario_json);
  EXPECT_EQ(w.training.nccl_algo, "Ring");
  EXPECT_EQ(w.training.nccl_proto, "^LL128;allreduce:LL128");
  const std::string back = megatron_args_of(w);
  EXPECT_TRUE(back.starts_with("NCCL_ALGO=Ring NCCL_PROTO='^LL128;allreduce:LL128' --num-layers"))
      << back;
  MegatronImportOptions flags_only = o;
  flags_only.world_size = 8;  // the written line has no launcher
  auto again = scenario_from_megatron_args(back, flags_only);
  ASSERT_TRUE(again.ok()) << format_errors(again.errors());
  EXPECT_EQ(load(again->scenario_json).training.nccl_proto, w.training.nccl_proto);
  // A value NCCL refuses is refused naming the variable.
  auto typo = scenario_from_megatron_args("NCCL_ALGO=Rnig" + flags, o);
  ASSERT_FALSE(typo.ok());
  EXPECT_EQ(typo.errors().front().key, "NCCL_ALGO");
  EXPECT_NE(typo.errors().front().message.find("did you mean \"Ring\"?"), std::string::npos);
  // Unset: nothing written back.
  auto plain = scenario_from_megatron_args(flags, o);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(megatron_args_of(load(plain->scenario_json)).find("NCCL_"), std::string::npos);
}

}  // namespace
}  // namespace stepsim
