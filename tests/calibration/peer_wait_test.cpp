// A measured call that waited for its last peer: peers_ready() finds when that peer arrived,
// measured_timeline() draws the wait apart from the communication, and the stage figures
// count it as waiting, neither as communication nor as idle time.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "stepsim/validator/executor.hpp"
#include "stepsim/validator/validate.hpp"

namespace stepsim::calib {
namespace {

ExecTask compute(const std::string& name) {
  ExecTask t;
  t.name = name;
  t.op_name = name;
  t.category = OpCategory::kGemm;
  t.stream = Stream::kCompute;
  t.slice_kind = sim::SliceKind::kForward;
  return t;
}

ExecTask collective(const std::string& name, CommGroup group, std::int64_t group_size,
                    Stream stream, sim::SliceKind kind) {
  ExecTask t = compute(name);
  t.op.name = name;
  t.op.shape = CollectiveOp{.kind = CollectiveKind::kAllReduce,
                            .group = group,
                            .bytes = 1024,
                            .group_size = group_size,
                            .nodes_spanned = 1};
  t.category = OpCategory::kAllReduce;
  t.stream = stream;
  t.slice_kind = kind;
  return t;
}

ExecTask p2p_call(const std::string& name, bool send, std::int32_t peer) {
  ExecTask t;
  t.kind = ExecTask::Kind::kComm;
  t.transfers = {sim::Transfer{.tensor = sim::TensorKind::kActivation,
                               .send = send,
                               .microbatch = 0,
                               .producer_virtual_stage = 0,
                               .peer = peer}};
  t.transfer_bytes = {4096};
  t.transfer_names = {send ? "send_act mb0 to stage 1" : "recv_act mb0 from stage 0"};
  t.category = OpCategory::kP2P;
  t.stream = Stream::kPipelineComm;
  t.slice_kind = sim::SliceKind::kPipelineComm;
  t.name = name;
  t.op_name = name;
  return t;
}

TaskTiming at(double start, double end) { return TaskTiming{start, end, end - start}; }

std::vector<const sim::Slice*> of_stage(const sim::Timeline& t, std::int32_t stage) {
  std::vector<const sim::Slice*> out;
  for (const sim::Slice& s : t.slices) {
    if (s.rank == stage) out.push_back(&s);
  }
  return out;
}

/// Two tensor-parallel ranks of one stage: rank 1's GEMM ends at 2.0, so rank 0's all-reduce,
/// called at 1.0, can move data only from 2.0 on; both end at 3.0.
Measurement tp_all_reduce_after_a_slower_peer(double step_time_s) {
  Measurement m;
  m.layout = RankLayout{.tp = 2, .pp = 1, .dp = 1};
  m.stage_tasks = {
      {compute("F gemm"), collective("F ar", CommGroup::kTensor, 2, Stream::kTensorComm,
                                     sim::SliceKind::kTensorComm)}};
  m.steps = {{{at(0.0, 1.0), at(1.0, 3.0)}, {at(0.0, 2.0), at(2.0, 3.0)}}};
  m.step_times_s = {step_time_s};
  m.complete = true;
  return m;
}

TEST(PeerWait, ATensorParallelAllReduceWaitsForTheSlowerPeer) {
  const Measurement m = tp_all_reduce_after_a_slower_peer(4.0);
  const auto ready = peers_ready(m, 0);
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0], (std::vector<double>{0.0, 2.0}));

  const sim::Timeline t = measured_timeline(m, 0);
  const auto slices = of_stage(t, 0);
  ASSERT_EQ(slices.size(), 3u);
  EXPECT_EQ(slices[1]->kind, sim::SliceKind::kWait);
  EXPECT_EQ(slices[1]->stream, Stream::kTensorComm);
  EXPECT_DOUBLE_EQ(slices[1]->start_s, 1.0);
  EXPECT_DOUBLE_EQ(slices[1]->end_s, 2.0);
  EXPECT_EQ(slices[2]->kind, sim::SliceKind::kTensorComm);
  EXPECT_DOUBLE_EQ(slices[2]->start_s, 2.0);
  EXPECT_DOUBLE_EQ(slices[2]->end_s, 3.0);

  const StageFigures f = stage_figures(t, 0);
  EXPECT_DOUBLE_EQ(f.busy_s, 1.0);
  EXPECT_DOUBLE_EQ(f.comm_s, 1.0);  // before: 2.0, the wait counted as communication
  EXPECT_DOUBLE_EQ(f.wait_s, 1.0);
  EXPECT_DOUBLE_EQ(f.idle_s, 1.0);
}

