// FP8 with TP-communication overlap (Transformer Engine's userbuffers with FP8 buffers for the
// all-gathers): which exchanges carry 1-byte data, which stay 16-bit, the chunk GEMMs in FP8
// (TN in every phase: Hopper runs FP8 GEMMs in that layout only), the casts and transposes around
// them. Every expectation is written out from the shapes here.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model_workloads.hpp"
#include "stepsim/plan/decompose.hpp"
#include "stepsim/memory/memory_model.hpp"
#include "stepsim/cost/roofline_cost_model.hpp"
#include "stepsim/check/check.hpp"

namespace stepsim {
namespace {

using testing::llama3;
using testing::make_workload;

constexpr std::int64_t kSms = 132;  // H100 SXM5

// Llama-3-like, 4 layers, t = 4 with sequence parallelism, p = 2: 8192 tokens per rank
// (s / cp * b), 2048 of them outside the TP regions; h 4096, bf16 activations.
constexpr std::int64_t kT = 8192;
constexpr std::int64_t kTs = kT / 4;
constexpr std::int64_t kH = 4096;
constexpr std::int64_t kE = 2;
constexpr std::int64_t kQkv = (32 + 2 * 8) * 128 / 4;  // 1536 QKV columns per rank
constexpr std::int64_t kAttn = 32 * 128 / 4;           // 1024 projection inputs per rank
constexpr std::int64_t kFfn = 14336 / 4;               // 3584 FC2 inputs per rank
constexpr double kShare = (kSms - 16.0) / kSms;

Workload tp4(bool fp8, bool overlap) {
  Workload w = make_workload(llama3(4, 4096, 32, 14336), 4, 2, 1, 1, 4);
  w.training.sequence_parallel = true;
  w.training.tp_comm_overlap = overlap;
  if (fp8) w.training.fp8 = Fp8Format::kHybrid;
  w.system.peak_flops_fp8 = 2 * w.system.peak_flops_bf16;
  w.system.sm_count = kSms;
  return w;
}

/// Stage 0's chunk (layers 0 and 1), by value: decompose() returns a temporary.
ChunkPlan middle(const Workload& w) { return decompose(w).stages[0].chunks[0]; }

std::vector<std::int32_t> indices(const std::vector<Op>& ops, const std::string& name,
                                  std::int32_t layer) {
  std::vector<std::int32_t> out;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].name == name && ops[i].layer == layer) out.push_back(static_cast<std::int32_t>(i));
  }
  return out;
}

const Op& only(const std::vector<Op>& ops, const std::string& name, std::int32_t layer) {
  const auto at = indices(ops, name, layer);
  EXPECT_EQ(at.size(), 1u) << name;
  return ops[static_cast<std::size_t>(at.empty() ? 0 : at[0])];
}

std::int64_t memory_bytes(const std::vector<Op>& ops, const std::string& name) {
  return std::get<MemoryBoundOp>(only(ops, name, 1).shape).bytes;
}

std::int64_t comm_bytes(const std::vector<Op>& ops, const std::string& name, std::int32_t layer) {
  std::int64_t sum = 0;
  for (const std::int32_t i : indices(ops, name, layer)) {
    const OpShape& s = ops[static_cast<std::size_t>(i)].shape;
    if (const auto* c = std::get_if<CollectiveOp>(&s)) sum += c->bytes;
    if (const auto* p = std::get_if<P2POp>(&s)) sum += p->bytes;
  }
  return sum;
}

double gemm_flops(const std::vector<Op>& ops, const std::string& name) {
  double sum = 0;
  for (const std::int32_t i : indices(ops, name, 1))
    sum += ops[static_cast<std::size_t>(i)].flops();
  return sum;
}

