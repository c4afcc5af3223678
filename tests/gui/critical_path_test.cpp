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

// A prediction's summary carries the engine's chain: the path is the slices inside its
// links, even where the slice-only walk would pick another predecessor (here "side", which
// ends last before "b" starts, is not on the chain: "b" waited for "a" and "c").
TEST(CriticalPath, FollowsTheSimulatorsChainWhenTheTraceHasOne) {
  auto r = parse_trace(R"({"traceEvents":[
      {"ph":"X","name":"a","cat":"forward","pid":0,"tid":0,"ts":100,"dur":10},
      {"ph":"X","name":"c","cat":"tp_comm","pid":0,"tid":1,"ts":110,"dur":4},
      {"ph":"X","name":"side","cat":"dp_comm","pid":0,"tid":3,"ts":112,"dur":3},
      {"ph":"X","name":"b1","cat":"forward","pid":0,"tid":0,"ts":115,"dur":5},
      {"ph":"X","name":"b2","cat":"forward","pid":0,"tid":0,"ts":120,"dur":5},
      {"ph":"s","name":"critical path","cat":"critical_path","id":1,"pid":0,"tid":0,"ts":100},
      {"ph":"f","bp":"e","name":"critical path","cat":"critical_path","id":1,"pid":0,"tid":1,"ts":110}],
      "stepsim":{"label":"predicted","critical_chain":[
        {"rank":0,"tid":0,"start_s":0.0001,"end_s":0.00011},
        {"rank":0,"tid":1,"start_s":0.00011,"end_s":0.000114},
        {"rank":0,"tid":0,"start_s":0.000115,"end_s":0.000125}]}})",
                       "chain.json");
  ASSERT_TRUE(r.ok()) << format_errors(r.errors());
  ASSERT_EQ(r->summary.critical_chain.size(), 3u);
  const CriticalPath path = critical_path(*r);
  EXPECT_EQ(names(*r, path), (std::vector<std::string>{"r0 a", "r0 c", "r0 b1", "r0 b2"}));
  EXPECT_NEAR(path.busy_us, 24, 1e-9);
  // A bad chain is named by its key.
  auto bad = parse_trace(R"({"traceEvents":[{"ph":"X","pid":0,"tid":0,"ts":0,"dur":1}],
      "stepsim":{"critical_chain":[{"rank":0,"tid":0,"start_s":2,"end_s":1}]}})",
                         "bad.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(format_errors(bad.errors()).find("stepsim.critical_chain[0].end_s"), std::string::npos);
}

TEST(CriticalPath, EmptyModelHasNoPath) { EXPECT_TRUE(critical_path(TraceModel{}).slices.empty()); }

}  // namespace
}  // namespace stepsim::gui
