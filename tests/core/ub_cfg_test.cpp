// training.tp_comm_overlap_cfg: Megatron's --tp-comm-overlap-cfg YAML of Transformer Engine's
// per-GEMM userbuffers settings. What is priced (SM margins, splits, an FP8 pipelined
// reduce-scatter), what is refused, and that every error names the file, the line and the key.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "stepsim/plan/decompose.hpp"
#include "stepsim/check/load.hpp"
#include "stepsim/memory/memory_model.hpp"

namespace stepsim {
namespace {

namespace fs = std::filesystem;

const std::string kScenarios = STEPSIM_SCENARIOS_DIR;

/// A directory holding `ub.yaml` (`yaml`) and `s.json`: Nemotron-4 15B (t2 with SP and
/// tp_comm_overlap, h 6144, seq 4096, micro-batch 2; 132 SMs) reading it.
class UbCfg : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("stepsim_ub_cfg_" +
            std::string(testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  Result<Workload> load(const std::string& yaml, bool fp8 = false, bool overlap = true) {
    std::ifstream in(kScenarios + "/nemotron4-15b-h100-64.json");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::string add = "\"tp_comm_overlap_cfg\": \"ub.yaml\",";
    if (fp8) add += "\"fp8\": \"hybrid\",";
    const std::string training = "\"training\": {";
    text.insert(text.find(training) + training.size(), add);
    if (!overlap) {
      const std::string on = "\"tp_comm_overlap\": true";
      text.replace(text.find(on), on.size(), "\"tp_comm_overlap\": false");
    }
    std::ofstream(dir_ / "ub.yaml") << yaml;
    std::ofstream(dir_ / "s.json") << text;
    return load_scenario_file((dir_ / "s.json").string(), LoadOptions{kScenarios});
  }

  std::string yaml_path() const { return (dir_ / "ub.yaml").lexically_normal().string(); }

  fs::path dir_;
};

std::vector<const Op*> named(const std::vector<Op>& ops, const std::string& name) {
  std::vector<const Op*> out;
  for (const Op& op : ops) {
    if (op.name == name && op.layer == 1) out.push_back(&op);
  }
  return out;
}

std::int64_t bytes(const std::vector<const Op*>& ops) {
  std::int64_t sum = 0;
  for (const Op* op : ops) sum += std::get<CollectiveOp>(op->shape).bytes;
  return sum;
}

/// The first chunk's ops (layers 0..), by value: decompose() returns a temporary.
ChunkPlan chunk(const Workload& w) { return decompose(w).stages[0].chunks[0]; }

// Nemotron-4 15B per rank: 4096 x 2 = 8192 tokens, h 6144, 132 SMs.
constexpr std::int64_t kT = 8192;
constexpr std::int64_t kH = 6144;

TEST_F(UbCfg, SmMarginsSplitsAndAnFp8PipelinedReduceScatterArePriced) {
  // Transformer Engine's defaults give every bulk and pipelined GEMM (132 - 16) / 132.
  const auto plain = load("");
  ASSERT_TRUE(plain.ok()) << format_errors(plain.errors());
  const ChunkPlan d = chunk(*plain);
  EXPECT_DOUBLE_EQ(named(d.backward, "qkv_dgrad")[0]->sm_share, 116.0 / 132);
  EXPECT_EQ(named(d.forward, "proj_gemm").size(), 4u);

  // NeMo's userbuffers_fp8_h100_h8192_tp4_mbs1_seqlen8192 style: bulk GEMMs without SM margin,
  // projection on 132 - 24 SMs in 8 chunks, FC2 on 132 - 16 with an FP8 buffer.
  const std::string yaml = R"(# per-GEMM settings
qkv_dgrad:
  method: bulk
  num_sm: 4
  cga_size: 2
  set_sm_margin: false
qkv_wgrad:
  num_sm: 24
  set_sm_margin: true
proj_fprop:
  method: pipeline
  num_sm: 24
  num_splits: 8   # 6144 / 8 = 768 output features a chunk
  set_sm_margin: True
fc2_fprop:
  num_sm: 16
  set_sm_margin: true
  fp8_buf: true
qkv_fprop:
  method: ring_exchange
  aggregate: false
)";
  const auto w = load(yaml);
  ASSERT_TRUE(w.ok()) << format_errors(w.errors());
  EXPECT_EQ(w->training.tp_comm_overlap_cfg, "ub.yaml");
  const ChunkPlan c = chunk(*w);
  EXPECT_DOUBLE_EQ(named(c.backward, "qkv_dgrad")[0]->sm_share, 1.0);
  EXPECT_DOUBLE_EQ(named(c.backward, "qkv_wgrad")[0]->sm_share, 108.0 / 132);
  const auto proj = named(c.forward, "proj_gemm");
  ASSERT_EQ(proj.size(), 8u);
  for (const Op* op : proj) {
    EXPECT_EQ(std::get<GemmOp>(op->shape).n, kH / 8);
    EXPECT_DOUBLE_EQ(op->sm_share, 108.0 / 132);
  }
  // bf16: fp8_buf changes nothing (no FP8 buffers without FP8): 16-bit reduce-scatters.
  EXPECT_EQ(bytes(named(c.forward, "tp_ub_reduce_scatter")), 2 * kT * kH * 2);
  // FP8: FC2's reduce-scatter moves 1 byte per element, the projection's still 2.
  const auto f = load(yaml, true);
  ASSERT_TRUE(f.ok()) << format_errors(f.errors());
  const ChunkPlan e = chunk(*f);
  EXPECT_EQ(bytes(named(e.forward, "tp_ub_reduce_scatter")), kT * kH * 2 + kT * kH * 1);
}

TEST_F(UbCfg, UnmodelledSettingsNameTheFileTheLineAndTheKey) {
  const auto w = load(
      "qkv_fprop:\n  atomic_gemm: true\nqkv_dgrad:\n  method: ring_exchange\n"
      "proj_fprop:\n  aggregate: true\n  pipeline_rs_overlap_first_gemm: true\n"
      "fc1_fprop:\n  use_ce: false\n  bogus: 1\nproj_wgrad:\n  num_sm: 2\n");
  ASSERT_FALSE(w.ok());
  const std::string all = format_errors(w.errors());
  const std::string f = yaml_path() + ": ";
  EXPECT_NE(all.find(f + "qkv_fprop.atomic_gemm=true is not modelled yet"), std::string::npos)
      << all;
  EXPECT_NE(all.find("with method pipeline) (line 2)"), std::string::npos) << all;
  EXPECT_NE(all.find(f + "qkv_dgrad.method=ring_exchange is not modelled yet"), std::string::npos);
  EXPECT_NE(all.find("(line 4)"), std::string::npos);
  EXPECT_NE(all.find(f + "proj_fprop.aggregate=true changes nothing"), std::string::npos);
  EXPECT_NE(all.find(f + "proj_fprop.pipeline_rs_overlap_first_gemm=true"), std::string::npos);
  EXPECT_NE(all.find(f + "fc1_fprop.use_ce=false"), std::string::npos);
  EXPECT_NE(all.find(f + "fc1_fprop.bogus is not a setting"), std::string::npos);
  EXPECT_NE(all.find(f + "proj_wgrad.num_sm=2"), std::string::npos);
  EXPECT_EQ(w.errors().size(), 7u) << all;
}

// atomic_gemm on the pipelined reduce-scatters (CommOverlapBase::atomic_gemm_overlap_rs): one
// cuBLAS atomic GEMM, each chunk its 1/num_splits share, priced as the whole GEMM's share; FP8
// only; changes nothing on a bulk overlap; not modelled with a ring exchange.
TEST_F(UbCfg, AtomicGemmMakesThePipelinedChunksOneGemm) {
  const std::string yaml = "proj_fprop:\n  atomic_gemm: true\nfc2_fprop:\n  atomic_gemm: 1\n";
  const auto w = load(yaml, true);
  ASSERT_TRUE(w.ok()) << format_errors(w.errors());
  const ChunkPlan c = chunk(*w);
  for (const std::string gemm : {"proj_gemm", "fc2_gemm"}) {
    const auto chunks = named(c.forward, gemm);
    ASSERT_EQ(chunks.size(), 4u) << gemm;
    for (const Op* op : chunks) {
      const auto& g = std::get<GemmOp>(op->shape);
      EXPECT_EQ(g.atomic_chunks, 4) << gemm;
      EXPECT_EQ(g.n, kH / 4) << gemm;
    }
  }
  // Without it, the chunks are GEMMs of their own.
  const auto plain = load("proj_fprop:\n  atomic_gemm: false\n", true);
  ASSERT_TRUE(plain.ok()) << format_errors(plain.errors());
  const ChunkPlan p = chunk(*plain);
  for (const Op* op : named(p.forward, "proj_gemm")) {
    EXPECT_EQ(std::get<GemmOp>(op->shape).atomic_chunks, 1);
  }
  // bf16: Transformer Engine refuses it.
  const auto bf16 = load(yaml, false);
  ASSERT_FALSE(bf16.ok());
  EXPECT_NE(format_errors(bf16.errors())
                .find("proj_fprop.atomic_gemm=true needs fp8 (Transformer Engine: \"Atomic GEMM "
                      "overlap supported only for FP8 GEMM\")"),
            std::string::npos)
      << format_errors(bf16.errors());
  const auto others = load(
      "qkv_dgrad:\n  atomic_gemm: true\nfc2_fprop:\n  method: ring_exchange\n"
      "  atomic_gemm: true\n",
      true);
  ASSERT_FALSE(others.ok());
  const std::string all = format_errors(others.errors());
  EXPECT_NE(all.find("qkv_dgrad.atomic_gemm=true changes nothing on qkv_dgrad"), std::string::npos)
      << all;
  EXPECT_NE(all.find("fc2_fprop.atomic_gemm=true is not modelled yet with method ring_exchange"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("(line 5)"), std::string::npos) << all;
}

TEST_F(UbCfg, RingExchangeReduceScatterAndAggregateAreRead) {
  // NeMo's userbuffers_fp8_h100_h12288_tp4_mbs1_seqlen2048 style (RingExchangeOverlapCfg on
  // proj_fprop / fc2_fprop) and MLPerf's integer booleans ("aggregate: 1", "set_sm_margin: 0").
  const auto w = load(
      "proj_fprop:\n  method: ring_exchange\n  num_sm: 1\n  set_sm_margin: true\n"
      "fc2_dgrad:\n  method: ring_exchange\n  aggregate: 1\n"
      "qkv_dgrad:\n  method: bulk\n  num_sm: 4\n  set_sm_margin: 0\n");
  ASSERT_TRUE(w.ok()) << format_errors(w.errors());
  const auto& g = w->training.tp_comm_overlap_gemms;
  EXPECT_EQ(g[3].ring_exchange, 1);  // proj_fprop
  EXPECT_EQ(g[10].aggregate, 1);     // fc2_dgrad
  EXPECT_EQ(g[1].set_sm_margin, 0);  // qkv_dgrad
  const ChunkPlan c = chunk(*w);
  // t = 2: two projection chunks of kT / 2 rows on 131 SMs, one partial result sent.
  const auto proj = named(c.forward, "proj_gemm");
  ASSERT_EQ(proj.size(), 2u);
  EXPECT_EQ(std::get<GemmOp>(proj[0]->shape).m, kT / 2);
  EXPECT_DOUBLE_EQ(proj[0]->sm_share, 131.0 / 132);
  const auto sends = named(c.forward, "tp_ring_reduce_scatter");
  ASSERT_EQ(sends.size(), 1u);
  EXPECT_EQ(std::get<P2POp>(sends[0]->shape).bytes, kT / 2 * kH * 2);
  EXPECT_EQ(named(c.backward, "fc2_dgrad").size(), 1u);  // t / 2 = 1 step of both chunks
}

TEST_F(UbCfg, RingExchangeReduceScatterRulesNeedTheWholeBlock) {
  // use_ce and num_splits before the method that makes them wrong; aggregate where TE never
  // reads it; pipeline on an all-gather, which TE rejects.
  const auto w = load(
      "fc2_fprop:\n  use_ce: false\n  num_splits: 4\n  method: ring_exchange\n"
      "proj_fprop:\n  use_ce: false\n  num_splits: 4\n"
      "qkv_wgrad:\n  aggregate: true\n"
      "fc1_fprop:\n  method: pipeline\n");
  ASSERT_FALSE(w.ok());
  const std::string all = format_errors(w.errors());
  const std::string f = yaml_path() + ": ";
  EXPECT_NE(all.find(f + "fc2_fprop.use_ce=false is not modelled yet"), std::string::npos) << all;
  EXPECT_NE(all.find("copy engine) (line 2)"), std::string::npos) << all;
  EXPECT_NE(all.find(f + "fc2_fprop.num_splits=4 changes nothing with method ring_exchange"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find(f + "qkv_wgrad.aggregate=true changes nothing"), std::string::npos) << all;
  EXPECT_NE(all.find(f + "fc1_fprop.method=pipeline: Transformer Engine rejects it"),
            std::string::npos)
      << all;
  EXPECT_EQ(w.errors().size(), 4u) << all;  // proj_fprop stays a pipeline: both fine
}

TEST(ShippedUbCfg, Gpt3Fp8RunsBothReduceScattersAsRingExchanges) {
  // scenarios/gpt3-175b-h100-512-fp8.json with userbuffers_fp8_h100_h12288_tp4_mbs1_seqlen2048:
  // t 4, 2048 x 2 = 4096 tokens per rank, h 12288; the projection reads 12288 / 4 = 3072
  // columns, FC2 49152 / 4 = 12288.
  const auto w =
      load_scenario_file(kScenarios + "/gpt3-175b-h100-512-fp8.json", LoadOptions{kScenarios});
  ASSERT_TRUE(w.ok()) << format_errors(w.errors());
  constexpr std::int64_t tokens = 4096;
  constexpr std::int64_t h = 12288;
  const ChunkPlan c = chunk(*w);
  for (const auto& [gemm, k] :
       {std::pair<std::string, std::int64_t>{"proj_gemm", 3072}, {"fc2_gemm", 12288}}) {
    const auto ops = named(c.forward, gemm);
    ASSERT_EQ(ops.size(), 4u) << gemm;
    for (const Op* op : ops) {
      // Forward: fast accumulation, as TE's fprop under delayed scaling.
      EXPECT_EQ(std::get<GemmOp>(op->shape), (GemmOp{.m = tokens / 4,
                                                     .n = h,
                                                     .k = k,
                                                     .dtype = DType::kFp8,
                                                     .layout = GemmLayout::kTN,
                                                     .fast_accum = true}))
          << gemm;
      EXPECT_DOUBLE_EQ(op->sm_share, 131.0 / 132);  // num_sm 1 with set_sm_margin
    }
  }
  // 3 sends of 16-bit partial results per GEMM (fp8_buf false), one reduction each.
  const auto sends = named(c.forward, "tp_ring_reduce_scatter");
  ASSERT_EQ(sends.size(), 6u);
  for (const Op* op : sends) EXPECT_EQ(std::get<P2POp>(op->shape).bytes, tokens / 4 * h * 2);
  EXPECT_TRUE(named(c.forward, "tp_ub_reduce_scatter").empty());
  for (const std::string name : {"proj_ub_reduce", "fc2_ub_reduce"}) {
    const auto r = named(c.forward, name);
    ASSERT_EQ(r.size(), 1u) << name;
    EXPECT_EQ(std::get<MemoryBoundOp>(r[0]->shape).bytes,
              4 * (tokens / 4) * h * 2 + tokens / 4 * h * 2);
  }
  // Buffers of [4096, 12288]: the 8 all-gather ones in FP8 (1 byte), the bulk QKV/FC1 wgrad
  // ones 16-bit, the two ring-exchange reduce-scatters 16-bit with 2 * 4 - 1 = 7 quarters.
  const std::int64_t e = tokens * h;
  EXPECT_EQ(userbuffer_bytes(*w), 8 * e + 2 * 2 * e + 2 * (2 * e / 4 * 7));
}

TEST_F(UbCfg, OnlyTheYamlSubsetOfUbCfgsIsRead) {
  const std::string f = yaml_path() + ": ";
  const auto cases = std::vector<std::pair<std::string, std::string>>{
      {"qkv_fprop:\n\tnum_sm: 2\n", "line 2: a tab"},
      {"- qkv_fprop\n", "line 1: only mappings"},
      {"qkv_fprop: {num_sm: 2}\n", "qkv_fprop={num_sm: 2} must be a mapping"},
      {"qkv_fprop:\n  num_sm: 2\n    cga_size: 2\n", "qkv_fprop.cga_size is indented unlike"},
      {"lm_head_fprop:\n  num_sm: 2\n", "lm_head_fprop is not one of"},
      {"qkv_dgrad:\n  num_sm: two\n", "qkv_dgrad.num_sm=two must be an integer >= 1 (line 2)"},
      {"qkv_dgrad:\n  set_sm_margin: yes\n", "qkv_dgrad.set_sm_margin=yes must be true or false"},
      {"qkv_dgrad:\n  num_sm: 2\nqkv_dgrad:\n  num_sm: 3\n", "qkv_dgrad is given twice (line 3)"},
      {"  num_sm: 2\n", "line 1: a setting before any GEMM name"},
      {"qkv_dgrad:\n  is_reduce_scatter: true\n", "qkv_dgrad.is_reduce_scatter=true is not"},
      {"qkv_dgrad:\n  num_sm\n", "line 2: expected \"key: value\""},
  };
  for (const auto& [yaml, want] : cases) {
    const auto w = load(yaml);
    ASSERT_FALSE(w.ok()) << yaml;
    const std::string all = format_errors(w.errors());
    EXPECT_NE(all.find(f + want), std::string::npos) << yaml << "\n" << all;
  }
}

TEST_F(UbCfg, TheScenarioSideRules) {
  // Without tp_comm_overlap Megatron never reads the file.
  auto w = load("qkv_dgrad:\n  num_sm: 2\n", false, false);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(format_errors(w.errors())
                .find("training.tp_comm_overlap_cfg=\"ub.yaml\" has no effect "
                      "without tp_comm_overlap"),
            std::string::npos)
      << format_errors(w.errors());
  // A split count that does not divide h, and num_sm that leaves the GEMM no SM.
  w = load("proj_fprop:\n  num_splits: 5\nfc2_fprop:\n  num_sm: 132\n");
  ASSERT_FALSE(w.ok());
  const std::string all = format_errors(w.errors());
  EXPECT_NE(all.find("model.hidden_size=6144 is not divisible by 5"), std::string::npos) << all;
  EXPECT_NE(all.find("fc2_fprop.num_sm=132 leaves no SM"), std::string::npos) << all;
  // A missing file is named with where it was looked for.
  fs::remove(dir_ / "ub.yaml");
  std::ifstream in(dir_ / "s.json");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto missing = load_scenario_text(text, "s.json", dir_.string(), LoadOptions{kScenarios});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(format_errors(missing.errors())
                .find("s.json: training.tp_comm_overlap_cfg=\"ub.yaml\": no such file"),
            std::string::npos)
      << format_errors(missing.errors());
}

}  // namespace
}  // namespace stepsim
