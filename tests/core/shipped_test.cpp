// Short names of shipped systems and profiles (stepsim/config/shipped.hpp): lookup by stem,
// in scenarios and in the listing of `stepsim systems`.

#include "stepsim/config/shipped.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "stepsim/check/load.hpp"

namespace stepsim {
namespace {

namespace fs = std::filesystem;

const std::string kScenarios = STEPSIM_SCENARIOS_DIR;

std::string shipped(const std::string& folder, const std::string& stem) {
  return (fs::path(kScenarios) / folder / (stem + ".json")).lexically_normal().string();
}

// A small scenario whose system and cost model are the JSON values given.
std::string scenario(const std::string& system, const std::string& cost_model = "\"roofline\"") {
  return R"({"name": "t", "model": {"num_layers": 8, "hidden_size": 512,
    "num_attention_heads": 8, "seq_length": 256, "vocab_size": 1000},
    "training": {"world_size": 8, "micro_batch_size": 1, "global_batch_size": 8, "bf16": true},
    "system": )" +
         system + R"(, "cost_model": )" + cost_model + "}";
}

Result<Workload> load(const std::string& text) {
  return load_scenario_text(text, "t.json", "/nonexistent", LoadOptions{kScenarios});
}

TEST(ShortName, WrittenAsAPathIsNoShortName) {
  EXPECT_TRUE(is_short_name("dgx-h100"));
  EXPECT_FALSE(is_short_name("systems/dgx-h100-80gb.json"));
  EXPECT_FALSE(is_short_name("dgx-h100-80gb.json"));
  EXPECT_FALSE(is_short_name(""));
}

TEST(ShortName, ExactStemThenUniquePrefix) {
  const ShortNameMatch exact = find_shipped("dgx-h100-80gb", kScenarios, ShippedKind::kSystem);
  EXPECT_EQ(exact.path, shipped("systems", "dgx-h100-80gb"));
  EXPECT_TRUE(exact.candidates.empty());
  const ShortNameMatch prefix = find_shipped("dgx-h100", kScenarios, ShippedKind::kSystem);
  EXPECT_EQ(prefix.path, shipped("systems", "dgx-h100-80gb"));
  const ShortNameMatch profile =
      find_shipped("h100-sxm5-80gb-pub", kScenarios, ShippedKind::kProfile);
  EXPECT_EQ(profile.path, shipped("profiles", "h100-sxm5-80gb-public"));
}

TEST(ShortName, AnExactStemWinsOverTheLongerOnesItPrefixes) {
  const fs::path dir = fs::temp_directory_path() / "stepsim_shipped_test_exact";
  fs::create_directories(dir / "systems");
  std::ofstream(dir / "systems/a.json") << "{}";
  std::ofstream(dir / "systems/ab.json") << "{}";
  const ShortNameMatch m = find_shipped("a", dir.string(), ShippedKind::kSystem);
  EXPECT_EQ(m.path, (dir / "systems/a.json").string());
  EXPECT_TRUE(m.candidates.empty());
  fs::remove_all(dir);
}

TEST(ShortName, AmbiguousAndUnknownNames) {
  const ShortNameMatch several = find_shipped("dgx-h", kScenarios, ShippedKind::kSystem);
  EXPECT_EQ(several.path, "");
  EXPECT_EQ(several.candidates, (std::vector<std::string>{"dgx-h100-80gb", "dgx-h200"}));
  EXPECT_EQ(ambiguous_short_name(several, ShippedKind::kSystem),
            " matches several shipped systems: dgx-h100-80gb, dgx-h200; give one of them");
  const ShortNameMatch none = find_shipped("tpu-v5", kScenarios, ShippedKind::kSystem);
  EXPECT_EQ(none.path, "");
  EXPECT_TRUE(none.candidates.empty());
}

TEST(ShortName, ScenariosNameSystemsAndProfilesByStemOrPrefix) {
  for (const char* name : {"dgx-h100-80gb", "dgx-h100"}) {
    for (const char* profile : {"h100-sxm5-80gb-public", "h100-sxm5-80gb-pu"}) {
      auto w = load(scenario(std::string("\"") + name + "\"",
                             std::string(R"({"profile": ")") + profile + "\"}"));
      ASSERT_TRUE(w.ok()) << format_errors(w.errors());
      EXPECT_EQ(w->system.name, "dgx-h100-80gb");
      EXPECT_EQ(w->cost_model.profile_path, shipped("profiles", "h100-sxm5-80gb-public"));
    }
  }
}

TEST(ShortName, AnAmbiguousNameIsAnInputErrorListingTheCandidates) {
  auto system = load(scenario("\"dgx-h\""));
  ASSERT_FALSE(system.ok());
  EXPECT_EQ(system.errors()[0].to_string(),
            "t.json: system=\"dgx-h\" matches several shipped systems: dgx-h100-80gb, dgx-h200; "
            "give one of them");
  EXPECT_EQ(exit_status(system.errors()), 2);
  auto profile = load(scenario("\"dgx-h100\"", R"({"profile": "h100"})"));
  ASSERT_FALSE(profile.ok());
  EXPECT_EQ(profile.errors()[0].key, "cost_model.profile");
  EXPECT_NE(profile.errors()[0].message.find("h100-sxm5-80gb-measured, h100-sxm5-80gb-public"),
            std::string::npos);
}

