// The real command: `mpirun -np 2 stepsim calibrate --backend cpu --quick`, resume after an
// interruption, and its errors. STEPSIM_BIN and STEPSIM_MPIRUN come from CMake.

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "stepsim/cost/profile.hpp"

namespace stepsim {
namespace {

struct Ran {
  int status = -1;
  std::string output;  ///< stdout and stderr
};

Ran run(const std::string& command) {
  Ran r;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> buf{};
  std::size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) r.output.append(buf.data(), n);
  const int raw = ::pclose(pipe);
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return r;
}

std::string temp_dir() {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("stepsim_calibrate_cli_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir.string();
}

TEST(CalibrateCli, TwoRanksQuickCpuCalibrationWritesAProfile) {
  const std::string out = temp_dir() + "/p.json";
  const Ran r = run(std::string(STEPSIM_MPIRUN) + " -np 2 " + STEPSIM_BIN +
                    " calibrate --backend cpu --out " + out + " --quick");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("GEMM: 27 shapes, peak"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("all_reduce"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(out + ".journal"));
  auto p = load_profile_file(out);
  ASSERT_TRUE(p.ok()) << format_errors(p.errors());
  EXPECT_EQ(p.value().backend, "cpu");
  EXPECT_EQ(p.value().source, "measured");
  EXPECT_EQ(p.value().world_size, 2);
  EXPECT_EQ(p.value().gemm.size(), 27u);
  EXPECT_FALSE(p.value().memory.empty());
  EXPECT_FALSE(p.value().collectives.empty());
  EXPECT_FALSE(p.value().p2p.empty());
  // A fit per collective kind over the pair of ranks: all-reduce, all-gather, reduce-scatter
  // and all-to-all.
  std::size_t pair_fits = 0;
  bool all_to_all = false;
  for (const auto& f : p.value().collective_fits) {
    if (f.group_size == 2) {
      ++pair_fits;
      all_to_all = all_to_all || f.kind == CollectiveKind::kAllToAll;
      EXPECT_GT(f.fit.bandwidth_bytes_per_s, 0.0);
    }
  }
  EXPECT_EQ(pair_fits, 4u);
  EXPECT_TRUE(all_to_all);
  EXPECT_FALSE(p.value().p2p_fits.empty());
}

TEST(CalibrateCli, ResumesAfterAnInterruption) {
  const std::string out = temp_dir() + "/resume.json";
  std::filesystem::remove(out + ".journal");
  const std::string cmd = std::string(STEPSIM_BIN) +
                          " calibrate --backend cpu --quick --repeats 1 --warmup 0 --out " + out;
  const Ran first = run(cmd + " --stop-after 5");
  ASSERT_EQ(first.status, 0) << first.output;
  EXPECT_NE(first.output.find("stopped after 5 new measurements"), std::string::npos)
      << first.output;
  EXPECT_TRUE(std::filesystem::exists(out + ".journal"));
  EXPECT_FALSE(std::filesystem::exists(out));
  const Ran second = run(cmd);
  ASSERT_EQ(second.status, 0) << second.output;
  EXPECT_NE(second.output.find("(5 more resumed from the journal)"), std::string::npos)
      << second.output;
  EXPECT_NE(second.output.find("collectives need ranks"), std::string::npos) << second.output;
  auto p = load_profile_file(out);
  ASSERT_TRUE(p.ok()) << format_errors(p.errors());
  EXPECT_EQ(p.value().world_size, 1);
  EXPECT_EQ(p.value().gemm.size(), 27u);
  EXPECT_TRUE(p.value().collectives.empty());
}

TEST(CalibrateCli, ScenarioAddsItsExactShapes) {
  const std::string dir = temp_dir();
  const std::string scenario = dir + "/tiny.json";
  {
    std::ofstream f(scenario);
    f << R"({"name": "tiny-gpt",
      "model": {"num_layers": 2, "hidden_size": 96, "num_attention_heads": 4,
                "seq_length": 48, "padded_vocab_size": 256},
      "training": {"world_size": 2, "tensor_model_parallel_size": 2,
                   "pipeline_model_parallel_size": 1, "micro_batch_size": 1,
                   "global_batch_size": 2, "bf16": true},
      "system": "systems/dgx-a100-80gb.json"})";
  }
  // A second scenario: --scenario may be given several times.
  const std::string second = dir + "/tiny80.json";
  {
    std::ofstream f(second);
    f << R"({"name": "tiny-gpt-80",
      "model": {"num_layers": 2, "hidden_size": 96, "num_attention_heads": 4,
                "seq_length": 80, "padded_vocab_size": 256},
      "training": {"world_size": 1, "micro_batch_size": 1, "global_batch_size": 2,
                   "bf16": true},
      "system": "systems/dgx-a100-80gb.json"})";
  }
  const std::string out = dir + "/scenario.json";
  const Ran r = run(std::string(STEPSIM_BIN) +
                    " calibrate --backend cpu --quick --repeats 1 --warmup 0 --scenario " +
                    scenario + " --scenario " + second + " --out " + out);
  ASSERT_EQ(r.status, 0) << r.output;
  // One rank: the scenario's tensor-parallel collectives cannot be measured, and it says so.
  EXPECT_NE(r.output.find("tiny-gpt: not measured: collectives over groups of 2 ranks"),
            std::string::npos)
      << r.output;
  auto p = load_profile_file(out);
  ASSERT_TRUE(p.ok()) << format_errors(p.errors());
  EXPECT_GT(p.value().gemm.size(), 27u);
  // The sequence (48 tokens) is no grid value, so a GEMM with m or n = 48 comes from it.
  bool exact = false, exact80 = false;
  for (const auto& g : p.value().gemm) {
    exact = exact || g.m == 48 || g.n == 48 || g.k == 48;
    exact80 = exact80 || g.m == 80 || g.n == 80 || g.k == 80;
  }
  EXPECT_TRUE(exact);
  EXPECT_TRUE(exact80);
  bool noted = false, noted80 = false;
  for (const auto& n : p.value().notes) {
    noted = noted || n.find("scenario tiny-gpt:") == 0;
    noted80 = noted80 || n.find("scenario tiny-gpt-80:") == 0;
  }
  EXPECT_TRUE(noted);
  EXPECT_TRUE(noted80);

  const Ran bad = run(std::string(STEPSIM_BIN) + " calibrate --backend cpu --scenario " + dir +
                      "/missing.json --out " + out);
  EXPECT_EQ(bad.status, 2) << bad.output;
}

