#include "stepsim/gui/sweep_csv.hpp"

#include <gtest/gtest.h>

#include "test_data.hpp"

namespace stepsim::gui {
namespace {

TEST(SweepCsv, ReadsColumnsByHeaderAndResolvesTracePaths) {
  const std::string path = testing::data_path("sweep.csv");
  auto r = read_sweep_csv(path);
  ASSERT_TRUE(r.ok()) << format_errors(r.errors());
  const SweepTable& t = *r;
  EXPECT_TRUE(t.has_trace_column);
  ASSERT_EQ(t.points.size(), 4u);
  EXPECT_EQ(t.skipped_rows, 1u);
  EXPECT_EQ(t.points[0].label, "tp8-pp8");
  EXPECT_DOUBLE_EQ(t.points[0].tokens_per_s, 1000);
  EXPECT_DOUBLE_EQ(t.points[0].peak_memory_bytes, 6e10);
  EXPECT_EQ(t.points[0].trace_path, testing::data_path("two_stage_predicted.json"));
  EXPECT_TRUE(t.points[1].trace_path.empty());
  EXPECT_EQ(t.points[3].label, "tp2-pp32, slow");
  EXPECT_EQ(t.points[3].line, 5u);
}

TEST(SweepCsv, ParetoFrontMaximisesThroughputAndMinimisesMemory) {
  auto r = read_sweep_csv(testing::data_path("sweep.csv"));
  ASSERT_TRUE(r.ok());
  // (900 tok/s, 40 GB) (800, 50: dominated) (1000, 60) (1200, 70).
  EXPECT_EQ(pareto_front(r->points), (std::vector<std::size_t>{1, 0, 2}));
}

TEST(SweepCsv, ConfigurableColumnsAndLabelsFromConfigColumns) {
  SweepColumns columns;
  columns.throughput = "tput";
  columns.memory = "mem";
  auto r = parse_sweep_csv("tp,pp,tput,mem\n8,4,10,20\n", "/x/s.csv", columns);
  ASSERT_TRUE(r.ok()) << format_errors(r.errors());
  EXPECT_EQ(r->points[0].label, "tp=8 pp=4");
  EXPECT_FALSE(r->has_trace_column);
}

// The layout `stepsim sweep --out` writes: index, scenario, knobs, status, metrics; rows
// that were not simulated have empty metrics, infeasible ones stay off the Pareto front.
TEST(SweepCsv, ReadsStepsimSweepOutputWithStatus) {
  const std::string text =
      "index,scenario,tensor_model_parallel_size,status,reason_key,reason,simulated,"
      "step_time_s,tokens_per_s,peak_memory_bytes\n"
      "0,t8 p8,8,feasible,,,true,10,900,40\n"
      "1,t4 p16,4,out_of_memory,memory,\"simulated peak 90 GiB, above 76\",true,8,2000,90\n"
      "2,t2 p32,2,invalid,training.x,rule,false,,,\n"
      "3,t8 p4,8,feasible,,,true,9,1000,60\n";
  auto r = parse_sweep_csv(text, "sweep.csv");
  ASSERT_TRUE(r.ok()) << format_errors(r.errors());
  ASSERT_EQ(r->points.size(), 3u);
  EXPECT_EQ(r->skipped_rows, 1u);
  EXPECT_EQ(r->points[0].label, "t8 p8");
  EXPECT_TRUE(r->points[0].feasible);
  EXPECT_FALSE(r->points[1].feasible);
  EXPECT_EQ(r->points[1].status, "out_of_memory");
  // The out-of-memory row has the most throughput but is not on the front.
  EXPECT_EQ(pareto_front(r->points), (std::vector<std::size_t>{0, 2}));
}

TEST(SweepCsv, BadFilesAreReportedWithFileAndColumn) {
  auto missing = parse_sweep_csv("scenario,tokens_per_s\na,1\n", "s.csv");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.errors()[0].to_string(),
            "s.csv: peak_memory_bytes: required column is missing from the header");
  auto bad = parse_sweep_csv("tokens_per_s,peak_memory_bytes\nfast,1\n1,2,3\n", "s.csv");
  ASSERT_FALSE(bad.ok());
  ASSERT_EQ(bad.errors().size(), 2u);
  EXPECT_EQ(bad.errors()[0].to_string(),
            "s.csv: tokens_per_s on line 2 must be a finite number >= 0, got 'fast'");
  EXPECT_EQ(bad.errors()[1].to_string(), "s.csv: line 3 has 3 cells, the header has 2");
  EXPECT_FALSE(parse_sweep_csv("a,\"b\n", "q.csv").ok());
}

// Issue 41: a header naming tokens_per_s twice was plotted from the first column.
TEST(SweepCsv, DuplicateColumnIsAnErrorNamingIt) {
  auto twice = parse_sweep_csv(
      "scenario,tokens_per_s,peak_memory_bytes,tokens_per_s\na,1,2,3\n", "s.csv");
  ASSERT_FALSE(twice.ok());
  ASSERT_EQ(twice.errors().size(), 1u);
  EXPECT_EQ(twice.errors()[0].to_string(),
            "s.csv: tokens_per_s: column is given twice in the header (columns 2 and 4): which "
            "one holds its values is ambiguous");
  auto thrice = parse_sweep_csv("tokens_per_s,tokens_per_s,peak_memory_bytes,tokens_per_s\n",
                                "s.csv");
  ASSERT_FALSE(thrice.ok());
  EXPECT_EQ(thrice.errors().size(), 1u);
}

}  // namespace
}  // namespace stepsim::gui
