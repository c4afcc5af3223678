// Sweeps that answer the question (issue 40): every knob that varies is a column and in the
// labels, the best per GPU count, the cost objective in closed form, a Pareto summary of at
// most 8 rows with both ends, cut reasons as rules, and "did you mean" for abbreviations.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "stepsim/config/layout_words.hpp"
#include "stepsim/sweep/sweep_plan.hpp"
#include "sweep_test_util.hpp"

namespace stepsim {
namespace {

using test::run_csv;
using test::small_sweep;

SweepSpec must(Result<SweepSpec> r) {
  if (!r.ok()) ADD_FAILURE() << format_errors(r.errors());
  return std::move(r).value();
}

/// Every row with its workload, in enumeration order.
class RowsSink final : public sim::SweepSink {
 public:
  void add(const sim::SweepRow& row, const Workload& w) override {
    rows.push_back(row);
    workloads.push_back(w);
  }
  std::vector<sim::SweepRow> rows;
  std::vector<Workload> workloads;
};

struct Ran {
  RowsSink rows;
  std::unique_ptr<sim::SweepSummary> summary;
};

void run(const SweepSpec& spec, Ran& out) {
  out.summary = std::make_unique<sim::SweepSummary>(spec, sim::sweep_columns(spec));
  const test::Models m = test::models_for(spec);
  const sim::SweepEvaluator evaluator(spec, m.ptrs);
  ASSERT_TRUE(sim::run_sweep(spec, evaluator, {}, {&out.rows, out.summary.get()}).ok());
}

// world 8 and 16, t 1/2/4, context parallelism 1/2, micro-batch 1/2.
const char* kTwoCounts = R"({"training.world_size": [8, 16],
    "training.tensor_model_parallel_size": [1, 2, 4], "training.context_parallel_size": [1, 2],
    "training.micro_batch_size": [1, 2]})";

TEST(SweepAnswer, BestPerGpuCountIsTheBestOfEachCount) {
  const SweepSpec spec = must(small_sweep(kTwoCounts, R"("top": 1)"));
  Ran ran;
  run(spec, ran);
  std::map<std::int64_t, const sim::SweepRow*> best;
  for (std::size_t i = 0; i < ran.rows.rows.size(); ++i) {
    const sim::SweepRow& r = ran.rows.rows[i];
    if (r.status != sim::SweepStatus::kFeasible) continue;
    const std::int64_t gpus = ran.rows.workloads[i].training.world_size;
    const sim::SweepRow*& b = best[gpus];
    if (b == nullptr || r.metrics.tokens_per_s > b->metrics.tokens_per_s) b = &r;
  }
  ASSERT_EQ(best.size(), 2u);
  const auto& per = ran.summary->best_per_gpu_count();
  ASSERT_EQ(per.size(), 2u);
  for (const auto& [gpus, row] : best) {
    ASSERT_TRUE(per.contains(gpus));
    EXPECT_EQ(per.at(gpus).row.index, row->index) << gpus << " GPUs";
    EXPECT_EQ(per.at(gpus).workload.training.world_size, gpus);
  }
  // The overall top (one row) holds one count: the table adds the best of the other.
  ASSERT_EQ(ran.summary->top().size(), 1u);
  std::ostringstream text;
  sim::write_sweep_text(text, *ran.summary);
  const std::string t = text.str();
  const std::size_t table = t.find("best per GPU count (by max_tokens_per_s):");
  ASSERT_NE(table, std::string::npos) << t;
  // Each count's row: its index, then its GPU count, as the table's first two cells.
  std::istringstream lines(t.substr(table));
  std::string line;
  std::getline(lines, line);  // title
  std::getline(lines, line);  // header
  for (const auto& [gpus, r] : per) {
    ASSERT_TRUE(std::getline(lines, line)) << t;
    std::istringstream cells(line);
    std::int64_t index = -1, count = -1;
    cells >> index >> count;
    EXPECT_EQ(index, r.row.index) << line;
    EXPECT_EQ(count, gpus) << line;
  }
}

