// Adapter tests: lanes and their layout, colours, per-pixel aggregation, stage statistics,
// hover text, memory polyline.
#include <gtest/gtest.h>

#include <map>

#include "stepsim/gui/aggregation.hpp"
#include "stepsim/gui/colors.hpp"
#include "stepsim/gui/document.hpp"
#include "stepsim/gui/lanes.hpp"
#include "stepsim/gui/stage_stats.hpp"
#include "test_data.hpp"

namespace stepsim::gui {
namespace {

using testing::load_fixture;

Intervals intervals(std::vector<double> starts, std::vector<double> ends) {
  Intervals iv;
  iv.start_us = std::move(starts);
  iv.end_us = std::move(ends);
  iv.finish();
  return iv;
}

TEST(Lanes, OneTraceGroupsRowsByRankThenStream) {
  const TraceModel m = load_fixture("two_stage_predicted.json");
  const LaneLayout layout = build_layout({&m});
  ASSERT_EQ(layout.rows.size(), 7u);
  EXPECT_EQ(layout.rows[0].title, "r0 compute");
  EXPECT_EQ(layout.rows[1].title, "r0 pp_comm");
  EXPECT_EQ(layout.rows[2].title, "r0 dp_comm");
  EXPECT_EQ(layout.rows[3].title, "r1 compute");
  EXPECT_EQ(layout.rows[4].title, "r1 tp_comm");
  EXPECT_TRUE(layout.rows[0].first_of_rank);
  EXPECT_FALSE(layout.rows[1].first_of_rank);
  EXPECT_TRUE(layout.rows[3].first_of_rank);
}

TEST(Lanes, TwoTracesArePairedPredictedAboveMeasured) {
  // Given measured first: the document still puts predicted first.
  std::vector<TraceModel> traces;
  traces.push_back(load_fixture("two_stage_measured.json"));
  traces.push_back(load_fixture("two_stage_predicted.json"));
  const TimelineDocument doc(std::move(traces));
  ASSERT_EQ(doc.traces()[0].label, "predicted");
  const auto& rows = doc.layout().rows;
  ASSERT_EQ(rows.size(), 14u);
  EXPECT_EQ(rows[0].title, "r0 compute \u00b7 predicted");
  EXPECT_EQ(rows[1].title, "r0 compute \u00b7 measured");
  EXPECT_EQ(rows[0].trace, 0u);
  EXPECT_EQ(rows[1].trace, 1u);
  EXPECT_EQ(rows[0].stream, rows[1].stream);
  EXPECT_EQ(rows[2].stream, kStreamPipelineComm);
  const StepComparison c = compare_steps(doc.traces()[0], doc.traces()[1]);
  EXPECT_DOUBLE_EQ(c.step_a_s, 0.0011);
  EXPECT_DOUBLE_EQ(c.step_b_s, 0.00121);
  EXPECT_NEAR(c.relative, 0.1, 1e-12);
  EXPECT_EQ(comparison_text(c),
            "predicted 1.1 ms | measured 1.21 ms | difference +110 us (+10.0%)");
}

TEST(Colors, EveryKindHasItsOwnColourAndCategoriesRoundTrip) {
  for (std::size_t a = 0; a < kKindCount; ++a) {
    const auto ka = static_cast<Kind>(a);
    if (ka != Kind::kBubble && ka != Kind::kOther) {
      EXPECT_EQ(kind_from_category(kind_category(ka)), ka);
    }
    for (std::size_t b = a + 1; b < kKindCount; ++b) {
      EXPECT_NE(kind_color(ka), kind_color(static_cast<Kind>(b))) << a << " " << b;
    }
  }
  EXPECT_EQ(kind_from_category("bubble"), Kind::kOther);
  EXPECT_EQ(faded(Rgb{0, 100, 255}, 1.0), (Rgb{255, 255, 255}));
  EXPECT_EQ(faded(Rgb{0, 100, 255}, 0.0), (Rgb{0, 100, 255}));
  EXPECT_EQ(text_color_on(Rgb{255, 255, 255}), (Rgb{0, 0, 0}));
  EXPECT_EQ(text_color_on(kind_color(Kind::kForward)), (Rgb{255, 255, 255}));
}

TEST(Aggregation, WideSlicesAreBoxesNarrowOnesSumPerColumn) {
  // 10 µs per pixel over 10 columns: one wide slice, then four 2 µs slices in column 7.
  const Intervals iv = intervals({0, 70, 73, 75, 78, 200}, {50, 72, 75, 77, 80, 300});
  const std::vector<Kind> kinds = {Kind::kForward, Kind::kTensorComm, Kind::kTensorComm,
                                   Kind::kForward, Kind::kTensorComm, Kind::kOptimizer};
  ViewWindow view{0, 10, 10};
  LaneDraw out;
  aggregate(iv, kinds.data(), Kind::kOther, view, 1.0, out);
  ASSERT_EQ(out.boxes.size(), 1u);
  EXPECT_EQ(out.boxes[0].index, 0u);
  EXPECT_DOUBLE_EQ(out.boxes[0].x1, 5.0);
  ASSERT_EQ(out.columns.size(), 10u);
  EXPECT_EQ(out.columns[7].kind, Kind::kTensorComm);
  EXPECT_FLOAT_EQ(out.columns[7].coverage, 0.8F);
  EXPECT_FLOAT_EQ(out.columns[6].coverage, 0.0F);
  // Panned so that the wide slice is cut at the left edge: clipped to x = 0.
  view.t0_us = 20;
  aggregate(iv, kinds.data(), Kind::kOther, view, 1.0, out);
  ASSERT_FALSE(out.boxes.empty());
  EXPECT_DOUBLE_EQ(out.boxes[0].x0, 0.0);
  EXPECT_DOUBLE_EQ(out.boxes[0].x1, 3.0);
}

TEST(Aggregation, ManySlicesPerColumnFillItAndLongOnesAreFound) {
  // A long slice still visible at the end, then 100000 slices of 1 µs.
  Intervals iv;
  iv.start_us.resize(100001);
  iv.end_us.resize(100001);
  iv.start_us[0] = -10;
  iv.end_us[0] = 1e6;
  for (std::size_t i = 1; i <= 100000; ++i) {
    iv.start_us[i] = static_cast<double>(i - 1);
    iv.end_us[i] = static_cast<double>(i);
  }
  iv.finish();
  LaneDraw out;
  aggregate(iv, nullptr, Kind::kRecompute, ViewWindow{50000, 1000, 60}, 1.0, out);
  ASSERT_EQ(out.boxes.size(), 1u);
  EXPECT_EQ(out.boxes[0].index, 0u);
  EXPECT_EQ(out.columns[10].kind, Kind::kRecompute);
  EXPECT_NEAR(out.columns[10].coverage, 1.0F, 1e-4F);
  EXPECT_FLOAT_EQ(out.columns[55].coverage, 0.0F);  // past 100000 µs: only the box
}

TEST(Aggregation, ColumnsTakeTheBandCoveringMostOfThem) {
  // 10 µs per pixel: column 0 is mostly band 1 (7 of 10 µs), column 1 mostly band 0.
  const Intervals iv = intervals({0, 3, 10, 16}, {3, 10, 16, 20});
  const std::vector<std::uint8_t> bands = {0, 1, 0, 1};
  LaneDraw out;
  aggregate(iv, nullptr, Kind::kForward, ViewWindow{0, 10, 4}, 50.0, out, bands.data());
  ASSERT_EQ(out.columns.size(), 4u);
  EXPECT_EQ(out.columns[0].band, 1);
  EXPECT_EQ(out.columns[1].band, 0);
  EXPECT_FLOAT_EQ(out.columns[2].coverage, 0.0F);
  aggregate(iv, nullptr, Kind::kForward, ViewWindow{0, 10, 4}, 50.0, out);  // no bands
  EXPECT_EQ(out.columns[0].band, 0);
}

TEST(Lanes, BandsAlternatePerMicrobatchAndChunkAndSkipPerStepWork) {
  // Rank 0's compute lane of the fixture: F mb0, F mb1, B mb0, W mb0, B mb1, optimizer.
  const TraceModel m = load_fixture("two_stage_predicted.json");
  const Lane& lane = m.lanes.at(0);
  ASSERT_EQ(lane.rank, 0);
  ASSERT_EQ(lane.size(), 6u);
  EXPECT_EQ(lane.band, (std::vector<std::uint8_t>{0, 1, 0, 0, 1, 0}));
}

TEST(Aggregation, IntervalAtPrefersContainingThenNearest) {
  const Intervals iv = intervals({0, 20, 22}, {10, 30, 24});
  EXPECT_EQ(interval_at(iv, 5, 0), 0);
  EXPECT_EQ(interval_at(iv, 23, 0), 2);  // innermost
  EXPECT_EQ(interval_at(iv, 13, 0), -1);
  EXPECT_EQ(interval_at(iv, 12, 3), 0);
  EXPECT_EQ(interval_at(iv, 18, 3), 1);
}

TEST(Aggregation, MemoryPolylineKeepsThePeak) {
  MemorySeries s;
  s.time_us.resize(10000);
  s.bytes.resize(10000);
  for (std::size_t i = 0; i < 10000; ++i) {
    s.time_us[i] = static_cast<double>(i);
    s.bytes[i] = i == 4321 ? 999999 : static_cast<std::int64_t>(i % 7);
  }
  const auto points = memory_polyline(s, 100);
  EXPECT_LE(points.size(), 301u);
  EXPECT_NE(std::find(points.begin(), points.end(), XY{4321, 999999}), points.end());
  MemorySeries small{0, {0, 10}, {5, 8}};
  EXPECT_EQ(memory_polyline(small, 100), (std::vector<XY>{{0, 5}, {10, 5}, {10, 8}}));
}

TEST(StageStats, DerivedFromSlicesMatchHandComputedValues) {
  const TraceModel m = load_fixture("two_stage_predicted.json");
  const auto stats = derive_stage_stats(m);
  ASSERT_EQ(stats.size(), 2u);
  EXPECT_NEAR(stats[0].busy_s, 710e-6, 1e-12);
  EXPECT_NEAR(stats[0].exposed_comm_s, 130e-6, 1e-12);
  EXPECT_NEAR(stats[0].bubble_s, 260e-6, 1e-12);
  EXPECT_EQ(stats[0].peak_memory_bytes, 3000);
  EXPECT_NEAR(stats[1].busy_s, 660e-6, 1e-12);
  EXPECT_NEAR(stats[1].exposed_comm_s, 280e-6, 1e-12);
  EXPECT_NEAR(stats[1].bubble_s, 160e-6, 1e-12);
  // Without summary stages, stage_stats derives; with them, it takes the summary's.
  EXPECT_EQ(stage_stats(m), stats);
  const TraceModel measured = load_fixture("two_stage_measured.json");
  EXPECT_DOUBLE_EQ(stage_stats(measured)[1].exposed_comm_s, 0.000308);
}

TEST(StageStats, IdleIntervalsAreTheGapsOfEachRank) {
  const TraceModel m = load_fixture("two_stage_predicted.json");
  const Intervals& r0 = m.idle[0];
  ASSERT_EQ(r0.size(), 2u);
  EXPECT_DOUBLE_EQ(r0.start_us[0], 240);
  EXPECT_DOUBLE_EQ(r0.end_us[0], 480);
  EXPECT_DOUBLE_EQ(r0.start_us[1], 760);
  EXPECT_DOUBLE_EQ(r0.end_us[1], 780);
  const Intervals& r1 = m.idle[1];
  ASSERT_EQ(r1.size(), 2u);
  EXPECT_DOUBLE_EQ(r1.end_us[0], 100);
  EXPECT_DOUBLE_EQ(r1.start_us[1], 1040);
  EXPECT_DOUBLE_EQ(r1.end_us[1], 1100);
}

TEST(Document, DescribesASliceForTheTooltip) {
  const TraceModel m = load_fixture("two_stage_predicted.json");
  const std::string text = describe_slice(m, SliceRef{0, 0});
  EXPECT_EQ(text,
            "F mb0 c0 L0 fwd\nkind: Forward\nop: fwd\nmicro-batch: 0\nchunk: 0\nlayer: 0\n"
            "rank: 0 (compute)\nstart: 0 us\nduration: 100 us\ndetail: m=2048 n=4608 k=12288 bf16");
  // Per-step work leaves out micro-batch, chunk and layer.
  const std::string opt = describe_slice(m, SliceRef{0, 5});
  EXPECT_EQ(opt.find("micro-batch"), std::string::npos);
  EXPECT_NE(opt.find("kind: Optimizer"), std::string::npos);
}

}  // namespace
}  // namespace stepsim::gui

