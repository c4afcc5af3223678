// TP-communication overlap as the chunk templates time it, against closed forms worked out by
// hand from Transformer Engine's schedules (comm_gemm_overlap.cpp):
// - AG+GEMM ring exchange over t ranks: t GEMM chunks of g, t - 1 exchanges of x, chunk i + 1
//   after exchange i: (t - 1) * max(g, x) + g, against the unoverlapped all-gather
//   (t - 1) * x (the same bytes on the same link) plus t * g: it hides
//   (t - 1) * min(g, x), i.e. min(comm, GEMM) less the last GEMM chunk (the drain) when the
//   GEMM is shorter, and the whole exchange otherwise.
// - GEMM+RS pipelined in 4 chunks: GEMM chunks of G' (on the SMs left), reduce-scatter chunks
//   of c, chunk i's after GEMM chunk i: max(4 G' + c, G' + 4 c).

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "stepsim/graph/chunk_template.hpp"
#include "../core/model_workloads.hpp"
#include "stepsim/plan/decompose.hpp"
#include "stepsim/graph/op_vocabulary.hpp"

namespace stepsim::sim {
namespace {

constexpr double kRate = 400e12;   // FLOP/s of every GEMM on the whole GPU
constexpr double kLink = 150e9;    // bytes/s of every transfer
constexpr std::int64_t kSms = 132;

/// GEMMs at kRate, transfers at kLink (collectives move (n - 1) / n of their buffer per rank,
/// as a ring does), everything else free.
class LinkCost final : public CostModel {
 public:
  double gemm_s(const GemmOp& op) const override { return op.flops() / kRate; }
  double attention_s(const AttentionOp&) const override { return 0.0; }
  double memory_bound_s(const MemoryBoundOp&) const override { return 0.0; }
  double collective_s(const CollectiveOp& op) const override {
    const double n = static_cast<double>(op.group_size);
    return static_cast<double>(op.bytes) * (n - 1) / n / kLink;
  }
  double p2p_s(const P2POp& op) const override { return static_cast<double>(op.bytes) / kLink; }
  std::string describe() const override { return "link test"; }
};

// One Llama-3-like layer, t = 4 with sequence parallelism, s = 8192, b = 1, one stage.
constexpr std::int64_t kT = 4;
constexpr double kTokens = 8192;
constexpr double kH = 4096;
constexpr double kE = 2;

Workload one_layer(bool overlap) {
  Workload w = testing::make_workload(testing::llama3(1, 4096, 32, 14336), kT, 1, 1, 1, 1);
  w.training.sequence_parallel = true;
  w.training.tp_comm_overlap = overlap;
  w.system.sm_count = kSms;
  return w;
}

/// Saved by the ring exchange of a GEMM of `flops` whose input is tokens x h.
double ring_saving(double flops) {
  const double g = flops / kT / kRate;
  const double x = kTokens / kT * kH * kE / kLink;
  const double unoverlapped = (kT - 1) * x + kT * g;
  const double overlapped = (kT - 1) * std::max(g, x) + g;
  EXPECT_DOUBLE_EQ(unoverlapped - overlapped, (kT - 1) * std::min(g, x));
  return unoverlapped - overlapped;
}

/// Saved by the pipelined reduce-scatter of a GEMM of `flops` with output tokens x h.
double pipeline_saving(double flops) {
  const double share = static_cast<double>(kSms - 16) / kSms;
  const double rs = kTokens * kH * kE * (kT - 1) / kT / kLink;
  const double g = flops / 4 / kRate / share;
  const double c = rs / 4;
  return flops / kRate + rs - std::max(4 * g + c, g + 4 * c);
}

TEST(TpOverlapTiming, ForwardHidesWhatTheClosedFormsSay) {
  // Per-rank GEMMs: QKV 8192 x 1536 x 4096, projection 8192 x 4096 x 1024, FC1 (SwiGLU)
  // 8192 x 7168 x 4096, FC2 8192 x 4096 x 3584.
  const double qkv = 2 * kTokens * 1536 * kH;
  const double proj = 2 * kTokens * kH * 1024;
  const double fc1 = 2 * kTokens * 7168 * kH;
  const double fc2 = 2 * kTokens * kH * 3584;
  const LinkCost cost;
  const double off = time_ops(decompose(one_layer(false)).stages[0].chunks[0].forward, cost,
                              false).duration_s;
  const double on = time_ops(decompose(one_layer(true)).stages[0].chunks[0].forward, cost,
                             false).duration_s;
  const double saved = ring_saving(qkv) + ring_saving(fc1) + pipeline_saving(proj) +
                       pipeline_saving(fc2);
  EXPECT_GT(saved, 0.0);
  EXPECT_NEAR(off - on, saved, 1e-12);
  // Here the QKV chunk (0.064 ms) is shorter than its exchange (0.112 ms): the ring hides 3
  // GEMM chunks and the exchanges show; FC1's chunk (0.301 ms) is longer: all is hidden.
  EXPECT_NEAR(ring_saving(qkv), 3 * qkv / kT / kRate, 1e-15);
  EXPECT_NEAR(ring_saving(fc1), 3 * kTokens / kT * kH * kE / kLink, 1e-15);
}

TEST(TpOverlapTiming, BackwardRingDgradHidesTheOutputGradientGather) {
  Workload on = one_layer(true);
  on.training.tp_comm_bulk_dgrad = false;  // QKV/FC1 backward as without overlap
  on.training.tp_comm_bulk_wgrad = false;
  const LinkCost cost;
  const double off_s = time_ops(decompose(one_layer(false)).stages[0].chunks[0].backward, cost,
                                false).duration_s;
  const double on_s =
      time_ops(decompose(on).stages[0].chunks[0].backward, cost, false).duration_s;
  // Projection dgrad 8192 x 1024 x 4096, FC2 dgrad 8192 x 3584 x 4096.
  const double saved = ring_saving(2 * kTokens * 1024 * kH) + ring_saving(2 * kTokens * 3584 * kH);
  EXPECT_NEAR(off_s - on_s, saved, 1e-12);
}

TEST(TpOverlapTiming, BulkOverlapsCostTheSmsTheirKernelsTake) {
  // Bulk overlaps change no ordering (the NCCL collectives were already beside the dgrad and
  // wgrad GEMMs); what changes is the GEMMs' SMs: with the transfers free, the backward
  // grows by the QKV and FC1 dgrad and wgrad GEMMs' time * (1 / share - 1).
  class FreeLinks final : public CostModel {
   public:
    double gemm_s(const GemmOp& op) const override { return op.flops() / kRate; }
    double attention_s(const AttentionOp&) const override { return 0.0; }
    double memory_bound_s(const MemoryBoundOp&) const override { return 0.0; }
    double collective_s(const CollectiveOp&) const override { return 0.0; }
    double p2p_s(const P2POp&) const override { return 0.0; }
    std::string describe() const override { return "free links"; }
  };
  Workload on = one_layer(true);
  on.training.tp_comm_overlap_ag = false;
  const FreeLinks cost;
  const double off_s = time_ops(decompose(one_layer(false)).stages[0].chunks[0].backward, cost,
                                false).duration_s;
  const double on_s =
      time_ops(decompose(on).stages[0].chunks[0].backward, cost, false).duration_s;
  const double share = static_cast<double>(kSms - 16) / kSms;
  // dgrad + wgrad of QKV (out 1536) and FC1 (out 7168), each 2 * tokens * out * h FLOPs.
  const double gemms = 2 * (2 * kTokens * 1536 * kH + 2 * kTokens * 7168 * kH) / kRate;
  EXPECT_NEAR(on_s - off_s, gemms * (1 / share - 1), 1e-12);
}

// atomic_gemm on the pipelined reduce-scatters: the four chunks of the projection and FC2
// GEMMs are one cuBLAS atomic GEMM, each priced as a quarter of the whole GEMM's time. With a
// GEMM that costs a fixed 10 us per kernel on top of its FLOPs (and free transfers), the
// pipelined chunks pay it four times per GEMM and the atomic GEMM once, on the SMs the
// reduce-scatter leaves (116 of 132): the forward is 2 x 3 x 10 us x 132 / 116 shorter.
TEST(TpOverlapTiming, AnAtomicGemmPaysOneKernelForItsChunks) {
  class KernelCost final : public CostModel {
   public:
    double gemm_s(const GemmOp& op) const override { return 1e-5 + op.flops() / kRate; }
    double attention_s(const AttentionOp&) const override { return 0.0; }
    double memory_bound_s(const MemoryBoundOp&) const override { return 0.0; }
    double collective_s(const CollectiveOp&) const override { return 0.0; }
    double p2p_s(const P2POp&) const override { return 0.0; }
    std::string describe() const override { return "kernel test"; }
  };
  Workload pipelined = one_layer(true);
  pipelined.training.fp8 = Fp8Format::kHybrid;
  Workload atomic = pipelined;
  for (const std::size_t i : {std::size_t{3}, std::size_t{9}}) {  // proj_fprop, fc2_fprop
    ASSERT_TRUE(kUbGemmNames[i] == "proj_fprop" || kUbGemmNames[i] == "fc2_fprop");
    atomic.training.tp_comm_overlap_gemms[i].atomic_gemm = 1;
  }
  const ChunkPlan a = decompose(atomic).stages[0].chunks[0];
  std::size_t chunks = 0;
  for (const Op& op : a.forward) {
    if (const auto* g = std::get_if<GemmOp>(&op.shape); g != nullptr && g->atomic_chunks > 1) {
      ++chunks;
      EXPECT_EQ(g->atomic_chunks, 4);
      EXPECT_NE(describe_shape(op.shape).find("(1/4 of an atomic GEMM)"), std::string::npos);
    }
  }
  EXPECT_EQ(chunks, 8u);
  const KernelCost cost;
  const double p =
      time_ops(decompose(pipelined).stages[0].chunks[0].forward, cost, false).duration_s;
  const double at = time_ops(a.forward, cost, false).duration_s;
  const double share = static_cast<double>(kSms - 16) / kSms;
  EXPECT_NEAR(p - at, 2 * 3 * 1e-5 / share, 1e-12);
}

}  // namespace
}  // namespace stepsim::sim
