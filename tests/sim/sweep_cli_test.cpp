// `stepsim sweep` and `stepsim import-hf` as a user runs them: exit statuses, messages, files.

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace {

struct CliRun {
  int status = -1;
  std::string out;
};

CliRun run(const std::string& args) {
  const std::string cmd = std::string(STEPSIM_BIN) + " " + args + " 2>&1";
  CliRun r;
  FILE* p = popen(cmd.c_str(), "r");
  std::array<char, 4096> buf{};
  std::size_t n = 0;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// A folder of this test run's own: /tmp is shared, and a sweep's base path is looked up
// beside the sweep file first.
struct TempDir {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("stepsim_sweep_cli_" + std::to_string(getpid()));
  TempDir() { std::filesystem::create_directories(path); }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
};

std::filesystem::path temp_dir() {
  static const TempDir dir;
  return dir.path;
}

std::string temp_file(const std::string& name, const std::string& text) {
  const auto path = temp_dir() / name;
  std::ofstream(path) << text;
  return path.string();
}

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

const char* kSweep = R"({"base": {"name": "small",
    "model": {"num_layers": 4, "hidden_size": 512, "num_attention_heads": 8, "seq_length": 256,
              "vocab_size": 50257},
    "training": {"world_size": 8, "micro_batch_size": 1, "global_batch_size": 16, "bf16": true},
    "system": "systems/dgx-a100-80gb.json"},
  "search": {"training.tensor_model_parallel_size": [2, 4, 3], "training.micro_batch_size": [1, 2]},
  "constraints": {"memory_headroom": 0.05}, "top": 3})";

TEST(SweepCli, InvalidSweepFileExits2NamingFileAndKey) {
  const std::string f = temp_file("bad.json", R"({"base": "gpt3-175b-a100-64.json",
      "search": {"training.tensor_model_parallel_sizes": [1]}, "objective": "fast"})");
  const CliRun r = run("sweep " + f);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find(f + ": search.training.tensor_model_parallel_sizes"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(f + ": objective"), std::string::npos) << r.out;
  EXPECT_EQ(run("sweep /no/such/sweep.json").status, 2);
}

TEST(SweepCli, JsonSummaryAndCsvAreWritten) {
  const std::string f = temp_file("ok.json", kSweep);
  const std::string csv = (temp_dir() / "out.csv").string();
  const CliRun r = run("sweep " + f + " --format json --jobs 2 --out " + csv);
  ASSERT_EQ(r.status, 0) << r.out;
  for (const char* key :
       {"\"evaluated\": 6", "\"feasible\"", "\"simulated\"", "\"wall_s\"", "\"best\"",
        "\"megatron_args\"", "\"cut\": {\n    \"training.tensor_model_parallel_size\": 2\n  }",
        "\"rule\": \"training.tensor_model_parallel_size does not divide num_attention_heads\"",
        "\"configurations\": 2", "\"best_per_gpu_count\": [", "\"pareto_summary\": ["}) {
    EXPECT_NE(r.out.find(key), std::string::npos) << key << "\n" << r.out;
  }
  const std::string text = read(csv);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 7);  // header + 6 rows
  EXPECT_EQ(text.find("wall_s"), std::string::npos);
  // --resume of a complete file evaluates nothing and leaves it as it was.
  const CliRun again = run("sweep " + f + " --resume --out " + csv);
  EXPECT_EQ(again.status, 0) << again.out;
  EXPECT_NE(again.out.find("0 of 6 configurations evaluated"), std::string::npos) << again.out;
  EXPECT_EQ(read(csv), text);
}

TEST(SweepCli, PriceObjectiveAndTrainTokensFromTheCommandLine) {
  const std::string f = temp_file("priced.json", kSweep);
  const CliRun missing = run("sweep " + f + " --objective min_cost");
  EXPECT_EQ(missing.status, 2) << missing.out;
  EXPECT_NE(missing.out.find(f + ": objective=\"min_cost\" needs \"price_per_gpu_hour\""),
            std::string::npos)
      << missing.out;
  const CliRun r = run("sweep " + f +
                       " --objective min_cost --price-per-gpu-hour 2.5 --train-tokens 1e9");
  ASSERT_EQ(r.status, 0) << r.out;
  for (const char* text : {"(objective min_cost)", "price: $2.5 per GPU-hour", "$/Mtok",
                           "train_days", "run_$", "the best costs $"}) {
    EXPECT_NE(r.out.find(text), std::string::npos) << text << "\n" << r.out;
  }
  EXPECT_EQ(run("sweep " + f + " --objective fastest").status, 2);
}

TEST(SweepCli, HelpShowsAnExampleSweepFile) {
  const CliRun r = run("sweep --help");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("Example sweep file"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"price_per_gpu_hour\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--price-per-gpu-hour"), std::string::npos) << r.out;
}

TEST(SweepCli, CheckNamesContextParallelism) {
  const CliRun r = run("check " STEPSIM_SCENARIOS_DIR "/llama31-8b-cp2-h100-8.json");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find(": t=1 p=1 v=1 cp=2 dp=4 mbs=1 m=128 dopt (world_size=8,"),
            std::string::npos)
      << r.out;
}

TEST(SweepCli, MegatronArgsGiveTheBase) {
  const std::string f =
      temp_file("nobase.json", R"({"search": {"training.micro_batch_size": [1, 2]}})");
  const std::string line =
      "torchrun --nnodes 1 --nproc_per_node 8 pretrain_gpt.py --num-layers 4 --hidden-size 512 "
      "--num-attention-heads 8 --seq-length 256 --max-position-embeddings 256 "
      "--micro-batch-size 1 --global-batch-size 16 --vocab-size 1000 --bf16 --lr 1e-4 --data-path "
      "x";
  const CliRun r =
      run("sweep " + f + " --megatron-args '" + line + "' --system systems/dgx-a100-80gb.json");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("ignored (no effect on step time or memory): --lr --data-path"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("2 configurations"), std::string::npos) << r.out;
  EXPECT_EQ(run("sweep " + f + " --megatron-args '--num-layers 4'").status, 2);
}

TEST(SweepCli, ImportHf) {
  const std::string f = temp_file("config.json", R"({"architectures": ["LlamaForCausalLM"],
      "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
      "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256,
      "max_position_embeddings": 8192, "rms_norm_eps": 1e-5, "tie_word_embeddings": false})");
  const CliRun r = run("import-hf " + f);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("\"num_query_groups\": 8"), std::string::npos) << r.out;
  const std::string bad = temp_file("bad_config.json", R"({"architectures": ["BertModel"]})");
  const CliRun b = run("import-hf " + bad);
  EXPECT_EQ(b.status, 2);
  EXPECT_NE(b.out.find(bad + ": architectures"), std::string::npos) << b.out;
}

}  // namespace
