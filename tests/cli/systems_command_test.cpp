// Runs the real `stepsim systems` and the short names of --system against the library.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "../support/cli_runner.hpp"
#include "stepsim/config/shipped.hpp"

namespace {

using stepsim::testing::run_stepsim;

TEST(SystemsCommand, JsonListsWhatTheLibraryLists) {
  const stepsim::testing::CliRun r = run_stepsim("systems --format json", false);
  ASSERT_EQ(r.status, 0) << r.out;
  const nlohmann::json doc = nlohmann::json::parse(r.out);
  const auto rows = stepsim::shipped_systems(STEPSIM_SCENARIOS_DIR);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(doc.size(), rows->size());
  for (std::size_t i = 0; i < rows->size(); ++i) {
    const nlohmann::json& j = doc[i];
    const stepsim::ShippedSystem& s = (*rows)[i];
    EXPECT_EQ(j["name"], s.name);
    EXPECT_EQ(j["gpu_name"], s.gpu_name);
    EXPECT_EQ(j["gpus_per_node"], s.gpus_per_node);
    EXPECT_EQ(j["intra_node_bandwidth_bytes_per_s"], s.intra_node_bandwidth_bytes_per_s);
    EXPECT_EQ(j["inter_node_bandwidth_bytes_per_s"], s.inter_node_bandwidth_bytes_per_s);
    EXPECT_EQ(j["profiles"], s.profiles);
    EXPECT_EQ(j["default_cost_model"], s.default_cost_model);
  }
}

TEST(SystemsCommand, TextHasOneRowPerSystemWithItsProfiles) {
  const stepsim::testing::CliRun r = run_stepsim("systems", false);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out.rfind("system", 0), 0u) << r.out;  // a header first
  const std::size_t row = r.out.find("\ndgx-h100-80gb ");
  ASSERT_NE(row, std::string::npos) << r.out;
  const std::string line = r.out.substr(row + 1, r.out.find('\n', row + 1) - row - 1);
  EXPECT_NE(line.find("NVIDIA H100-SXM5-80GB"), std::string::npos) << line;
  EXPECT_NE(line.find(" 450 "), std::string::npos) << line;
  // The public profile, marked, is what a scenario without cost_model takes.
  EXPECT_NE(line.find("h100-sxm5-80gb-measured, h100-sxm5-80gb-public*"), std::string::npos)
      << line;
  const std::size_t b200 = r.out.find("\ndgx-b200 ");  // its public profile, marked
  ASSERT_NE(b200, std::string::npos) << r.out;
  EXPECT_NE(r.out.substr(b200 + 1, r.out.find('\n', b200 + 1) - b200 - 1)
                .find("b200-sxm-180gb-public*"),
            std::string::npos)
      << r.out;
  const std::size_t b300 = r.out.find("\ndgx-b300 ");  // no B300 profile ships: none marked
  ASSERT_NE(b300, std::string::npos) << r.out;
  EXPECT_EQ(r.out.substr(b300 + 1, r.out.find('\n', b300 + 1) - b300 - 1).find('*'),
            std::string::npos)
      << r.out;
  EXPECT_EQ(run_stepsim("systems --format yaml").status, 2);
}

const std::string kLine =
    "torchrun --nnodes 1 --nproc_per_node 8 pretrain_gpt.py --num-layers 4 --hidden-size 1024 "
    "--num-attention-heads 16 --seq-length 1024 --max-position-embeddings 1024 "
    "--micro-batch-size 1 --global-batch-size 8 --bf16 --vocab-size 50257";

TEST(SystemsCommand, SystemOptionTakesAShortName) {
  const auto exact = run_stepsim("import-megatron --system dgx-h100-80gb '" + kLine + "'", false);
  ASSERT_EQ(exact.status, 0) << exact.out;
  EXPECT_EQ(nlohmann::json::parse(exact.out)["system"], "systems/dgx-h100-80gb.json");
  const auto prefix = run_stepsim("import-megatron --system dgx-h100 '" + kLine + "'", false);
  ASSERT_EQ(prefix.status, 0) << prefix.out;
  EXPECT_EQ(prefix.out, exact.out);
  const auto predict =
      run_stepsim("predict --format json --system dgx-a100 --megatron-args '" + kLine + "'", false);
  EXPECT_EQ(predict.status, 0) << predict.out;
}

TEST(SystemsCommand, AnAmbiguousSystemOptionExitsTwoListingTheCandidates) {
  const auto r = run_stepsim("import-megatron --system dgx-h '" + kLine + "'");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("--system=\"dgx-h\" matches several shipped systems: dgx-h100-80gb, "
                       "dgx-h200"),
            std::string::npos)
      << r.out;
  const auto unknown = run_stepsim("import-megatron --system tpu-v5 '" + kLine + "'");
  EXPECT_EQ(unknown.status, 2);
  EXPECT_NE(unknown.out.find("tpu-v5"), std::string::npos) << unknown.out;
}

}  // namespace
