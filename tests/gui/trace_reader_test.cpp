#include "stepsim/gui/trace_reader.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>

#include "stepsim/base/output_file.hpp"

#include "synthetic_trace.hpp"
#include "test_data.hpp"

namespace stepsim::gui {
namespace {

using testing::data_path;
using testing::load_fixture;

bool mentions(const Errors& errors, const std::string& text) {
  for (const Error& e : errors) {
    if (e.to_string().find(text) != std::string::npos) return true;
  }
  return false;
}

TEST(TraceReader, ReadsLanesSortedAndRelativeToOrigin) {
  const TraceModel m = load_fixture("two_stage_predicted.json");
  EXPECT_DOUBLE_EQ(m.origin_us, 5000.0);
  EXPECT_DOUBLE_EQ(m.end_us, 1100.0);
  EXPECT_EQ(m.slice_count(), 22u);
  ASSERT_EQ(m.ranks(), (std::vector<std::int32_t>{0, 1}));
  // r0: compute, pp_comm, dp_comm; r1: compute, tp_comm, pp_comm, dp_comm.
  ASSERT_EQ(m.lanes.size(), 7u);
  EXPECT_EQ(m.lanes[0].rank, 0);
  EXPECT_EQ(m.lanes[0].stream, kStreamCompute);
  EXPECT_EQ(m.lanes[1].stream, kStreamPipelineComm);
  EXPECT_EQ(m.lanes[4].stream, kStreamTensorComm);
  const Lane& r0 = m.lanes[0];
  ASSERT_EQ(r0.size(), 6u);
  EXPECT_DOUBLE_EQ(r0.time.start_us[0], 0);
  EXPECT_DOUBLE_EQ(r0.time.end_us[0], 100);
  EXPECT_EQ(r0.kind[0], Kind::kForward);
  EXPECT_EQ(r0.kind[2], Kind::kBackwardInput);
  EXPECT_EQ(r0.kind[3], Kind::kBackwardWeight);
  EXPECT_EQ(r0.kind[5], Kind::kOptimizer);
  EXPECT_EQ(r0.microbatch[4], 1);
  EXPECT_EQ(r0.microbatch[5], -1);
  EXPECT_EQ(m.strings.get(r0.op[0]), "fwd");
  EXPECT_EQ(m.strings.get(r0.detail[0]), "m=2048 n=4608 k=12288 bf16");
  EXPECT_EQ(m.slice_name(SliceRef{0, 0}), "F mb0 c0 L0 fwd");
  EXPECT_TRUE(std::is_sorted(r0.time.start_us.begin(), r0.time.start_us.end()));
  EXPECT_EQ(m.rank_names.at(0), "stage 0");
  EXPECT_FALSE(m.has_chunks);
}

TEST(TraceReader, ReadsSummaryAndMemoryCounters) {
  const TraceModel m = load_fixture("two_stage_measured.json");
  EXPECT_TRUE(m.summary.present);
  EXPECT_EQ(m.label, "measured");
  EXPECT_DOUBLE_EQ(m.step_time_s(), 0.00121);
  EXPECT_EQ(m.summary.memory_capacity_bytes, 4000);
  ASSERT_EQ(m.summary.stages.size(), 2u);
  EXPECT_DOUBLE_EQ(m.summary.stages[1].exposed_comm_s, 0.000308);
  ASSERT_EQ(m.memory.size(), 2u);
  EXPECT_EQ(m.memory[0].bytes, (std::vector<std::int64_t>{1000, 2000, 3000, 2000, 1000}));
  EXPECT_NEAR(m.memory[0].time_us[2], 242.0, 1e-9);
}

TEST(TraceReader, SortsUnorderedEventsAndDecodesEscapes) {
  const std::string text = R"({"traceEvents":[
    {"ph":"X","name":"late \"q\" \u00e9","cat":"recompute","pid":3,"tid":0,"ts":50,"dur":5},
    {"ph":"X","name":"early","cat":"something_else","pid":3,"tid":0,"ts":10,"dur":5,
     "args":{"mb":null,"extra":{"nested":[1,2,{"x":true}]}}},
    {"ph":"i","name":"instant","pid":3,"ts":1}
  ]})";
  auto r = parse_trace(text, "inline.json");
  ASSERT_TRUE(r.ok()) << format_errors(r.errors());
  const TraceModel& m = *r;
  ASSERT_EQ(m.lanes.size(), 1u);
  EXPECT_DOUBLE_EQ(m.origin_us, 10);
  EXPECT_EQ(m.slice_name({0, 0}), "early");
  EXPECT_EQ(m.lanes[0].kind[0], Kind::kOther);
  EXPECT_EQ(m.lanes[0].microbatch[0], -1);
  EXPECT_EQ(m.slice_name({0, 1}), "late \"q\" \xc3\xa9");
  EXPECT_EQ(m.lanes[0].kind[1], Kind::kRecompute);
  EXPECT_EQ(m.label, "inline.json");
  EXPECT_FALSE(m.summary.present);
}

