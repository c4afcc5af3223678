// Every flag of the pinned Megatron-LM (core/config/data/megatron-arguments.txt, written by
// core/config/tools/megatron_arguments.py) is classified: a schema row's (modelled), read by
// the importer itself, in the not-modelled table (job-changing: exit 2 naming it), or in a
// harmless class (a quiet note). And a launch line carrying the harmless classes imports and
// predicts the step of the same line without them.

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "../support/cli_runner.hpp"
#include "stepsim/config/megatron_flags.hpp"
#include "stepsim/config/schema.hpp"
#include "stepsim/import/import.hpp"

namespace stepsim {
namespace {

const std::string kPinned =
    std::string(STEPSIM_SOURCE_DIR) + "/core/config/data/megatron-arguments.txt";

struct Pinned {
  std::string header;
  std::vector<std::pair<std::string, std::string>> flags;  // (flag, dest)
};

Pinned read_pinned() {
  Pinned p;
  std::ifstream in(kPinned);
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with("#")) {
      p.header += line + "\n";
    } else if (!line.empty()) {
      std::istringstream words(line);
      std::string flag, dest;
      words >> flag >> dest;
      p.flags.emplace_back(flag, dest);
    }
  }
  return p;
}

// The flags of the schema's model and training rows ("--swiglu=true" as "--swiglu").
std::set<std::string> schema_flags() {
  std::set<std::string> out;
  for (const KeyInfo& k : scenario_schema()) {
    std::istringstream words{std::string(k.flags)};
    std::string w;
    while (words >> w) out.insert(w.substr(0, w.find('=')));
  }
  return out;
}

// A small GPT job every line below starts from.
constexpr const char* kBase =
    "torchrun --nnodes 2 --nproc_per_node 8 pretrain_gpt.py --num-layers 8 --hidden-size 2048 "
    "--num-attention-heads 16 --seq-length 2048 --max-position-embeddings 2048 "
    "--micro-batch-size 1 --global-batch-size 64 --tensor-model-parallel-size 2 "
    "--pipeline-model-parallel-size 2 --vocab-size 32000 --bf16";

MegatronImportOptions options() {
  MegatronImportOptions o;
  o.system = "systems/dgx-h100-80gb.json";
  return o;
}

TEST(MegatronArguments, PinnedListNamesItsCommitAndHoldsBothSourcesOfFlags) {
  const Pinned p = read_pinned();
  EXPECT_NE(p.header.find("NVIDIA/Megatron-LM "), std::string::npos) << p.header;
  EXPECT_NE(p.header.find("megatron_arguments.py"), std::string::npos) << p.header;
  std::map<std::string, std::string> dest(p.flags.begin(), p.flags.end());
  // An add_argument flag of arguments.py, ...
  EXPECT_EQ(dest["--tensor-model-parallel-size"], "tensor_model_parallel_size");
  // ... a TransformerConfig field (a bool that defaults to True: --no-x and --disable-x), ...
  EXPECT_EQ(dest["--no-clone-scatter-output-in-embedding"], "clone_scatter_output_in_embedding");
  EXPECT_EQ(dest["--disable-clone-scatter-output-in-embedding"],
            "clone_scatter_output_in_embedding");
  // ... argparse_meta's arg_names and dest (CheckpointConfig, ProfilingConfig) ...
  EXPECT_EQ(dest["--no-ckpt-fully-parallel-save"], "ckpt_fully_parallel_save");
  EXPECT_EQ(dest["--profile"], "profile");
  // ... and none of an excluded field (ArgumentGroupFactory's exclude list).
  EXPECT_EQ(dest.count("--pipeline-dtype"), 0u);
  EXPECT_GT(p.flags.size(), 800u);
}

TEST(MegatronArguments, EveryPinnedFlagIsClassified) {
  const std::set<std::string> modelled = schema_flags();
  std::vector<std::string> unclassified;
  for (const auto& [flag, dest] : read_pinned().flags) {
    if (modelled.count(flag) != 0) continue;
    if (classify_listed_flag(flag, "") != FlagClass::kUnknown) continue;
    // The importer's own flags (--num-query-groups, --tokenizer-type, ...): read, so neither
    // refused as unknown nor noted as ignored (the family prefixes' fallback).
    auto imported = scenario_from_megatron_args(std::string(kBase) + " " + flag, options());
    bool refused_unknown = false;
    if (!imported.ok()) {
      for (const Error& e : imported.errors()) {
        refused_unknown |= e.message.find("not a Megatron-LM flag stepsim knows") !=
                           std::string::npos;
      }
    }
    const bool read_by_importer =
        !refused_unknown &&
        (!imported.ok() || std::find(imported->ignored_flags.begin(),
                                     imported->ignored_flags.end(),
                                     flag) == imported->ignored_flags.end());
    if (!read_by_importer) unclassified.push_back(flag);
  }
  std::string names;
  for (const std::string& f : unclassified) names += " " + f;
  EXPECT_TRUE(unclassified.empty())
      << unclassified.size() << " flags of the pinned Megatron-LM are not classified (add each "
      << "to a schema row, the not-modelled table or a harmless class):" << names;
}

