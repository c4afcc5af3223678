// Where a prediction's prices came from (issue 37, item 6): the parts of the step each cost
// model priced and from what, the host's origin, the report's one line, and what `stepsim
// accuracy` measured for the same cost data (stated, never applied).

#include "stepsim/cost/provenance.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "stepsim/base/json_input.hpp"
#include "stepsim/check/load.hpp"
#include "stepsim/config/published_runs.hpp"
#include "stepsim/cost/calibrated_cost_model.hpp"
#include "stepsim/cost/make_cost_model.hpp"
#include "stepsim/plan/decompose.hpp"
#include "stepsim/report/accuracy.hpp"
#include "stepsim/report/open_accuracy.hpp"
#include "stepsim/report/predict.hpp"
#include "stepsim/report/report.hpp"

namespace stepsim::sim {
namespace {

const std::string kScenarios = STEPSIM_SCENARIOS_DIR;
constexpr auto npos = std::string::npos;

Workload shipped(const std::string& name) {
  Result<Workload> w = load_scenario_file(kScenarios + "/" + name, LoadOptions{kScenarios});
  EXPECT_TRUE(w.ok()) << (w.ok() ? "" : format_errors(w.errors()));
  return std::move(w).value();
}

Prediction predicted(const Workload& w, const std::string& scenarios_dir = "") {
  PredictOptions options;
  options.scenarios_dir = scenarios_dir;
  PredictOutcome out = predict(w, options);
  EXPECT_TRUE(out.run.has_value()) << format_errors(out.errors);
  return out.run->result.prediction;
}

unsigned part(const Provenance& p, PricedPart k) { return p.parts[static_cast<std::size_t>(k)]; }

// A profile measured on its own machine ("cuda") with bf16 GEMMs and nothing else: GEMMs are
// measured, attention is its matmuls as those GEMMs, memory-bound kernels take the roofline
// and llama3-8b's TP 2 / DP 4 collectives on a DGX H100 NCCL's model; no host is modelled.
TEST(PricedFrom, MeasuredGemmsWithoutCollectiveSamplesSayNcclsModel) {
  Workload w = shipped("llama3-8b-h100-8.json");
  auto profile = std::make_shared<Profile>();
  profile->machine = "bench";
  profile->backend = "cuda";
  profile->date = "2026-12-01T10:00:00Z";
  for (const std::int64_t s : {1024, 4096, 16384}) {
    profile->gemm.push_back({s, s, s, 1, DType::kBf16, 2.0 * static_cast<double>(s * s * s) / 600e12, ""});
  }
  Result<std::unique_ptr<CostModel>> cost = make_cost_model(w, profile);
  ASSERT_TRUE(cost.ok());
  Result<SimulationResult> r = simulate(w, decompose(w), **cost, SimulateOptions{});
  ASSERT_TRUE(r.ok()) << format_errors(r.errors());
  const Provenance& p = r->prediction.provenance;
  EXPECT_EQ(part(p, PricedPart::kGemm), kFromMeasured);
  EXPECT_EQ(part(p, PricedPart::kAttention), kFromAsGemms);
  EXPECT_EQ(part(p, PricedPart::kMemoryBound), kFromRoofline);
  EXPECT_EQ(part(p, PricedPart::kCollective), kFromNcclModel);
  EXPECT_EQ(part(p, PricedPart::kP2P), 0u);  // one pipeline stage: no P2P
  EXPECT_EQ(p.host, HostOrigin::kNotModelled);
  EXPECT_EQ(provenance_line(p),
            "GEMMs: measured (bench, 2026-12-01); attention: as GEMMs; memory-bound: roofline; "
            "collectives: NCCL's model; host: not modelled");
  // A profile with a measured kernel spread says so (nothing else changes in the line).
  profile->spread.gemm_cv = 0.02;
  profile->spread.repeats = 20;
  Result<std::unique_ptr<CostModel>> spread = make_cost_model(w, profile);
  ASSERT_TRUE(spread.ok());
  Result<SimulationResult> s = simulate(w, decompose(w), **spread, SimulateOptions{});
  ASSERT_TRUE(s.ok()) << format_errors(s.errors());
  EXPECT_EQ(provenance_line(s->prediction.provenance),
            "GEMMs: measured (bench, 2026-12-01); attention: as GEMMs; memory-bound: roofline; "
            "collectives: NCCL's model; host: not modelled; kernel spread: measured over 20 "
            "repeats");
}

// The shipped measured H100 profile: kernels and host measured on its machine, collectives
// (none measured on one GPU) by NCCL's model.
TEST(PricedFrom, TheMeasuredH100ProfileSaysMeasuredAndNcclsModel) {
  const Provenance p = predicted(shipped("llama3-8b-h100-8-fp8.json")).provenance;
  EXPECT_EQ(part(p, PricedPart::kGemm), kFromMeasured);
  EXPECT_EQ(part(p, PricedPart::kAttention), kFromMeasured);
  EXPECT_EQ(part(p, PricedPart::kMemoryBound), kFromMeasured);
  EXPECT_EQ(part(p, PricedPart::kCollective), kFromNcclModel);
  EXPECT_EQ(p.host, HostOrigin::kMeasured);
  EXPECT_NE(p.measured_on.find("H100"), npos) << p.measured_on;
  EXPECT_NE(p.host_detail.find("torch"), npos) << p.host_detail;
}

// The roofline prices every kernel from the system file's data sheet, and collectives on a
// DGX H100 by NCCL's model of its (data-sheet) links; it models no host.
TEST(PricedFrom, TheRooflineSaysDataSheetForEveryPart) {
  Workload w = shipped("llama3-8b-h100-8.json");
  w.cost_model.kind = CostModelSpec::Kind::kRoofline;
  const Provenance p = predicted(w).provenance;
  EXPECT_EQ(part(p, PricedPart::kGemm), kFromRoofline);
  EXPECT_EQ(part(p, PricedPart::kAttention), kFromRoofline);
  EXPECT_EQ(part(p, PricedPart::kMemoryBound), kFromRoofline);
  EXPECT_EQ(part(p, PricedPart::kCollective), kFromNcclModel);
  EXPECT_EQ(p.host, HostOrigin::kNotModelled);
  EXPECT_TRUE(p.measured_on.empty() && p.borrowed_from.empty());
  EXPECT_EQ(provenance_line(p),
            "GEMMs, attention, memory-bound: roofline; collectives: NCCL's model; host: not "
            "modelled");
  // Pipeline transfers too (gpt3-175b-a100-64: p 8).
  Workload piped = shipped("gpt3-175b-a100-64.json");
  piped.cost_model.kind = CostModelSpec::Kind::kRoofline;
  EXPECT_EQ(part(predicted(piped).provenance, PricedPart::kP2P), kFromRoofline);
}

// A public profile borrows its host from the measured H100 profile (make_public_profiles.py)
// and says so, with the framework and what is known of the CPU.
TEST(PricedFrom, APublicProfileSaysItsHostIsBorrowed) {
  const Provenance a100 = predicted(shipped("gpt3-175b-a100-64.json")).provenance;
  EXPECT_EQ(a100.host, HostOrigin::kBorrowed);
  EXPECT_EQ(a100.host_from, "h100-sxm5-80gb-measured.json");
  EXPECT_EQ(a100.host_detail, "torch 2.11.0+cu130, its CPU model not recorded");
  EXPECT_EQ(part(a100, PricedPart::kGemm), kFromPublished);  // ml-engineering's MAMF table
  // use_flash_attn false: attention runs unfused, its matmuls GEMMs of their own.
  EXPECT_EQ(part(a100, PricedPart::kAttention), 0u);
  EXPECT_NE(provenance_line(a100).find(
                "host: borrowed (h100-sxm5-80gb-measured.json, torch 2.11.0+cu130, its CPU "
                "model not recorded)"),
            npos)
      << provenance_line(a100);
  // The public H100 profile: its memory-bound samples are copied from the measured H100.
  const Provenance h100 = predicted(shipped("llama3-8b-h100-8.json")).provenance;
  EXPECT_EQ(h100.host, HostOrigin::kBorrowed);
  EXPECT_EQ(part(h100, PricedPart::kMemoryBound), kFromBorrowed);
  EXPECT_EQ(h100.borrowed_from, std::vector<std::string>{"h100-sxm5-80gb-measured.json"});
  EXPECT_NE(part(h100, PricedPart::kGemm) & kFromPublished, 0u);  // XLA's bf16 table
}

// The origins are an OR per part: any number of threads, in any order, give one answer.
TEST(PricedFrom, TheSameWhateverOrderThreadsPriceIn) {
  const Workload w = shipped("llama3-8b-h100-8.json");
  Result<std::shared_ptr<const Profile>> profile =
      load_shared_profile(kScenarios + "/profiles/h100-sxm5-80gb-public.json");
  ASSERT_TRUE(profile.ok());
  const std::vector<OpShape> ops{
      GemmOp{4096, 4096, 4096, 1, DType::kBf16},
      GemmOp{4096, 4096, 4096, 1, DType::kFp32},  // no fp32 samples: the roofline
      AttentionOp{1, 32, 8, 4096, 128, true, true, DType::kBf16},
      MemoryBoundOp{.bytes = 1 << 24},
      CollectiveOp{.kind = CollectiveKind::kAllReduce, .bytes = 1 << 26, .group_size = 8},
      CollectiveOp{.kind = CollectiveKind::kAllGather, .bytes = 1 << 26, .group_size = 4},
      P2POp{.bytes = 1 << 22, .inter_node = true},
  };
  const auto model = [&] { return std::move(make_cost_model(w, *profile)).value(); };
  const std::unique_ptr<CostModel> alone = model();
  for (const OpShape& op : ops) (void)alone->shape_s(op);
  const std::unique_ptr<CostModel> shared = model();
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (std::size_t i = 0; i < ops.size(); ++i) (void)shared->shape_s(ops[(i + t) % ops.size()]);
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(shared->provenance(), alone->provenance());
  EXPECT_EQ(part(alone->provenance(), PricedPart::kGemm) & kFromRoofline, kFromRoofline);
}

TEST(ProvenanceLine, GroupsPartsAndNamesTheMachineOnce) {
  Provenance p;
  p.parts = {kFromMeasured, kFromMeasured | kFromPublished, 0, kFromNcclModel, kFromRoofline};
  p.measured_on = "m, 2026-01-02";
  p.host = HostOrigin::kBorrowed;
  p.host_from = "x.json";
  p.host_detail = "torch 1";
  p.cost_data = "profile";
  p.accuracy = OpenAccuracy{.runs = 5, .mean_error = -0.123};
  EXPECT_EQ(provenance_line(p),
            "GEMMs: measured (m, 2026-01-02); attention: measured + published; collectives: "
            "NCCL's model; P2P: roofline; host: borrowed (x.json, torch 1); stepsim accuracy: "
            "this profile's 5 open runs 12.3% optimistic on average");
  p.accuracy = OpenAccuracy{.runs = 1, .mean_error = 0.05};
  EXPECT_NE(provenance_line(p).find("this profile's 1 open run 5.0% pessimistic"), npos);
  p.accuracy = OpenAccuracy{};
  EXPECT_NE(provenance_line(p).find("stepsim accuracy: no open run uses this profile"), npos);
  p.cost_data = "roofline";
  EXPECT_NE(provenance_line(p).find("no open run uses the roofline"), npos);
  EXPECT_EQ(provenance_line(Provenance{}), "");  // a model that says nothing
}

std::string temp_path(const std::string& name) { return ::testing::TempDir() + "/" + name; }

// The table matches a profile by its bytes, wherever it lies: a copy matches, an edited copy
// does not; no table file, no statement.
TEST(OpenAccuracy, ATableMatchesAProfileByItsBytes) {
  Workload w = shipped("gpt3-175b-a100-64.json");
  Result<std::string> bytes = read_input_file(w.cost_model.profile_path);
  ASSERT_TRUE(bytes.ok());
  const std::string copy = temp_path("copied-profile.json");
  std::ofstream(copy, std::ios::binary) << *bytes;
  w.cost_model.profile_path = copy;
  Result<CostData> data = cost_data_of(w);
  ASSERT_TRUE(data.ok());
  EXPECT_EQ(data->name, "copied-profile.json");
  AccuracyReport report;
  for (const double e : {-0.1, -0.2, 0.05}) {
    AccuracyRow row;
    row.error = e;
    row.cost_data = *data;
    report.rows.push_back(row);
  }
  const std::string table = temp_path("accuracy-by-profile.json");
  {
    std::ofstream out(table);
    write_accuracy_by_cost_data_json(accuracy_by_cost_data(report), out);
  }
  Result<std::optional<OpenAccuracy>> found = open_accuracy_of(w, table);
  ASSERT_TRUE(found.ok()) << format_errors(found.errors());
  ASSERT_TRUE(found->has_value());
  EXPECT_EQ((*found)->runs, 3);
  EXPECT_DOUBLE_EQ((*found)->mean_error, -0.0833);  // rounded to 1e-4 in the table
  EXPECT_DOUBLE_EQ((*found)->mean_absolute_error, 0.1167);
  EXPECT_DOUBLE_EQ((*found)->min_error, -0.2);
  EXPECT_DOUBLE_EQ((*found)->max_error, 0.05);

  std::ofstream(copy, std::ios::binary) << *bytes << "\n";  // the same samples, other bytes
  Result<std::optional<OpenAccuracy>> edited = open_accuracy_of(w, table);
  ASSERT_TRUE(edited.ok() && edited->has_value());
  EXPECT_EQ((*edited)->runs, 0);

  Result<std::optional<OpenAccuracy>> none = open_accuracy_of(w, temp_path("no-such.json"));
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  std::ofstream(table) << R"({"cost_data": [{"fnv1a64": "0"}]})";
  Result<std::optional<OpenAccuracy>> broken = open_accuracy_of(w, table);
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(exit_status(broken.errors()), 1);
  EXPECT_NE(format_errors(broken.errors()).find("regenerate"), npos);
}

// predict quotes the shipped table for the public A100 profile: as many runs as the open
// report prices with it, and the prediction is the same with or without the statement.
TEST(OpenAccuracy, PredictQuotesTheShippedTableAndAppliesNothing) {
  const Workload w = shipped("gpt3-175b-a100-64.json");
  Result<std::vector<PublishedRun>> runs = load_published_runs(kScenarios + "/published/runs.json");
  ASSERT_TRUE(runs.ok());
  const CostData mine = cost_data_of(w).value();
  std::int64_t same = 0;
  for (const PublishedRun& r : *runs) {
    Result<Workload> rw = load_scenario_file(r.scenario, LoadOptions{kScenarios});
    ASSERT_TRUE(rw.ok());
    if (cost_data_of(*rw).value() == mine) ++same;
  }
  ASSERT_GT(same, 0);
  const Prediction quoted = predicted(w, kScenarios);
  ASSERT_TRUE(quoted.provenance.accuracy.has_value());
  EXPECT_EQ(quoted.provenance.accuracy->runs, same);
  EXPECT_NE(provenance_line(quoted.provenance)
                .find("stepsim accuracy: this profile's " + std::to_string(same) + " open runs"),
            npos);
  const Prediction plain = predicted(w);
  EXPECT_FALSE(plain.provenance.accuracy.has_value());
  EXPECT_EQ(quoted.step_time_s, plain.step_time_s);
  EXPECT_EQ(quoted.stages, plain.stages);

  // The JSON report carries the line and its facts.
  std::ostringstream json;
  PredictOptions options;
  options.scenarios_dir = kScenarios;
  const PredictOutcome out = predict(w, options);
  ASSERT_TRUE(out.run.has_value());
  write_prediction_json(w, out.run->result, out.run->cost_model, json, ReportOptions{});
  Result<nlohmann::json> doc = parse_json_text(json.str(), "predict");
  ASSERT_TRUE(doc.ok());
  const nlohmann::json& p = (*doc)["provenance"];
  EXPECT_EQ(p["line"], provenance_line(quoted.provenance));
  EXPECT_EQ(p["parts"]["gemm"], nlohmann::json::array({"published"}));
  EXPECT_EQ(p["host"]["origin"], "borrowed");
  EXPECT_EQ(p["host"]["from"], "h100-sxm5-80gb-measured.json");
  EXPECT_EQ(p["open_accuracy"]["runs"], same);
}

}  // namespace
}  // namespace stepsim::sim
