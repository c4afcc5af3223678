// Sweep files: what is accepted, and every problem reported with the file and the key.

#include <gtest/gtest.h>

#include "sweep_test_util.hpp"

namespace stepsim {
namespace {

using test::small_sweep;

bool has_error(const Result<SweepSpec>& r, const std::string& key) {
  if (r.ok()) return false;
  for (const Error& e : r.errors()) {
    if (e.key == key && e.file == "test-sweep.json") return true;
  }
  return false;
}

TEST(SweepSpec, MisspelledKnobSuggestsTheNearestAndReadsAsASentence) {
  auto r = small_sweep(R"({"training.tensor_model_paralel_size": [1, 2], "training.tpis": [1]})");
  ASSERT_FALSE(r.ok());
  std::string all;
  for (const Error& e : r.errors()) all += e.to_string() + "\n";
  EXPECT_NE(all.find("search.training.tensor_model_paralel_size is not a sweepable scenario key; "
                     "did you mean \"search.training.tensor_model_parallel_size\"?"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("search.training.tpis is not a sweepable scenario key (see the knob list"),
            std::string::npos)
      << all;
}

TEST(SweepSpec, ReadsAxesConstraintsObjectiveTop) {
  auto r =
      small_sweep(R"({"training.micro_batch_size": [1, 2], "system": ["systems/dgx-h100-80gb.json"],
                          "training.tensor_model_parallel_size": "auto",
                          "system.inter_node.bandwidth_Bps": [2.5e10, 5e10]})",
                  R"("constraints": {"memory_headroom": 0.1, "max_gpus": 64,
                          "step_time_budget_s": 10}, "objective": "min_gpus", "top": 3)");
  ASSERT_TRUE(r.ok()) << format_errors(r.errors());
  const SweepSpec& s = r.value();
  ASSERT_EQ(s.axes.size(), 4u);
  // Sorted into enumeration order: system file, system knobs, then training knobs.
  EXPECT_EQ(knob_table()[static_cast<std::size_t>(s.axes[0].knob)].key, "system");
  EXPECT_EQ(knob_table()[static_cast<std::size_t>(s.axes[1].knob)].key,
            "system.inter_node.bandwidth_Bps");
  EXPECT_TRUE(s.axes[2].automatic);
  EXPECT_EQ(s.axes[3].values.size(), 2u);
  ASSERT_EQ(s.systems.size(), 1u);
  EXPECT_EQ(s.constraints.memory_headroom, 0.1);
  EXPECT_EQ(s.constraints.max_gpus, 64);
  EXPECT_EQ(s.objective, SweepObjective::kMinGpus);
  EXPECT_EQ(s.top, 3);
  EXPECT_TRUE(s.defaulted.padded_vocab_size);
  EXPECT_FALSE(s.defaulted.virtual_from_layers_per_stage);
  // Two system variants (the bandwidths) share one system file.
  EXPECT_EQ(sim::system_variants(s).size(), 2u);
  EXPECT_EQ(sim::system_variants(s)[1].inter_node.bandwidth_bytes_per_s, 5e10);
}

TEST(SweepSpec, SystemKnobTakesShortNames) {
  auto r = small_sweep(R"({"system": ["dgx-h100-80gb", "dgx-b2"]})", "");
  ASSERT_TRUE(r.ok()) << format_errors(r.errors());
  ASSERT_EQ(r->systems.size(), 2u);
  EXPECT_EQ(r->systems[0].name, "dgx-h100-80gb");
  EXPECT_EQ(r->systems[1].name, "dgx-b200");
  auto ambiguous = small_sweep(R"({"system": ["dgx-h"]})", "");
  ASSERT_TRUE(has_error(ambiguous, "search.system"));
  EXPECT_NE(format_errors(ambiguous.errors()).find("dgx-h100-80gb, dgx-h200"), std::string::npos)
      << format_errors(ambiguous.errors());
}

TEST(SweepSpec, EveryProblemNamesFileAndKey) {
  auto r = small_sweep(R"({"training.no_such_knob": [1], "training.world_size": "auto",
                          "training.micro_batch_size": [], "training.sequence_parallel": [1],
                          "training.recompute_granularity": ["sometimes"],
                          "training.pipeline_model_parallel_size": [2, 2]})",
                       R"("constraints": {"memory_headroom": 1.5, "gpus": 3},
                          "objective": "fastest", "top": 0, "extra": 1)");
  EXPECT_TRUE(has_error(r, "search.training.no_such_knob"));
  EXPECT_TRUE(has_error(r, "search.training.world_size"));
  EXPECT_TRUE(has_error(r, "search.training.micro_batch_size"));
  EXPECT_TRUE(has_error(r, "search.training.sequence_parallel"));
  EXPECT_TRUE(has_error(r, "search.training.recompute_granularity"));
  EXPECT_TRUE(has_error(r, "search.training.pipeline_model_parallel_size"));
  EXPECT_TRUE(has_error(r, "constraints.memory_headroom"));
  EXPECT_TRUE(has_error(r, "constraints.gpus"));
  EXPECT_TRUE(has_error(r, "objective"));
  EXPECT_TRUE(has_error(r, "top"));
  EXPECT_TRUE(has_error(r, "extra"));
}

TEST(SweepSpec, InvalidBaseIsReportedUnderBase) {
  const std::string text = R"({"base": {"name": "x", "model": {"num_layers": 4}}, "search": {}})";
  auto r = load_sweep_text(text, "test-sweep.json", ".", test::load_options());
  ASSERT_FALSE(r.ok());
  for (const Error& e : r.errors()) EXPECT_TRUE(e.key.starts_with("base")) << e.to_string();
}

TEST(SweepSpec, BaseFromThePathAndConflicts) {
  auto r = load_sweep_text(R"({"base": "gpt3-175b-a100-64.json", "search": {}})", "s.json", ".",
                           test::load_options());
  ASSERT_TRUE(r.ok()) << format_errors(r.errors());
  EXPECT_EQ(r->base.model.num_layers, 96);
  auto both = small_sweep(R"({"training.virtual_pipeline_model_parallel_size": [1],
                             "training.num_layers_per_virtual_pipeline_stage": [1]})");
  EXPECT_TRUE(has_error(both, "search.training.num_layers_per_virtual_pipeline_stage"));
  auto twice = load_sweep_text(R"({"base": "gpt3-175b-a100-64.json", "search": {}})", "s.json", ".",
                               test::load_options(), test::small_base());
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.errors().front().key, "base");
  EXPECT_FALSE(load_sweep_text("[1, 2]", "s.json", ".", test::load_options()).ok());
}

TEST(SweepSpec, ShippedSweepsLoad) {
  for (const char* f : {"sweeps/turing-530b-2520.json", "sweeps/gpt3-175b-a100.json",
                        "sweeps/qwen3-235b-256.json", "sweeps/llama3-70b-h100-cost.json"}) {
    auto r = load_sweep_file(std::string(STEPSIM_SCENARIOS_DIR) + "/" + f, test::load_options());
    EXPECT_TRUE(r.ok()) << f << (r.ok() ? "" : format_errors(r.errors()));
  }
}

}  // namespace
}  // namespace stepsim
