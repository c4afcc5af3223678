#pragma once
// Shared by the sweep tests: a small base scenario (fast to simulate) and a runner that
// returns the CSV text.

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "stepsim/cost/make_cost_model.hpp"
#include "stepsim/sweep/sweep_spec.hpp"
#include "stepsim/sweep/sweep.hpp"

namespace stepsim::test {

/// A 4-layer model with 8 heads on 8 A100s: every knob has a few valid values. Priced by the
/// roofline, named (the default would be the A100's public profile): system what-ifs move it.
inline std::string small_base() {
  return R"({
    "name": "small",
    "model": {"num_layers": 4, "hidden_size": 512, "num_attention_heads": 8,
              "seq_length": 256, "vocab_size": 50257},
    "training": {"world_size": 8, "tensor_model_parallel_size": 1,
                 "pipeline_model_parallel_size": 1, "micro_batch_size": 1,
                 "global_batch_size": 16, "bf16": true},
    "system": "systems/dgx-a100-80gb.json",
    "cost_model": "roofline"
  })";
}

inline LoadOptions load_options() {
  LoadOptions o;
  o.scenarios_dir = STEPSIM_SCENARIOS_DIR;
  return o;
}

/// A sweep over small_base() with this "search" object and optional extra top-level keys.
inline Result<SweepSpec> small_sweep(const std::string& search, const std::string& extra = "") {
  const std::string text = R"({"base": )" + small_base() + R"(, "search": )" + search +
                           (extra.empty() ? "" : ", " + extra) + "}";
  return load_sweep_text(text, "test-sweep.json", ".", load_options());
}

/// Cost models for every system variant of `spec`.
struct Models {
  std::vector<std::unique_ptr<CostModel>> owned;
  std::vector<const CostModel*> ptrs;
};
inline Models models_for(const SweepSpec& spec) {
  Models m;
  for (const SystemConfig& s : sim::system_variants(spec)) {
    Workload w = spec.base;
    w.system = s;
    auto model = make_cost_model(w);
    EXPECT_TRUE(model.ok());
    m.ptrs.push_back(model->get());
    m.owned.push_back(std::move(model).value());
  }
  return m;
}

/// Runs the sweep; returns the CSV (header + rows fed, except rows below `first_index`).
inline std::string run_csv(const SweepSpec& spec, sim::SweepRunOptions options,
                           sim::SweepSummary* summary = nullptr, bool header = true,
                           std::int64_t first_index = 0) {
  const Models m = models_for(spec);
  const sim::SweepEvaluator evaluator(spec, m.ptrs);
  std::ostringstream out;
  sim::CsvSink csv(out, sim::sweep_columns(spec), header, first_index);
  std::vector<sim::SweepSink*> sinks{&csv};
  if (summary != nullptr) sinks.push_back(summary);
  auto stats = sim::run_sweep(spec, evaluator, options, sinks);
  EXPECT_TRUE(stats.ok());
  return out.str();
}

}  // namespace stepsim::test
