// The sweep planner: enumeration counts worked out by hand, the cut reasons, agreement with
// the scenario loader, determinism across job counts, resume and the rank split.

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "stepsim/check/load.hpp"
#include "stepsim/layout/pipeline_split.hpp"
#include "stepsim/check/check.hpp"
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

std::vector<sim::SweepConfig> all_configs(const SweepSpec& spec) {
  std::vector<sim::SweepConfig> out;
  sim::SweepEnumerator e(spec);
  sim::SweepConfig c;
  while (e.next(c)) out.push_back(c);
  return out;
}

TEST(SweepEnumerate, ListedValuesAndAutoTensorParallel) {
  // t auto: divisors of world_size that divide the 8 heads: {1,2,4,8} for 8 and for 16.
  const SweepSpec spec = must(small_sweep(R"({"training.world_size": [8, 16],
      "training.tensor_model_parallel_size": "auto",
      "training.pipeline_model_parallel_size": [1, 2], "training.micro_batch_size": [1, 2]})"));
  EXPECT_EQ(sim::count_configurations(spec), 2 * 4 * 2 * 2);
  const auto configs = all_configs(spec);
  // Outermost knob first (table order), last knob fastest; indices in order.
  EXPECT_EQ(configs[0].workload.training.world_size, 8);
  EXPECT_EQ(configs[1].workload.training.micro_batch_size, 2);
  EXPECT_EQ(configs[2].workload.training.pipeline_model_parallel_size, 2);
  EXPECT_EQ(configs[4].workload.training.tensor_model_parallel_size, 2);
  EXPECT_EQ(configs[16].workload.training.world_size, 16);
  for (std::size_t i = 0; i < configs.size(); ++i)
    EXPECT_EQ(configs[i].index, static_cast<std::int64_t>(i));
}

TEST(SweepEnumerate, AutoChainCountedByHand) {
  // world 8, 4 layers, batch 16. (t, p): t|8 and 8 heads; p | 8/t and p | 4. v | 4/p (1 when
  // p = 1); micro-batch | 16/dp. Per (t,p): mbs choices x v choices:
  // (1,1) 2x1 (1,2) 3x2 (1,4) 4x1 (2,1) 3x1 (2,2) 4x2 (2,4) 5x1 (4,1) 4x1 (4,2) 5x2 (8,1) 5x1
  const SweepSpec spec = must(small_sweep(R"({"training.tensor_model_parallel_size": "auto",
      "training.pipeline_model_parallel_size": "auto",
      "training.virtual_pipeline_model_parallel_size": "auto",
      "training.micro_batch_size": "auto"})"));
  EXPECT_EQ(sim::count_configurations(spec), 2 + 6 + 4 + 3 + 8 + 5 + 4 + 10 + 5);
}

TEST(SweepEnumerate, AutoRecomputeAndSequenceParallel) {
  // SP only with t > 1; recompute {none, selective, full}; full gets method uniform (1 layer).
  const SweepSpec spec = must(small_sweep(R"({"training.tensor_model_parallel_size": [1, 2],
      "training.sequence_parallel": "auto", "training.recompute_granularity": "auto"})"));
  const auto configs = all_configs(spec);
  ASSERT_EQ(configs.size(), 3u + 2u * 3u);
  EXPECT_EQ(configs[2].workload.training.recompute_granularity, RecomputeGranularity::kFull);
  EXPECT_EQ(configs[2].workload.training.recompute_method, RecomputeMethod::kUniform);
  EXPECT_EQ(configs[1].workload.training.recompute_method, RecomputeMethod::kNone);
  EXPECT_TRUE(configs[8].workload.training.sequence_parallel);
}

// Writes the value of `knob` in `w` into a scenario JSON object, as a user would.
void set_json(nlohmann::json& doc, KnobId knob, const Workload& w) {
  const KnobInfo& info = knob_table()[static_cast<std::size_t>(knob)];
  const std::string key(info.key);
  const std::string section = key.substr(0, key.find('.'));
  const std::string field = key.substr(key.find('.') + 1);
  const KnobValue v = info.get(w);
  if (info.kind == KnobKind::kBool) {
    doc[section][field] = v.integer != 0;
  } else if (info.kind == KnobKind::kChoice) {
    const std::string_view choice = info.choices[static_cast<std::size_t>(v.integer)];
    if (choice == "none") {
      doc[section].erase(field);
    } else {
      doc[section][field] = std::string(choice);
    }
  } else {
    doc[section][field] = v.integer;
  }
}