// Transformer Engine's userbuffers (initialize_ub): one buffer of [s * b / cp, h] per
// userbuffers GEMM, 12 in all, held the whole run: bf16, or with FP8 one byte for the eight
// all-gather GEMMs (layers_all_gather_overlap) and a pipelined reduce-scatter given fp8_buf.
TEST(Fp8TpOverlap, UserbuffersAreTwelveBuffersOfTheSequenceTimesHidden) {
  EXPECT_EQ(userbuffer_bytes(tp4(false, false)), 0);
  const Workload bf16 = tp4(false, true);
  EXPECT_EQ(userbuffer_bytes(bf16), 12 * kT * kH * 2);
  Workload fp8 = tp4(true, true);
  EXPECT_EQ(userbuffer_bytes(fp8), 8 * kT * kH * 1 + 4 * kT * kH * 2);
  fp8.training.tp_comm_overlap_gemms[3].fp8_buf = 1;  // proj_fprop: "pipeline"
  EXPECT_EQ(userbuffer_bytes(fp8), 9 * kT * kH * 1 + 3 * kT * kH * 2);
  fp8.training.tp_comm_overlap_gemms[2].fp8_buf = 1;  // qkv_wgrad: "bulk", not honoured
  EXPECT_EQ(userbuffer_bytes(fp8), 9 * kT * kH * 1 + 3 * kT * kH * 2);
  Workload cp2 = bf16;
  cp2.training.context_parallel_size = 2;
  EXPECT_EQ(userbuffer_bytes(cp2), 12 * kT / 2 * kH * 2);
  // Counted in every stage's static bytes and analytic peak.
  const Workload off = tp4(false, false);
  const WorkloadPlan with = decompose(bf16);
  const WorkloadPlan without = decompose(off);
  const std::vector<StageMemory> m_with = analytic_memory(bf16);
  const std::vector<StageMemory> m_without = analytic_memory(off);
  for (std::size_t r = 0; r < with.stages.size(); ++r) {
    EXPECT_EQ(with.stages[r].static_bytes - without.stages[r].static_bytes, 12 * kT * kH * 2);
    EXPECT_EQ(m_with[r].comm_buffer_bytes, 12 * kT * kH * 2);
    EXPECT_EQ(m_without[r].comm_buffer_bytes, 0);
  }
}

TEST(Fp8TpOverlap, ValidatesNow) {
  EXPECT_TRUE(validate_workload(tp4(true, true), "f").empty());
  Workload w = tp4(true, true);
  w.training.fp8_recipe = Fp8Recipe::kTensorwise;
  EXPECT_TRUE(validate_workload(w, "f").empty());
}

TEST(Fp8TpOverlap, RingExchangeAllGathersTheFp8NormOutputAndMultipliesFp8Chunks) {
  const ChunkPlan c = middle(tp4(true, true));
  // fill_userbuffers_buffer_for_all_gather copies the FP8 shard: read 1 + write 1 byte.
  EXPECT_EQ(memory_bytes(c.forward, "qkv_ub_copy"), 2 * kTs * kH * 1);
  EXPECT_EQ(memory_bytes(c.forward, "fc1_ub_copy"), 2 * kTs * kH * 1);
  // 3 exchanges per GEMM of a 2048 x 4096 chunk at 1 byte: 3/4 of the FP8 all-gather.
  for (const std::int32_t i : indices(c.forward, "tp_ring_exchange", 1)) {
    EXPECT_EQ(std::get<P2POp>(c.forward[static_cast<std::size_t>(i)].shape).bytes, kTs * kH);
  }
  EXPECT_EQ(comm_bytes(c.forward, "tp_ring_exchange", 1), 2 * 3 * kTs * kH);
  const ChunkPlan nccl = middle(tp4(true, false));
  EXPECT_EQ(comm_bytes(c.forward, "tp_ring_exchange", 1),
            comm_bytes(nccl.forward, "tp_all_gather", 1) * 3 / 4);
  EXPECT_TRUE(indices(c.forward, "tp_all_gather", 1).empty());
  // Four chunks of 2048 rows, FP8 operands, every SM (ring_exchange sets no SM margin).
  const auto qkv = indices(c.forward, "qkv_gemm", 1);
  ASSERT_EQ(qkv.size(), 4u);
  for (const std::int32_t i : qkv) {
    const Op& op = c.forward[static_cast<std::size_t>(i)];
    // Forward: fast accumulation, as TE's fprop under delayed scaling.
    EXPECT_EQ(std::get<GemmOp>(op.shape), (GemmOp{.m = kTs,
                                                  .n = kQkv,
                                                  .k = kH,
                                                  .dtype = DType::kFp8,
                                                  .layout = GemmLayout::kTN,
                                                  .fast_accum = true}));
    EXPECT_EQ(op.sm_share, 1.0);
  }
  EXPECT_DOUBLE_EQ(gemm_flops(c.forward, "qkv_gemm"), 2.0 * kT * kQkv * kH);
  EXPECT_DOUBLE_EQ(gemm_flops(c.forward, "qkv_gemm"), gemm_flops(nccl.forward, "qkv_gemm"));
}