TEST(PeerWait, AReceiveWaitsForTheSendersPost) {
  // Stage 1 posts its receive at 0.5; stage 0 posts the matching send after its forward, at
  // 2.0: the transfer runs from 2.0 to 2.5.
  Measurement m;
  m.layout = RankLayout{.tp = 1, .pp = 2, .dp = 1};
  m.stage_tasks = {{compute("F mb0"), p2p_call("send_forward", true, 1)},
                   {p2p_call("recv_forward", false, 0), compute("F mb0")}};
  m.steps = {{{at(0.0, 2.0), at(2.0, 2.5)}, {at(0.5, 2.5), at(2.5, 4.0)}}};
  m.step_times_s = {4.0};
  m.complete = true;
  const auto ready = peers_ready(m, 0);
  EXPECT_EQ(ready[0], (std::vector<double>{0.0, 2.0}));  // the receiver was there first
  EXPECT_EQ(ready[1], (std::vector<double>{2.0, 2.5}));

  const sim::Timeline t = measured_timeline(m, 0);
  const auto slices = of_stage(t, 1);
  ASSERT_EQ(slices.size(), 3u);
  EXPECT_EQ(slices[0]->kind, sim::SliceKind::kWait);
  EXPECT_EQ(slices[0]->op, slices[1]->op) << "on the receive's own track";
  EXPECT_DOUBLE_EQ(slices[0]->start_s, 0.5);
  EXPECT_DOUBLE_EQ(slices[0]->end_s, 2.0);
  EXPECT_EQ(slices[1]->kind, sim::SliceKind::kPipelineComm);
  EXPECT_DOUBLE_EQ(slices[1]->start_s, 2.0);
  EXPECT_EQ(of_stage(t, 0).size(), 2u) << "the sender did not wait";

  const StageFigures f = stage_figures(t, 1);
  EXPECT_DOUBLE_EQ(f.busy_s, 1.5);
  EXPECT_DOUBLE_EQ(f.comm_s, 0.5);
  EXPECT_DOUBLE_EQ(f.wait_s, 1.5);
  EXPECT_DOUBLE_EQ(f.idle_s, 0.5);
}

TEST(PeerWait, AGroupAcrossStagesMatchesTheCallByItsTurn) {
  // The tied embeddings' all-reduce over the first and the last stage: a different place in
  // each stage's program, matched as the first call of that name on each.
  Measurement m;
  m.layout = RankLayout{.tp = 1, .pp = 2, .dp = 1};
  const ExecTask emb = collective("embedding_grad_all_reduce", CommGroup::kEmbedding, 2,
                                  Stream::kDataComm, sim::SliceKind::kDataComm);
  m.stage_tasks = {{compute("B mb0"), emb}, {compute("B mb0"), compute("B mb1"), emb}};
  m.steps = {{{at(0.0, 1.0), at(1.0, 3.5)}, {at(0.0, 1.5), at(1.5, 3.0), at(3.0, 3.5)}}};
  m.step_times_s = {3.5};
  m.complete = true;
  const auto ready = peers_ready(m, 0);
  EXPECT_DOUBLE_EQ(ready[0][1], 3.0);
  EXPECT_DOUBLE_EQ(ready[1][2], 3.0);
  EXPECT_DOUBLE_EQ(stage_figures(measured_timeline(m, 0), 0).wait_s, 2.0);
}

TEST(PeerWait, TheReportCarriesTheMeasuredWait) {
  const Measurement m = tp_all_reduce_after_a_slower_peer(3.0);
  sim::Prediction p;
  p.step_time_s = 3.0;
  sim::Timeline predicted;
  predicted.step_time_s = 3.0;
  for (const ExecTask& task : m.stage_tasks[0]) {
    predicted.slices.push_back(sim::Slice{.rank = 0,
                                          .stream = task.stream,
                                          .kind = task.slice_kind,
                                          .start_s = 0.0,
                                          .end_s = 1.0,
                                          .microbatch = task.microbatch,
                                          .chunk = task.chunk,
                                          .layer = task.layer,
                                          .name = task.name,
                                          .op = task.op_name,
                                          .detail = task.detail,
                                          .phase = task.op.phase});
  }
  const ValidationReport r = compare(p, predicted, m, 5);
  // The all-reduce moved data for 1 s of its 2: the op comparison takes that second.
  bool found = false;
  for (const OpKindComparison& o : r.ops) {
    if (o.category != OpCategory::kAllReduce) continue;
    found = true;
    EXPECT_DOUBLE_EQ(o.measured_total_s, 1.0);
    EXPECT_DOUBLE_EQ(o.measured_wall_total_s, 1.0);
  }
  EXPECT_TRUE(found);
  ASSERT_EQ(r.stages.size(), 1u);
  EXPECT_DOUBLE_EQ(r.stages[0].measured.wait_s, 1.0);
  EXPECT_DOUBLE_EQ(r.stages[0].predicted.wait_s, 0.0);
  const std::string text = format_report_text(r);
  EXPECT_NE(text.find("meas waiting for peers (ms)"), std::string::npos) << text;
  const auto j = nlohmann::json::parse(report_to_json(r));
  EXPECT_DOUBLE_EQ(j["stages"][0]["measured"]["wait_s"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(j["stages"][0]["predicted"]["wait_s"].get<double>(), 0.0);
}

}  // namespace
}  // namespace stepsim::calib