TEST(SweepEnumerate, SameWorkloadAsTheLoaderForEveryConfiguration) {
  const SweepSpec spec = must(small_sweep(R"({"training.tensor_model_parallel_size": "auto",
      "training.pipeline_model_parallel_size": "auto",
      "training.virtual_pipeline_model_parallel_size": "auto",
      "training.sequence_parallel": "auto", "training.micro_batch_size": [1, 4],
      "training.recompute_granularity": "auto"})"));
  const nlohmann::json base = nlohmann::json::parse(test::small_base());
  int valid = 0;
  for (sim::SweepConfig c : all_configs(spec)) {
    nlohmann::json doc = base;
    for (const SweepAxis& a : spec.axes) set_json(doc, a.knob, c.workload);
    for (const char* k : {"training.recompute_method", "training.recompute_num_layers"}) {
      set_json(doc, find_knob(k), c.workload);
    }
    if (c.workload.training.recompute_num_layers == 0)
      doc["training"].erase("recompute_num_layers");
    const Result<Workload> loaded =
        load_scenario_text(doc.dump(), "test-sweep.json", ".", test::load_options());
    const Errors errors = finalize_workload(c.workload, "test-sweep.json");
    ASSERT_EQ(loaded.ok(), errors.empty()) << doc.dump();
    if (!loaded.ok()) {
      EXPECT_EQ(loaded.errors().front().key, errors.front().key);
      continue;
    }
    ++valid;
    Workload expected = loaded.value();
    expected.source_file = c.workload.source_file;
    EXPECT_EQ(expected, c.workload) << doc.dump();
  }
  EXPECT_GT(valid, 20);
}

TEST(SweepEnumerate, AutoTpCommOverlapOnlyWithSequenceParallelism) {
  // "auto" on tp_comm_overlap (autoable in the schema) aborted the enumeration. t 1: no SP,
  // no overlap; t 2: SP off (overlap off) or on (overlap off or on).
  const SweepSpec spec = must(small_sweep(R"({"training.tensor_model_parallel_size": [1, 2],
      "training.sequence_parallel": "auto", "training.tp_comm_overlap": "auto"})"));
  EXPECT_EQ(sim::count_configurations(spec), 1 + 3);
  int overlapped = 0;
  for (const sim::SweepConfig& c : all_configs(spec)) {
    if (!c.workload.training.tp_comm_overlap) continue;
    ++overlapped;
    EXPECT_TRUE(c.workload.training.sequence_parallel);
  }
  EXPECT_EQ(overlapped, 1);
}

