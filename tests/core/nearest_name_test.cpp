// "Did you mean": the one edit distance and nearest-name rule every suggestion uses.

#include "stepsim/base/nearest_name.hpp"

#include <gtest/gtest.h>

#include <array>
#include <string>
#include <string_view>

namespace stepsim {
namespace {

TEST(NearestName, EditDistanceCountsInsertionsDeletionsSubstitutions) {
  EXPECT_EQ(edit_distance("", ""), 0u);
  EXPECT_EQ(edit_distance("abc", "abc"), 0u);
  EXPECT_EQ(edit_distance("paralel", "parallel"), 1u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("", "abcd"), 4u);
}

TEST(NearestName, PicksTheNearestWithinTheThreshold) {
  constexpr std::array<std::string_view, 4> names = {"predict", "sweep", "check", "trace"};
  EXPECT_EQ(nearest_name("predct", names), std::optional<std::string_view>("predict"));
  EXPECT_EQ(nearest_name("swep", names), std::optional<std::string_view>("sweep"));
  EXPECT_EQ(nearest_name("trce", names), std::optional<std::string_view>("trace"));
  EXPECT_EQ(nearest_name_index("chekc", names), std::optional<std::size_t>(2));
  // Beyond max(2, length / 4) edits: no guess.
  EXPECT_EQ(nearest_name("xyzzy", names), std::nullopt);
  EXPECT_EQ(nearest_name("anything", std::span<const std::string_view>{}), std::nullopt);
  EXPECT_EQ(nearest_name(std::string(100000, 'p'), names), std::nullopt);
}

TEST(NearestName, LongNamesAllowAQuarterOfTheirLengthAndTiesGoToTheFirst) {
  constexpr std::array<std::string_view, 2> names = {"--tensor-model-parallel-size",
                                                     "--pipeline-model-parallel-size"};
  EXPECT_EQ(nearest_name("--tensor-modl-paralel-sze", names), names[0]);
  constexpr std::array<std::string_view, 2> tie = {"ab", "ba"};
  EXPECT_EQ(nearest_name_index("aa", tie), std::optional<std::size_t>(0));
}

}  // namespace
}  // namespace stepsim
