// Issue 41's hostile inputs through the real command line: each exits 2 naming the file and
// the key (or the option, or the launch-line word) from every command that reads it.

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "../support/cli_runner.hpp"

namespace stepsim {
namespace {

using testing::run_stepsim;

const std::string kScenarios = STEPSIM_SCENARIOS_DIR;
const std::string kInvalid = std::string(STEPSIM_SOURCE_DIR) + "/tests/invalid";
const std::string kRegressions = std::string(STEPSIM_SOURCE_DIR) + "/tests/fuzz/regressions";

bool mentions(const std::string& out, const std::string& what) {
  return out.find(what) != std::string::npos;
}

TEST(HostileInput, Fp8ParametersInAnFp32JobAreRefusedByEveryCommand) {
  const std::string file = kInvalid + "/fp8-param-gather-fp32.json";
  for (const std::string command : {"check", "predict", "memory"}) {
    const auto run = run_stepsim(command + " '" + file + "'");
    EXPECT_EQ(run.status, 2) << command << ": " << run.out;
    EXPECT_TRUE(mentions(run.out, "fp8-param-gather-fp32.json: training.fp8_param_gather=true "
                                  "needs bf16 or fp16"))
        << command << ": " << run.out;
  }
  const auto sweep = run_stepsim("sweep '" + kRegressions + "/sweep-fp8-params-fp32.json'");
  EXPECT_EQ(sweep.status, 2) << sweep.out;
  EXPECT_TRUE(mentions(sweep.out, "training.fp8_param_gather")) << sweep.out;
}

TEST(HostileInput, NumbersOnTheCommandLineAreDecimal) {
  const auto ten = run_stepsim("schedule --pp 010 --microbatches 20 --format json", false);
  ASSERT_EQ(ten.status, 0) << ten.out;
  EXPECT_EQ(nlohmann::json::parse(ten.out)["ranks"].size(), 10u) << ten.out;
  const auto hex = run_stepsim("schedule --pp 0x10 --microbatches 16");
  EXPECT_EQ(hex.status, 2) << hex.out;
  EXPECT_TRUE(mentions(hex.out, "--pp: '0x10' is not a decimal integer")) << hex.out;
  const auto huge = run_stepsim("schedule --pp 99999999999999999999 --microbatches 16");
  EXPECT_EQ(huge.status, 2) << huge.out;
  EXPECT_TRUE(mentions(huge.out, "does not fit in a 64-bit integer")) << huge.out;
  // --world-size beside a launch line: 010 GPUs are ten, as Megatron-LM's argparse reads it.
  const auto world = run_stepsim(
      "import-megatron --world-size 010 --system systems/dgx-a100-80gb.json "
      "'pretrain_gpt.py --num-layers 10 --hidden-size 640 --num-attention-heads 10 "
      "--seq-length 256 --micro-batch-size 1 --global-batch-size 10 --vocab-size 1000 --bf16'",
      false);
  ASSERT_EQ(world.status, 0) << world.out;
  EXPECT_EQ(nlohmann::json::parse(world.out)["training"]["world_size"], 10) << world.out;
}

TEST(HostileInput, AnEmDashFlagIsRefusedNamingTheWord) {
  const auto run = run_stepsim(
      "predict --world-size 8 --system systems/dgx-a100-80gb.json --megatron-args "
      "'pretrain_gpt.py --num-layers 8 --hidden-size 512 --num-attention-heads 8 "
      "--seq-length 256 --micro-batch-size 1 --global-batch-size 8 --vocab-size 1000 "
      "\u2014bf16'");
  EXPECT_EQ(run.status, 2) << run.out;
  EXPECT_TRUE(mentions(run.out, "--megatron-args: \u2014bf16 is not a flag: it starts with an "
                                "em dash (U+2014)"))
      << run.out;
  EXPECT_TRUE(mentions(run.out, "did you mean --bf16?")) << run.out;
}

TEST(HostileInput, ImportHfRefusesAModelThatCheckRefuses) {
  const std::string config = ::testing::TempDir() + "/stepsim_gpt2_heads7.json";
  std::ofstream(config) << R"({"architectures": ["GPT2LMHeadModel"], "n_layer": 2, "n_embd": 768,
    "n_head": 7, "n_positions": 1024, "vocab_size": 50257})";
  const auto run = run_stepsim("import-hf '" + config + "'");
  EXPECT_EQ(run.status, 2) << run.out;
  EXPECT_TRUE(mentions(run.out, "stepsim_gpt2_heads7.json: model.hidden_size=768 is not "
                                "divisible by num_attention_heads"))
      << run.out;
  EXPECT_FALSE(mentions(run.out, "\"model\"")) << run.out;  // nothing printed to import
}

TEST(HostileInput, SpecialFilesAreRefusedWithoutBlocking) {
  namespace fs = std::filesystem;
  const std::string dir = ::testing::TempDir() + "/stepsim_cli_special";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string fifo = dir + "/scenario.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string loop = dir + "/loop.json";
  fs::create_symlink(loop, loop);
  // A reader that blocked on the FIFO would hang here until ctest gives up on the test.
  for (const auto& [path, phrase] :
       {std::pair<std::string, std::string>{fifo, "is a FIFO (named pipe)"},
        {"/dev/zero", "is a character device"},
        {dir, "is a directory"},
        {loop, "too many levels of symbolic links"}}) {
    for (const std::string command : {"check", "predict", "memory", "sweep"}) {
      const auto run = run_stepsim(command + " '" + path + "'");
      EXPECT_EQ(run.status, 2) << command << " " << path << ": " << run.out;
      EXPECT_TRUE(mentions(run.out, path + ": " + (phrase.starts_with("too") ? "cannot open: " : "") +
                                        phrase))
          << command << " " << path << ": " << run.out;
    }
  }
  std::ofstream(dir + "/s.json")
      << R"({"name": "x", "model": {"num_layers": 2, "hidden_size": 64, "num_attention_heads": 8,
      "seq_length": 64, "vocab_size": 1000}, "training": {"world_size": 1,
      "micro_batch_size": 1, "global_batch_size": 1}, "system": ")"
      << fifo << "\"}";
  const auto system = run_stepsim("predict '" + dir + "/s.json'");
  EXPECT_EQ(system.status, 2) << system.out;
  EXPECT_TRUE(mentions(system.out, "s.json: system=\"" + fifo + "\": is a FIFO")) << system.out;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace stepsim
