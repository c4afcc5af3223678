#include "stepsim/cost/profile.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace stepsim {
namespace {

Profile sample_profile() {
  Profile p;
  p.machine = "test-gpu x8";
  p.backend = "cuda";
  p.date = "2026-11-22T00:00:00Z";
  p.source = "measured";
  p.notes = {"first note", "second \"quoted\" note"};
  p.world_size = 16;
  // Seconds that need all 17 significant digits to survive a round trip.
  p.gemm.push_back({4096, 4096, 4096, 1, DType::kBf16, 0.1 / 3.0, ""});
  p.gemm.push_back({1024, 8192, 512, 4, DType::kFp32, 1.2345678901234567e-4, "a citation"});
  p.gemm.push_back(GemmSample{.m = 4096, .n = 4096, .k = 4096, .batch = 1, .dtype = DType::kBf16,
                              .seconds = 1.5e-4, .citation = "", .layout = GemmLayout::kNT});
  p.gemm.push_back(GemmSample{.m = 4096,
                              .n = 4096,
                              .k = 4096,
                              .batch = 1,
                              .dtype = DType::kFp8,
                              .seconds = 9.5e-5,
                              .citation = "",
                              .layout = GemmLayout::kTN,
                              .scaling = GemmScaling::kBlock1x128});
  p.gemm.push_back(GemmSample{.m = 4096,
                              .n = 4096,
                              .k = 4096,
                              .batch = 1,
                              .dtype = DType::kFp8,
                              .seconds = 7.5e-5,
                              .citation = "",
                              .layout = GemmLayout::kTN,
                              .fast_accum = true});
  AttentionSample a;
  a.op = {2, 16, 4, 2048, 128, true, true, DType::kFp16};
  a.seconds = 2.0 / 7.0 * 1e-3;
  p.attention.push_back(a);
  p.memory.push_back({1 << 20, 1e-6 / 3.0, ""});
  p.memory.push_back({1 << 30, 0.7e-3, "babelstream"});
  p.collectives.push_back({CollectiveKind::kReduceScatter, 8, 2, 1 << 24, 3.3e-4, ""});
  p.collectives.push_back({CollectiveKind::kAllGather, 8, 2, 1 << 26, 1.1e-3, ""});
  p.collectives.push_back({CollectiveKind::kAllToAll, 4, 1, 1 << 20, 4.4e-5, ""});
  p.p2p.push_back({true, 1 << 22, 2.2e-4, ""});
  p.p2p.push_back({false, 1 << 22, 2.3e-5, ""});
  p.host = HostCosts{.op_issue_s = 1.3e-5,
                     .forward_op_issue_s = 8.45e-5,
                     .backward_op_issue_s = 4.7e-5,
                     .kernel_gap_s = 1.09e-6,
                     .sync_s = 1.06e-5,
                     .ops = {{"add", 1.4e-5}, {"linear", 2.5e-5}},
                     .layer_forward_kernels = 12,
                     .layer_backward_kernels = 39,
                     .layer_forward_host_s = 1.0e-3,
                     .layer_backward_host_s = 1.8e-3,
                     .citation = "measured here"};
  p.interference = MeasuredInterference{.compute_slowdown = 1.0 + 1.0 / 3.0,
                                        .collective_slowdown = 2.5,
                                        .gemm = "fp32 m=64 n=64 k=64",
                                        .collective = "all_reduce of 1048576 bytes over 2 ranks",
                                        .p2p_post_latency_s = 7.5e-5,
                                        .collective_post_latency_s = 4.25e-4,
                                        .posted =
                                            "send/recv of 65536 bytes, all_reduce of 65536 "
                                            "bytes over 2 ranks"};
  p.spread = KernelSpread{.gemm_cv = 0.0125,
                          .attention_cv = 0.02,
                          .memory_cv = 1.0 / 30.0,
                          .collective_cv = 0.05,
                          .p2p_cv = 0.04,
                          .repeats = 20,
                          .citation = "calibrate's repeats"};
  fit_profile(p);
  return p;
}

TEST(ProfileJson, RoundTripIsExact) {
  const Profile p = sample_profile();
  const std::string text = profile_to_json(p);
  const Result<Profile> back = parse_profile(text, "round-trip.json");
  ASSERT_TRUE(back.ok()) << format_errors(back.errors());
  EXPECT_EQ(back.value(), p);
  // And byte-identical when written again (deterministic output).
  EXPECT_EQ(profile_to_json(back.value()), text);
}

TEST(ProfileJson, FileRoundTrip) {
  const Profile p = sample_profile();
  const std::string path = testing::TempDir() + "/stepsim_profile_test.json";
  {
    std::ofstream out(path);
    out << profile_to_json(p);
  }
  const Result<Profile> back = load_profile_file(path);
  ASSERT_TRUE(back.ok()) << format_errors(back.errors());
  EXPECT_EQ(back.value(), p);
}

TEST(ProfileJson, HostSectionIsOptionalAndChecked) {
  Profile p = sample_profile();
  p.host = HostCosts{};
  const std::string without = profile_to_json(p);
  EXPECT_EQ(without.find("\"host\""), std::string::npos);
  const Result<Profile> back = parse_profile(without, "no-host.json");
  ASSERT_TRUE(back.ok()) << format_errors(back.errors());
  EXPECT_FALSE(back.value().host.measured());
  // A negative figure and an unknown key are named with their path.
  const std::string text = profile_to_json(sample_profile());
  std::string bad = text;
  bad.replace(bad.find("\"sync_s\": "), 10, "\"sync_s\": -");
  bad.replace(bad.find("\"citation\": \"measured here\""), 10, "\"citatoin\"");
  const Result<Profile> r = parse_profile(bad, "bad-host.json");
  ASSERT_FALSE(r.ok());
  const std::string msg = format_errors(r.errors());
  EXPECT_NE(msg.find("bad-host.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find("host.sync_s"), std::string::npos) << msg;
  EXPECT_NE(msg.find("host.citatoin"), std::string::npos) << msg;
}

// The spread of kernel times (calibrate's repeats): optional, coefficients in [0, 1], from
// at least two repeats.
TEST(ProfileJson, SpreadSectionIsOptionalAndChecked) {
  Profile p = sample_profile();
  p.spread = KernelSpread{};
  const std::string without = profile_to_json(p);
  EXPECT_EQ(without.find("\"spread\""), std::string::npos);
  const Result<Profile> back = parse_profile(without, "no-spread.json");
  ASSERT_TRUE(back.ok()) << format_errors(back.errors());
  EXPECT_FALSE(back.value().spread.measured());
  std::string bad = profile_to_json(sample_profile());
  const std::string cv = "\"gemm_cv\": 0.0125";
  const std::string repeats = "\"repeats\": 20";
  ASSERT_NE(bad.find(cv), std::string::npos) << bad;
  bad.replace(bad.find(cv), cv.size(), "\"gemm_cv\": 1.5");
  bad.replace(bad.find(repeats), repeats.size(), "\"repeats\": 1");
  const Result<Profile> r = parse_profile(bad, "bad-spread.json");
  ASSERT_FALSE(r.ok());
  const std::string msg = format_errors(r.errors());
  EXPECT_NE(msg.find("spread.gemm_cv=1.5 must be between 0 and 1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("spread.repeats=1 must be at least 2"), std::string::npos) << msg;
}

// Calibration's interference microbenchmark: optional, two ratios in [1, 10] and what was timed.
TEST(ProfileJson, InterferenceSectionIsOptionalAndChecked) {
  Profile p = sample_profile();
  p.interference = MeasuredInterference{};
  const std::string without = profile_to_json(p);
  EXPECT_EQ(without.find("\"interference\""), std::string::npos);
  const Result<Profile> back = parse_profile(without, "no-interference.json");
  ASSERT_TRUE(back.ok()) << format_errors(back.errors());
  EXPECT_FALSE(back.value().interference.measured());
  std::string bad = profile_to_json(sample_profile());
  bad.replace(bad.find("\"collective_slowdown\": 2.5"), 26, "\"collective_slowdown\": 0.5");
  const Result<Profile> r = parse_profile(bad, "bad-interference.json");
  ASSERT_FALSE(r.ok());
  const std::string msg = format_errors(r.errors());
  EXPECT_NE(msg.find("interference.collective_slowdown=0.5 must be between 1 and 10"),
            std::string::npos)
      << msg;
  // The posted calls' latencies: optional (a profile written before them has none, and reads
  // as 0), below a second, and said what was posted.
  Profile old = sample_profile();
  old.interference.p2p_post_latency_s = old.interference.collective_post_latency_s = 0;
  old.interference.posted.clear();
  const std::string old_text = profile_to_json(old);
  EXPECT_EQ(old_text.find("post_latency"), std::string::npos);
  const Result<Profile> old_back = parse_profile(old_text, "old-interference.json");
  ASSERT_TRUE(old_back.ok()) << format_errors(old_back.errors());
  EXPECT_EQ(old_back.value(), old);
  std::string slow = profile_to_json(sample_profile());
  const std::string given = "\"collective_post_latency_s\": 0.000425";
  ASSERT_NE(slow.find(given), std::string::npos) << slow;
  slow.replace(slow.find(given), given.size(), "\"collective_post_latency_s\": 2.5");
  const Result<Profile> s2 = parse_profile(slow, "slow-post.json");
  ASSERT_FALSE(s2.ok());
  EXPECT_NE(format_errors(s2.errors())
                .find("interference.collective_post_latency_s=2.5 must be below 1 s"),
            std::string::npos)
      << format_errors(s2.errors());
}

TEST(ProfileJson, MissingFitsAreMadeFromSamples) {
  Profile p = sample_profile();
  p.host = HostCosts{};  // written after the fits, which the cut below drops
  p.interference = MeasuredInterference{};
  p.spread = KernelSpread{};
  std::string text = profile_to_json(p);
  // Drop the three fit keys: what a hand-written public profile looks like.
  const auto cut = text.find(",\n  \"memory_fit\"");
  ASSERT_NE(cut, std::string::npos);
  text = text.substr(0, cut) + "\n}\n";
  const Result<Profile> back = parse_profile(text, "no-fits.json");
  ASSERT_TRUE(back.ok()) << format_errors(back.errors());
  EXPECT_EQ(back.value(), p);
  EXPECT_EQ(back.value().collective_fits.size(), 3u);
}

// Every problem of the file, each naming the file and the key.
TEST(ProfileJson, MalformedFileNamesFileAndKey) {
  const std::string text = R"({
    "format_version": 1, "machine": "m", "backend": "cuda", "date": "d", "source": "measured",
    "notes": [], "world_size": 8,
    "gemm": [{"m": 128, "n": 128, "k": 128, "dtype": "bf16", "seconds": 1e-5},
             {"m": -1, "n": 128, "k": 128, "dtype": "int8", "seconds": 1e-5},
             {"m": 128, "n": 128, "k": 128, "dtype": "bf16", "layout": "TT", "seconds": 1e-5},
             {"m": 128, "n": 128, "k": 128, "dtype": "bf16", "scaling": "block_1x128",
              "seconds": 1e-5},
             {"m": 128, "n": 128, "k": 128, "dtype": "fp8", "scaling": "mx", "seconds": 1e-5},
             {"m": 128, "n": 128, "k": 128, "dtype": "bf16", "fast_accum": true, "seconds": 1e-5}],
    "memory": [{"bytes": 1024, "seconds": 0}],
    "collectives": [{"kind": "broadcast", "group_size": 8, "nodes_spanned": 1,
                     "bytes": 1024, "seconds": 1e-5},
                    {"kind": "all_reduce", "group_size": 2, "nodes_spanned": 4,
                     "bytes": 1024, "seconds": 1e-5}],
    "p2p": [{"inter_node": "yes", "bytes": 1024, "seconds": 1e-5, "colour": "red"}]
  })";
  const Result<Profile> r = parse_profile(text, "bad.json");
  ASSERT_FALSE(r.ok());
  const std::string all = format_errors(r.errors());
  for (const char* line : {
           "bad.json: gemm[1].m=-1 must be at least 1\n",
           "bad.json: gemm[1].dtype=\"int8\" is not a dtype (fp32, fp16, bf16, fp8 or fp4)\n",
           "bad.json: gemm[2].layout=\"TT\" is not a GEMM layout (TN, NN or NT: Transformer "
           "Engine's names)\n",
           "bad.json: gemm[3].scaling=\"block_1x128\" needs dtype \"fp8\" (block scaling is an "
           "FP8 recipe's)\n",
           "bad.json: gemm[4].scaling=\"mx\" is not a GEMM scaling (tensor, block_128x128, "
           "block_1x128, mx_1x32 or nv_1x16)\n",
           "bad.json: gemm[5].fast_accum=true needs dtype \"fp8\" with per-tensor scaling",
           "bad.json: memory[0].seconds must be a finite positive number\n",
           "bad.json: collectives[0].kind=\"broadcast\" is not a collective",
           "bad.json: collectives[1].nodes_spanned=4 must not exceed group_size=2\n",
           "bad.json: p2p[0].inter_node must be true or false\n",
           "bad.json: p2p[0].colour is not a known key\n",
       }) {
    EXPECT_NE(all.find(line), std::string::npos) << "missing: " << line << "\nin:\n" << all;
  }
  EXPECT_EQ(r.errors().size(), 11u) << all;
}

TEST(ProfileJson, MissingKeysAreNamed) {
  const Result<Profile> r = parse_profile(R"({"format_version": 1, "gemm": [{"m": 1}]})", "x.json");
  ASSERT_FALSE(r.ok());
  const std::string all = format_errors(r.errors());
  for (const char* line :
       {"x.json: machine is missing", "x.json: memory is missing", "x.json: gemm[0].n is missing",
        "x.json: gemm[0].seconds is missing", "x.json: collectives is missing"}) {
    EXPECT_NE(all.find(line), std::string::npos) << "missing: " << line << "\nin:\n" << all;
  }
}

TEST(ProfileJson, BadFitIsNamed) {
  Profile p = sample_profile();
  std::string text = profile_to_json(p);
  const std::string from = "\"max_bytes\": 1073741824";
  const auto at = text.find(from);
  ASSERT_NE(at, std::string::npos);
  text.replace(at, from.size(), "\"max_bytes\": 5");
  const Result<Profile> r = parse_profile(text, "fit.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(format_errors(r.errors()),
            "fit.json: memory_fit.max_bytes=5 must be at least min_bytes=1048576\n");
}

TEST(ProfileJson, InvalidJsonNamesTheFile) {
  const Result<Profile> r = parse_profile("{\"machine\": ", "broken.json");
  ASSERT_FALSE(r.ok());
  ASSERT_EQ(r.errors().size(), 1u);
  EXPECT_EQ(r.errors()[0].file, "broken.json");
  EXPECT_NE(r.errors()[0].message.find("malformed JSON"), std::string::npos);
}

TEST(ProfileJson, UnreadableFileIsNamed) {
  const Result<Profile> r = load_profile_file("/nonexistent/stepsim/profile.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.errors()[0].file, "/nonexistent/stepsim/profile.json");
}

TEST(ProfileJson, NewerFormatIsRefused) {
  std::string text = profile_to_json(sample_profile());
  text.replace(text.find("\"format_version\": 1"), 19, "\"format_version\": 2");
  const Result<Profile> r = parse_profile(text, "new.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(format_errors(r.errors()),
            "new.json: format_version=2 is newer than this stepsim reads (1)\n");
}

}  // namespace
}  // namespace stepsim

namespace stepsim {
namespace {

// The profile measured on one H100 SXM5 (scenarios/profiles/README.md says how): it loads,
// says what it is, and its FP8 samples are those of FP8 tensor cores.
TEST(MeasuredProfile, H100LoadsWithItsVersionsAndFp8Samples) {
  const auto p = load_profile_file(std::string(STEPSIM_SCENARIOS_DIR) +
                                   "/profiles/h100-sxm5-80gb-measured.json");
  ASSERT_TRUE(p.ok()) << format_errors(p.errors());
  EXPECT_EQ(p.value().source, "measured");
  EXPECT_NE(p.value().machine.find("H100"), std::string::npos);
  bool versions = false;
  for (const std::string& n : p.value().notes) {
    versions = versions || (n.find("driver ") != std::string::npos &&
                            n.find("cuBLASLt ") != std::string::npos);
  }
  EXPECT_TRUE(versions);
  double bf16 = 0, fp8 = 0, fast = 0, block = 0, block_1d = 0;
  for (const auto& g : p.value().gemm) {
    if (g.m != 8192 || g.n != 8192 || g.k != 8192 || g.batch != 1) continue;
    if (g.dtype == DType::kBf16) bf16 = g.seconds;
    if (g.dtype != DType::kFp8) continue;
    if (g.scaling == GemmScaling::kTensor) (g.fast_accum ? fast : fp8) = g.seconds;
    if (g.scaling == GemmScaling::kBlock128x128) block = g.seconds;
    if (g.scaling == GemmScaling::kBlock1x128) block_1d = g.seconds;
  }
  ASSERT_GT(bf16, 0.0);
  ASSERT_GT(fp8, 0.0);
  EXPECT_LT(fp8 * 1.3, bf16);
  // Fast accumulation (Transformer Engine's fprop under per-tensor scaling): faster at the
  // median of the products over 100 GFLOP measured both ways (one product at the power cap
  // can come out either way: 8192^3 measured 0.2% slower on 2026-11-28).
  ASSERT_GT(fast, 0.0);
  std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t>, double> split;
  std::vector<double> fast_over_split;
  for (const auto& g : p.value().gemm) {
    if (g.dtype == DType::kFp8 && g.scaling == GemmScaling::kTensor && !g.fast_accum &&
        g.layout == GemmLayout::kTN) {
      split[{g.m, g.n, g.k, g.batch}] = g.seconds;
    }
  }
  for (const auto& g : p.value().gemm) {
    const auto found = split.find({g.m, g.n, g.k, g.batch});
    if (g.fast_accum && found != split.end() &&
        2 * g.m * g.n * g.k * g.batch > std::int64_t{100000000000}) {
      fast_over_split.push_back(g.seconds / found->second);
    }
  }
  ASSERT_GT(fast_over_split.size(), 20u);
  std::nth_element(
      fast_over_split.begin(),
      fast_over_split.begin() + static_cast<std::ptrdiff_t>(fast_over_split.size() / 2),
      fast_over_split.end());
  EXPECT_LT(fast_over_split[fast_over_split.size() / 2], 0.98);
  // Block scaling (Transformer Engine's Float8BlockScaling) runs other kernels: slower than
  // per-tensor scales, faster than bf16; two 1x128-scaled operands slower than one 128x128.
  ASSERT_GT(block, 0.0);
  ASSERT_GT(block_1d, 0.0);
  EXPECT_GT(block, fp8);
  EXPECT_GT(block_1d, block);
  EXPECT_LT(block_1d, bf16);
  // Below the data sheet's dense peaks (989.4 and 1978.9 TFLOP/s).
  const double flops = 2.0 * 8192.0 * 8192.0 * 8192.0;
  EXPECT_LT(flops / bf16, 989.4e12);
  EXPECT_LT(flops / fp8, 1978.9e12);
  // The host side, measured with PyTorch on the same machine: an eager kernel costs the host
  // microseconds, more than the GPU's own per-kernel floor.
  const HostCosts& h = p.value().host;
  ASSERT_TRUE(h.measured());
  EXPECT_GT(h.forward_op_issue_s, h.kernel_gap_s);
  EXPECT_GT(h.backward_op_issue_s, h.kernel_gap_s);
  EXPECT_NE(h.citation.find("measure_host_overhead.py"), std::string::npos);
}

}  // namespace
}  // namespace stepsim
