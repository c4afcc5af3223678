#include "stepsim/schedule/schedule.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "schedule_checker.hpp"
#include "stepsim/report/schedule_report.hpp"

namespace stepsim::sim {
namespace {

ScheduleParams one_f_one_b(std::int32_t p, std::int32_t m) {
  ScheduleParams params;
  params.kind = ScheduleKind::kOneFOneB;
  params.pipeline_size = p;
  params.microbatches = m;
  return params;
}

ScheduleParams interleaved(std::int32_t p, std::int32_t v, std::int32_t m, std::int32_t n,
                           bool overlap) {
  ScheduleParams params;
  params.kind = ScheduleKind::kInterleaved;
  params.pipeline_size = p;
  params.virtual_size = v;
  params.microbatches = m;
  params.group_size = n;
  params.overlap_p2p_comm = overlap;
  return params;
}

ScheduleParams gpipe(std::int32_t p, std::int32_t m) {
  ScheduleParams params = one_f_one_b(p, m);
  params.kind = ScheduleKind::kGPipe;
  return params;
}

Schedule build(const ScheduleParams& params) {
  Result<Schedule> s = make_schedule(params);
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : format_errors(s.errors()));
  return s.ok() ? std::move(s).value() : Schedule{};
}

/// Megatron-LM's warm-up count, written out independently of the library.
std::int32_t megatron_warmup(const ScheduleParams& s, std::int32_t r) {
  if (s.kind == ScheduleKind::kOneFOneB) return std::min(s.pipeline_size - r - 1, s.microbatches);
  const std::int32_t n = s.group_size == 0 ? s.pipeline_size : s.group_size;
  return std::min((s.pipeline_size - r - 1) * 2 + (s.virtual_size - 1) * n,
                  s.microbatches * s.virtual_size);
}

/// Every valid configuration of a small grid, for the property tests.
std::vector<ScheduleParams> grid() {
  std::vector<ScheduleParams> all;
  for (std::int32_t p = 1; p <= 7; ++p) {
    for (std::int32_t m = 1; m <= 16; ++m) {
      all.push_back(one_f_one_b(p, m));
      all.push_back(gpipe(p, m));
      for (std::int32_t v = 2; v <= 4; ++v) {
        for (std::int32_t n = p; n <= m; ++n) {
          for (const bool overlap : {false, true}) {
            const ScheduleParams params = interleaved(p, v, m, n, overlap);
            if (make_schedule(params).ok()) all.push_back(params);
          }
        }
      }
    }
  }
  return all;
}

std::string label(const ScheduleParams& s) {
  return std::string(to_string(s.kind)) + " p=" + std::to_string(s.pipeline_size) +
         " v=" + std::to_string(s.virtual_size) + " m=" + std::to_string(s.microbatches) +
         " N=" + std::to_string(s.group_size) + (s.overlap_p2p_comm ? " overlap" : "");
}

TEST(Schedule, OneFOneBMatchesTheTextbookOrder) {
  const Schedule s = build(one_f_one_b(4, 6));
  ASSERT_EQ(s.ranks.size(), 4U);
  EXPECT_EQ(format_actions(s.ranks[0]),
            "F0c0 F1c0 F2c0 F3c0 B0c0 F4c0 B1c0 F5c0 B2c0 B3c0 B4c0 B5c0");
  EXPECT_EQ(format_actions(s.ranks[2]),
            "F0c0 F1c0 B0c0 F2c0 B1c0 F3c0 B2c0 F4c0 B3c0 F5c0 B4c0 B5c0");
  EXPECT_EQ(format_actions(s.ranks[3]),
            "F0c0 B0c0 F1c0 B1c0 F2c0 B2c0 F3c0 B3c0 F4c0 B4c0 F5c0 B5c0");
}

TEST(Schedule, OneFOneBCallsAreMegatrons) {
  const Schedule s = build(one_f_one_b(3, 3));
  EXPECT_EQ(format_program(s.ranks[1]),
            "recv_forward[rA0.0<0] F0c0 send_forward[sA0.1>2] recv_forward[rA1.0<0] F1c0 "
            "send_forward_recv_backward[sA1.1>2 rG0.2<2] B0c0 "
            "send_backward_recv_forward[sG0.1>0 rA2.0<0] F2c0 "
            "send_forward_recv_backward[sA2.1>2 rG1.2<2] B1c0 send_backward[sG1.1>0] "
            "recv_backward[rG2.2<2] B2c0 send_backward[sG2.1>0]");
  // Stage 0 receives no activation and sends no gradient; the last stage the reverse.
  EXPECT_EQ(format_program(s.ranks[0]).find("rA"), std::string::npos);
  EXPECT_EQ(format_program(s.ranks[0]).find("sG"), std::string::npos);
  EXPECT_EQ(format_program(s.ranks[2]).find("sA"), std::string::npos);
  EXPECT_EQ(format_program(s.ranks[2]).find("rG"), std::string::npos);
}

TEST(Schedule, SingleStageAlternatesWithoutCommunication) {
  const Schedule s = build(one_f_one_b(1, 3));
  EXPECT_EQ(format_program(s.ranks[0]), "F0c0 B0c0 F1c0 B1c0 F2c0 B2c0");
}

TEST(Schedule, ReferenceInterleavedTable) {
  // Megatron's own example (schedules.py): PP=2, N=3, M=5, VP=2.
  const Schedule s = build(interleaved(2, 2, 5, 3, true));
  const std::vector<std::int32_t> mb{0, 1, 2, 0, 1, 2, 3, 4, 3, 4};
  const std::vector<std::int32_t> chunk{0, 0, 0, 1, 1, 1, 0, 0, 1, 1};
  for (const RankProgram& rank : s.ranks) {
    std::vector<Action> fwd;
    std::vector<Action> bwd;
    for (const Action& a : rank.actions) (a.type == ActionType::kForward ? fwd : bwd).push_back(a);
    ASSERT_EQ(fwd.size(), mb.size());
    ASSERT_EQ(bwd.size(), mb.size());
    for (std::size_t k = 0; k < mb.size(); ++k) {
      EXPECT_EQ(fwd[k], (Action{ActionType::kForward, mb[k], chunk[k]})) << "k=" << k;
      EXPECT_EQ(bwd[k], (Action{ActionType::kBackward, mb[k], 1 - chunk[k]})) << "k=" << k;
    }
  }
  EXPECT_EQ(format_actions(s.ranks[0]),
            "F0c0 F1c0 F2c0 F0c1 F1c1 F2c1 B0c1 F3c0 B1c1 F4c0 B2c1 F3c1 B0c0 F4c1 B1c0 B2c0 "
            "B3c1 B4c1 B3c0 B4c0");
  EXPECT_EQ(format_actions(s.ranks[1]),
            "F0c0 F1c0 F2c0 F0c1 B0c1 F1c1 B1c1 F2c1 B2c1 F3c0 B0c0 F4c0 B1c0 F3c1 B2c0 F4c1 "
            "B3c1 B4c1 B3c0 B4c0");
}

TEST(Schedule, InterleavedWrapsAroundBetweenChunks) {
  const Schedule s = build(interleaved(4, 2, 8, 0, false));
  EXPECT_EQ(s.params.group_size, 4);
  // The last rank's chunk 0 (virtual stage 3) feeds the first rank's chunk 1 (stage 4).
  EXPECT_NE(format_program(s.ranks[3]).find("sA0.3>0"), std::string::npos);
  EXPECT_NE(format_program(s.ranks[0]).find("rA0.3<3"), std::string::npos);
  EXPECT_NE(format_program(s.ranks[0]).find("sG0.4>3"), std::string::npos);
  EXPECT_NE(format_program(s.ranks[3]).find("rG0.4<0"), std::string::npos);
  // No activation leaves the last virtual stage (7), no gradient leaves stage 0.
  EXPECT_EQ(format_program(s.ranks[3]).find("sA0.7"), std::string::npos);
  EXPECT_EQ(format_program(s.ranks[0]).find("sG0.0"), std::string::npos);
}

TEST(Schedule, OverlapPostsAsynchronouslyAndWaits) {
  const Schedule blocking = build(interleaved(4, 2, 8, 4, false));
  const Schedule overlap = build(interleaved(4, 2, 8, 4, true));
  EXPECT_EQ(blocking.ranks[1].actions, overlap.ranks[1].actions);
  auto count = [](const RankProgram& r, bool want_blocking) {
    return std::count_if(r.items.begin(), r.items.end(), [&](const ProgramItem& i) {
      return i.kind == ProgramItem::Kind::kComm && i.comm.blocking == want_blocking;
    });
  };
  EXPECT_EQ(count(blocking.ranks[1], false), 0);
  EXPECT_GT(count(overlap.ranks[1], false), 0);
  EXPECT_NE(format_program(overlap.ranks[1]).find("wait["), std::string::npos);
}

TEST(Schedule, GPipeRunsAllForwardsThenAllBackwards) {
  const Schedule s = build(gpipe(3, 3));
  for (const RankProgram& r : s.ranks) {
    EXPECT_EQ(format_actions(r), "F0c0 F1c0 F2c0 B0c0 B1c0 B2c0");
  }
  EXPECT_EQ(format_program(s.ranks[1]),
            "recv_forward[rA0.0<0] F0c0 send_forward[sA0.1>2] recv_forward[rA1.0<0] F1c0 "
            "send_forward[sA1.1>2] recv_forward[rA2.0<0] F2c0 send_forward[sA2.1>2] "
            "recv_backward[rG0.2<2] B0c0 send_backward[sG0.1>0] recv_backward[rG1.2<2] B1c0 "
            "send_backward[sG1.1>0] recv_backward[rG2.2<2] B2c0 send_backward[sG2.1>0]");
}

TEST(Schedule, WarmupEqualsMegatronsFormula) {
  for (const ScheduleParams& params : grid()) {
    if (params.kind == ScheduleKind::kGPipe) continue;
    const Schedule s = build(params);
    for (const RankProgram& r : s.ranks) {
      const std::int32_t expected = megatron_warmup(params, r.rank);
      EXPECT_EQ(warmup_microbatches(s.params, r.rank), expected) << label(params);
      // The warm-up forwards, then (if any remain) the first steady forward precede the
      // first backward.
      const auto first_b = std::find_if(r.actions.begin(), r.actions.end(), [](const Action& a) {
        return a.type == ActionType::kBackward;
      });
      const auto forwards_before = static_cast<std::int32_t>(first_b - r.actions.begin());
      const std::int32_t total = params.microbatches * params.virtual_size;
      EXPECT_EQ(forwards_before, expected < total ? expected + 1 : total)
          << label(params) << " rank " << r.rank;
    }
  }
}

TEST(Schedule, EveryRankRunsEachStepOnceBackwardAfterForward) {
  for (const ScheduleParams& params : grid()) {
    const Schedule s = build(params);
    ASSERT_EQ(s.ranks.size(), static_cast<std::size_t>(params.pipeline_size));
    for (const RankProgram& r : s.ranks) {
      std::set<std::pair<std::int32_t, std::int32_t>> forwarded;
      std::set<std::pair<std::int32_t, std::int32_t>> backwarded;
      std::vector<Action> computed;
      for (const ProgramItem& item : r.items) {
        if (item.kind == ProgramItem::Kind::kCompute) computed.push_back(item.action);
      }
      EXPECT_EQ(computed, r.actions) << label(params);
      for (const Action& a : r.actions) {
        const std::pair<std::int32_t, std::int32_t> id{a.microbatch, a.chunk};
        ASSERT_TRUE(a.microbatch >= 0 && a.microbatch < params.microbatches);
        ASSERT_TRUE(a.chunk >= 0 && a.chunk < params.virtual_size);
        if (a.type == ActionType::kForward) {
          EXPECT_TRUE(forwarded.insert(id).second) << label(params);
        } else {
          EXPECT_TRUE(forwarded.count(id) == 1) << label(params) << " backward before forward";
          EXPECT_TRUE(backwarded.insert(id).second) << label(params);
        }
      }
      const auto steps = static_cast<std::size_t>(params.microbatches * params.virtual_size);
      EXPECT_EQ(forwarded.size(), steps) << label(params);
      EXPECT_EQ(backwarded.size(), steps) << label(params);
    }
  }
}

TEST(Schedule, TransfersMatchAndInputsArriveFirst) {
  std::size_t checked = 0;
  for (const ScheduleParams& params : grid()) {
    const Schedule s = build(params);
    const testing::Problems matching = testing::check_matching(s);
    EXPECT_TRUE(matching.empty()) << label(params) << ": " << matching.front();
    const testing::Problems dataflow = testing::check_dataflow(s);
    EXPECT_TRUE(dataflow.empty()) << label(params) << ": " << dataflow.front();
    ++checked;
  }
  EXPECT_GT(checked, 1000U);
}

TEST(Schedule, DeadlockFreeUnderBlockingSemantics) {
  for (const ScheduleParams& params : grid()) {
    const Schedule s = build(params);
    const testing::SimResult sim = testing::simulate_unit(s);
    ASSERT_FALSE(sim.deadlock) << label(params);
    const std::int32_t p = params.pipeline_size;
    const std::int32_t m = params.microbatches;
    if (params.kind != ScheduleKind::kInterleaved) {
      // Uniform stages, free communication: (m + p - 1) * (t_f + t_b).
      EXPECT_EQ(sim.makespan, 2 * (m + p - 1)) << label(params);
    } else {
      // Never faster than the work of one rank plus the fill and drain of one chunk.
      EXPECT_GE(sim.makespan, 2 * (m * params.virtual_size + p - 1)) << label(params);
    }
  }
}

TEST(Schedule, InterleavedBubbleShrinksByV) {
  // Depth-first (N = p, m a multiple of p): the bubble is (p - 1) chunk steps per direction,
  // 1/v of the 1F1B bubble (Narayanan et al., SC'21, section 2.2.2).
  for (const bool overlap : {false, true}) {
    for (std::int32_t v : {2, 3, 4}) {
      const Schedule s = build(interleaved(4, v, 8, 4, overlap));
      EXPECT_EQ(testing::simulate_unit(s).makespan, 2 * (8 * v + 4 - 1)) << v << overlap;
    }
  }
}

TEST(Schedule, LargeConfigurationsStaySound) {
  for (const ScheduleParams& params :
       {one_f_one_b(64, 512), interleaved(16, 4, 512, 0, false), interleaved(8, 8, 100, 23, true),
        interleaved(32, 2, 100, 34, true)}) {
    const Schedule s = build(params);
    EXPECT_TRUE(testing::check_matching(s).empty()) << label(params);
    EXPECT_FALSE(testing::simulate_unit(s).deadlock) << label(params);
  }
}

TEST(Schedule, Deterministic) {
  const ScheduleParams params = interleaved(4, 3, 10, 5, true);
  EXPECT_EQ(build(params), build(params));
}

Errors errors_of(const ScheduleParams& params) {
  const Result<Schedule> s = make_schedule(params);
  return s.ok() ? Errors{} : s.errors();
}

TEST(ScheduleValidation, NamesTheFlagAndTheRule) {
  const Errors all = errors_of(ScheduleParams{ScheduleKind::kOneFOneB, 0, 0, 0, -1, false});
  ASSERT_EQ(all.size(), 4U);
  EXPECT_EQ(all[0].to_string(), "--pp=0 must be >= 1 (pipeline_model_parallel_size)");
  EXPECT_EQ(all[1].key, "--vpp");
  EXPECT_EQ(all[2].key, "--microbatches");
  EXPECT_EQ(all[3].key, "--group-size");

  const Errors two = errors_of(interleaved(2, 2, 4, 0, false));
  ASSERT_EQ(two.size(), 1U);
  EXPECT_EQ(two[0].key, "--pp");
  EXPECT_NE(two[0].message.find("pipeline_model_parallel_size > 2"), std::string::npos);
  EXPECT_TRUE(errors_of(interleaved(2, 2, 4, 0, true)).empty());
  EXPECT_EQ(errors_of(interleaved(1, 2, 4, 0, true)).at(0).key, "--pp");

  const Errors range = errors_of(interleaved(4, 2, 8, 3, false));
  ASSERT_EQ(range.size(), 1U);
  EXPECT_EQ(range[0].to_string(),
            "--group-size=3 but microbatch_group_size_per_vp_stage must lie in [PP=4, M=8]");
  EXPECT_EQ(errors_of(interleaved(4, 2, 8, 9, false)).at(0).key, "--group-size");
  EXPECT_EQ(errors_of(interleaved(4, 2, 3, 0, false)).at(0).key, "--microbatches");

  // 10 = 4 + 4 + 2: a last group of 2 < p.
  const Errors remainder = errors_of(interleaved(4, 2, 10, 4, false));
  ASSERT_EQ(remainder.size(), 1U);
  EXPECT_EQ(remainder[0].key, "--microbatches");
  EXPECT_NE(remainder[0].message.find("last micro-batch group of 2"), std::string::npos);
  EXPECT_TRUE(errors_of(interleaved(4, 2, 9, 5, false)).empty());  // 9 = 5 + 4

  EXPECT_EQ(errors_of(interleaved(4, 1, 8, 0, false)).at(0).key, "--vpp");
  ScheduleParams plain = one_f_one_b(4, 8);
  plain.virtual_size = 2;
  EXPECT_EQ(errors_of(plain).at(0).key, "--vpp");
  plain.kind = ScheduleKind::kGPipe;
  EXPECT_EQ(errors_of(plain).at(0).key, "--vpp");
}

TEST(ScheduleValidation, NonInterleavedIgnoresOverlapLikeMegatron) {
  ScheduleParams params = one_f_one_b(4, 8);
  params.overlap_p2p_comm = true;
  const Schedule s = build(params);
  EXPECT_FALSE(s.params.overlap_p2p_comm);
  EXPECT_EQ(s.ranks, build(one_f_one_b(4, 8)).ranks);
}

TEST(ScheduleValidation, RequestedSizesAreBoundedBeforeAnythingIsBuilt) {
  // The library call (used by the CLI and the Python module) applies the bounds itself.
  ScheduleRequest huge;
  huge.pp = 100000;
  huge.microbatches = 100000;
  Result<Schedule> s = make_requested_schedule(huge);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.errors().at(0).key, "--pp");
  EXPECT_EQ(s.errors().at(0).to_string(), "--pp=100000 exceeds stepsim's limit of 16384 pipeline stages");

  ScheduleRequest chunks;
  chunks.pp = 4;
  chunks.vpp = 2048;
  chunks.microbatches = 1024;
  s = make_requested_schedule(chunks);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.errors().at(0).key, "--microbatches");

  ScheduleRequest steps;
  steps.pp = 8192;
  steps.microbatches = 1024;
  s = make_requested_schedule(steps);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.errors().at(0).message.find("forward and backward steps"), std::string::npos);

  ScheduleRequest zero;
  zero.pp = 0;
  s = make_requested_schedule(zero);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.errors().at(0).to_string(), "--pp=0 must be >= 1 (pipeline_model_parallel_size)");

  ScheduleRequest fine;
  fine.pp = 4;
  fine.microbatches = 8;
  EXPECT_TRUE(make_requested_schedule(fine).ok());
}

}  // namespace
}  // namespace stepsim::sim