// A journal that is not this calibration's is bad input (exit 2, naming the file and line),
// not a runtime failure: the error's kind decides.
TEST(CalibrateCli, AForeignJournalIsBadInput) {
  const std::string out = temp_dir() + "/foreign.json";
  {
    std::ofstream journal(out + ".journal");
    journal << "{\"not\": \"a journal\"}\n";
  }
  const Ran ran = run(std::string(STEPSIM_BIN) + " calibrate --backend cpu --quick --out " + out);
  EXPECT_EQ(ran.status, 2) << ran.output;
  EXPECT_NE(ran.output.find(out + ".journal: line 1"), std::string::npos) << ran.output;
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(CalibrateCli, BadInputExitsTwoAndMissingDeviceOne) {
  const Ran bad_backend = run(std::string(STEPSIM_BIN) + " calibrate --backend tpu --out x.json");
  EXPECT_EQ(bad_backend.status, 2) << bad_backend.output;
  EXPECT_NE(bad_backend.output.find("--backend"), std::string::npos);
  const Ran bad_dir =
      run(std::string(STEPSIM_BIN) + " calibrate --backend cpu --out /nonexistent/dir/p.json");
  EXPECT_EQ(bad_dir.status, 2) << bad_dir.output;
  EXPECT_NE(
      bad_dir.output.find("--out=/nonexistent/dir/p.json: folder /nonexistent/dir does not exist"),
      std::string::npos)
      << bad_dir.output;
  const Ran bad_repeats =
      run(std::string(STEPSIM_BIN) + " calibrate --backend cpu --out p.json --repeats 0");
  EXPECT_EQ(bad_repeats.status, 2) << bad_repeats.output;
#ifdef STEPSIM_HAVE_CUDA
  // Without a GPU (as on the build machines) the CUDA backend must fail cleanly.
  const Ran cuda = run(std::string(STEPSIM_BIN) + " calibrate --backend cuda --quick --out " +
                       temp_dir() + "/c.json");
  if (cuda.status != 0) {
    EXPECT_EQ(cuda.status, 1) << cuda.output;
    EXPECT_NE(cuda.output.find("cuda backend: no CUDA device visible"), std::string::npos)
        << cuda.output;
  }
#endif
}

TEST(ValidateCli, RoundsNeedCalibrateAndAStepEach) {
  const std::string validate = std::string(STEPSIM_BIN) + " validate " +
                               std::string(STEPSIM_SCENARIOS_DIR) +
                               "/validation/pp2-1f1b.json --backend cpu ";
  const Ran no_calibrate = run(validate + "--rounds 2");
  EXPECT_EQ(no_calibrate.status, 2) << no_calibrate.output;
  EXPECT_NE(no_calibrate.output.find("--rounds=2: rounds interleave calibration and steps, so "
                                     "they need --calibrate"),
            std::string::npos)
      << no_calibrate.output;
  const Ran few_steps =
      run(validate + "--calibrate " + temp_dir() + "/p.json --steps 2 --rounds 3");
  EXPECT_EQ(few_steps.status, 2) << few_steps.output;
  EXPECT_NE(few_steps.output.find("--steps=2 must be at least --rounds=3"), std::string::npos)
      << few_steps.output;
  const Ran negative = run(validate + "--calibrate " + temp_dir() + "/p.json --rounds -1");
  EXPECT_EQ(negative.status, 2) << negative.output;
  EXPECT_NE(negative.output.find("--rounds"), std::string::npos) << negative.output;
}

/// `validate` of the shipped validation scenario `name` is refused on the cuda backend with
/// `refusal`, and gets past that check on the cpu backend (then needs its two ranks).
void expect_validated_on_cpu_only(const std::string& name, const std::string& refusal,
                                  const std::string& key) {
  const std::string path = std::string(STEPSIM_SCENARIOS_DIR) + "/validation/" + name;
  const std::string validate = "STEPSIM_SCENARIOS_DIR=" + std::string(STEPSIM_SCENARIOS_DIR) + " " +
                               std::string(STEPSIM_BIN) + " validate " + path;
  const Ran cuda = run(validate + " --backend cuda");
  EXPECT_EQ(cuda.status, 2) << cuda.output;
  EXPECT_NE(cuda.output.find(refusal), std::string::npos) << cuda.output;
  const Ran cpu = run(validate + " --backend cpu");
  EXPECT_EQ(cpu.output.find(key), std::string::npos) << cpu.output;
  EXPECT_NE(cpu.output.find("mpirun -np 2"), std::string::npos) << cpu.output;
}

TEST(ValidateCli, BlockScaledFp8IsValidatedOnBothBackends) {
  // The cuda backend runs the block-scaled GEMMs through cuBLASLt's block scaling; the cpu
  // backend emulates every FP8 GEMM as its fp32 product, block-scaled or not, and runs the
  // recipe's other work. Neither refuses the recipe (here both stop later: two ranks, or no
  // device).
  const std::string path =
      std::string(STEPSIM_SCENARIOS_DIR) + "/validation/tp2-sp-fp8-blockwise.json";
  const std::string validate = "STEPSIM_SCENARIOS_DIR=" + std::string(STEPSIM_SCENARIOS_DIR) + " " +
                               std::string(STEPSIM_BIN) + " validate " + path;
  for (const char* backend : {"cpu", "cuda"}) {
    const Ran ran = run(validate + " --backend " + backend);
    EXPECT_NE(ran.status, 0) << ran.output;
    EXPECT_EQ(ran.output.find("fp8_recipe"), std::string::npos) << backend << ": " << ran.output;
  }
}

TEST(ValidateCli, TpCommOverlapIsValidatedOnTheCpuBackendOnly) {
  // The cpu backend posts Transformer Engine's userbuffers exchanges and collectives beside the
  // GEMM chunks; the cuda executor would run them one after another on its stream: refused
  // there, not measured as another job.
  expect_validated_on_cpu_only("tp2-sp-overlap.json",
                               "training.tp_comm_overlap=true is not validated on the cuda "
                               "backend yet",
                               "tp_comm_overlap");
}

}  // namespace
}  // namespace stepsim
