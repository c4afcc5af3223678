// `stepsim predict` as a user runs it: the default scenario, the JSON contract, the trace
// format, byte-identical reruns, and bad input.

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "../support/cli_runner.hpp"
#include "stepsim/base/output_file.hpp"

namespace stepsim {
namespace {

using testing::read_file;
using testing::run_stepsim;

const std::string kScenarios = STEPSIM_SCENARIOS_DIR;

TEST(PredictCli, DefaultScenarioPrintsAReport) {
  const auto run = run_stepsim("predict");
  ASSERT_EQ(run.status, 0) << run.out;
  EXPECT_NE(run.out.find("gpt3-175b-a100-64"), std::string::npos);
  EXPECT_NE(run.out.find("step time"), std::string::npos);
  EXPECT_NE(run.out.find("critical chain"), std::string::npos);
}

// One breakdown: the engine's chain only, one bubble figure with its parts, the step time in
// Megatron-LM's milliseconds too, and warnings of one short line each (--verbose: all).
TEST(PredictCli, OneBreakdownAndShortWarnings) {
  const std::string s = kScenarios + "/llama31-70b-h100-64.json";
  const auto run = run_stepsim("predict " + s, false);
  ASSERT_EQ(run.status, 0) << run.out;
  EXPECT_EQ(run.out.find("critical path"), std::string::npos);
  EXPECT_EQ(run.out.find("% of compute"), std::string::npos);
  EXPECT_NE(run.out.find("schedule "), std::string::npos);
  EXPECT_NE(run.out.find(" + stage imbalance "), std::string::npos);
  EXPECT_NE(run.out.find(" ms per iteration"), std::string::npos);
  std::size_t warnings = 0, at = 0;
  while ((at = run.out.find("  warning: ", at)) != std::string::npos) {
    const std::size_t end = run.out.find('\n', at);
    EXPECT_LE(end - at, 100u) << run.out.substr(at, end - at);
    ++warnings;
    at = end;
  }
  EXPECT_GT(warnings, 0u);
  const auto verbose = run_stepsim("predict " + s + " --verbose", false);
  ASSERT_EQ(verbose.status, 0);
  EXPECT_GT(verbose.out.size(), run.out.size());
  EXPECT_NE(verbose.out.find("bf16 m="), std::string::npos);
  EXPECT_EQ(run.out.find("bf16 m="), std::string::npos);

  const auto json = run_stepsim("predict " + s + " --format json", false);
  const auto j = nlohmann::json::parse(json.out);
  const auto& b = j["bubble"];
  EXPECT_NEAR(b["schedule_s"].get<double>() + b["stage_imbalance_s"].get<double>() +
                  b["waits_s"].get<double>(),
              b["mean_s"].get<double>(), 1e-9);
  double idle = 0;
  for (const auto& st : j["stages"]) idle += st["bubble_s"].get<double>();
  EXPECT_NEAR(b["mean_s"].get<double>(), idle / static_cast<double>(j["stages"].size()), 1e-9);
  EXPECT_DOUBLE_EQ(j["iteration_time_ms"].get<double>(), 1e3 * j["step_time_s"].get<double>());
}

TEST(PredictCli, JsonHasTheContractKeys) {
  const auto run = run_stepsim("predict " + kScenarios + "/gpt3-175b-a100-64.json --format json",
                               false);
  ASSERT_EQ(run.status, 0) << run.out;
  const auto j = nlohmann::json::parse(run.out);
  for (const char* key : {"step_time_s", "bubble_fraction", "mfu", "hfu", "tflops_per_gpu",
                          "tokens_per_s", "peak_memory_bytes", "fits_in_memory", "stages"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  ASSERT_EQ(j["stages"].size(), 8u);
  for (const auto& s : j["stages"]) {
    for (const char* key : {"stage", "busy_s", "bubble_s", "exposed_comm_s", "peak_memory_bytes"}) {
      EXPECT_TRUE(s.contains(key)) << key;
    }
    EXPECT_GT(s["busy_s"].get<double>(), 0.0);
  }
  const double step = j["step_time_s"].get<double>();
  const auto& cp = j["critical_path"];
  const double parts = cp["compute_s"].get<double>() + cp["tp_comm_s"].get<double>() +
                       cp["p2p_s"].get<double>() + cp["dp_comm_s"].get<double>() +
                       cp["optimizer_s"].get<double>() + cp["bubble_s"].get<double>();
  EXPECT_NEAR(parts, step, 1e-9 * step);
  EXPECT_GT(j["mfu"].get<double>(), 0.0);
  EXPECT_LT(j["mfu"].get<double>(), 1.0);
  EXPECT_LE(j["mfu"].get<double>(), j["hfu"].get<double>());
}

TEST(PredictCli, TraceHasOneProcessPerStageAndIsDeterministic) {
  const std::string a = ::testing::TempDir() + "/stepsim_trace_a.json";
  const std::string b = ::testing::TempDir() + "/stepsim_trace_b.json";
  const std::string scenario = kScenarios + "/llama3-8b-h100-8.json";
  ASSERT_EQ(run_stepsim("predict " + scenario + " --format json --trace " + a).status, 0);
  ASSERT_EQ(run_stepsim("predict " + scenario + " --format json --trace " + b).status, 0);
  const std::string text = read_file(a);
  EXPECT_EQ(text, read_file(b));
  const auto j = nlohmann::json::parse(text);
  std::set<int> pids;
  std::set<std::string> cats;
  std::size_t slices = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "X") {
      ++slices;
      pids.insert(e["pid"].get<int>());
      cats.insert(e["cat"].get<std::string>());
      EXPECT_GE(e["dur"].get<double>(), 0.0);
    }
  }
  EXPECT_GT(slices, 1000u);
  EXPECT_EQ(pids, (std::set<int>{0}));  // p = 1
  EXPECT_TRUE(cats.count("forward") && cats.count("backward_input") &&
              cats.count("backward_weight") && cats.count("tp_comm") && cats.count("dp_comm"));
  EXPECT_EQ(j["stepsim"]["label"], "predicted");
  std::remove(a.c_str());
  std::remove(b.c_str());
}

TEST(PredictCli, TraceLevelAndRanksShapeTheTrace) {
  // llama2-70b-h100-64: p 4, v 5, 32 micro-batches, so 4 x 5 x 32 forward and as many
  // backward actions; at micro-batch level each is one compute slice spanning its ops.
  const std::string scenario = kScenarios + "/llama2-70b-h100-64.json";
  const std::string op = ::testing::TempDir() + "/stepsim_trace_op.json";
  const std::string mb = ::testing::TempDir() + "/stepsim_trace_mb.json";
  ASSERT_EQ(run_stepsim("predict " + scenario + " --format json --trace-level op --trace " + op)
                .status,
            0);
  ASSERT_EQ(run_stepsim("predict " + scenario + " --format json --trace " + mb +
                        " --trace-level microbatch --trace-ranks 0,2-3")
                .status,
            0);
  const auto slices_of = [](const std::string& path, int pid, const std::string& prefix) {
    std::vector<std::pair<double, double>> out;
    const auto j = nlohmann::json::parse(read_file(path));
    for (const auto& e : j["traceEvents"]) {
      if (e["ph"] != "X" || e["pid"] != pid || e["tid"] != 0) continue;
      if (e["name"].get<std::string>().rfind(prefix, 0) != 0) continue;
      out.emplace_back(e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>());
    }
    return out;
  };
  std::size_t actions = 0;
  std::set<int> pids;
  const auto trace = nlohmann::json::parse(read_file(mb));
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X") continue;
    pids.insert(e["pid"].get<int>());
    const std::string name = e["name"];
    if (e["tid"] == 0 && (name.rfind("F mb", 0) == 0 || name.rfind("B mb", 0) == 0)) ++actions;
  }
  EXPECT_EQ(pids, (std::set<int>{0, 2, 3}));
  EXPECT_EQ(actions, 3u * 2u * 5u * 32u);
  // Stage 2's forward of micro-batch 7, chunk 1 spans exactly its ops.
  const auto ops = slices_of(op, 2, "F mb7 c1 ");
  const auto merged = slices_of(mb, 2, "F mb7 c1");
  ASSERT_FALSE(ops.empty());
  ASSERT_EQ(merged.size(), 1u);
  double lo = ops[0].first, hi = ops[0].second;
  for (const auto& [a, b] : ops) {
    lo = std::min(lo, a);
    hi = std::max(hi, b);
  }
  EXPECT_NEAR(merged[0].first, lo, 1e-6);
  EXPECT_NEAR(merged[0].second, hi, 1e-6);
  EXPECT_EQ(run_stepsim("predict " + scenario + " --trace " + mb + " --trace-ranks 4").status, 2);
  EXPECT_EQ(run_stepsim("predict " + scenario + " --trace " + mb + " --trace-ranks 1-x").status, 2);
  EXPECT_EQ(run_stepsim("predict " + scenario + " --trace " + mb + " --trace-level layer").status,
            2);
  EXPECT_EQ(run_stepsim("predict " + scenario + " --trace-level microbatch").status, 2);
  std::remove(op.c_str());
  std::remove(mb.c_str());
}

// Slices on one track nest or do not overlap (the trace contract), also where a rank sends
// and receives at once (interleaved 1F1B with overlapped P2P: receives have their own
// track); the engine's critical chain is in the summary and drawn as flow events, each end
// bound to a slice on its track, the chain's links in time order; FILE.json.gz holds the
// same bytes compressed.
TEST(PredictCli, TraceTracksNestAndCarryTheCriticalChain) {
  const std::string scenario = kScenarios + "/llama2-70b-h100-64.json";
  const std::string plain = ::testing::TempDir() + "/stepsim_trace_chain.json";
  const std::string gz = ::testing::TempDir() + "/stepsim_trace_chain.json.gz";
  ASSERT_EQ(run_stepsim("predict " + scenario + " --format json --trace " + plain).status, 0);
  ASSERT_EQ(run_stepsim("predict " + scenario + " --format json --trace " + gz).status, 0);
  const std::string text = read_file(plain);
  const std::string packed = read_file(gz);
  ASSERT_TRUE(looks_gzipped(packed));
  EXPECT_LT(packed.size() * 5, text.size());
  const Result<std::string> unpacked = gunzip(packed, gz, text.size() + 1);
  ASSERT_TRUE(unpacked.ok());
  EXPECT_EQ(*unpacked, text);
  EXPECT_FALSE(gunzip(packed, gz, text.size() - 1).ok());  // the size limit holds
  EXPECT_FALSE(gunzip(packed.substr(0, packed.size() / 2), gz, text.size()).ok());

  const auto j = nlohmann::json::parse(text);
  std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> tracks;
  std::map<std::pair<int, int>, std::string> names;
  std::vector<nlohmann::json> flows;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "X") {
      const double ts = e["ts"].get<double>();
      tracks[{e["pid"].get<int>(), e["tid"].get<int>()}].emplace_back(ts, ts + e["dur"].get<double>());
    } else if (e["ph"] == "M" && e["name"] == "thread_name") {
      names[{e["pid"].get<int>(), e["tid"].get<int>()}] = e["args"]["name"];
    } else if (e["ph"] == "s" || e["ph"] == "f") {
      flows.push_back(e);
    }
  }
  EXPECT_EQ(names.at({1, 2}), "pp_comm");
  EXPECT_EQ(names.at({1, 5}), "pp_recv");
  for (auto& [track, slices] : tracks) {
    std::sort(slices.begin(), slices.end());
    std::vector<double> open;  // ends of the enclosing slices
    for (const auto& [start, end] : slices) {
      while (!open.empty() && open.back() <= start + 1e-6) open.pop_back();
      EXPECT_TRUE(open.empty() || end <= open.back() + 1e-6)
          << "rank " << track.first << " tid " << track.second << ": a slice at " << start
          << " us overlaps another without nesting";
      open.push_back(end);
    }
  }
  const auto& chain = j["stepsim"]["critical_chain"];
  ASSERT_GT(chain.size(), 100u);
  for (std::size_t i = 1; i < chain.size(); ++i) {
    EXPECT_GE(chain[i]["start_s"].get<double>(), chain[i - 1]["end_s"].get<double>() - 1e-9);
  }
  EXPECT_NEAR(chain.back()["end_s"].get<double>(), j["stepsim"]["step_time_s"].get<double>(), 1e-9);
  ASSERT_GT(flows.size(), 100u);
  ASSERT_EQ(flows.size() % 2, 0u);
  for (std::size_t i = 0; i < flows.size(); i += 2) {
    EXPECT_EQ(flows[i]["ph"], "s");
    EXPECT_EQ(flows[i + 1]["ph"], "f");
    EXPECT_EQ(flows[i]["id"], flows[i + 1]["id"]);
    EXPECT_LE(flows[i]["ts"].get<double>(), flows[i + 1]["ts"].get<double>());
    for (const auto* e : {&flows[i], &flows[i + 1]}) {
      const auto& slices = tracks[{(*e)["pid"].get<int>(), (*e)["tid"].get<int>()}];
      const double ts = (*e)["ts"].get<double>();
      EXPECT_TRUE(std::any_of(slices.begin(), slices.end(),
                              [ts](const auto& s) { return s.first <= ts && ts < s.second; }))
          << "flow " << (*e)["id"] << " at " << ts << " us is not inside a slice of its track";
    }
  }
  std::remove(plain.c_str());
  std::remove(gz.c_str());
}

