// Expert-parallel groups on GB200 NVL72 racks: each pipeline stage prices its own EP groups
// (set_stage_expert_nodes), the most split one, so a group that Megatron's rank order lays
// across a rack boundary sends its all-to-alls over the NICs. On the shipped DeepSeek-V3 job
// (256 GPUs, PP 4, EP 64: each stage's 64 ranks one EP group).

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <variant>

#include "shipped_scenario.hpp"
#include "stepsim/plan/decompose.hpp"

namespace stepsim {
namespace {

constexpr const char* kScenario = "deepseek-v3-gb200-256.json";

/// The nodes (NVLink domains) the first EP all-to-all of each stage spans.
std::vector<std::int64_t> a2a_nodes(const Workload& w) {
  std::vector<std::int64_t> nodes;
  for (const StagePlan& s : decompose(w).stages) {
    std::int64_t n = -1;
    for (const ChunkPlan& c : s.chunks) {
      for (const Op& op : c.forward) {
        if (op.name != "moe_dispatch_all_to_all") continue;
        const auto& coll = std::get<CollectiveOp>(op.shape);
        EXPECT_EQ(coll.group_size, 64);
        n = coll.nodes_spanned;
        break;
      }
      if (n >= 0) break;
    }
    nodes.push_back(n);
  }
  return nodes;
}

TEST(Nvl72ExpertGroups, EachStagePricesItsOwnEpGroup) {
  // 64 ranks per rack (the recipe's placement): stage s's ranks 64s..64s+63 fill rack s.
  const auto packed = testing::shipped_with(kScenario, "");
  ASSERT_TRUE(packed.ok()) << format_errors(packed.errors());
  EXPECT_EQ(a2a_nodes(*packed), (std::vector<std::int64_t>{1, 1, 1, 1}));
  // Full racks of 72: ranks 0-63 lie in rack 0; 64-127 cross into rack 1 (72), 128-191 into
  // rack 2 (144), 192-255 into rack 3 (216): three stages' groups span two domains.
  const auto full = testing::shipped_with(
      kScenario, "", {{"\"system\": \"systems/dgx-gb200-nvl72-64.json\"", "\"system\": \"systems/dgx-gb200-nvl72.json\""}});
  ASSERT_TRUE(full.ok()) << format_errors(full.errors());
  EXPECT_EQ(a2a_nodes(*full), (std::vector<std::int64_t>{1, 2, 2, 2}));
}

TEST(Nvl72ExpertGroups, GroupsThatDivideTheRackNeverStraddleIt) {
  // EP 8 at PP 16 on full racks: 8 divides 72, every group of 8 consecutive ranks lies in
  // one rack; EP 16 does not: the group of ranks 64-79 crosses rank 72.
  const auto ep8 = testing::shipped_with(
      kScenario, "",
      {{"\"system\": \"systems/dgx-gb200-nvl72-64.json\"", "\"system\": \"systems/dgx-gb200-nvl72.json\""},
       {"\"pipeline_model_parallel_size\": 4", "\"pipeline_model_parallel_size\": 16"},
       {"\"expert_model_parallel_size\": 64", "\"expert_model_parallel_size\": 8"}});
  ASSERT_TRUE(ep8.ok()) << format_errors(ep8.errors());
  const auto ep16 = testing::shipped_with(
      kScenario, "",
      {{"\"system\": \"systems/dgx-gb200-nvl72-64.json\"", "\"system\": \"systems/dgx-gb200-nvl72.json\""},
       {"\"pipeline_model_parallel_size\": 4", "\"pipeline_model_parallel_size\": 16"},
       {"\"expert_model_parallel_size\": 64", "\"expert_model_parallel_size\": 16"}});
  ASSERT_TRUE(ep16.ok()) << format_errors(ep16.errors());
  const WorkloadPlan p8 = decompose(*ep8);
  const WorkloadPlan p16 = decompose(*ep16);
  auto nodes_of_stage = [](const WorkloadPlan& p, std::size_t s) {
    for (const Op& op : p.stages[s].chunks[0].forward) {
      if (op.name == "moe_dispatch_all_to_all") return std::get<CollectiveOp>(op.shape).nodes_spanned;
    }
    return std::int64_t{-1};
  };
  // Stage 4 holds ranks 64-79 (16 per stage).
  EXPECT_EQ(nodes_of_stage(p8, 4), 1);
  EXPECT_EQ(nodes_of_stage(p16, 4), 2);
  EXPECT_EQ(nodes_of_stage(p16, 0), 1);
}

}  // namespace
}  // namespace stepsim