TEST(SweepEnumerate, AutoFp8OffersWhatTheGpuRuns) {
  // A100: no FP8 tensor cores, FP8 off only. H100 (compute capability 9.0): off, or e4m3 and
  // hybrid with each Hopper recipe (delayed, tensorwise, blockwise): 1 + 2 x 3. B200 (10.0):
  // off, or either format with MXFP8: 1 + 2. FP8 parameters need the distributed optimizer,
  // off here: only false. Every configuration is valid.
  const SweepSpec spec = must(small_sweep(R"({"system": ["systems/dgx-a100-80gb.json",
      "systems/dgx-h100-80gb.json", "systems/dgx-b200.json"], "training.fp8": "auto",
      "training.fp8_recipe": "auto", "training.fp8_param_gather": "auto",
      "training.reuse_grad_buf_for_mxfp8_param_ag": "auto"})"));
  EXPECT_EQ(sim::count_configurations(spec), 1 + 7 + 3);
  std::set<std::tuple<std::int64_t, int, int>> seen;
  for (sim::SweepConfig c : all_configs(spec)) {
    const TrainingConfig& t = c.workload.training;
    const std::int64_t cc = c.workload.system.compute_capability;
    EXPECT_TRUE(finalize_workload(c.workload, "test-sweep.json").empty())
        << c.workload.system.name << " " << static_cast<int>(t.fp8_recipe);
    if (t.fp8_enabled()) {
      EXPECT_EQ(t.fp8_recipe == Fp8Recipe::kMxfp8, cc >= 100);
    }
    seen.insert({cc, static_cast<int>(t.fp8), static_cast<int>(t.fp8_recipe)});
  }
  EXPECT_EQ(seen.size(), 11u);
  // With the distributed optimizer: FP8 parameters too, and MXFP8 ones through the gradient
  // buffer (the reuse false with them is cut by validation, not by the enumeration): B200
  // off 1, then per format: no gather 1 + gather with the reuse off or on 2.
  const SweepSpec distopt = must(small_sweep(R"({"system": ["systems/dgx-b200.json"],
      "training.use_distributed_optimizer": [true], "training.fp8": "auto",
      "training.fp8_recipe": "auto", "training.fp8_param_gather": "auto",
      "training.reuse_grad_buf_for_mxfp8_param_ag": "auto"})"));
  EXPECT_EQ(sim::count_configurations(distopt), 1 + 2 * 3);
  int valid = 0;
  for (sim::SweepConfig c : all_configs(distopt)) {
    if (finalize_workload(c.workload, "test-sweep.json").empty()) ++valid;
  }
  EXPECT_EQ(valid, 1 + 2 * 2);
}

TEST(SweepEnumerate, AutoAccountForEmbeddingAndLossKeepTheSplitEven) {
  // 4 layers on 8 GPUs: p divides 8 and one of 4, 5 or 6 counted layers (the embedding, the
  // loss, both or neither counted): 1, 2 or 4. p 1 splits any; p 2 splits 4 or 6 (both or
  // neither: the embedding's axis looks ahead to the loss's); p 4 only 4.
  const SweepSpec spec = must(small_sweep(R"({"training.pipeline_model_parallel_size": "auto",
      "training.account_for_embedding_in_pipeline_split": "auto",
      "training.account_for_loss_in_pipeline_split": "auto"})"));
  int valid = 0;
  std::set<std::tuple<std::int64_t, bool, bool>> seen;
  for (sim::SweepConfig c : all_configs(spec)) {
    const TrainingConfig& t = c.workload.training;
    seen.insert({t.pipeline_model_parallel_size, t.account_for_embedding_in_pipeline_split,
                 t.account_for_loss_in_pipeline_split});
    if (finalize_workload(c.workload, "test-sweep.json").empty()) ++valid;
  }
  const std::set<std::tuple<std::int64_t, bool, bool>> want = {
      {1, false, false}, {1, false, true}, {1, true, false}, {1, true, true},
      {2, false, false}, {2, true, true},  {4, false, false}};
  EXPECT_EQ(seen, want);
  EXPECT_EQ(valid, static_cast<int>(want.size()));
}

TEST(SweepEnumerate, AutoContextParallelKeepsMegatronsAndTransformerEnginesRules) {
  // world 8, 8 heads, 2 KV groups, seq 256, fused attention. t | 8 and 2 groups: {1, 2}. cp |
  // 8/t with 256 % 2cp = 0: p2p {1,2,4,8} for t 1, {1,2,4} for t 2; a2a also needs the KV
  // heads per TP rank (2/t) divisible by cp: {1,2} for t 1, {1} for t 2.
  const SweepSpec spec = must(small_sweep(R"({"model.num_query_groups": [2],
      "model.attention_backend": ["auto"], "training.tensor_model_parallel_size": "auto",
      "training.cp_comm_type": ["p2p", "a2a"], "training.context_parallel_size": "auto"})"));
  EXPECT_EQ(sim::count_configurations(spec), (4 + 2) + (3 + 1));
  for (sim::SweepConfig c : all_configs(spec)) {
    const TrainingConfig& t = c.workload.training;
    EXPECT_TRUE(finalize_workload(c.workload, "test-sweep.json").empty())
        << "t" << t.tensor_model_parallel_size << " cp" << t.context_parallel_size;
    EXPECT_EQ(t.data_parallel_size * t.tensor_model_parallel_size * t.context_parallel_size, 8);
  }
  // Without fused attention context parallelism is not offered at all; with the default
  // backend ("auto", Megatron-Core's) it is.
  const SweepSpec unfused = must(small_sweep(
      R"({"model.attention_backend": ["unfused"], "training.context_parallel_size": "auto"})"));
  EXPECT_EQ(sim::count_configurations(unfused), 1);
  const SweepSpec omitted = must(small_sweep(R"({"training.context_parallel_size": "auto"})"));
  EXPECT_EQ(sim::count_configurations(omitted), 4);  // cp 1, 2, 4, 8 at t 1
}

