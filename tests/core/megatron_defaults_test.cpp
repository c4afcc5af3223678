// Megatron's defaults for omitted keys (issue 40 item 2): attention_backend is Megatron-Core's
// "auto", and a scenario without cost_model is priced by the shipped public profile of its
// system's GPU (the roofline when none ships), which the reports then name.

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "../support/cli_runner.hpp"
#include "stepsim/check/load.hpp"
#include "stepsim/config/shipped.hpp"
#include "stepsim/import/import.hpp"
#include "stepsim/sweep/sweep_plan.hpp"
#include "stepsim/sweep/sweep_spec.hpp"

namespace stepsim {
namespace {

namespace fs = std::filesystem;

const std::string kScenarios = STEPSIM_SCENARIOS_DIR;

std::string shipped_profile(const std::string& stem) {
  return (fs::path(kScenarios) / "profiles" / (stem + ".json")).lexically_normal().string();
}

/// A small job on `system` (a path or short name), with `model_extra` model members and
/// `top_extra` top-level members (JSON text) added.
std::string job(const std::string& system, const std::string& model_extra = "",
                const std::string& top_extra = "") {
  return R"({"name": "t", "model": {"num_layers": 8, "hidden_size": 512,
    "num_attention_heads": 8, "seq_length": 256, "vocab_size": 1000)" +
         (model_extra.empty() ? "" : ", " + model_extra) + R"(},
    "training": {"world_size": 8, "micro_batch_size": 1, "global_batch_size": 8, "bf16": true},
    "system": ")" +
         system + "\"" + (top_extra.empty() ? "" : ", " + top_extra) + "}";
}

/// Loads `text` as a file beside scenarios/ would be, with `scenarios_dir` for shipped files.
Result<Workload> load(const std::string& text, const std::string& scenarios_dir = kScenarios) {
  return load_scenario_text(text, "t.json", kScenarios, LoadOptions{scenarios_dir});
}

TEST(MegatronDefaults, AttentionBackendLeftOutIsMegatronCoresAuto) {
  const auto omitted = load(job("dgx-h100-80gb"));
  ASSERT_TRUE(omitted.ok()) << format_errors(omitted.errors());
  EXPECT_EQ(omitted->model.attention_backend, AttentionBackend::kAuto);
  EXPECT_TRUE(omitted->model.fused_attention());
  const auto unfused = load(job("dgx-h100-80gb", R"("attention_backend": "unfused")"));
  ASSERT_TRUE(unfused.ok()) << format_errors(unfused.errors());
  EXPECT_EQ(unfused->model.attention_backend, AttentionBackend::kUnfused);
  EXPECT_FALSE(unfused->model.fused_attention());
}

TEST(MegatronDefaults, AContextParallelJobNeedsNoBackendNamed) {
  // tests/invalid/cp-unfused.json names "unfused" to keep its error; without the key the same
  // job loads, where the old default "unfused" failed with the fused-attention message.
  nlohmann::json doc = nlohmann::json::parse(
      testing::read_file(std::string(STEPSIM_SOURCE_DIR) + "/tests/invalid/cp-unfused.json"));
  const auto pinned = load(doc.dump());
  ASSERT_FALSE(pinned.ok());
  EXPECT_NE(format_errors(pinned.errors()).find("needs Transformer Engine's fused attention"),
            std::string::npos)
      << format_errors(pinned.errors());
  doc["model"].erase("attention_backend");
  const auto omitted = load(doc.dump());
  ASSERT_TRUE(omitted.ok()) << format_errors(omitted.errors());
  EXPECT_EQ(omitted->training.context_parallel_size, 2);
  EXPECT_EQ(omitted->model.attention_backend, AttentionBackend::kAuto);
}

TEST(MegatronDefaults, CostModelLeftOutIsThePublicProfileOfTheGpu) {
  for (const auto& [system, profile] :
       {std::pair{"dgx-h100-80gb", "h100-sxm5-80gb-public"},
        std::pair{"systems/dgx-a100-80gb.json", "a100-sxm4-80gb-public"},
        std::pair{"dgx-h200", "h200-sxm-141gb-public"},
        std::pair{"dgx-b200", "b200-sxm-180gb-public"}}) {
    const auto w = load(job(system));
    ASSERT_TRUE(w.ok()) << format_errors(w.errors());
    EXPECT_EQ(w->cost_model.kind, CostModelSpec::Kind::kProfile) << system;
    EXPECT_EQ(w->cost_model.profile_path, shipped_profile(profile));
    EXPECT_TRUE(w->cost_model.defaulted);
    EXPECT_EQ(default_cost_model_note(w->cost_model, w->system.gpu_name),
              "default: the shipped public profile of the system's GPU; \"cost_model\": "
              "\"roofline\" for the data sheet's roofline");
  }
}

TEST(MegatronDefaults, CostModelLeftOutIsTheRooflineWhereNoPublicProfileShips) {
  for (const char* system : {"dgx-gb200-nvl72", "h800-80gb-deepseek"}) {
    const auto w = load(job(system));
    ASSERT_TRUE(w.ok()) << format_errors(w.errors());
    EXPECT_EQ(w->cost_model.kind, CostModelSpec::Kind::kRoofline) << system;
    EXPECT_TRUE(w->cost_model.defaulted);
    EXPECT_EQ(default_cost_model_note(w->cost_model, w->system.gpu_name),
              "default: no public profile of the " + w->system.gpu_name +
                  " ships; \"cost_model\": {\"profile\": \"<file>\"} for a calibrated one");
  }
}

TEST(MegatronDefaults, AGivenCostModelIsKeptAndNotNoted) {
  const auto roofline = load(job("dgx-h100-80gb", "", R"("cost_model": "roofline")"));
  ASSERT_TRUE(roofline.ok()) << format_errors(roofline.errors());
  EXPECT_EQ(roofline->cost_model, CostModelSpec{});
  EXPECT_EQ(default_cost_model_note(roofline->cost_model, roofline->system.gpu_name), "");
  const auto measured =
      load(job("dgx-h100-80gb", "", R"("cost_model": {"profile": "h100-sxm5-80gb-measured"})"));
  ASSERT_TRUE(measured.ok()) << format_errors(measured.errors());
  EXPECT_EQ(measured->cost_model.profile_path, shipped_profile("h100-sxm5-80gb-measured"));
  EXPECT_FALSE(measured->cost_model.defaulted);
}

TEST(MegatronDefaults, InMemoryWorkloadsKeepTheRoofline) {
  // No scenarios folder to find a shipped profile in: the roofline, noted as the default.
  const auto w = load(job("systems/dgx-h100-80gb.json"), "");
  ASSERT_TRUE(w.ok()) << format_errors(w.errors());
  EXPECT_EQ(w->cost_model.kind, CostModelSpec::Kind::kRoofline);
  EXPECT_TRUE(w->cost_model.defaulted);
  // A workload built in code names no cost model: the roofline, with nothing to say.
  const Workload built;
  EXPECT_EQ(built.cost_model.kind, CostModelSpec::Kind::kRoofline);
  EXPECT_EQ(default_cost_model_note(built.cost_model, "NVIDIA H100-SXM5-80GB"), "");
}

TEST(MegatronDefaults, AnImportedLaunchLineTakesTheDefaultCostModel) {
  MegatronImportOptions options;
  options.system = "systems/dgx-h100-80gb.json";
  const auto imported = scenario_from_megatron_args(
      "torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 4 --hidden-size 1024 "
      "--num-attention-heads 16 --seq-length 1024 --max-position-embeddings 1024 "
      "--micro-batch-size 1 --global-batch-size 8 --bf16 --vocab-size 50257",
      options);
  ASSERT_TRUE(imported.ok()) << format_errors(imported.errors());
  EXPECT_FALSE(nlohmann::json::parse(imported->scenario_json).contains("cost_model"));
  const auto w = load(imported->scenario_json);
  ASSERT_TRUE(w.ok()) << format_errors(w.errors());
  EXPECT_EQ(w->cost_model.profile_path, shipped_profile("h100-sxm5-80gb-public"));
  EXPECT_TRUE(w->cost_model.defaulted);
}

TEST(MegatronDefaults, ASweepPricesEachSystemByItsOwnGpusDefault) {
  const std::string text = R"({"base": )" + job("dgx-h100-80gb") +
                           R"(, "search": {"system": ["dgx-h100-80gb", "dgx-h200", "dgx-b200", )"
                           R"("dgx-b300"]}})";
  const auto spec = load_sweep_text(text, "s.json", kScenarios, LoadOptions{kScenarios});
  ASSERT_TRUE(spec.ok()) << format_errors(spec.errors());
  const std::string expected[] = {shipped_profile("h100-sxm5-80gb-public"),
                                  shipped_profile("h200-sxm-141gb-public"),
                                  shipped_profile("b200-sxm-180gb-public"), ""};
  for (std::size_t i = 0; i < 4; ++i) {
    const auto w = sim::sweep_configuration(*spec, static_cast<std::int64_t>(i));
    ASSERT_TRUE(w.ok()) << format_errors(w.errors());
    EXPECT_EQ(w->cost_model.profile_path, expected[i]) << w->system.name;
    EXPECT_TRUE(w->cost_model.defaulted);
  }
}

/// A scenario file written for the CLI (its system found under scenarios/ by short name).
std::string scenario_file(const std::string& name, const std::string& text) {
  const fs::path path = fs::path(::testing::TempDir()) / name;
  std::ofstream(path) << text;
  return path.string();
}

TEST(MegatronDefaults, TheReportsSayTheCostModelWasTakenByDefault) {
  const std::string file = scenario_file("defaults-h100.json", job("dgx-h100-80gb"));
  const auto json = testing::run_stepsim("predict --format json '" + file + "'", false);
  ASSERT_EQ(json.status, 0) << json.out;
  const nlohmann::json doc = nlohmann::json::parse(json.out);
  EXPECT_EQ(doc["cost_model"].get<std::string>().rfind("profile h100-sxm5-80gb-public.json", 0),
            0u)
      << doc["cost_model"];
  const std::string note =
      "default: the shipped public profile of the system's GPU; \"cost_model\": \"roofline\" "
      "for the data sheet's roofline";
  EXPECT_EQ(doc["cost_model_default"], note);
  const auto text = testing::run_stepsim("predict '" + file + "'", false);
  ASSERT_EQ(text.status, 0) << text.out;
  EXPECT_NE(text.out.find("  cost model  profile h100-sxm5-80gb-public.json"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("(" + note + ")\n"), std::string::npos) << text.out;
  const auto check = testing::run_stepsim("check '" + file + "'", false);
  ASSERT_EQ(check.status, 0) << check.out;
  EXPECT_NE(check.out.find(" (" + note + ")\n"), std::string::npos) << check.out;
  // Named, it is not noted.
  const std::string named = scenario_file(
      "defaults-h100-roofline.json", job("dgx-h100-80gb", "", R"("cost_model": "roofline")"));
  const auto given = testing::run_stepsim("predict --format json '" + named + "'", false);
  ASSERT_EQ(given.status, 0) << given.out;
  EXPECT_FALSE(nlohmann::json::parse(given.out).contains("cost_model_default"));
}

TEST(MegatronDefaults, ASweepSummarySaysSo) {
  const std::string base = scenario_file("defaults-sweep-base.json", job("dgx-h100-80gb"));
  const std::string sweep = scenario_file(
      "defaults-sweep.json",
      R"({"base": ")" + base + R"(", "search": {"training.micro_batch_size": [1, 2]}})");
  const auto text = testing::run_stepsim("sweep '" + sweep + "'", false);
  ASSERT_EQ(text.status, 0) << text.out;
  EXPECT_NE(text.out.find("cost model: profile h100-sxm5-80gb-public.json (default: the shipped "
                          "public profile of the system's GPU; \"cost_model\": \"roofline\""),
            std::string::npos)
      << text.out;
  const auto json = testing::run_stepsim("sweep --format json '" + sweep + "'", false);
  ASSERT_EQ(json.status, 0) << json.out;
  EXPECT_TRUE(nlohmann::json::parse(json.out).contains("cost_model_default")) << json.out;
}

}  // namespace
}  // namespace stepsim