TEST(TraceReader, HandlesEscapedQuotesBackslashesAndSurrogatePairs) {
  const std::string text = R"({"traceEvents":[
    {"ph":"X","name":"ends in backslash \\","pid":0,"tid":0,"ts":0,"dur":1},
    {"ph":"X","name":"say \"hi\" \ud83d\ude00 \t","pid":0,"tid":0,"ts":1,"dur":1,
     "args":{"detail":"a/b \/ c"}}]})";
  auto r = parse_trace(text, "esc.json");
  ASSERT_TRUE(r.ok()) << format_errors(r.errors());
  EXPECT_EQ(r->slice_name({0, 0}), "ends in backslash \\");
  EXPECT_EQ(r->slice_name({0, 1}), "say \"hi\" \xf0\x9f\x98\x80 \t");
  EXPECT_EQ(r->strings.get(r->lanes[0].detail[1]), "a/b / c");
  auto bad = parse_trace(R"({"traceEvents":[{"ph":"X","name":"\q"}]})", "bad.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(mentions(bad.errors(), "bad escape in a string"));
}

// Timestamps are read exactly: the reader's fast path for plain decimals must give the
// same double as std::from_chars, for every shape of number a trace writer prints.
TEST(TraceReader, NumbersAreReadExactly) {
  std::vector<std::string> numbers = {"0",   "1e3",   "1.5E-3",           "123456789012345.6",
                                      "0.1", "2.675", "9007199254740993", "1234.5678901234567"};
  std::uint64_t state = 12345;
  for (int i = 0; i < 2000; ++i) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    const auto whole_part = static_cast<unsigned long long>(state >> 40);
    const auto frac = static_cast<unsigned long long>((state >> 8) % 1000000000ULL);
    numbers.push_back(std::to_string(whole_part) + "." + std::to_string(frac));
  }
  std::string text = R"({"traceEvents":[{"ph":"X","pid":0,"tid":1,"ts":0,"dur":0})";
  for (const std::string& n : numbers) {
    text += R"(,{"ph":"X","pid":0,"tid":0,"ts":)";
    text += n;
    text += R"(,"dur":)";
    text += n;
    text += "}";
  }
  text += "]}";
  auto r = parse_trace(text, "numbers.json");
  ASSERT_TRUE(r.ok()) << format_errors(r.errors());
  const Lane& lane = r->lanes[0];
  ASSERT_EQ(lane.size(), numbers.size());
  std::vector<double> expected;
  for (const std::string& n : numbers) {
    double v = 0;
    std::from_chars(n.data(), n.data() + n.size(), v);
    expected.push_back(v);
  }
  std::vector<double> got = lane.time.start_us;
  std::sort(expected.begin(), expected.end());
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i], expected[i]) << i;
  }
  // dur went through the same reader: end = ts + dur = 2 * ts exactly.
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(lane.time.end_us[i], 2 * got[i]) << i;
}

TEST(TraceReader, AcceptsBareEventArray) {
  auto r = parse_trace(
      R"([{"ph":"X","pid":0,"tid":1,"ts":0,"dur":2,"cat":"tp_comm","args":{"chunk":1}}])",
      "a.json");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->lanes[0].kind[0], Kind::kTensorComm);
  EXPECT_TRUE(r->has_chunks);
}

TEST(TraceReader, SyntaxErrorNamesFileLineAndColumn) {
  const std::string path = data_path("malformed_syntax.json");
  auto r = read_trace_file(path);
  ASSERT_FALSE(r.ok());
  ASSERT_EQ(r.errors().size(), 1u);
  const std::string line = r.errors()[0].to_string();
  EXPECT_EQ(r.errors()[0].file, path);
  EXPECT_NE(line.find("not valid JSON: line 3 column 3"), std::string::npos) << line;
}