// Expert parallelism on "auto" (8 GPUs, 8 experts, expert FFN 256, no biases): EP divides the
// experts and the world: {1, 2, 4, 8}; the expert TP then divides world / EP and the FFN
// width: 4 + 3 + 2 + 1 = 10; each with allgather and alltoall, and "flex" (DeepEP) wherever
// the expert TP x EP group has 2, 4 or 8 GPUs (all but EP 1 x ETP 1): 20 + 9 = 29, every one
// valid by Megatron's (and DeepEP's) rules.
TEST(SweepEnumerate, AutoExpertParallelismKeepsMegatronsRules) {
  const std::string base = R"({"name": "moe-small",
      "model": {"num_layers": 4, "hidden_size": 512, "num_attention_heads": 8,
                "seq_length": 256, "vocab_size": 50257, "num_experts": 8, "moe_router_topk": 2,
                "moe_ffn_hidden_size": 256, "add_bias_linear": false},
      "training": {"world_size": 8, "tensor_model_parallel_size": 1,
                   "pipeline_model_parallel_size": 1, "micro_batch_size": 1,
                   "global_batch_size": 16, "bf16": true},
      "system": "systems/dgx-a100-80gb.json"})";
  const SweepSpec spec = must(load_sweep_text(
      R"({"base": )" + base + R"(, "search": {"training.expert_model_parallel_size": "auto",
          "training.expert_tensor_parallel_size": "auto",
          "training.moe_token_dispatcher_type": "auto"}})",
      "moe-sweep.json", ".", test::load_options()));
  EXPECT_EQ(sim::count_configurations(spec), 29);
  std::set<std::pair<std::int64_t, std::int64_t>> seen;
  int flex = 0;
  for (sim::SweepConfig c : all_configs(spec)) {
    const TrainingConfig& t = c.workload.training;
    EXPECT_TRUE(finalize_workload(c.workload, "moe-sweep.json").empty())
        << "ep" << t.expert_model_parallel_size << " etp" << t.expert_tensor_parallel_size;
    if (t.moe_token_dispatcher_type == MoeDispatcher::kFlex) {
      ++flex;
      EXPECT_GT(t.expert_model_parallel_size * t.expert_tensor_parallel_size, 1);
    }
    seen.insert({t.expert_model_parallel_size, t.expert_tensor_parallel_size});
  }
  EXPECT_EQ(seen.size(), 10u);
  EXPECT_EQ(flex, 9);
  EXPECT_TRUE(seen.count({8, 1}) == 1 && seen.count({1, 8}) == 1 && seen.count({2, 4}) == 1);
  // A dense model: the expert knobs keep their one value.
  const SweepSpec dense = must(small_sweep(R"({"training.expert_model_parallel_size": "auto",
      "training.moe_token_dispatcher_type": "auto"})"));
  EXPECT_EQ(sim::count_configurations(dense), 1);
}