namespace stepsim::gui {
namespace {

// A PyTorch profiler (Kineto) trace gets colours by category instead of grey: kernels,
// NCCL kernels (by name), copies, runtime calls, CPU ops, Python and annotations.
TEST(ForeignTraces, KinetoCategoriesGetTheirOwnKinds) {
  const std::string text = R"json({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "ampere_bf16_s16816gemm", "pid": 0, "tid": 7, "ts": 10, "dur": 5},
    {"ph": "X", "name": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "cat": "kernel", "pid": 0, "tid": 20, "ts": 12, "dur": 9},
    {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 7, "ts": 20, "dur": 1},
    {"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "pid": 0, "tid": 7, "ts": 22, "dur": 1},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 9, "dur": 1},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 8, "dur": 3},
    {"ph": "X", "cat": "python_function", "name": "train.py(42): step", "pid": 1, "tid": 2, "ts": 1, "dur": 30},
    {"ph": "X", "cat": "user_annotation", "name": "forward", "pid": 1, "tid": 3, "ts": 2, "dur": 20},
    {"ph": "X", "cat": "Operator", "name": "aten::add", "pid": 1, "tid": 4, "ts": 2, "dur": 2},
    {"ph": "X", "cat": "something_else", "name": "x", "pid": 1, "tid": 5, "ts": 2, "dur": 2}
  ]})json";
  auto model = parse_trace(text, "kineto.json");
  ASSERT_TRUE(model.ok()) << format_errors(model.errors());
  std::map<std::string, Kind> by_name;
  for (const Lane& lane : model->lanes) {
    for (std::size_t i = 0; i < lane.size(); ++i) {
      by_name[std::string(model->names.substr(lane.name_begin[i], lane.name_size[i]))] =
          lane.kind[i];
    }
  }
  EXPECT_EQ(by_name.at("ampere_bf16_s16816gemm"), Kind::kGpuKernel);
  EXPECT_EQ(by_name.at("ncclDevKernel_AllReduce_Sum_bf16_RING_LL"), Kind::kNcclKernel);
  EXPECT_EQ(by_name.at("Memcpy HtoD (Pageable -> Device)"), Kind::kMemcpy);
  EXPECT_EQ(by_name.at("Memset (Device)"), Kind::kMemcpy);
  EXPECT_EQ(by_name.at("cudaLaunchKernel"), Kind::kCudaRuntime);
  EXPECT_EQ(by_name.at("aten::mm"), Kind::kCpuOp);
  EXPECT_EQ(by_name.at("aten::add"), Kind::kCpuOp);
  EXPECT_EQ(by_name.at("train.py(42): step"), Kind::kPythonFunction);
  EXPECT_EQ(by_name.at("forward"), Kind::kAnnotation);
  EXPECT_EQ(by_name.at("x"), Kind::kOther);
  const Rgb grey = kind_color(Kind::kOther);
  for (const auto& [name, kind] : by_name) {
    if (name != "x") {
      EXPECT_NE(kind_color(kind), grey) << name;
    }
  }
  std::vector<TraceModel> traces;
  traces.push_back(std::move(model).value());
  const TimelineDocument doc(std::move(traces));
  EXPECT_TRUE(doc.has_kind(Kind::kNcclKernel));
  EXPECT_FALSE(doc.has_kind(Kind::kForward));
}

}  // namespace
}  // namespace stepsim::gui