TEST(SweepAnswer, OneGpuCountHasNoPerCountTable) {
  const SweepSpec spec = must(small_sweep(R"({"training.tensor_model_parallel_size": [1, 2]})"));
  Ran ran;
  run(spec, ran);
  std::ostringstream text;
  sim::write_sweep_text(text, *ran.summary);
  EXPECT_EQ(text.str().find("best per GPU count"), std::string::npos) << text.str();
}

TEST(SweepAnswer, CostIsStepTimeTimesGpusTimesPriceOverTokens) {
  // 16 sequences of 256 tokens a step; $2.5 per GPU-hour; 1e9 tokens to train.
  const double price = 2.5;
  const std::int64_t tokens = 1000000000;
  const SweepSpec spec = must(small_sweep(
      kTwoCounts, R"("objective": "min_cost", "price_per_gpu_hour": 2.5, "train_tokens": 1e9)"));
  EXPECT_EQ(spec.price_per_gpu_hour, price);
  Ran ran;
  run(spec, ran);
  const sim::SweepPricing pricing = sim::sweep_pricing(spec);
  double cheapest = 1e300;
  std::int64_t cheapest_index = -1;
  for (std::size_t i = 0; i < ran.rows.rows.size(); ++i) {
    const sim::SweepRow& r = ran.rows.rows[i];
    if (r.status != sim::SweepStatus::kFeasible) continue;
    const auto gpus = static_cast<double>(ran.rows.workloads[i].training.world_size);
    const double step = r.metrics.step_time_s;
    const sim::RowCost c = sim::row_cost(r, pricing);
    ASSERT_TRUE(c.priced && c.trained);
    EXPECT_NEAR(c.usd_per_million_tokens, step * gpus * price / 3600.0 / (16.0 * 256.0) * 1e6,
                1e-9 * c.usd_per_million_tokens);
    const double steps = std::ceil(static_cast<double>(tokens) / (16.0 * 256.0));
    EXPECT_NEAR(c.train_time_s, steps * step, 1e-9 * c.train_time_s);
    EXPECT_NEAR(c.train_usd, steps * step * gpus / 3600.0 * price, 1e-9 * c.train_usd);
    if (c.train_usd < cheapest) {
      cheapest = c.train_usd;
      cheapest_index = r.index;
    }
  }
  ASSERT_FALSE(ran.summary->top().empty());
  EXPECT_EQ(ran.summary->top().front().row.index, cheapest_index);
  // The CSV carries the same figures; rows read back are the rows written.
  const std::vector<std::string> columns = sim::sweep_columns(spec);
  const sim::SweepRow& best = ran.summary->top().front().row;
  const std::string line = sim::csv_line(best, &pricing);
  const std::string text = sim::csv_header(columns) + "\n" + line + "\n";
  EXPECT_NE(sim::csv_header(columns).find(",usd_per_million_tokens,train_time_s,train_usd"),
            std::string::npos);
  const auto parsed = sim::parse_sweep_csv(text, columns, "x.csv");
  ASSERT_TRUE(parsed.ok()) << format_errors(parsed.errors());
  EXPECT_EQ(parsed->rows.at(0), best);
  std::ostringstream report;
  sim::write_sweep_text(report, *ran.summary);
  EXPECT_NE(report.str().find("$/Mtok"), std::string::npos) << report.str();
  EXPECT_NE(report.str().find("price: $2.5 per GPU-hour"), std::string::npos) << report.str();
}

TEST(SweepAnswer, MinCostNeedsAPrice) {
  const auto r = small_sweep(R"({"training.micro_batch_size": [1]})", R"("objective": "min_cost")");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(format_errors(r.errors()).find("objective=\"min_cost\" needs \"price_per_gpu_hour\""),
            std::string::npos)
      << format_errors(r.errors());
  const auto bad = small_sweep(R"({"training.micro_batch_size": [1]})",
                               R"("price_per_gpu_hour": -1)");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.errors().front().key, "price_per_gpu_hour");
}

sim::SweepRow front_row(std::int64_t index, std::size_t knobs, double tokens, std::int64_t bytes) {
  sim::SweepRow r;
  r.index = index;
  r.knobs.assign(knobs, "1");
  r.simulated = true;
  r.metrics.tokens_per_s = tokens;
  r.metrics.step_time_s = 1.0;
  r.metrics.peak_memory_bytes = bytes;
  return r;
}