TEST(PredictCli, StragglerSlowsTheStepAndBadOnesExitTwo) {
  const std::string scenario = kScenarios + "/llama2-70b-h100-64.json --format json";
  const auto base = run_stepsim("predict " + scenario, false);
  const auto slow = run_stepsim("predict " + scenario + " --straggler 20=1.2", false);
  ASSERT_EQ(base.status, 0);
  ASSERT_EQ(slow.status, 0) << slow.out;
  EXPECT_GT(nlohmann::json::parse(slow.out)["step_time_s"].get<double>(),
            nlohmann::json::parse(base.out)["step_time_s"].get<double>());
  for (const char* bad : {"64=1.2", "5", "x=2", "5=fast", "5=0", "5=1.2,6=1.3", "5=1e308"}) {
    const auto r = run_stepsim("predict " + scenario + " --straggler " + bad);
    EXPECT_EQ(r.status, 2) << bad << ": " << r.out;
    EXPECT_NE(r.out.find("--straggler"), std::string::npos) << bad << ": " << r.out;
  }
}

TEST(PredictCli, FullRankMatchesTheRepresentativeStepAndTakesPerturbations) {
  const std::string scenario = kScenarios + "/llama2-70b-h100-64.json --format json";
  const auto base = run_stepsim("predict " + scenario, false);
  const auto full = run_stepsim("predict " + scenario + " --full-rank", false);
  ASSERT_EQ(base.status, 0);
  ASSERT_EQ(full.status, 0) << full.out;
  const auto b = nlohmann::json::parse(base.out), f = nlohmann::json::parse(full.out);
  EXPECT_NEAR(f["step_time_s"].get<double>(), b["step_time_s"].get<double>(),
              1e-9 * b["step_time_s"].get<double>());
  // 64 GPUs, tp 4 p 4 dp 4: 16 lanes of the representative step.
  EXPECT_EQ(f["engine_tasks"].get<std::int64_t>(), 16 * b["engine_tasks"].get<std::int64_t>());
  // Stragglers in two replicas (ranks 20: dp 1, 40: dp 2), a slower NIC, seeded jitter.
  const std::string perturbed =
      "predict " + scenario + " --full-rank --straggler 20=1.2 --straggler 40=1.1 " +
      "--slow-nic 3=2 --jitter 0.05 --seed 11";
  const auto p1 = run_stepsim(perturbed, false);
  const auto p2 = run_stepsim(perturbed, false);
  ASSERT_EQ(p1.status, 0) << p1.out;
  EXPECT_EQ(p1.out, p2.out);
  EXPECT_GT(nlohmann::json::parse(p1.out)["step_time_s"].get<double>(),
            f["step_time_s"].get<double>());
  EXPECT_NE(run_stepsim(perturbed + "1", false).out, p1.out);  // seed 111
  for (const char* bad :
       {"--slow-nic 3=2", "--jitter 0.1", "--full-rank --slow-nic 8=2", "--full-rank --slow-nic x",
        "--full-rank --slow-nic 3=0", "--full-rank --jitter 2", "--full-rank --jitter -1",
        "--full-rank --slow-nic 3=2 --no-contention"}) {
    const auto r = run_stepsim("predict " + scenario + " " + bad);
    EXPECT_EQ(r.status, 2) << bad << ": " << r.out;
    const std::string flag = std::string(bad).find("jitter") != std::string::npos ? "--jitter"
                                                                                  : "--slow-nic";
    EXPECT_NE(r.out.find(flag), std::string::npos) << bad << ": " << r.out;
  }
  const auto help = run_stepsim("predict --help", false);
  for (const char* flag : {"--full-rank", "--slow-nic", "--jitter", "--seed"}) {
    EXPECT_NE(help.out.find(flag), std::string::npos) << flag;
  }
}

