// RankGenerator against Megatron-Core's own: the groups of its docstrings
// (megatron/core/parallel_state.py, initialize_model_parallel and
// generate_masked_orthogonal_rank_groups) and groups printed by running its
// generate_masked_orthogonal_rank_groups for the sizes below (order tp-cp-ep-dp-pp).

#include "stepsim/layout/rank_layout.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace stepsim {
namespace {

using Groups = std::vector<std::vector<std::int64_t>>;

TEST(RankGenerator, InitializeModelParallelDocstring) {
  // 16 GPUs, tp 2, pp 4 (dp 2).
  const RankGenerator g(ParallelSizes{.tp = 2, .dp = 2, .pp = 4});
  EXPECT_EQ(g.world_size(), 16);
  EXPECT_EQ(g.groups("dp"),
            (Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}, {8, 10}, {9, 11}, {12, 14}, {13, 15}}));
  EXPECT_EQ(g.groups("tp"),
            (Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}, {8, 9}, {10, 11}, {12, 13}, {14, 15}}));
  EXPECT_EQ(g.groups("pp"), (Groups{{0, 4, 8, 12}, {1, 5, 9, 13}, {2, 6, 10, 14}, {3, 7, 11, 15}}));
}

TEST(RankGenerator, MaskedGroupsDocstring) {
  // parallel_size = [tp, dp, pp] = [2, 3, 4], order tp-dp-pp, mask dp.
  const RankGenerator g(ParallelSizes{.tp = 2, .dp = 3, .pp = 4}, "tp-dp-pp");
  const Groups dp = g.groups("dp");
  ASSERT_EQ(dp.size(), 8u);
  EXPECT_EQ(dp[0], (std::vector<std::int64_t>{0, 2, 4}));
  EXPECT_EQ(dp[1], (std::vector<std::int64_t>{1, 3, 5}));
  EXPECT_EQ(dp[7], (std::vector<std::int64_t>{19, 21, 23}));
  // order tp-pp-dp, 2-2-2: dp groups [[0, 4], [1, 5], [2, 6], [3, 7]].
  const RankGenerator h(ParallelSizes{.tp = 2, .dp = 2, .pp = 2}, "tp-pp-dp");
  EXPECT_EQ(h.groups("dp"), (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
}

TEST(RankGenerator, ContextParallelGroupsAsMegatronBuildsThem) {
  const RankGenerator g(ParallelSizes{.tp = 2, .cp = 2, .dp = 2, .pp = 2});
  EXPECT_EQ(g.groups("cp"),
            (Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}, {8, 10}, {9, 11}, {12, 14}, {13, 15}}));
  EXPECT_EQ(g.groups("dp"),
            (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}, {8, 12}, {9, 13}, {10, 14}, {11, 15}}));
  EXPECT_EQ(g.groups("dp-cp"),
            (Groups{{0, 2, 4, 6}, {1, 3, 5, 7}, {8, 10, 12, 14}, {9, 11, 13, 15}}));
  EXPECT_EQ(g.groups("pp"),
            (Groups{{0, 8}, {1, 9}, {2, 10}, {3, 11}, {4, 12}, {5, 13}, {6, 14}, {7, 15}}));
  EXPECT_EQ(g.groups("tp-cp"),
            (Groups{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 10, 11}, {12, 13, 14, 15}}));
  EXPECT_EQ(g.group_of("dp-cp", 13), (std::vector<std::int64_t>{9, 11, 13, 15}));
}

TEST(RankGenerator, ExpertGroupsAsMegatronBuildsThem) {
  // The expert generator: tp = expert_tensor_parallel_size, ep, expert dp, pp; cp = 1.
  const RankGenerator g(ParallelSizes{.tp = 2, .ep = 4, .pp = 2});
  EXPECT_EQ(g.groups("ep"), (Groups{{0, 2, 4, 6}, {1, 3, 5, 7}, {8, 10, 12, 14}, {9, 11, 13, 15}}));
}

TEST(RankGenerator, CoordinatesRoundTrip) {
  const RankGenerator g(ParallelSizes{.tp = 4, .cp = 2, .dp = 3, .pp = 5});
  for (std::int64_t r = 0; r < g.world_size(); ++r) EXPECT_EQ(g.rank(g.coords(r)), r);
  EXPECT_EQ(g.rank(ParallelCoords{.tp = 1, .cp = 1, .dp = 2, .pp = 3}), 1 + 4 + 2 * 8 + 3 * 24);
}

TEST(RankGenerator, NodesSpanned) {
  const RankGenerator g(ParallelSizes{.tp = 8, .cp = 2, .dp = 4, .pp = 2});
  EXPECT_EQ(g.nodes_spanned("tp", 0, 8), 1);
  EXPECT_EQ(g.nodes_spanned("cp", 0, 8), 2);
  EXPECT_EQ(g.nodes_spanned("dp-cp", 0, 8), 8);
  EXPECT_EQ(g.nodes_spanned("tp-cp", 0, 16), 1);
}

}  // namespace
}  // namespace stepsim