TEST(TraceReader, TruncatedFileIsASyntaxError) {
  auto r = read_trace_file(data_path("malformed_truncated.json"));
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(mentions(r.errors(), "not valid JSON")) << format_errors(r.errors());
}

TEST(TraceReader, MissingTraceEventsIsReported) {
  auto r = read_trace_file(data_path("malformed_no_events.json"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.errors()[0].key, "traceEvents");
  EXPECT_TRUE(mentions(r.errors(), "is missing"));
}

TEST(TraceReader, ReportsEveryBadFieldWithItsKey) {
  auto r = read_trace_file(data_path("malformed_bad_fields.json"));
  ASSERT_FALSE(r.ok());
  const Errors& e = r.errors();
  ASSERT_EQ(e.size(), 4u) << format_errors(e);
  EXPECT_EQ(e[0].key, "traceEvents[0].dur");
  EXPECT_NE(e[0].message.find(">= 0"), std::string::npos);
  EXPECT_EQ(e[1].key, "traceEvents[1].ts");
  EXPECT_NE(e[1].message.find("must be a number"), std::string::npos);
  EXPECT_EQ(e[2].key, "traceEvents[2].tid");
  EXPECT_NE(e[2].message.find("missing"), std::string::npos);
  EXPECT_EQ(e[3].key, "traceEvents[3].args.mb");
}

TEST(TraceReader, MissingFileAndEmptyTraceAreErrors) {
  auto missing = read_trace_file("/nonexistent/trace.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(mentions(missing.errors(), "/nonexistent/trace.json: cannot open"));
  auto empty = parse_trace(R"({"traceEvents":[]})", "e.json");
  ASSERT_FALSE(empty.ok());
  EXPECT_TRUE(mentions(empty.errors(), "no slices"));
  auto bad_summary = parse_trace(
      R"({"traceEvents":[{"ph":"X","pid":0,"tid":0,"ts":0,"dur":1}],"stepsim":{"stages":[{"stage":0}]}})",
      "s.json");
  ASSERT_FALSE(bad_summary.ok());
  EXPECT_TRUE(mentions(bad_summary.errors(), "stepsim.stages[0].busy_s is missing"));
}

// FILE.json.gz (predict --trace FILE.json.gz) opens like the plain file; a damaged one is
// an error naming the file.
TEST(TraceReader, ReadsGzipCompressedTraces) {
  const std::string text = R"({"traceEvents":[
      {"ph":"X","name":"a","cat":"forward","pid":0,"tid":0,"ts":5,"dur":10}]})";
  const std::string path = ::testing::TempDir() + "/stepsim_viewer_gz.json.gz";
  ASSERT_TRUE(write_output_file(path, [&](std::ostream& out) { out << text; }).ok());
  auto r = read_trace_file(path);
  ASSERT_TRUE(r.ok()) << format_errors(r.errors());
  EXPECT_EQ(r->slice_count(), 1u);
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << bytes.substr(0, bytes.size() - 12);
  }
  auto cut = read_trace_file(path);
  ASSERT_FALSE(cut.ok());
  EXPECT_TRUE(mentions(cut.errors(), path + ": is not valid gzip data"));
  std::remove(path.c_str());
}

TEST(TraceReader, ReadsWhatTheSyntheticWriterWrites) {
  synth::SyntheticTraceSpec spec;
  spec.ranks = 3;
  spec.microbatches = 4;
  spec.recompute = true;
  std::ostringstream out;
  const auto info = synth::write_synthetic_trace(spec, out);
  EXPECT_EQ(info.slices, synth::synthetic_slice_count(spec));
  auto r = parse_trace(out.str(), "synthetic.json");
  ASSERT_TRUE(r.ok()) << format_errors(r.errors());
  EXPECT_EQ(r->slice_count(), info.slices);
  EXPECT_NEAR(r->end_us, info.step_us, 1e-3);
  EXPECT_EQ(r->ranks().size(), 3u);
  EXPECT_EQ(r->memory.size(), 3u);
  EXPECT_EQ(r->label, "predicted");
}

}  // namespace
}  // namespace stepsim::gui
