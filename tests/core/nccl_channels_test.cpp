// NCCL's channel limits of a job: NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS (training.nccl_min_
// nchannels, nccl_max_nchannels) and Megatron's per-process-group ncclConfig_t options
// (training.nccl_communicator_config_path, the YAML file of --nccl-communicator-config-path).
// The channel count is NCCL's (src/graph/connect.cc ncclTopoPostset); a collective on fewer
// channels than NCCL's tuning assumed is priced with NCCL's bandwidth formula for the channels
// that run; what stepsim does not model (point-to-point communicators cut below NCCL's own
// channels, options of expert groups, net_name) is refused; NCCL_P2P_NET_CHUNKSIZE at or above
// NCCL's default changes no price, below it is refused.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "shipped_scenario.hpp"
#include "stepsim/import/import.hpp"
#include "stepsim/check/load.hpp"
#include "stepsim/cost/make_cost_model.hpp"
#include "stepsim/cost/nccl_model.hpp"

namespace stepsim {
namespace {

namespace fs = std::filesystem;

constexpr std::int64_t kMiB = 1 << 20;
// NVIDIA's MLPerf Training v4.1 GPT-3 175B file (scenarios/nccl/).
const std::string kMlperfCfg =
    "\"nccl_communicator_config_path\": "
    "\"nccl/custom_communicator_cta_mlperf41.yaml\"";

/// GPT-3 175B in FP8 on 64 DGX H100 (t4 p8 dp16) with `training` added.
Workload gpt3(const std::string& training) {
  auto w = testing::shipped_with("gpt3-175b-h100-512-fp8.json", training);
  EXPECT_TRUE(w.ok()) << (w.ok() ? "" : format_errors(w.errors()));
  return std::move(w).value();
}

std::string errors_of(const std::string& training) {
  auto w = testing::shipped_with("gpt3-175b-h100-512-fp8.json", training);
  return w.ok() ? std::string() : format_errors(w.errors());
}

double seconds(const Workload& w, const CollectiveOp& op) {
  auto model = make_cost_model(w);
  EXPECT_TRUE(model.ok());
  return model.ok() ? (*model)->collective_s(op) : 0.0;
}

int own_and_run(const SystemConfig& s, std::int64_t ranks, std::int64_t nodes, int& own,
                std::int64_t min_n, std::int64_t max_ctas) {
  const auto comm = nccl_comm(s, ranks, nodes);
  EXPECT_TRUE(comm.has_value());
  if (!comm) return 0;
  own = nccl_run_channels(*comm, 0, 0, 0, 0);
  return nccl_run_channels(*comm, min_n, 0, 1, max_ctas);
}

TEST(NcclChannels, AsNcclSetsThemOnDgxH100) {
  const SystemConfig s = gpt3("").system;
  // ncclTopoPostset: twice the ring search's channels, min(NCCL_MAX_NCHANNELS, maxCTAs), then
  // raised to max(NCCL_MIN_NCHANNELS, minCTAs). The MLPerf job's groups, NCCL_MIN_NCHANNELS=4:
  int own = 0;
  // tp: 4 GPUs of a node, 12 ring channels at 30 GB/s -> 24; max_ctas 8 -> 8.
  EXPECT_EQ(own_and_run(s, 4, 1, own, 4, 8), 8);
  EXPECT_EQ(own, 24);
  // dp_cp: 16 ranks on 8 nodes, 4 channels at 24 GB/s -> 8; max_ctas 8 changes nothing.
  EXPECT_EQ(own_and_run(s, 16, 8, own, 4, 8), 8);
  EXPECT_EQ(own, 8);
  // A pipeline pair across nodes: 2 channels -> 4; max_ctas 2, but the minimum wins.
  EXPECT_EQ(own_and_run(s, 2, 2, own, 4, 2), 4);
  EXPECT_EQ(own, 4);
  EXPECT_EQ(own_and_run(s, 2, 2, own, 0, 2), 2);  // without NCCL_MIN_NCHANNELS
  // mp (tensor x pipeline, 32 ranks on 8 nodes): 16 -> 4.
  EXPECT_EQ(own_and_run(s, 32, 8, own, 4, 2), 4);
  EXPECT_EQ(own, 16);
  // A node's 8 GPUs across 8 nodes (tp_dp_cp): 8 channels at 48 GB/s, not doubled twice
  // (16 is not below 16).
  EXPECT_EQ(own_and_run(s, 64, 8, own, 4, 1), 4);
  EXPECT_EQ(own, 16);
  // NCCL_MIN_NCHANNELS above NCCL's own count copies channels.
  const auto pair = nccl_comm(s, 2, 2);
  ASSERT_TRUE(pair.has_value());
  EXPECT_EQ(nccl_run_channels(*pair, 16, 0, 0, 0), 16);
  EXPECT_EQ(nccl_run_channels(*pair, 0, 3, 0, 0), 3);
}

TEST(NcclChannels, MlperfOptionsSlowTheTensorGroupsCollectivesOnly) {
  const Workload plain = gpt3("");
  const Workload mlperf = gpt3("\"nccl_min_nchannels\": 4, " + kMlperfCfg);
  ASSERT_EQ(mlperf.training.nccl_group_options.size(), 10u);
  EXPECT_EQ(mlperf.training.nccl_group_options[2].group, "tp");
  EXPECT_EQ(mlperf.training.nccl_group_options[2].max_ctas, 8);
  EXPECT_EQ(mlperf.training.nccl_group_options[2].cga_cluster_size, 4);
  // The embedding's reduce-scatter over the node's 4 TP ranks: NCCL's ring with 8 of its 12
  // channels of the search (24 run by default).
  const CollectiveOp tp{.kind = CollectiveKind::kReduceScatter,
                        .group = CommGroup::kTensor,
                        .bytes = 96 * kMiB,
                        .group_size = 4,
                        .nodes_spanned = 1};
  SystemConfig limited = plain.system;
  limited.nccl_min_nchannels = 4;
  limited.nccl_group_limits[static_cast<std::size_t>(CommGroup::kTensor)] = {.min_ctas = 1,
                                                                             .max_ctas = 8};
  const double factor = nccl_channel_factor(limited, tp);
  EXPECT_GT(factor, 1.3);
  EXPECT_LE(factor, 1.5);  // 12 / 8 on the bandwidth term, the latency unchanged
  EXPECT_DOUBLE_EQ(seconds(mlperf, tp), seconds(plain, tp) * factor);
  // The distributed optimizer's reduce-scatter over dp_cp (8 channels either way) and the
  // embedding group's all-reduce (4 either way): unchanged.
  const CollectiveOp dp{.kind = CollectiveKind::kReduceScatter,
                        .group = CommGroup::kData,
                        .bytes = 400 * kMiB,
                        .group_size = 16,
                        .nodes_spanned = 8};
  EXPECT_DOUBLE_EQ(seconds(mlperf, dp), seconds(plain, dp));
  const CollectiveOp embd{.kind = CollectiveKind::kAllReduce,
                          .group = CommGroup::kEmbedding,
                          .bytes = 300 * kMiB,
                          .group_size = 2,
                          .nodes_spanned = 2};
  EXPECT_DOUBLE_EQ(seconds(mlperf, embd), seconds(plain, embd));
  // NCCL_MAX_NCHANNELS=2 slows the data-parallel reduce-scatter as well; more channels than
  // NCCL's own (NCCL_MIN_NCHANNELS=32) add nothing.
  EXPECT_GT(seconds(gpt3("\"nccl_max_nchannels\": 2"), dp), 1.5 * seconds(plain, dp));
  EXPECT_DOUBLE_EQ(seconds(gpt3("\"nccl_min_nchannels\": 32"), dp), seconds(plain, dp));
}

TEST(NcclChannels, WhatIsNotModelledIsRefused) {
  // The pipeline's sends on fewer channels than NCCL's own: without NCCL_MIN_NCHANNELS the
  // MLPerf file's pp max_ctas 2 cuts them from 4 to 2.
  const std::string pp = errors_of(kMlperfCfg);
  EXPECT_NE(pp.find("training.nccl_communicator_config_path"), std::string::npos) << pp;
  EXPECT_NE(pp.find("group \"pp\" (max_ctas 2) leaves its point-to-point communicators 2 "
                    "channels of NCCL's own 4"),
            std::string::npos)
      << pp;
  EXPECT_EQ(errors_of("\"nccl_min_nchannels\": 4, " + kMlperfCfg), "");
  const std::string small = errors_of("\"nccl_p2p_net_chunksize\": 65536");
  EXPECT_NE(small.find("training.nccl_p2p_net_chunksize=65536 (NCCL_P2P_NET_CHUNKSIZE) below "
                       "NCCL's default of 131072 is not modelled yet"),
            std::string::npos)
      << small;
  EXPECT_EQ(errors_of("\"nccl_p2p_net_chunksize\": 2097152"), "");
  const std::string range = errors_of("\"nccl_max_nchannels\": 65");
  EXPECT_NE(range.find("training.nccl_max_nchannels=65 (NCCL_MAX_NCHANNELS) must be between 0 "
                       "(unset) and 64"),
            std::string::npos)
      << range;
}

TEST(NcclChannels, PricesEqualAtTheDefaultChunkAndAboveIt) {
  // The profiles' cross-node sends were measured at the 128 KiB default and reach the NIC's
  // rate: a larger chunk (NCCL caps it at 512 KiB) prices them the same.
  const Workload plain = gpt3("");
  const Workload big = gpt3("\"nccl_p2p_net_chunksize\": 2097152");
  auto a = make_cost_model(plain);
  auto b = make_cost_model(big);
  ASSERT_TRUE(a.ok() && b.ok());
  const P2POp send{.bytes = 24 * kMiB, .inter_node = true};
  EXPECT_DOUBLE_EQ((*a)->p2p_s(send), (*b)->p2p_s(send));
}

/// A temporary folder with `cfg.yaml` and a scenario reading it.
class NcclCfgFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("stepsim_nccl_cfg_" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string errors(const std::string& yaml, const std::string& training = "") {
    std::ofstream(dir_ / "cfg.yaml") << yaml;
    const std::string dir = STEPSIM_SCENARIOS_DIR;
    std::ifstream in(dir + "/gpt3-175b-h100-512-fp8.json");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string at = "\"training\": {";
    text.insert(text.find(at) + at.size(),
                "\"nccl_communicator_config_path\": \"cfg.yaml\", " + training);
    std::ofstream(dir_ / "s.json") << text;
    auto w = load_scenario_file((dir_ / "s.json").string(), LoadOptions{dir});
    return w.ok() ? std::string() : format_errors(w.errors());
  }

  fs::path dir_;
};

TEST_F(NcclCfgFile, ErrorsNameTheFileTheLineAndTheKey) {
  EXPECT_EQ(errors("tp:\n  max_ctas: 8\n  min_ctas: 1\n  cga_cluster_size: 2\n"), "");
  const std::string unknown = errors("tp:\n  max_ctas: 8\ndata:\n  max_ctas: 8\n");
  EXPECT_NE(unknown.find("cfg.yaml: data is not a process group Megatron-LM passes to "
                         "get_nccl_options"),
            std::string::npos)
      << unknown;
  EXPECT_NE(unknown.find("(line 3)"), std::string::npos) << unknown;
  const std::string range = errors("tp:\n  max_ctas: 65\n");
  EXPECT_NE(range.find("tp.max_ctas=65 must be an integer in [1, 64]"), std::string::npos) << range;
  const std::string net = errors("dp_cp:\n  net_name: socket\n");
  EXPECT_NE(net.find("dp_cp.net_name=socket is not modelled yet"), std::string::npos) << net;
  const std::string prio = errors("tp:\n  is_high_priority_stream: true\n");
  EXPECT_NE(prio.find("tp.is_high_priority_stream=true is not modelled yet"), std::string::npos)
      << prio;
  EXPECT_EQ(errors("tp:\n  is_high_priority_stream: false\n"), "");
  const std::string option = errors("tp:\n  max_cta: 8\n");
  EXPECT_NE(option.find("tp.max_cta is not an option Megatron-LM's get_nccl_options reads"),
            std::string::npos)
      << option;
  const std::string twice = errors("tp:\n  max_ctas: 8\ntp:\n  max_ctas: 4\n");
  EXPECT_NE(twice.find("tp is given twice"), std::string::npos) << twice;
  const std::string list = errors("- tp\n");
  EXPECT_NE(list.find("line 1: only mappings of process-group names"), std::string::npos) << list;
  const std::string tab = errors("tp:\n\tmax_ctas: 8\n");
  EXPECT_NE(tab.find("line 2: a tab in the indentation"), std::string::npos) << tab;
  // Options of an expert group are refused where the job has expert parallelism; a dense job
  // has no such communicator to slow.
  EXPECT_EQ(errors("tp_exp:\n  max_ctas: 1\n"), "");
}

TEST(NcclChannels, TheLaunchLineImportsTheFileAndTheVariables) {
  const std::string flags =
      " torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 4 --hidden-size 1024 "
      "--num-attention-heads 16 --seq-length 1024 --max-position-embeddings 1024 "
      "--micro-batch-size 1 --global-batch-size 8 --bf16 --vocab-size 32000 "
      "--nccl-communicator-config-path " +
      std::string(STEPSIM_SCENARIOS_DIR) + "/nccl/custom_communicator_cta_mlperf41.yaml";
  MegatronImportOptions o;
  o.system = "systems/dgx-h100-80gb.json";
  auto r =
      scenario_from_megatron_args("NCCL_MIN_NCHANNELS=4 NCCL_P2P_NET_CHUNKSIZE=2097152" + flags, o);
  ASSERT_TRUE(r.ok()) << format_errors(r.errors());
  LoadOptions lo;
  lo.scenarios_dir = STEPSIM_SCENARIOS_DIR;
  auto w = load_scenario_text(r->scenario_json, "line", ".", lo);
  ASSERT_TRUE(w.ok()) << format_errors(w.errors());
  EXPECT_EQ(w->training.nccl_min_nchannels, 4);
  EXPECT_EQ(w->training.nccl_p2p_net_chunksize, 2097152);
  EXPECT_EQ(w->training.nccl_group_options.size(), 10u);
  const std::string back = megatron_args_of(*w);
  EXPECT_TRUE(back.starts_with("NCCL_MIN_NCHANNELS=4 NCCL_P2P_NET_CHUNKSIZE=2097152 ")) << back;
  EXPECT_NE(back.find("--nccl-communicator-config-path '"), std::string::npos) << back;
}

}  // namespace
}  // namespace stepsim
