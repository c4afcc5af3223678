#include "stepsim/gui/critical_path.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_data.hpp"

namespace stepsim::gui {
namespace {

std::vector<std::string> names(const TraceModel& m, const CriticalPath& path) {
  std::vector<std::string> out;
  for (SliceRef r : path.slices) {
    std::string name = "r";
    name += std::to_string(m.lanes[r.lane].rank);
    name += ' ';
    name += m.slice_name(r);
    out.push_back(std::move(name));
  }
  return out;
}

TEST(CriticalPath, WalksBackThroughRanksViaMatchingTransfers) {
  const TraceModel m = testing::load_fixture("two_stage_predicted.json");
  const CriticalPath path = critical_path(m);
  const std::vector<std::string> expected = {
      "r0 F mb0 c0 L0 fwd",     "r0 send_forward mb0",  "r1 recv_forward mb0",
      "r1 F mb0 c0 L1 fwd",     "r1 B mb0 c0 L1 dgrad", "r1 B mb0 c0 L1 tp all-reduce",
      "r1 send_backward mb0",   "r1 F mb1 c0 L1 fwd",   "r1 B mb1 c0 L1 dgrad",
      "r1 send_backward mb1",   "r0 recv_backward mb1", "r0 B mb1 c0 L0 dgrad",
      "r0 grad reduce-scatter", "r0 optimizer"};
  EXPECT_EQ(names(m, path), expected);
  // 100+20+20+100+240+20+20+100+180+20+20+200+50+50 µs.
  EXPECT_DOUBLE_EQ(path.busy_us, 1140);
}

TEST(CriticalPath, SingleRankIsItsChainOfSlices) {
  auto r = parse_trace(R"({"traceEvents":[
      {"ph":"X","name":"a","cat":"forward","pid":0,"tid":0,"ts":0,"dur":10},
      {"ph":"X","name":"c","cat":"tp_comm","pid":0,"tid":1,"ts":10,"dur":5},
      {"ph":"X","name":"side","cat":"dp_comm","pid":0,"tid":3,"ts":2,"dur":3},
      {"ph":"X","name":"b","cat":"forward","pid":0,"tid":0,"ts":15,"dur":10}]})",
                       "one.json");
  ASSERT_TRUE(r.ok());
  const CriticalPath path = critical_path(*r);
  EXPECT_EQ(names(*r, path), (std::vector<std::string>{"r0 a", "r0 c", "r0 b"}));
}

TEST(CriticalPath, EmptyModelHasNoPath) { EXPECT_TRUE(critical_path(TraceModel{}).slices.empty()); }

}  // namespace
}  // namespace stepsim::gui