// The capacity factor on "auto" (issue 16, item 8): none (dropless) and 1.0, 1.25, 2.0 where
// Megatron takes a capacity and stepsim prices it (the alltoall dispatcher); padding to the
// capacity on "auto" only with a factor. allgather: none (1); alltoall: none, then 3 factors x
// padding off/on (7). Every one is valid; a listed factor with allgather is cut by its rule.
TEST(SweepEnumerate, AutoCapacityFactorKeepsMegatronsRules) {
  const std::string base = R"({"name": "moe-small",
      "model": {"num_layers": 4, "hidden_size": 512, "num_attention_heads": 8,
                "seq_length": 256, "vocab_size": 50257, "num_experts": 8, "moe_router_topk": 2,
                "moe_ffn_hidden_size": 256, "add_bias_linear": false},
      "training": {"world_size": 8, "tensor_model_parallel_size": 1,
                   "pipeline_model_parallel_size": 1, "expert_model_parallel_size": 8,
                   "micro_batch_size": 1, "global_batch_size": 16, "bf16": true},
      "system": "systems/dgx-a100-80gb.json"})";
  const auto sweep = [&](const std::string& search) {
    return must(load_sweep_text(R"({"base": )" + base + R"(, "search": )" + search + "}",
                                "moe-sweep.json", ".", test::load_options()));
  };
  const SweepSpec spec = sweep(R"({"training.moe_token_dispatcher_type": "auto",
      "training.moe_expert_capacity_factor": "auto",
      "training.moe_pad_expert_input_to_capacity": "auto"})");
  // flex (EP 8): dropless only, as stepsim offers capacity with the alltoall dispatcher.
  EXPECT_EQ(sim::count_configurations(spec), 1 + 7 + 1);
  std::set<std::tuple<MoeDispatcher, double, bool>> seen;
  for (sim::SweepConfig c : all_configs(spec)) {
    const TrainingConfig& t = c.workload.training;
    EXPECT_TRUE(finalize_workload(c.workload, "moe-sweep.json").empty())
        << t.moe_expert_capacity_factor << " pad " << t.moe_pad_expert_input_to_capacity;
    seen.insert({t.moe_token_dispatcher_type, t.moe_expert_capacity_factor,
                 t.moe_pad_expert_input_to_capacity});
  }
  EXPECT_EQ(seen.size(), 9u);
  EXPECT_EQ(seen.count({MoeDispatcher::kAllGather, 0.0, false}), 1u);
  EXPECT_EQ(seen.count({MoeDispatcher::kFlex, 0.0, false}), 1u);
  EXPECT_EQ(seen.count({MoeDispatcher::kAllToAll, 1.25, true}), 1u);
  EXPECT_EQ(seen.count({MoeDispatcher::kAllToAll, 0.0, true}), 0u);
  // Listed values are taken as given: the broken rule is the cut's reason.
  const SweepSpec listed = sweep(R"({"training.moe_token_dispatcher_type": ["allgather"],
      "training.moe_expert_capacity_factor": [1.0]})");
  std::vector<sim::SweepConfig> configs = all_configs(listed);
  ASSERT_EQ(configs.size(), 1u);
  const Errors errors = finalize_workload(configs[0].workload, "moe-sweep.json");
  ASSERT_FALSE(errors.empty());
  EXPECT_EQ(errors.front().key, "training.moe_expert_capacity_factor");
  // A dense model keeps no capacity.
  const SweepSpec dense = must(small_sweep(R"({"training.moe_expert_capacity_factor": "auto",
      "training.moe_pad_expert_input_to_capacity": "auto"})"));
  EXPECT_EQ(sim::count_configurations(dense), 1);
}

TEST(SweepEnumerate, PaddedVocabularyFollowsTensorParallel) {
  const SweepSpec spec = must(small_sweep(R"({"training.tensor_model_parallel_size": [1, 8]})"));
  auto configs = all_configs(spec);
  ASSERT_EQ(configs.size(), 2u);
  ASSERT_TRUE(finalize_workload(configs[0].workload, "x").empty());
  ASSERT_TRUE(finalize_workload(configs[1].workload, "x").empty());
  EXPECT_EQ(configs[0].workload.model.padded_vocab_size, 50304);  // multiple of 128
  EXPECT_EQ(configs[1].workload.model.padded_vocab_size, 51200);  // multiple of 1024
}