TEST(PredictCli, BadInputExitsTwoNamingTheFile) {
  const std::string bad = ::testing::TempDir() + "/stepsim_bad.json";
  {
    std::FILE* f = std::fopen(bad.c_str(), "w");
    std::fputs("{\"name\": \"x\", \"model\": {", f);
    std::fclose(f);
  }
  const auto malformed = run_stepsim("predict " + bad);
  EXPECT_EQ(malformed.status, 2) << malformed.out;
  EXPECT_NE(malformed.out.find("stepsim_bad.json"), std::string::npos) << malformed.out;
  const auto missing = run_stepsim("predict /nonexistent/scenario.json");
  EXPECT_EQ(missing.status, 2);
  const auto flag = run_stepsim("predict --format yaml");
  EXPECT_EQ(flag.status, 2);
  std::remove(bad.c_str());
}

TEST(PredictCli, MegatronArgsBuildTheScenarioAndListIgnoredFlags) {
  // The default scenario's settings as a Megatron-LM launch line (on the A100 system's
  // roofline): eight stages of three virtual stages each, and --lr reported as ignored.
  const std::string line =
      "torchrun --nnodes 8 --nproc_per_node 8 pretrain_gpt.py --num-layers 96 "
      "--hidden-size 12288 --num-attention-heads 96 --seq-length 2048 "
      "--max-position-embeddings 2048 --micro-batch-size 1 --global-batch-size 64 "
      "--tensor-model-parallel-size 8 --pipeline-model-parallel-size 8 "
      "--num-layers-per-virtual-pipeline-stage 4 --sequence-parallel --recompute-activations "
      "--bf16 --vocab-size 50257 --lr 6e-5";
  const auto imported = run_stepsim("predict --format json --system systems/dgx-a100-80gb.json "
                                    "--megatron-args '" + line + "'",
                                    false);
  ASSERT_EQ(imported.status, 0) << imported.out;
  const auto j = nlohmann::json::parse(imported.out);
  EXPECT_EQ(j["stages"].size(), 8u);
  EXPECT_EQ(j["schedule"]["virtual_pipeline_model_parallel_size"], 3);
  const auto ignored = run_stepsim("predict --format json --system systems/dgx-a100-80gb.json "
                                   "--megatron-args '" + line + "' 2>&1 >/dev/null",
                                   false);
  EXPECT_NE(ignored.out.find("ignored (no effect on step time or memory): --lr"), std::string::npos)
      << ignored.out;
  const auto incomplete = run_stepsim("predict --megatron-args 'pretrain_gpt.py --num-layers 2'");
  EXPECT_EQ(incomplete.status, 2);
  EXPECT_NE(incomplete.out.find("--megatron-args"), std::string::npos) << incomplete.out;
  // A flag that changes the job and is not modelled: exit 2 naming it; --allow-unmodelled
  // predicts, with a loud banner and the list in the JSON.
  // FP8 on a GPU without FP8 tensor cores: exit 2 naming the key and the system.
  const auto no_fp8 = run_stepsim("predict --system systems/dgx-a100-80gb.json --megatron-args '" +
                                  line + " --fp8-format hybrid'");
  EXPECT_EQ(no_fp8.status, 2) << no_fp8.out;
  EXPECT_NE(no_fp8.out.find("training.fp8"), std::string::npos) << no_fp8.out;
  EXPECT_NE(no_fp8.out.find("dgx-a100-80gb"), std::string::npos) << no_fp8.out;
  const std::string unmodelled = line + " --exp-avg-dtype bf16";
  const auto refused = run_stepsim(
      "predict --system systems/dgx-a100-80gb.json "
      "--megatron-args '" +
      unmodelled + "'");
  EXPECT_EQ(refused.status, 2) << refused.out;
  EXPECT_NE(refused.out.find("--exp-avg-dtype bf16 changes the job"), std::string::npos)
      << refused.out;
  const auto allowed = run_stepsim(
      "predict --system systems/dgx-a100-80gb.json "
      "--allow-unmodelled --megatron-args '" +
          unmodelled + "'",
      false);
  ASSERT_EQ(allowed.status, 0) << allowed.out;
  EXPECT_NE(allowed.out.find("!!! NOT THE JOB AS LAUNCHED: stepsim does not model --exp-avg-dtype "
                             "bf16"),
            std::string::npos)
      << allowed.out;
  const auto allowed_json = run_stepsim(
      "predict --format json --allow-unmodelled --system "
      "systems/dgx-a100-80gb.json --megatron-args '" +
          unmodelled + "'",
      false);
  ASSERT_EQ(allowed_json.status, 0) << allowed_json.out;
  EXPECT_EQ(nlohmann::json::parse(allowed_json.out)["unmodelled"],
            nlohmann::json::array({"--exp-avg-dtype bf16"}));
  // import-megatron writes the scenario that check, memory and sweep take.
  const auto scenario =
      run_stepsim("import-megatron --system systems/dgx-a100-80gb.json '" + line + "'", false);
  ASSERT_EQ(scenario.status, 0) << scenario.out;
  EXPECT_EQ(nlohmann::json::parse(scenario.out)["training"]["tensor_model_parallel_size"], 8);
  EXPECT_EQ(
      run_stepsim("import-megatron --system systems/dgx-a100-80gb.json '" + unmodelled + "'")
          .status,
      2);
  const auto both = run_stepsim("predict " + kScenarios + "/gpt3-175b-a100-64.json "
                                "--megatron-args '" + line + "' --system systems/dgx-a100-80gb.json");
  EXPECT_EQ(both.status, 2) << both.out;
}

