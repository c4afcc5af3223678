// "Make it fit" (sim/sweep make_it_fit.hpp): a 70B job that does not fit gets changes that,
// applied to its scenario file and loaded as any scenario is, pass `check`, fit by the memory
// model and come fastest first; `memory`, `predict` and `check` say so in their first line; a
// job that fits gets no list.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "../support/cli_runner.hpp"
#include "stepsim/check/load.hpp"
#include "stepsim/cost/make_cost_model.hpp"
#include "stepsim/memory/memory_model.hpp"
#include "stepsim/sweep/make_it_fit.hpp"

namespace stepsim {
namespace {

using nlohmann::json;

const std::string kScenarios = STEPSIM_SCENARIOS_DIR;
const std::string kFitting = kScenarios + "/llama2-70b-h100-64.json";

json read_json(const std::string& path) { return json::parse(testing::read_file(path)); }

/// Llama 2 70B on 64 H100 as shipped (TP 4 + SP, PP 4 x 5 virtual, distributed optimizer,
/// no recompute), with what a first try at a larger batch per GPU leaves out: micro-batch 4,
/// no sequence parallelism, no distributed optimizer.
json too_big() {
  json doc = read_json(kFitting);
  doc["name"] = "llama2-70b-too-big";
  doc["training"]["micro_batch_size"] = 4;
  doc["training"]["sequence_parallel"] = false;
  doc["training"]["use_distributed_optimizer"] = false;
  doc["training"]["overlap_param_gather"] = false;
  return doc;
}

/// Writes `doc` as a scenario file of its own (its system and profile resolve under
/// scenarios/) and returns the path.
std::string write_scenario(const json& doc, const std::string& stem) {
  const std::string path = ::testing::TempDir() + "/" + stem + ".json";
  std::ofstream(path) << doc.dump(2);
  return path;
}

Result<Workload> load_doc(const json& doc) {
  return load_scenario_text(doc.dump(), "test.json", ".", LoadOptions{kScenarios});
}

std::int64_t analytic_peak(const Workload& w) {
  std::int64_t peak = 0;
  for (const StageMemory& s : analytic_memory(w)) peak = std::max(peak, s.peak_bytes);
  return peak;
}

/// The scenario with a suggestion's changes written over it, as a user would edit the file.
json applied(json doc, const json& suggestion) {
  for (const json& c : suggestion["changes"]) {
    const std::string key = c["key"].get<std::string>();
    const std::size_t dot = key.find('.');
    doc[key.substr(0, dot)][key.substr(dot + 1)] = c["to"];
  }
  return doc;
}

TEST(MakeItFit, PremiseTheJobDoesNotFitAndTheShippedOneDoes) {
  const Result<Workload> big = load_doc(too_big());
  ASSERT_TRUE(big.ok()) << format_errors(big.errors());
  EXPECT_GT(analytic_peak(*big), big->system.memory_bytes);
  const Result<Workload> shipped = load_scenario_file(kFitting, LoadOptions{kScenarios});
  ASSERT_TRUE(shipped.ok());
  EXPECT_LE(analytic_peak(*shipped), shipped->system.memory_bytes);
}

TEST(MakeItFit, EverySuggestionFitsPassesCheckAndTheyComeFastestFirst) {
  const std::string path = write_scenario(too_big(), "make_it_fit_too_big");
  const testing::CliRun r = testing::run_stepsim("memory '" + path + "' --format json", false);
  ASSERT_EQ(r.status, 0) << r.out;
  const json doc = json::parse(r.out);
  EXPECT_FALSE(doc["fits"].get<bool>());
  const json& advice = doc["make_it_fit"];
  EXPECT_EQ(advice["peak"], "analytic");
  EXPECT_EQ(advice["peak_bytes"], doc["peak_bytes"]);
  const json& suggestions = advice["suggestions"];
  ASSERT_GE(suggestions.size(), 2u) << advice.dump(2);
  EXPECT_LE(suggestions.size(), 5u);
  double previous = 0;
  for (const json& s : suggestions) {
    SCOPED_TRACE(s.dump());
    ASSERT_FALSE(s["changes"].empty());
    // Applied to the file and loaded as any scenario: Megatron's rules and the profile.
    const json changed = applied(too_big(), s);
    const Result<Workload> w = load_doc(changed);
    ASSERT_TRUE(w.ok()) << format_errors(w.errors());
    ASSERT_TRUE(make_cost_model(*w).ok());
    // The memory model fits it, with the figure the suggestion gives.
    EXPECT_LE(analytic_peak(*w), w->system.memory_bytes);
    EXPECT_EQ(analytic_peak(*w), s["analytic_peak_bytes"].get<std::int64_t>());
    EXPECT_LE(s["simulated_peak_bytes"].get<std::int64_t>(), w->system.memory_bytes);
    // `check` of the edited file says ok.
    const testing::CliRun check =
        testing::run_stepsim("check '" + write_scenario(changed, "make_it_fit_applied") + "'");
    EXPECT_EQ(check.status, 0) << check.out;
    EXPECT_EQ(check.out.rfind("ok: ", 0), 0u) << check.out;
    // Fastest first.
    const double step = s["step_time_s"].get<double>();
    EXPECT_GT(step, 0);
    EXPECT_GE(step, previous);
    previous = step;
  }
}

TEST(MakeItFit, SuggestionStepTimesAreWhatPredictSaysOfTheChangedJob) {
  const std::string path = write_scenario(too_big(), "make_it_fit_predict");
  const testing::CliRun r = testing::run_stepsim("predict '" + path + "' --format json", false);
  ASSERT_EQ(r.status, 0) << r.out;
  const json doc = json::parse(r.out);
  EXPECT_FALSE(doc["fits_in_memory"].get<bool>());
  const json& advice = doc["make_it_fit"];
  EXPECT_EQ(advice["peak"], "simulated");
  EXPECT_EQ(advice["peak_bytes"], doc["peak_memory_bytes"]);
  ASSERT_FALSE(advice["suggestions"].empty());
  const json& fastest = advice["suggestions"][0];
  const std::string changed = write_scenario(applied(too_big(), fastest), "make_it_fit_fastest");
  const testing::CliRun p = testing::run_stepsim("predict '" + changed + "' --format json", false);
  ASSERT_EQ(p.status, 0) << p.out;
  const json predicted = json::parse(p.out);
  EXPECT_TRUE(predicted["fits_in_memory"].get<bool>());
  EXPECT_FALSE(predicted.contains("make_it_fit"));
  EXPECT_DOUBLE_EQ(predicted["step_time_s"].get<double>(), fastest["step_time_s"].get<double>());
  EXPECT_EQ(predicted["peak_memory_bytes"], fastest["simulated_peak_bytes"]);
}

/// Whether `doc` passes Megatron's rules and fits by the memory model.
bool fits(const json& doc) {
  const Result<Workload> w = load_doc(doc);
  return w.ok() && analytic_peak(*w) <= w->system.memory_bytes;
}

// Each lever's change is its smallest that fits: a smaller micro-batch only as small as
// needed, full recompute of no more layers per chunk than needed.
TEST(MakeItFit, SingleChangesAreTheSmallestOfTheirKnob) {
  json base = read_json(kFitting);
  base["training"]["micro_batch_size"] = 4;
  ASSERT_FALSE(fits(base));
  const std::string path = write_scenario(base, "make_it_fit_smallest");
  const testing::CliRun r = testing::run_stepsim("memory '" + path + "' --format json", false);
  ASSERT_EQ(r.status, 0) << r.out;
  int checked = 0;
  const json doc = json::parse(r.out);
  for (const json& s : doc["make_it_fit"]["suggestions"]) {
    SCOPED_TRACE(s.dump());
    EXPECT_TRUE(fits(applied(base, s)));
    const json& c = s["changes"];
    if (c.size() == 1 && c[0]["key"] == "training.micro_batch_size") {
      const std::int64_t from = c[0]["from"].get<std::int64_t>();
      for (std::int64_t d = c[0]["to"].get<std::int64_t>() + 1; d < from; ++d) {
        if (from % d != 0) continue;
        json smaller = base;
        smaller["training"]["micro_batch_size"] = d;
        EXPECT_FALSE(fits(smaller)) << "micro_batch_size " << d << " fits";
      }
      ++checked;
    }
    if (c.size() == 3 && c[2]["key"] == "training.recompute_num_layers" &&
        c[1]["to"] == "block") {
      for (std::int64_t n = 1; n < c[2]["to"].get<std::int64_t>(); ++n) {
        json fewer = applied(base, s);
        fewer["training"]["recompute_num_layers"] = n;
        EXPECT_FALSE(fits(fewer)) << "recompute_num_layers " << n << " fits";
      }
      ++checked;
    }
  }
  EXPECT_GE(checked, 2);
}

TEST(MakeItFit, FirstLineSaysDoesNotFitInEveryCommand) {
  const std::string path = write_scenario(too_big(), "make_it_fit_text");
  for (const std::string command : {"memory", "predict", "check"}) {
    SCOPED_TRACE(command);
    const testing::CliRun r = testing::run_stepsim(command + " '" + path + "'", false);
    EXPECT_EQ(r.status, command == "check" ? 3 : 0) << r.out;
    EXPECT_EQ(r.out.rfind("does not fit: ", 0), 0u) << r.out;
    EXPECT_NE(r.out.find("fastest first:\n  1. "), std::string::npos) << r.out;
  }
  const testing::CliRun check = testing::run_stepsim("check '" + path + "'", false);
  EXPECT_EQ(check.out.find("ok: "), std::string::npos) << check.out;
}

TEST(MakeItFit, AJobThatFitsGetsNoList) {
  for (const std::string command : {"memory", "predict", "check"}) {
    SCOPED_TRACE(command);
    const testing::CliRun r = testing::run_stepsim(command + " '" + kFitting + "'", false);
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_EQ(r.out.find("does not fit"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("fastest first"), std::string::npos) << r.out;
  }
  const testing::CliRun json_run =
      testing::run_stepsim("memory '" + kFitting + "' --format json", false);
  EXPECT_FALSE(json::parse(json_run.out).contains("make_it_fit"));
}

TEST(MakeItFit, LibraryListsOnlyChangesThatFitTheMemoryModel) {
  const json doc = too_big();
  const Result<Workload> w = load_doc(doc);
  ASSERT_TRUE(w.ok());
  const auto cost = make_cost_model(*w);
  ASSERT_TRUE(cost.ok());
  const std::optional<sim::FitAdvice> advice =
      sim::analytic_fit_advice(*w, defaulted_keys_of_scenario(doc.dump()), **cost);
  ASSERT_TRUE(advice.has_value());
  EXPECT_FALSE(advice->simulated_peak);
  EXPECT_EQ(advice->peak_bytes, analytic_peak(*w));
  EXPECT_GE(advice->tried, static_cast<std::int64_t>(advice->suggestions.size()));
  for (const sim::FitSuggestion& s : advice->suggestions) {
    EXPECT_LE(s.analytic_peak_bytes, w->system.memory_bytes);
    EXPECT_FALSE(s.megatron_args.empty());
    for (const sim::FitChange& c : s.changes) EXPECT_NE(c.from, c.to) << c.key;
  }
  // A job that fits gets no advice at all.
  const Result<Workload> fits = load_scenario_file(kFitting, LoadOptions{kScenarios});
  ASSERT_TRUE(fits.ok());
  const auto fits_cost = make_cost_model(*fits);
  ASSERT_TRUE(fits_cost.ok());
  EXPECT_FALSE(sim::analytic_fit_advice(*fits, {}, **fits_cost).has_value());
}

}  // namespace
}  // namespace stepsim