// Uneven stages are listed knobs: each value is Megatron's split, invalid ones cut by the
// rule they break; "auto" is refused (the valid first/last sizes depend on p, v and each other).
TEST(SweepEnumerate, UnevenStagesAreListedKnobs) {
  const SweepSpec spec = must(small_sweep(R"({"training.pipeline_model_parallel_size": [2],
      "training.decoder_first_pipeline_num_layers": [1, 3, 4]})"));
  std::vector<sim::SweepConfig> configs = all_configs(spec);
  ASSERT_EQ(configs.size(), 3u);
  std::vector<std::string> splits;
  for (sim::SweepConfig& c : configs) {
    const Errors errors = finalize_workload(c.workload, "x");
    if (!errors.empty()) {
      EXPECT_EQ(errors.front().key, "training.decoder_first_pipeline_num_layers");
      splits.emplace_back("invalid");
      continue;
    }
    splits.push_back(stage_layers_text(pipeline_split(c.workload.training, c.workload.model)));
  }
  // 4 layers over 2 stages: the first takes 1 or 3, the last the rest; 4 leaves it none.
  EXPECT_EQ(splits, (std::vector<std::string>{"1,3", "3,1", "invalid"}));
  const std::vector<std::string> columns = sim::sweep_columns(spec);
  EXPECT_NE(std::find(columns.begin(), columns.end(), "training.decoder_first_pipeline_num_layers"),
            columns.end());
  EXPECT_FALSE(small_sweep(R"({"training.decoder_first_pipeline_num_layers": "auto"})").ok());
}

// "auto" pipeline sizes divide the layers Megatron splits: 4 layers + embedding + loss = 6
// counted, so 1 and 2 of the 8 GPUs' divisors (4 without the flags).
TEST(SweepEnumerate, AutoPipelineSizesFollowTheCountedLayers) {
  std::string base = test::small_base();
  const std::string flag = R"("bf16": true)";
  base.replace(base.find(flag), flag.size(),
               flag + R"(, "account_for_embedding_in_pipeline_split": true,
                         "account_for_loss_in_pipeline_split": true)");
  const std::string text =
      R"({"base": )" + base + R"(, "search": {"training.pipeline_model_parallel_size": "auto"}})";
  const SweepSpec spec = must(load_sweep_text(text, "test-sweep.json", ".", test::load_options()));
  std::vector<std::int64_t> sizes;
  for (sim::SweepConfig& c : all_configs(spec)) {
    EXPECT_TRUE(finalize_workload(c.workload, "x").empty());
    sizes.push_back(c.workload.training.pipeline_model_parallel_size);
  }
  EXPECT_EQ(sizes, (std::vector<std::int64_t>{1, 2}));
}

TEST(SweepEvaluate, CutReasonsAreCountedByKey) {
  const SweepSpec spec = must(small_sweep(
      R"({"training.world_size": [8, 16], "training.tensor_model_parallel_size": [1, 3]})",
      R"("constraints": {"max_gpus": 8})"));
  sim::SweepSummary summary(spec, sim::sweep_columns(spec));
  sim::SweepRunOptions o;
  run_csv(spec, o, &summary);
  EXPECT_EQ(summary.evaluated(), 4);
  EXPECT_EQ(summary.cut_by_reason().at("constraints.max_gpus"), 2);
  EXPECT_EQ(summary.cut_by_reason().at("training.tensor_model_parallel_size"), 1);
  EXPECT_EQ(summary.feasible(), 1);
  EXPECT_EQ(summary.simulated(), 1);
  ASSERT_EQ(summary.top().size(), 1u);
  EXPECT_EQ(summary.top()[0].workload.training.tensor_model_parallel_size, 1);
  EXPECT_GT(summary.top()[0].row.metrics.step_time_s, 0.0);
}

TEST(SweepEvaluate, OutOfMemoryIsCutBeforeSimulating) {
  const SweepSpec spec = must(small_sweep(R"({"system.memory_bytes": [1000000, 80000000000]})"));
  sim::SweepSummary summary(spec, sim::sweep_columns(spec));
  run_csv(spec, {}, &summary);
  EXPECT_EQ(summary.cut_by_reason().at("memory.analytic"), 1);
  EXPECT_EQ(summary.simulated(), 1);
  EXPECT_EQ(summary.feasible(), 1);
}