TEST(Fp8TpOverlap, ChunksArePricedAtTheFp8Rate) {
  const ChunkPlan c = middle(tp4(true, true));
  SystemConfig s = testing::dgx_like_system();
  s.peak_flops_fp8 = 1979e12;
  s.efficiency = {0.8, 0.0, 0.9, 1e-6, 1.0};
  const RooflineCostModel roofline(s);
  const auto fc1 = indices(c.forward, "fc1_gemm", 1);
  ASSERT_EQ(fc1.size(), 4u);
  // FC1 chunk: 2048 x 7168 x 4096, compute bound, at 80% of the FP8 peak.
  const GemmOp& g = std::get<GemmOp>(c.forward[static_cast<std::size_t>(fc1[0])].shape);
  EXPECT_DOUBLE_EQ(roofline.gemm_s(g), 1e-6 + 2.0 * kTs * (2 * kFfn) * kH / (1979e12 * 0.8));
}

TEST(Fp8TpOverlap, PipelinedReduceScatterStays16Bit) {
  const ChunkPlan c = middle(tp4(true, true));
  const auto fc2 = indices(c.forward, "fc2_gemm", 1);
  ASSERT_EQ(fc2.size(), 4u);
  for (const std::int32_t i : fc2) {
    const Op& op = c.forward[static_cast<std::size_t>(i)];
    EXPECT_EQ(std::get<GemmOp>(op.shape), (GemmOp{.m = kT,
                                                  .n = kH / 4,
                                                  .k = kFfn,
                                                  .dtype = DType::kFp8,
                                                  .layout = GemmLayout::kTN,
                                                  .fast_accum = true}));
    EXPECT_DOUBLE_EQ(op.sm_share, kShare);
  }
  // proj_fprop and fc2_fprop have no FP8 buffer by default: the 16-bit output reduced.
  EXPECT_EQ(comm_bytes(c.forward, "tp_ub_reduce_scatter", 1), 2 * kT * kH * kE);
  const ChunkPlan nccl = middle(tp4(true, false));
  EXPECT_EQ(comm_bytes(c.forward, "tp_ub_reduce_scatter", 1),
            comm_bytes(nccl.forward, "tp_reduce_scatter", 1));
  // The row-parallel inputs are cast-transposed as without overlap.
  EXPECT_EQ(memory_bytes(c.forward, "fc2_input_cast_transpose"), kT * kFfn * (kE + 2));
  EXPECT_EQ(memory_bytes(c.forward, "proj_input_cast_transpose"), kT * kAttn * (kE + 2));
}