TEST(MegatronArguments, HarmlessClassesListPinnedFlagsOnceAndOutsideTheOtherTables) {
  std::set<std::string> pinned;
  for (const auto& [flag, dest] : read_pinned().flags) pinned.insert(flag);
  const std::set<std::string> modelled = schema_flags();
  std::set<std::string> seen;
  for (const HarmlessFlagClass& c : harmless_flag_classes()) {
    EXPECT_FALSE(c.why.empty()) << c.name;
    EXPECT_FALSE(c.flags.empty()) << c.name;
    for (const std::string_view f : c.flags) {
      const std::string flag(f);
      EXPECT_TRUE(seen.insert(flag).second) << flag << " is in two harmless classes";
      EXPECT_EQ(pinned.count(flag), 1u) << flag << " (" << c.name << ") is no flag of the pinned "
                                        << "Megatron-LM";
      EXPECT_EQ(modelled.count(flag), 0u) << flag << " is a schema row's flag";
      EXPECT_EQ(find_unmodelled_argument(flag), nullptr) << flag << " is not-modelled too";
    }
  }
}

TEST(MegatronArguments, NotModelledFlagsAreListedOnce) {
  std::set<std::string> seen;
  for (const UnmodelledArgument& a : unmodelled_arguments()) {
    if (a.flag.starts_with("--")) {
      EXPECT_TRUE(seen.insert(std::string(a.flag)).second) << a.flag << " is listed twice";
    }
  }
}

// A launch line as people write them: one flag of every harmless class, with values.
std::string line_with_one_flag_of_every_class() {
  return std::string(kBase) +
         " --use-persistent-ckpt-worker --verify-integrity --save /ckpt --save-interval 500"
         " --async-save --ckpt-format torch_dist"              // checkpointing
         " --log-interval 10 --tensorboard-dir /tb --wandb-project p"  // logging
         " --profile --profile-step-start 10 --profile-step-end 12"    // profiling
         " --data-path 0.3 /data/a 0.7 /data/b --split 99,1,0 --num-workers 2"  // data
         " --tokenizer-model /tok.model"                               // tokenizer
         " --seed 1234 --init-method-std 0.02 --data-parallel-random-init"  // seeds
         " --lr 3e-4 --lr-decay-style cosine --adam-beta2 0.95"         // hyper-parameters
         " --eval-interval 1000 --eval-iters 10 --exit-duration-in-mins 230"  // evaluation
         " --rerun-mode disabled --enable-ft-package --check-for-spiky-loss"  // fault tolerance
         " --local-rank 0 --disable-gloo-process-groups"                // launcher
         " --inference-max-requests 8"                                  // inference
         " --bert-load /bert"                                           // other scripts
         " --attention-softmax-in-fp32 --norm-epsilon 1e-5"             // numerics
         " --fp8-interval 1";                                           // deprecated
}

TEST(MegatronArguments, OneFlagOfEveryHarmlessClassImportsWithANote) {
  const std::string line = line_with_one_flag_of_every_class();
  auto imported = scenario_from_megatron_args(line, options());
  ASSERT_TRUE(imported.ok()) << imported.errors().front().key << imported.errors().front().message;
  // Every class is represented on the line and named in the note.
  for (const HarmlessFlagClass& c : harmless_flag_classes()) {
    const bool on_line = std::any_of(c.flags.begin(), c.flags.end(), [&](std::string_view f) {
      return std::find(imported->ignored_flags.begin(), imported->ignored_flags.end(), f) !=
             imported->ignored_flags.end();
    });
    EXPECT_TRUE(on_line) << "no flag of the harmless class \"" << c.name << "\" on the line";
  }
  for (const std::string f : {"--use-persistent-ckpt-worker", "--verify-integrity",
                              "--attention-softmax-in-fp32", "--profile", "--data-path"}) {
    EXPECT_NE(std::find(imported->ignored_flags.begin(), imported->ignored_flags.end(), f),
              imported->ignored_flags.end())
        << f;
  }
}

TEST(MegatronArguments, EveryHarmlessFlagAtOnceImports) {
  std::string line = kBase;
  std::size_t count = 0;
  for (const HarmlessFlagClass& c : harmless_flag_classes()) {
    for (const std::string_view f : c.flags) {
      line += " " + std::string(f);
      ++count;
    }
  }
  auto imported = scenario_from_megatron_args(line, options());
  ASSERT_TRUE(imported.ok()) << imported.errors().front().key << imported.errors().front().message;
  EXPECT_EQ(imported->ignored_flags.size(), count);
}