TEST(ShortName, AnUnknownNameKeepsTheMessageOfAMissingFile) {
  auto w = load(scenario("\"tpu-v5\""));
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.errors()[0].to_string(),
            "t.json: system=\"tpu-v5\": no such file (looked in "
            "/nonexistent or " +
                kScenarios + ")");
}

TEST(ShortName, AFileAsGivenWinsOverTheShippedOnes) {
  const fs::path dir = fs::temp_directory_path() / "stepsim_shipped_test_local";
  fs::create_directories(dir);
  fs::copy_file(kScenarios + "/systems/dgx-h200.json", dir / "dgx-h100",
                fs::copy_options::overwrite_existing);
  auto w =
      load_scenario_text(scenario("\"dgx-h100\""), "t.json", dir.string(), LoadOptions{kScenarios});
  ASSERT_TRUE(w.ok()) << format_errors(w.errors());
  EXPECT_EQ(w->system.name, "dgx-h200");
  fs::remove_all(dir);
}

TEST(ShippedSystems, ListsEverySystemWithTheProfilesOfItsGpu) {
  EXPECT_EQ(profile_prefix_of_gpu("NVIDIA H100-SXM5-80GB"), "h100-sxm5-80gb");
  const Result<std::vector<ShippedSystem>> rows = shipped_systems(kScenarios);
  ASSERT_TRUE(rows.ok()) << format_errors(rows.errors());
  ASSERT_EQ(rows->size(), shipped_stems(kScenarios, ShippedKind::kSystem).size());
  const auto h100 = std::find_if(rows->begin(), rows->end(),
                                 [](const ShippedSystem& s) { return s.name == "dgx-h100-80gb"; });
  ASSERT_NE(h100, rows->end());
  EXPECT_EQ(h100->gpu_name, "NVIDIA H100-SXM5-80GB");
  EXPECT_EQ(h100->gpus_per_node, 8);
  EXPECT_EQ(h100->intra_node_bandwidth_bytes_per_s, 450e9);
  EXPECT_EQ(h100->inter_node_bandwidth_bytes_per_s, 50e9);
  EXPECT_EQ(h100->profiles,
            (std::vector<std::string>{"h100-sxm5-80gb-measured", "h100-sxm5-80gb-public"}));
  EXPECT_EQ(h100->default_cost_model, "h100-sxm5-80gb-public");
  const auto h800 = std::find_if(rows->begin(), rows->end(), [](const ShippedSystem& s) {
    return s.name == "h800-80gb-deepseek";
  });
  ASSERT_NE(h800, rows->end());
  EXPECT_EQ(h800->default_cost_model, "roofline");
  // DGX B200 takes its GPU's public profile (issue 38, item 6); GB200 has none yet.
  const auto b200 = std::find_if(rows->begin(), rows->end(),
                                 [](const ShippedSystem& s) { return s.name == "dgx-b200"; });
  ASSERT_NE(b200, rows->end());
  EXPECT_EQ(b200->profiles, (std::vector<std::string>{"b200-sxm-180gb-public"}));
  EXPECT_EQ(b200->default_cost_model, "b200-sxm-180gb-public");
  const auto gb200 = std::find_if(rows->begin(), rows->end(),
                                  [](const ShippedSystem& s) { return s.name == "dgx-gb200-nvl72"; });
  ASSERT_NE(gb200, rows->end());
  EXPECT_EQ(gb200->default_cost_model, "roofline");
  // The rule holds for the shipped files: every profile belongs to some shipped system.
  for (const std::string& p : shipped_stems(kScenarios, ShippedKind::kProfile)) {
    EXPECT_TRUE(std::any_of(rows->begin(), rows->end(),
                            [&p](const ShippedSystem& s) {
                              return std::find(s.profiles.begin(), s.profiles.end(), p) !=
                                     s.profiles.end();
                            }))
        << p << " belongs to no shipped system";
  }
}

// A B200 scenario without cost_model resolves to the shipped B200 public profile.
TEST(DefaultCostModel, B200TakesItsPublicProfile) {
  const CostModelSpec spec = default_cost_model("NVIDIA B200-SXM-180GB", kScenarios);
  EXPECT_TRUE(spec.defaulted);
  ASSERT_EQ(spec.kind, CostModelSpec::Kind::kProfile);
  EXPECT_EQ(fs::path(spec.profile_path).filename(), "b200-sxm-180gb-public.json");
  EXPECT_TRUE(fs::exists(spec.profile_path)) << spec.profile_path;
  const CostModelSpec gb200 = default_cost_model("NVIDIA GB200-186GB", kScenarios);
  EXPECT_NE(gb200.kind, CostModelSpec::Kind::kProfile);
  EXPECT_TRUE(gb200.profile_path.empty());
}

}  // namespace
}  // namespace stepsim