TEST(Fp8TpOverlap, RowParallelDgradExchangesTheFp8GradientThenTransposesItForWgrad) {
  const ChunkPlan c = middle(tp4(true, true));
  const std::vector<Op>& b = c.backward;
  // The gradient shard cast row-wise (read 2, write 1), copied in FP8 (read 1, write 1).
  EXPECT_EQ(memory_bytes(b, "proj_grad_cast"), kTs * kH * (kE + 1));
  EXPECT_EQ(memory_bytes(b, "proj_dgrad_ub_copy"), 2 * kTs * kH);
  EXPECT_EQ(memory_bytes(b, "fc2_dgrad_ub_copy"), 2 * kTs * kH);
  // The dgrad ring exchanges (projection and FC2) of 2048 x 4096 FP8 chunks.
  EXPECT_EQ(comm_bytes(b, "tp_ring_exchange", 1), 2 * 3 * kTs * kH);
  const auto dgrad = indices(b, "proj_dgrad", 1);
  ASSERT_EQ(dgrad.size(), 4u);
  for (const std::int32_t i : dgrad) {
    EXPECT_EQ(std::get<GemmOp>(b[static_cast<std::size_t>(i)].shape),
              (GemmOp{kTs, kAttn, kH, 1, DType::kFp8, GemmLayout::kTN}));
  }
  // After the last chunk: the gathered FP8 gradient transposed (read 1, write 1), then wgrad.
  const auto transpose = indices(b, "proj_grad_transpose", 1);
  ASSERT_EQ(transpose.size(), 1u);
  EXPECT_EQ(std::get<MemoryBoundOp>(b[static_cast<std::size_t>(transpose[0])].shape).bytes,
            kT * kH * 2);
  EXPECT_GT(transpose[0], dgrad.back());
  const Op& wgrad = only(b, "proj_wgrad", 1);
  EXPECT_EQ(std::get<GemmOp>(wgrad.shape),
            (GemmOp{kH, kAttn, kT, 1, DType::kFp8, GemmLayout::kTN}));
  EXPECT_LT(transpose[0], indices(b, "proj_wgrad", 1)[0]);
  EXPECT_TRUE(indices(b, "tp_all_gather", 1).empty());  // no NCCL gather left
}

TEST(Fp8TpOverlap, BulkOverlapsGatherFp8InputsAndReduce16BitGradients) {
  const ChunkPlan c = middle(tp4(true, true));
  const std::vector<Op>& b = c.backward;
  for (const std::string p : {"qkv", "fc1"}) {
    // The saved FP8 norm output copied into the dgrad userbuffer and gathered beside dgrad.
    EXPECT_EQ(memory_bytes(b, p + "_wgrad_input_ub_copy"), 2 * kTs * kH) << p;
    EXPECT_EQ(memory_bytes(b, p + "_input_transpose_bwd"), kT * kH * 2) << p;
    const Op& dgrad = only(b, p + "_dgrad", 1);
    const Op& wgrad = only(b, p + "_wgrad", 1);
    EXPECT_EQ(std::get<GemmOp>(dgrad.shape).dtype, DType::kFp8) << p;
    EXPECT_EQ(std::get<GemmOp>(wgrad.shape).dtype, DType::kFp8) << p;
    EXPECT_DOUBLE_EQ(dgrad.sm_share, kShare) << p;
    EXPECT_DOUBLE_EQ(wgrad.sm_share, kShare) << p;
  }
  EXPECT_EQ(memory_bytes(b, "qkv_grad_cast_transpose"), kT * kQkv * (kE + 2));
  // Bulk all-gathers at 1 byte, bulk reduce-scatters of the 16-bit input gradients.
  const auto ag = indices(b, "tp_ub_all_gather", 1);
  ASSERT_EQ(ag.size(), 2u);
  for (const std::int32_t i : ag) {
    const auto& op = std::get<CollectiveOp>(b[static_cast<std::size_t>(i)].shape);
    EXPECT_EQ(op.bytes, kT * kH);
    EXPECT_FALSE(op.nccl);
  }
  EXPECT_EQ(comm_bytes(b, "tp_ub_reduce_scatter", 1), 2 * kT * kH * kE);
  // The transpose waits for the gather, after the dgrad GEMM it overlapped (the backward
  // runs the MLP first: FC1's gather, then QKV's).
  const auto transpose = indices(b, "qkv_input_transpose_bwd", 1);
  ASSERT_EQ(transpose.size(), 1u);
  const Op& t = b[static_cast<std::size_t>(transpose[0])];
  EXPECT_EQ(t.deps, std::vector<std::int32_t>{ag[1]});
  EXPECT_GT(transpose[0], indices(b, "qkv_dgrad", 1)[0]);
}