double step_time(const std::string& line) {
  const testing::CliRun run = testing::run_stepsim(
      "predict --format json --system dgx-h100 --megatron-args '" + line + "'", false);
  EXPECT_EQ(run.status, 0) << run.out;
  if (run.status != 0) return -1;
  return nlohmann::json::parse(run.out).at("step_time_s").get<double>();
}

TEST(MegatronArguments, HarmlessFlagsPredictTheSameStep) {
  const double base = step_time(kBase);
  ASSERT_GT(base, 0);
  EXPECT_EQ(step_time(line_with_one_flag_of_every_class()), base);
}

TEST(MegatronArguments, JobChangingFlagsAreRefusedByName) {
  for (const std::string flag : {"--log-num-zeros-in-grad", "--use-checkpoint-args",
                                 "--reset-attention-mask", "--fake-process-group"}) {
    auto imported = scenario_from_megatron_args(std::string(kBase) + " " + flag, options());
    ASSERT_FALSE(imported.ok()) << flag;
    EXPECT_EQ(imported.errors().front().key, flag);
    EXPECT_NE(imported.errors().front().message.find("changes the job"), std::string::npos);
  }
  // Megatron's default leaves the job as stepsim models it.
  EXPECT_TRUE(scenario_from_megatron_args(std::string(kBase) + " --optimizer adam", options()).ok());
  EXPECT_TRUE(
      scenario_from_megatron_args(std::string(kBase) + " --timing-log-level 0", options()).ok());
  EXPECT_FALSE(
      scenario_from_megatron_args(std::string(kBase) + " --timing-log-level 2", options()).ok());
}

// Deterministic mode: Transformer Engine then runs only attention backends with a
// deterministic backward, which stepsim has no measurement of: refused naming what is missing.
TEST(MegatronArguments, DeterministicModeIsRefusedNamingTheMissingKernels) {
  auto flag = scenario_from_megatron_args(std::string(kBase) + " --deterministic-mode", options());
  ASSERT_FALSE(flag.ok());
  EXPECT_EQ(flag.errors().front().key, "--deterministic-mode");
  EXPECT_NE(flag.errors().front().message.find("deterministic"), std::string::npos);
  EXPECT_NE(flag.errors().front().message.find("no measurement"), std::string::npos);
  auto env = scenario_from_megatron_args(
      "NVTE_ALLOW_NONDETERMINISTIC_ALGO=0 " + std::string(kBase), options());
  ASSERT_FALSE(env.ok());
  EXPECT_EQ(env.errors().front().key, "NVTE_ALLOW_NONDETERMINISTIC_ALGO=0");
  EXPECT_NE(env.errors().front().message.find("flash-attn >= 2.4.1"), std::string::npos);
  // 1 is Transformer Engine's default: the job as stepsim models it.
  auto te_default = scenario_from_megatron_args(
      "NVTE_ALLOW_NONDETERMINISTIC_ALGO=1 " + std::string(kBase), options());
  ASSERT_TRUE(te_default.ok());
  EXPECT_NE(std::find(te_default->ignored_flags.begin(), te_default->ignored_flags.end(),
                      "NVTE_ALLOW_NONDETERMINISTIC_ALGO=1"),
            te_default->ignored_flags.end());
  // With --allow-unmodelled both are listed in the scenario and predicted anyway.
  MegatronImportOptions allow = options();
  allow.allow_unmodelled = true;
  auto listed = scenario_from_megatron_args(
      "NVTE_ALLOW_NONDETERMINISTIC_ALGO=0 " + std::string(kBase) + " --deterministic-mode", allow);
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->unmodelled.size(), 2u);
}

// NCCL's algorithm and protocol restrictions are modelled (nccl_algo_proto_test.cpp): the
// launch line's assignments import as their keys; NCCL's other tuning variables are refused.
TEST(MegatronArguments, NcclAlgoAndProtoImportAsTheirKeys) {
  for (const std::string word : {"NCCL_ALGO=Ring", "NCCL_PROTO=^LL128"}) {
    auto imported = scenario_from_megatron_args(word + " " + kBase, options());
    ASSERT_TRUE(imported.ok()) << word << format_errors(imported.errors());
    const std::string key = word.starts_with("NCCL_ALGO") ? "\"nccl_algo\": \"Ring\""
                                                          : "\"nccl_proto\": \"^LL128\"";
    EXPECT_NE(imported->scenario_json.find(key), std::string::npos) << imported->scenario_json;
  }
  auto buffsize =
      scenario_from_megatron_args("NCCL_BUFFSIZE=8388608 " + std::string(kBase), options());
  ASSERT_FALSE(buffsize.ok());
  EXPECT_EQ(buffsize.errors().front().key, "NCCL_BUFFSIZE=8388608");
}

}  // namespace
}  // namespace stepsim