TEST(SweepAnswer, ParetoSummaryHasAtMostEightRowsWithBothEnds) {
  const SweepSpec spec = must(small_sweep(R"({"training.micro_batch_size": [1]})"));
  for (const std::size_t n : {1u, 5u, 8u, 9u, 37u, 100u}) {
    sim::SweepSummary s(spec, sim::sweep_columns(spec));
    // n configurations on the front (more memory, more throughput), fed in reverse, plus
    // dominated ones between them.
    for (std::size_t k = n; k-- > 0;) {
      const auto i = static_cast<std::int64_t>(k);
      s.add(front_row(2 * i, s.columns().size(), 100.0 + static_cast<double>(k), 1000 + i), {});
      s.add(front_row(2 * i + 1, s.columns().size(), 50.0, 2000 + i), {});
    }
    ASSERT_EQ(s.pareto().size(), n);
    const auto points = s.pareto_summary();
    EXPECT_EQ(points.size(), std::min<std::size_t>(n, 8)) << n;
    EXPECT_EQ(points.front(), &s.pareto().front()) << n;
    EXPECT_EQ(points.back(), &s.pareto().back()) << n;
    // Evenly spaced: strictly increasing positions whose gaps differ by at most one.
    std::vector<std::ptrdiff_t> gaps;
    for (std::size_t i = 1; i < points.size(); ++i) {
      gaps.push_back(points[i] - points[i - 1]);
      EXPECT_GT(gaps.back(), 0) << n;
    }
    if (!gaps.empty()) {
      const auto [lo, hi] = std::minmax_element(gaps.begin(), gaps.end());
      EXPECT_LE(*hi - *lo, 1) << n;
    }
  }
}

TEST(SweepAnswer, TextReportShowsEveryVaryingKnobAndAShortFront) {
  const SweepSpec spec = must(small_sweep(kTwoCounts));
  Ran ran;
  run(spec, ran);
  std::ostringstream text;
  sim::write_sweep_text(text, *ran.summary);
  const std::string t = text.str();
  const std::size_t top = t.find("top ");
  ASSERT_NE(top, std::string::npos) << t;
  const std::string header = t.substr(t.find('\n', top) + 1, t.find('\n', t.find('\n', top) + 1) -
                                                                  t.find('\n', top) - 1);
  for (const char* column : {" gpus ", " t ", " p ", " cp ", " dp ", " mbs ", " m "}) {
    EXPECT_NE(header.find(column), std::string::npos) << column << " in\n" << header;
  }
  // Knobs that do not vary (recompute, sequence parallelism) stay out of the table.
  EXPECT_EQ(header.find("recompute"), std::string::npos) << header;
  const std::size_t front = t.find("Pareto front");
  ASSERT_NE(front, std::string::npos);
  const std::string rest = t.substr(front);
  EXPECT_LE(std::count(rest.begin(), rest.end(), '\n'), 2 + 8) << rest;
  // Labels name context parallelism when it is on.
  bool cp_label = false;
  for (std::size_t i = 0; i < ran.rows.rows.size(); ++i) {
    if (ran.rows.workloads[i].training.context_parallel_size == 2) {
      cp_label = true;
      EXPECT_NE(ran.rows.rows[i].label.find(" cp2 "), std::string::npos) << ran.rows.rows[i].label;
    }
  }
  EXPECT_TRUE(cp_label);
}

TEST(SweepAnswer, CutReasonsAreRulesWithAnExample) {
  // 12 GPUs with t = 8 break Megatron's "world size is divisible by t x p" rule.
  const SweepSpec spec = must(small_sweep(R"({"training.world_size": [8, 12],
      "training.tensor_model_parallel_size": [1, 8]})"));
  Ran ran;
  run(spec, ran);
  const std::vector<sim::CutRule> rules = ran.summary->cut_rules();
  const auto world = std::find_if(rules.begin(), rules.end(), [](const sim::CutRule& r) {
    return r.key == "training.world_size";
  });
  ASSERT_NE(world, rules.end());
  EXPECT_EQ(world->rule,
            "training.world_size is not divisible by "
            "tensor_model_parallel_size*pipeline_model_parallel_size");
  EXPECT_EQ(world->count, 1);
  EXPECT_NE(world->example.find("training.world_size=12"), std::string::npos) << world->example;
  std::int64_t total = 0;
  for (const sim::CutRule& r : rules) total += r.count;
  std::int64_t cut = 0;
  for (const auto& [key, n] : ran.summary->cut_by_reason()) cut += n;
  EXPECT_EQ(total, cut);
  std::ostringstream text;
  sim::write_sweep_text(text, *ran.summary);
  EXPECT_NE(text.str().find("        1  training.world_size is not divisible by "
                            "tensor_model_parallel_size*pipeline_model_parallel_size\n"
                            "            e.g. #"),
            std::string::npos)
      << text.str();
}