TEST(SweepEvaluate, StepTimeBudget) {
  const SweepSpec spec = must(small_sweep(R"({"training.micro_batch_size": [1]})",
                                          R"("constraints": {"step_time_budget_s": 1e-9})"));
  sim::SweepSummary summary(spec, sim::sweep_columns(spec));
  run_csv(spec, {}, &summary);
  EXPECT_EQ(summary.cut_by_reason().at("constraints.step_time_budget_s"), 1);
  EXPECT_EQ(summary.simulated(), 1);
}

const char* kMidSpace = R"({"training.tensor_model_parallel_size": "auto",
    "training.pipeline_model_parallel_size": "auto", "training.micro_batch_size": "auto",
    "training.recompute_granularity": ["none", "full"]})";

TEST(SweepRun, SameOutputForAnyNumberOfJobs) {
  const SweepSpec spec = must(small_sweep(kMidSpace));
  sim::SweepRunOptions one;
  const std::string a = run_csv(spec, one);
  sim::SweepRunOptions two;
  two.jobs = 2;
  sim::SweepRunOptions five;
  five.jobs = 5;
  EXPECT_EQ(a, run_csv(spec, two));
  EXPECT_EQ(a, run_csv(spec, five));
  EXPECT_GT(std::count(a.begin(), a.end(), '\n'), 40);
}

TEST(SweepRun, ResumeAfterInterruptionGivesTheSameFile) {
  const SweepSpec spec = must(small_sweep(kMidSpace));
  sim::SweepRunOptions full_options;
  full_options.jobs = 2;
  const std::string full = run_csv(spec, full_options);
  for (const std::size_t torn : {std::size_t{0}, std::size_t{7}}) {
    std::atomic<bool> cancel{false};
    sim::SweepRunOptions first;
    // One job: the cancel is seen before the next batch is handed out. With two, the second
    // worker can take the whole (small) space before row 10 is fed on a loaded machine.
    first.jobs = 1;
    first.cancel = &cancel;
    first.progress = [&](std::int64_t fed) {
      if (fed >= 10) cancel = true;
    };
    std::string partial = run_csv(spec, first);
    ASSERT_LT(partial.size(), full.size());
    EXPECT_EQ(full.substr(0, partial.size()), partial);  // a clean prefix
    partial.resize(partial.size() - torn);               // a kill in the middle of a line
    auto parsed = sim::parse_sweep_csv(partial, sim::sweep_columns(spec), "partial.csv");
    ASSERT_TRUE(parsed.ok());
    ASSERT_GE(parsed->rows.size(), 9u);
    sim::SweepRunOptions resume;
    resume.jobs = 2;
    resume.known = parsed->rows;
    const std::int64_t next = parsed->rows.back().index + 1;
    const std::string rest = run_csv(spec, resume, nullptr, false, next);
    EXPECT_EQ(partial.substr(0, parsed->complete_bytes) + rest, full);
  }
}

TEST(SweepRun, RowsOfAnotherSweepAreRejected) {
  const SweepSpec a = must(small_sweep(R"({"training.micro_batch_size": [1, 2]})"));
  const SweepSpec b = must(small_sweep(R"({"training.micro_batch_size": [2, 1]})"));
  const auto parsed = sim::parse_sweep_csv(run_csv(a, {}), sim::sweep_columns(a), "a.csv");
  ASSERT_TRUE(parsed.ok());
  sim::SweepRunOptions o;
  o.known = parsed->rows;
  const test::Models m = test::models_for(b);
  const sim::SweepEvaluator evaluator(b, m.ptrs);
  EXPECT_FALSE(sim::run_sweep(b, evaluator, o, {}).ok());
}

TEST(SweepRun, RanksSplitTheSpaceAndMergeBack) {
  const SweepSpec spec = must(small_sweep(kMidSpace));
  const std::string full = run_csv(spec, {});
  std::vector<sim::SweepRow> rows;
  for (std::int64_t rank = 0; rank < 3; ++rank) {
    sim::SweepRunOptions o;
    o.rank = rank;
    o.ranks = 3;
    auto part = sim::parse_sweep_csv(run_csv(spec, o), sim::sweep_columns(spec), "rank");
    ASSERT_TRUE(part.ok());
    for (const sim::SweepRow& r : part->rows) EXPECT_EQ(r.index % 3, rank);
    rows.insert(rows.end(), part->rows.begin(), part->rows.end());
  }
  std::sort(rows.begin(), rows.end(),
            [](const sim::SweepRow& x, const sim::SweepRow& y) { return x.index < y.index; });
  sim::SweepRunOptions merge;
  merge.known = rows;
  EXPECT_EQ(run_csv(spec, merge), full);
}