// NVFP4: the report says fp4 (the precision line, the utilisation against the dense NVFP4
// peak, the JSON configuration), and Megatron-LM's FP4 flags import into the same keys.
TEST(PredictCli, Nvfp4IsReportedAndImported) {
  const std::string scenario = kScenarios + "/llama3-8b-b200-8-nvfp4.json";
  const auto text = run_stepsim("predict " + scenario, false);
  ASSERT_EQ(text.status, 0) << text.out;
  EXPECT_NE(text.out.find("precision   FP4 e2m1 (nvfp4: 1x16 E4M3 scales, 16x16 weight blocks"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("NVFP4 parameters gathered in FP4"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("FP4 peak         MFU "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("of 9000 TFLOP/s dense NVFP4 peak"), std::string::npos) << text.out;
  const auto json = run_stepsim("predict --format json " + scenario, false);
  ASSERT_EQ(json.status, 0) << json.out;
  const auto j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j["configuration"]["fp4"], "e2m1");
  EXPECT_EQ(j["configuration"]["fp4_recipe"], "nvfp4");
  EXPECT_EQ(j["configuration"]["fp4_param_gather"], true);
  // The same FLOPs against a peak four times bf16's.
  EXPECT_NEAR(j["mfu_fp4_peak"].get<double>() * 4, j["mfu"].get<double>(), 1e-12);
  const std::string line =
      "torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 2 --hidden-size 1024 "
      "--num-attention-heads 8 --seq-length 1024 --max-position-embeddings 1024 "
      "--micro-batch-size 1 --global-batch-size 8 --vocab-size 1024 --bf16 "
      "--use-distributed-optimizer --fp4-format e2m1 --fp4-recipe nvfp4 --fp4-param-gather";
  const auto imported =
      run_stepsim("import-megatron --system systems/dgx-b200.json '" + line + "'", false);
  ASSERT_EQ(imported.status, 0) << imported.out;
  const auto t = nlohmann::json::parse(imported.out)["training"];
  EXPECT_EQ(t["fp4"], "e2m1");
  EXPECT_EQ(t["fp4_recipe"], "nvfp4");
  EXPECT_EQ(t["fp4_param_gather"], true);
  // Megatron-LM's own rule, and the Blackwell-only one, exit 2 naming the key.
  const auto both = run_stepsim("predict --system systems/dgx-b200.json --megatron-args '" +
                                line + " --fp8-format hybrid'");
  EXPECT_EQ(both.status, 2) << both.out;
  EXPECT_NE(both.out.find("training.fp4"), std::string::npos) << both.out;
  const auto hopper = run_stepsim("predict --system systems/dgx-h100-80gb.json --megatron-args '" +
                                  line + "'");
  EXPECT_EQ(hopper.status, 2) << hopper.out;
  EXPECT_NE(hopper.out.find("training.fp4=\"e2m1\" on system \"dgx-h100-80gb\""),
            std::string::npos)
      << hopper.out;
}

TEST(PredictCli, AnEmptyLaunchLineOrItsOptionsAloneAreNotTheDefaultJob) {
  // An empty --megatron-args used to mean "not given": the default scenario was predicted,
  // on its own system, whatever --system said.
  for (const char* args : {"predict --megatron-args ''", "predict --megatron-args '  '",
                           "predict --megatron-args '' --system systems/dgx-h100-80gb.json"}) {
    const auto r = run_stepsim(args);
    EXPECT_EQ(r.status, 2) << args << ": " << r.out;
    EXPECT_NE(r.out.find("an empty launch line"), std::string::npos) << args << ": " << r.out;
  }
  const auto orphan = run_stepsim("predict --system systems/dgx-h100-80gb.json --world-size 8");
  EXPECT_EQ(orphan.status, 2) << orphan.out;
  EXPECT_NE(orphan.out.find("--system, --world-size apply only with --megatron-args"),
            std::string::npos)
      << orphan.out;
  const auto sweep = run_stepsim("sweep " + kScenarios + "/sweeps/gpt3-175b-a100.json --allow-unmodelled");
  EXPECT_EQ(sweep.status, 2) << sweep.out;
  EXPECT_NE(sweep.out.find("--allow-unmodelled applies only with --megatron-args"),
            std::string::npos)
      << sweep.out;
}

}  // namespace
}  // namespace stepsim