TEST(Fp8TpOverlap, EveryLinearGemmIsFp8WithTheSameArithmetic) {
  const WorkloadPlan on = decompose(tp4(true, true));
  const WorkloadPlan off = decompose(tp4(true, false));
  const ChunkPlan& a = on.stages[0].chunks[0];
  const ChunkPlan& n = off.stages[0].chunks[0];
  for (const std::string name : {"qkv_gemm", "proj_gemm", "fc1_gemm", "fc2_gemm"}) {
    EXPECT_DOUBLE_EQ(gemm_flops(a.forward, name), gemm_flops(n.forward, name)) << name;
    for (const std::int32_t i : indices(a.forward, name, 1)) {
      EXPECT_EQ(std::get<GemmOp>(a.forward[static_cast<std::size_t>(i)].shape).dtype, DType::kFp8);
    }
  }
  for (const std::string name : {"qkv_dgrad", "qkv_wgrad", "proj_dgrad", "proj_wgrad", "fc1_dgrad",
                                 "fc1_wgrad", "fc2_dgrad", "fc2_wgrad"}) {
    EXPECT_DOUBLE_EQ(gemm_flops(a.backward, name), gemm_flops(n.backward, name)) << name;
    for (const std::int32_t i : indices(a.backward, name, 1)) {
      EXPECT_EQ(std::get<GemmOp>(a.backward[static_cast<std::size_t>(i)].shape).dtype, DType::kFp8);
    }
  }
}

TEST(Fp8TpOverlap, CurrentScalingReducesTheAmaxAndCastsBeforeTheExchange) {
  Workload w = tp4(true, true);
  w.training.fp8_recipe = Fp8Recipe::kTensorwise;
  const ChunkPlan c = middle(w);
  // The norm writes 16 bits and the amax; the amax MAX-reduced over TP, one row-wise cast.
  EXPECT_EQ(memory_bytes(c.forward, "qkv_input_cast"), kTs * kH * (kE + 1));
  EXPECT_EQ(memory_bytes(c.forward, "qkv_ub_copy"), 2 * kTs * kH);
  EXPECT_TRUE(indices(c.forward, "tp_all_gather", 1).empty());
  EXPECT_EQ(comm_bytes(c.forward, "tp_ring_exchange", 1), 2 * 3 * kTs * kH);
  // Backward: the row-parallel gradient's amax (16-bit shard read) before its cast.
  EXPECT_EQ(memory_bytes(c.backward, "proj_grad_amax"), kTs * kH * kE);
}

TEST(Fp8TpOverlap, RsDgradPipelinesFp8DgradChunksIntoTheFp8DgradBuffer) {
  Workload w = tp4(true, true);
  w.training.tp_comm_overlap_rs_dgrad = true;
  const ChunkPlan c = middle(w);
  const std::vector<Op>& b = c.backward;
  const auto dgrad = indices(b, "qkv_dgrad", 1);
  ASSERT_EQ(dgrad.size(), 4u);
  for (const std::int32_t i : dgrad) {
    EXPECT_EQ(std::get<GemmOp>(b[static_cast<std::size_t>(i)].shape),
              (GemmOp{kT, kH / 4, kQkv, 1, DType::kFp8, GemmLayout::kTN}));
  }
  // The qkv_dgrad/fc1_dgrad userbuffers are FP8 (TE's default fp8_buf for them): the dgrad
  // chunks' reduce-scatters move 1 byte per element. The input is re-gathered by NCCL in FP8,
  // waited at once and transposed (no bulk overlap with rs_dgrad).
  EXPECT_EQ(comm_bytes(b, "tp_ub_reduce_scatter", 1), 2 * kT * kH);
  EXPECT_EQ(comm_bytes(b, "tp_all_gather", 1), 2 * kT * kH);
  EXPECT_TRUE(indices(b, "tp_ub_all_gather", 1).empty());
  EXPECT_EQ(memory_bytes(b, "qkv_input_transpose_bwd"), kT * kH * 2);
  EXPECT_EQ(only(b, "qkv_wgrad", 1).sm_share, 1.0);
}

}  // namespace
}  // namespace stepsim