namespace stepsim::gui {
namespace {

// stepsim's idle tracks (docs/trace.md): the bubble track's slices are the idle kind (drawn
// hatched), exposed communication is the communication it names; neither counts as work when
// the viewer finds a rank's idle time, so the compute lane's bubbles stay.
TEST(IdleTracks, BubbleAndExposedTracksKeepTheRanksIdleTime) {
  const std::string text = R"json({"traceEvents": [
    {"ph": "M", "name": "thread_name", "pid": 0, "tid": 0, "args": {"name": "compute"}},
    {"ph": "M", "name": "thread_name", "pid": 0, "tid": 6, "args": {"name": "bubble"}},
    {"ph": "M", "name": "thread_name", "pid": 0, "tid": 7, "args": {"name": "exposed communication"}},
    {"ph": "M", "name": "thread_name", "pid": 0, "tid": 1, "args": {"name": "tp_comm"}},
    {"ph": "X", "cat": "forward", "name": "F mb0 c0", "pid": 0, "tid": 0, "ts": 0, "dur": 10},
    {"ph": "X", "cat": "tp_comm", "name": "ag", "pid": 0, "tid": 1, "ts": 10, "dur": 5},
    {"ph": "X", "cat": "exposed_comm", "name": "exposed tp_comm", "pid": 0, "tid": 7, "ts": 10, "dur": 5},
    {"ph": "X", "cat": "bubble", "name": "schedule bubble", "pid": 0, "tid": 6, "ts": 15, "dur": 20},
    {"ph": "X", "cat": "forward", "name": "F mb1 c0", "pid": 0, "tid": 0, "ts": 35, "dur": 10}
  ]})json";
  auto model = parse_trace(text, "idle.json");
  ASSERT_TRUE(model.ok()) << format_errors(model.errors());
  std::map<std::string, Kind> by_lane;
  for (const Lane& lane : model->lanes) by_lane[lane.name] = lane.kind.at(0);
  EXPECT_EQ(by_lane.at("bubble"), Kind::kBubble);
  EXPECT_EQ(by_lane.at("exposed communication"), Kind::kTensorComm);
  const Intervals& idle = model->idle.at(0);
  ASSERT_EQ(idle.size(), 1u);
  EXPECT_DOUBLE_EQ(idle.start_us[0], 15);
  EXPECT_DOUBLE_EQ(idle.end_us[0], 35);
}

}  // namespace
}  // namespace stepsim::gui