TEST(SweepRun, SearchSpaceWithAutoKnobsIsBoundedBeforeAnyWork) {
  // Listed values multiply to 1; the "auto" chain of AutoChainCountedByHand gives 47.
  const SweepSpec spec = must(small_sweep(R"({"training.tensor_model_parallel_size": "auto",
      "training.pipeline_model_parallel_size": "auto",
      "training.virtual_pipeline_model_parallel_size": "auto",
      "training.micro_batch_size": "auto"})"));
  EXPECT_EQ(sim::count_configurations(spec, 10), 11);
  sim::SweepPlanOptions o;
  o.jobs = 1;
  o.max_configurations = 46;
  const sim::SweepPlanOutcome refused = sim::run_sweep_plan(spec, o);
  ASSERT_FALSE(refused.plan.has_value());
  ASSERT_EQ(refused.errors.size(), 1U);
  EXPECT_EQ(refused.errors[0].key, "search");
  EXPECT_EQ(exit_status(refused.errors), 2);
  EXPECT_NE(refused.errors[0].message.find("more than 46 configurations"), std::string::npos);
  o.max_configurations = 47;
  const sim::SweepPlanOutcome run = sim::run_sweep_plan(spec, o);
  ASSERT_TRUE(run.plan.has_value());
  EXPECT_EQ(run.plan->total, 47);
}

TEST(SweepCsv, RowsReadBackEqual) {
  sim::SweepRow row;
  row.index = 42;
  row.label = "t8 p2";
  row.knobs = {"8", "true", "a \"quoted\", comma"};
  row.status = sim::SweepStatus::kOutOfMemory;
  row.reason_key = "memory.simulated";
  row.reason = "line\nbreak, \"and quotes\"";
  row.simulated = true;
  row.metrics.step_time_s = 0.1 + 0.2;
  row.metrics.mfu = 1.0 / 3.0;
  row.metrics.peak_memory_bytes = 123456789012;
  row.metrics.cp_bubble_s = 1e-300;
  const std::vector<std::string> columns{"a", "b", "c"};
  const std::string text = sim::csv_header(columns) + "\n" + sim::csv_line(row) + "\n";
  const auto parsed = sim::parse_sweep_csv(text, columns, "x.csv");
  ASSERT_TRUE(parsed.ok());
  ASSERT_EQ(parsed->rows.size(), 1u);
  EXPECT_EQ(parsed->rows[0], row);
  EXPECT_EQ(parsed->complete_bytes, text.size());
  EXPECT_FALSE(sim::parse_sweep_csv("index,other\n", columns, "x.csv").ok());
}

TEST(SweepSummary, TopIsOrderedAndParetoIsNotDominated) {
  const SweepSpec spec = must(small_sweep(kMidSpace, R"("top": 5)"));
  sim::SweepSummary summary(spec, sim::sweep_columns(spec));
  run_csv(spec, {}, &summary);
  ASSERT_EQ(summary.top().size(), 5u);
  for (std::size_t i = 1; i < summary.top().size(); ++i) {
    EXPECT_GE(summary.top()[i - 1].row.metrics.tokens_per_s,
              summary.top()[i].row.metrics.tokens_per_s);
  }
  ASSERT_FALSE(summary.pareto().empty());
  EXPECT_EQ(summary.pareto().back().row.metrics.tokens_per_s,
            summary.top().front().row.metrics.tokens_per_s);
  for (const auto& p : summary.pareto()) {
    for (const auto& q : summary.pareto()) {
      if (&p == &q) continue;
      EXPECT_FALSE(q.row.metrics.tokens_per_s >= p.row.metrics.tokens_per_s &&
                   q.row.metrics.peak_memory_bytes <= p.row.metrics.peak_memory_bytes);
    }
  }
}

}  // namespace
}  // namespace stepsim
