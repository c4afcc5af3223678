// Megatron-LM's own example launch lines (tests/data/megatron-examples/, copied with their
// source paths) through the importer: each either loads with every job-changing flag honoured,
// or fails naming exactly the flags stepsim does not model (EXPECTED.tsv). None may load as a
// different job.

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "stepsim/import/import.hpp"
#include "stepsim/check/load.hpp"
#include "stepsim/memory/memory_model.hpp"

namespace stepsim {
namespace {

const std::string kDir = std::string(STEPSIM_SOURCE_DIR) + "/tests/data/megatron-examples/";

std::string launch_line(const std::string& file) {
  std::ifstream in(kDir + file);
  std::string line;
  std::string text;
  while (std::getline(in, line)) {
    if (!line.starts_with("#")) text += line + "\n";
  }
  return text;
}

std::set<std::string> words(const std::string& s) {
  std::istringstream in(s);
  std::set<std::string> out;
  for (std::string w; in >> w;) out.insert(w);
  return out;
}

TEST(MegatronExamples, EachLoadsOrNamesEveryUnmodelledFlag) {
  std::ifstream expected(kDir + "EXPECTED.tsv");
  ASSERT_TRUE(expected) << kDir;
  int checked = 0;
  for (std::string row; std::getline(expected, row);) {
    if (row.empty()) continue;
    // file <TAB> flags to be named [<TAB> the launch's facts: world_size=N for the GPUs the
    // script runs on beyond its defaults, other words appended as flags (a vocabulary size
    // the tokenizer gives)].
    std::istringstream columns(row);
    std::string file;
    std::string flags;
    std::string facts;
    std::getline(columns, file, '\t');
    std::getline(columns, flags, '\t');
    std::getline(columns, facts, '\t');
    const std::set<std::string> want = words(flags);
    std::string line = launch_line(file);
    ASSERT_FALSE(line.empty()) << file;
    MegatronImportOptions o;
    o.system = "systems/dgx-h100-80gb.json";
    std::istringstream fact_words(facts);
    for (std::string fact; fact_words >> fact;) {
      if (fact.starts_with("world_size=")) {
        o.world_size = std::stoll(fact.substr(11));
      } else {
        line += " " + fact;
      }
    }
    auto r = scenario_from_megatron_args(line, o);
    ++checked;
    if (want.empty()) {
      ASSERT_TRUE(r.ok()) << file << ": " << format_errors(r.errors());
      LoadOptions lo;
      lo.scenarios_dir = STEPSIM_SCENARIOS_DIR;
      auto w = load_scenario_text(r->scenario_json, file, ".", lo);
      EXPECT_TRUE(w.ok()) << file << ": " << format_errors(w.errors());
      continue;
    }
    ASSERT_FALSE(r.ok()) << file << " imported although it has flags stepsim does not model";
    // The flags named as not modelled; other errors (a fact the line does not give, such as
    // the vocabulary of a tokenizer stepsim cannot read) may come with them.
    const auto unmodelled_error = [](const Error& e) {
      return e.message.find("does not model") != std::string::npos ||
             e.message.find("not a Megatron-LM flag stepsim knows") != std::string::npos;
    };
    std::set<std::string> named;
    for (const Error& e : r.errors()) {
      if (unmodelled_error(e)) named.insert(e.key.substr(0, e.key.find(' ')));
    }
    EXPECT_EQ(named, want) << file << ": " << format_errors(r.errors());
    // --allow-unmodelled lists the same flags in the scenario (and nothing else is refused
    // as not modelled).
    o.allow_unmodelled = true;
    auto allowed = scenario_from_megatron_args(line, o);
    if (!allowed.ok()) {
      for (const Error& e : allowed.errors()) EXPECT_FALSE(unmodelled_error(e)) << e.message;
      continue;
    }
    std::set<std::string> listed;
    for (const std::string& f : allowed->unmodelled) listed.insert(f.substr(0, f.find(' ')));
    EXPECT_EQ(listed, want) << file;
  }
  EXPECT_GE(checked, 7);
}

// torchrun and torch.distributed.launch default --nnodes to 1: a line with --nproc_per_node
// alone (examples/mamba/train.sh) runs on that many GPUs of one node.
TEST(MegatronExamples, TorchrunWithoutNnodesRunsOnOneNode) {
  const std::string line =
      "torchrun --nproc_per_node 4 pretrain_gpt.py --num-layers 2 --hidden-size 256 "
      "--num-attention-heads 8 --seq-length 128 --micro-batch-size 1 --global-batch-size 8 "
      "--vocab-size 1000 --bf16 --tensor-model-parallel-size 2";
  MegatronImportOptions o;
  o.system = "systems/dgx-h100-80gb.json";
  auto r = scenario_from_megatron_args(line, o);
  ASSERT_TRUE(r.ok()) << format_errors(r.errors());
  LoadOptions lo;
  lo.scenarios_dir = STEPSIM_SCENARIOS_DIR;
  auto w = load_scenario_text(r->scenario_json, "line", ".", lo);
  ASSERT_TRUE(w.ok()) << format_errors(w.errors());
  EXPECT_EQ(w->training.world_size, 4);
  EXPECT_EQ(w->training.data_parallel_size, 2) << "4 GPUs = t 2 x dp 2";
  // Without a launcher the GPUs are unknown.
  auto bare = scenario_from_megatron_args(line.substr(line.find("pretrain_gpt.py")), o);
  ASSERT_FALSE(bare.ok());
  EXPECT_NE(format_errors(bare.errors()).find("--world-size"), std::string::npos);
}

// The shipped scenario of Megatron's Llama 3 8B FP8 example is the job its launch line
// imports as: the same Megatron-LM flags back out, the same memory per GPU (it once left out
// --grad-reduce-in-bf16, the fused cross entropy and dropout 0 and did not fit 80 GB).
TEST(MegatronExamples, ShippedLlama3Fp8ScenarioIsTheExampleJob) {
  MegatronImportOptions o;
  o.system = "systems/dgx-h100-80gb.json";
  auto r = scenario_from_megatron_args(launch_line("llama_train_llama3_8b_h100_fp8.txt"), o);
  ASSERT_TRUE(r.ok()) << format_errors(r.errors());
  LoadOptions lo;
  lo.scenarios_dir = STEPSIM_SCENARIOS_DIR;
  auto imported = load_scenario_text(r->scenario_json, "line", ".", lo);
  ASSERT_TRUE(imported.ok()) << format_errors(imported.errors());
  auto shipped =
      load_scenario_file(std::string(STEPSIM_SCENARIOS_DIR) + "/llama3-8b-h100-8-fp8.json", lo);
  ASSERT_TRUE(shipped.ok()) << format_errors(shipped.errors());
  EXPECT_EQ(megatron_args_of(*shipped), megatron_args_of(*imported));
  const auto a = analytic_memory(*shipped);
  const auto b = analytic_memory(*imported);
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(a[0].peak_bytes, b[0].peak_bytes);
  EXPECT_LT(a[0].peak_bytes, shipped->system.memory_bytes);
}

}  // namespace
}  // namespace stepsim