TEST(SweepAnswer, ARuleKeepsItsOperatorsAndDropsTheValues) {
  sim::SweepRow row;
  row.status = sim::SweepStatus::kInvalid;
  row.reason_key = "training.global_batch_size";
  row.reason =
      "training.global_batch_size=1536 gives num_microbatches=3; its remainder=1 after groups of "
      "microbatch_group_size_per_vp_stage=2 must be 0 or >= pipeline_model_parallel_size=2 "
      "(+1 more)";
  EXPECT_EQ(sim::cut_rule_of(row),
            "training.global_batch_size gives num_microbatches; its remainder after groups of "
            "microbatch_group_size_per_vp_stage must be 0 or >= pipeline_model_parallel_size");
  row.reason = "training.microbatch_group_size_per_vp_stage=9 must range in "
               "[pipeline_model_parallel_size=2, num_microbatches=8]";
  EXPECT_EQ(sim::cut_rule_of(row),
            "training.microbatch_group_size_per_vp_stage must range in "
            "[pipeline_model_parallel_size, num_microbatches]");
}

TEST(SweepAnswer, AbbreviatedKnobSuggestsTheKey) {
  const auto r = small_sweep(R"({"training.tp": [1, 2], "training.vpp": [1],
      "training.dp": [2]})");
  ASSERT_FALSE(r.ok());
  const std::string all = format_errors(r.errors());
  EXPECT_NE(all.find("search.training.tp is not a sweepable scenario key; did you mean "
                     "\"search.training.tensor_model_parallel_size\"?"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("search.training.vpp is not a sweepable scenario key; did you mean "
                     "\"search.training.virtual_pipeline_model_parallel_size\"?"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("search.training.dp is not a sweepable scenario key (training."
                     "data_parallel_size is derived"),
            std::string::npos)
      << all;
}

TEST(SweepAnswer, LayoutWordsNameEveryParallelism) {
  Workload w;
  w.model.num_experts = 8;
  TrainingConfig& t = w.training;
  t.tensor_model_parallel_size = 2;
  t.pipeline_model_parallel_size = 4;
  t.virtual_pipeline_model_parallel_size = 2;
  t.context_parallel_size = 2;
  t.expert_model_parallel_size = 4;
  t.expert_tensor_parallel_size = 1;
  t.data_parallel_size = 8;
  t.micro_batch_size = 1;
  t.num_microbatches = 16;
  t.sequence_parallel = true;
  t.recompute_granularity = RecomputeGranularity::kFull;
  t.recompute_method = RecomputeMethod::kBlock;
  t.recompute_num_layers = 3;
  t.use_distributed_optimizer = true;
  t.fp8 = Fp8Format::kHybrid;
  t.fp8_recipe = Fp8Recipe::kTensorwise;
  EXPECT_EQ(layout_words(w),
            "t2 p4 v2 cp2 ep4 etp1 dp8 mbs1 m16 sp full-block3 dopt fp8=hybrid/tensorwise");
  EXPECT_EQ(layout_words(w, "=").substr(0, 25), "t=2 p=4 v=2 cp=2 ep=4 etp");
  EXPECT_EQ(key_of_abbreviation("etp"), "training.expert_tensor_parallel_size");
  EXPECT_EQ(key_header("training.context_parallel_size"), "cp");
  EXPECT_EQ(key_header("training.fp8_param_gather"), "fp8_param_gather");
}

}  // namespace
}  // namespace stepsim
