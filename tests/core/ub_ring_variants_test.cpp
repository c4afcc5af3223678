// The two userbuffers variants NVIDIA's published tp_comm_overlap_cfg files use beyond
// Transformer Engine's defaults: method ring_exchange on a reduce-scatter GEMM (proj_fprop,
// fc2_fprop: CommOverlapP2PBase::split_overlap_rs) and aggregate on an all-gather ring
// exchange (split_overlap_ag's _aggregate). Op counts, shapes, bytes per step, waits, the SMs
// the GEMMs run on and the buffers held, each written out from the shapes here.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model_workloads.hpp"
#include "plan_ops.hpp"
#include "stepsim/plan/decompose.hpp"
#include "stepsim/memory/memory_model.hpp"
#include "stepsim/check/check.hpp"

namespace stepsim {
namespace {

using testing::llama3;
using testing::make_workload;
using testing::named;

constexpr std::int64_t kSms = 132;  // H100 SXM5

// Llama-3-like, 4 layers, t = 4 with sequence parallelism, p = 2: 8192 tokens per rank, h 4096,
// bf16; the projection's input is 32 * 128 / 4 = 1024 columns per rank.
constexpr std::int64_t kT = 8192;
constexpr std::int64_t kH = 4096;
constexpr std::int64_t kAttn = 1024;
constexpr std::int64_t kE = 2;

// kUbGemmNames indices.
constexpr std::size_t kQkvFprop = 0;
constexpr std::size_t kProjFprop = 3;
constexpr std::size_t kFc2Dgrad = 10;

Workload tp4(bool fp8 = false) {
  Workload w = make_workload(llama3(4, 4096, 32, 14336), 4, 2, 1, 1, 4);
  w.training.sequence_parallel = true;
  w.training.tp_comm_overlap = true;
  if (fp8) w.training.fp8 = Fp8Format::kHybrid;
  w.system.sm_count = kSms;
  return w;
}

/// NeMo's RingExchangeOverlapCfg(num_sm=1, set_sm_margin=True) on proj_fprop.
Workload ring_proj(bool fp8 = false, bool fp8_buf = false) {
  Workload w = tp4(fp8);
  UbGemmSettings& g = w.training.tp_comm_overlap_gemms[kProjFprop];
  g.ring_exchange = 1;
  g.num_sm = 1;
  g.set_sm_margin = 1;
  if (fp8_buf) g.fp8_buf = 1;
  return w;
}

/// Stage 0's first chunk, by value: decompose() returns a temporary.
ChunkPlan chunk(const Workload& w) { return decompose(w).stages[0].chunks[0]; }

std::vector<std::int32_t> indices(const std::vector<Op>& ops, const std::string& name) {
  std::vector<std::int32_t> out;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].name == name && ops[i].layer == 1) out.push_back(static_cast<std::int32_t>(i));
  }
  return out;
}

double flops(const std::vector<Op>& ops) {
  double sum = 0;
  for (const Op& op : ops) sum += op.flops();
  return sum;
}

TEST(UbRingReduceScatter, TpChunksOfRowsEachPartialSentAfterItsGemmThenOneReduction) {
  const ChunkPlan c = chunk(ring_proj());
  const std::vector<Op>& f = c.forward;
  // Four GEMM chunks of kT / 4 rows, the full h output width, on 132 - 1 SMs.
  const auto gemms = indices(f, "proj_gemm");
  ASSERT_EQ(gemms.size(), 4u);
  for (const std::int32_t i : gemms) {
    const Op& op = f[static_cast<std::size_t>(i)];
    EXPECT_EQ(std::get<GemmOp>(op.shape),
              (GemmOp{kT / 4, kH, kAttn, 1, DType::kBf16, GemmLayout::kTN}));
    EXPECT_DOUBLE_EQ(op.sm_share, (kSms - 1.0) / kSms);
  }
  // tp - 1 sends of one chunk's 16-bit partial result, chunk j's after GEMM j.
  const auto sends = indices(f, "tp_ring_reduce_scatter");
  ASSERT_EQ(sends.size(), 3u);
  for (std::size_t j = 0; j < sends.size(); ++j) {
    const Op& op = f[static_cast<std::size_t>(sends[j])];
    const auto& p = std::get<P2POp>(op.shape);
    EXPECT_EQ(p.bytes, kT / 4 * kH * kE);
    EXPECT_FALSE(p.nccl);
    EXPECT_FALSE(p.inter_node);
    EXPECT_EQ(op.stream, Stream::kTensorComm);
    EXPECT_EQ(op.deps, std::vector<std::int32_t>{gemms[j]});
    EXPECT_GT(sends[j], gemms[j + 1]);  // enqueued after the next chunk's GEMM
  }
  // The bytes a rank sends are a ring reduce-scatter's: (t - 1) / t of the tokens x h output.
  EXPECT_EQ(3 * kT / 4 * kH * kE, kT * kH * kE * 3 / 4);
  // The reduction waits for the last send and reads the t partial results it holds, writing
  // its kT / 4 rows in 16 bits.
  const auto reduce = indices(f, "proj_ub_reduce");
  ASSERT_EQ(reduce.size(), 1u);
  const Op& r = f[static_cast<std::size_t>(reduce[0])];
  EXPECT_EQ(std::get<MemoryBoundOp>(r.shape).bytes, 4 * (kT / 4) * kH * kE + kT / 4 * kH * 2);
  EXPECT_EQ(r.deps, std::vector<std::int32_t>{sends.back()});
  // No pipelined reduce-scatter left for the projection; FC2 keeps TE's default (4 chunks).
  EXPECT_EQ(named(f, "tp_ub_reduce_scatter", 1).size(), 4u);
  EXPECT_EQ(named(f, "fc2_gemm", 1).size(), 4u);
  // The same arithmetic as the pipelined default.
  EXPECT_DOUBLE_EQ(flops(f), flops(chunk(tp4()).forward));
}

TEST(UbRingReduceScatter, AnFp8BufferSendsOneBytePartials) {
  // fp8_buf on proj_fprop is honoured whichever method (initialize_ub: the name is in
  // methods["pipeline"]): FP8 partial results, reduce_fp8_in_bf16_out to 16 bits.
  const ChunkPlan c = chunk(ring_proj(true, true));
  for (const std::int32_t i : indices(c.forward, "tp_ring_reduce_scatter")) {
    EXPECT_EQ(std::get<P2POp>(c.forward[static_cast<std::size_t>(i)].shape).bytes, kT / 4 * kH * 1);
  }
  const auto reduce = indices(c.forward, "proj_ub_reduce");
  ASSERT_EQ(reduce.size(), 1u);
  EXPECT_EQ(std::get<MemoryBoundOp>(c.forward[static_cast<std::size_t>(reduce[0])].shape).bytes,
            4 * (kT / 4) * kH * 1 + kT / 4 * kH * 2);
  // Without fp8_buf the partials stay 16-bit under FP8.
  const ChunkPlan d = chunk(ring_proj(true, false));
  const auto sends = indices(d.forward, "tp_ring_reduce_scatter");
  ASSERT_EQ(sends.size(), 3u);
  EXPECT_EQ(std::get<P2POp>(d.forward[static_cast<std::size_t>(sends[0])].shape).bytes,
            kT / 4 * kH * kE);
}

TEST(UbRingReduceScatter, ItsBufferHoldsTwoTpMinusOneChunks) {
  // [s * b / cp, h] = 8192 x 4096 in bf16 per buffer; the ring-exchange reduce-scatter's holds
  // 2 * 4 - 1 = 7 quarters of it.
  const std::int64_t buffer = kT * kH * 2;
  EXPECT_EQ(userbuffer_bytes(tp4()), 12 * buffer);
  EXPECT_EQ(userbuffer_bytes(ring_proj()), 11 * buffer + buffer / 4 * 7);
  Workload both = ring_proj();
  both.training.tp_comm_overlap_gemms[9].ring_exchange = 1;  // fc2_fprop
  EXPECT_EQ(userbuffer_bytes(both), 10 * buffer + 2 * (buffer / 4 * 7));
}

TEST(UbAggregate, TwoChunksAStepInHalfTheSteps) {
  Workload w = tp4();
  w.training.tp_comm_overlap_gemms[kQkvFprop].aggregate = 1;
  const std::vector<Op> f = chunk(w).forward;
  const auto gemms = indices(f, "qkv_gemm");
  ASSERT_EQ(gemms.size(), 2u);  // t / 2 steps
  for (const std::int32_t i : gemms) {
    EXPECT_EQ(std::get<GemmOp>(f[static_cast<std::size_t>(i)].shape).m, 2 * kT / 4);
    EXPECT_EQ(f[static_cast<std::size_t>(i)].sm_share, 1.0);
  }
  // QKV's exchanges come before FC1's: the first swap of one chunk (after the copy into the
  // userbuffer), then t / 2 - 1 of two chunks. FC1 keeps 3 exchanges of one chunk.
  const auto exchanges = indices(f, "tp_ring_exchange");
  ASSERT_EQ(exchanges.size(), 2u + 3u);
  const std::int64_t one = kT / 4 * kH * kE;
  const auto bytes = [&](std::size_t j) {
    return std::get<P2POp>(f[static_cast<std::size_t>(exchanges[j])].shape).bytes;
  };
  EXPECT_EQ(bytes(0), one);
  EXPECT_EQ(bytes(1), 2 * one);
  EXPECT_EQ(bytes(0) + bytes(1), 3 * one);  // the all-gather's bytes less the local chunk
  const auto copy = indices(f, "qkv_ub_copy");
  ASSERT_EQ(copy.size(), 1u);
  const auto deps = [&](std::int32_t i) { return f[static_cast<std::size_t>(i)].deps; };
  EXPECT_EQ(deps(exchanges[0]), copy);
  EXPECT_TRUE(deps(exchanges[1]).empty());  // stream order after the first swap
  // Unlike the one-chunk ring, the first GEMM waits for the first swap.
  EXPECT_EQ(deps(gemms[0]), std::vector<std::int32_t>{exchanges[0]});
  EXPECT_EQ(deps(gemms[1]), std::vector<std::int32_t>{exchanges[1]});
  EXPECT_DOUBLE_EQ(flops(f), flops(chunk(tp4()).forward));
  EXPECT_EQ(userbuffer_bytes(w), userbuffer_bytes(tp4()));  // the same buffer
}

TEST(UbAggregate, OnABackwardRingAndWithTpTwo) {
  // fc2_dgrad (MLPerf's GPT-3 file): the output gradient's ring exchange, two chunks a step.
  Workload w = tp4();
  w.training.tp_comm_overlap_gemms[kFc2Dgrad].aggregate = 1;
  const ChunkPlan c = chunk(w);
  const auto dgrad = named(c.backward, "fc2_dgrad", 1);
  ASSERT_EQ(dgrad.size(), 2u);
  EXPECT_EQ(std::get<GemmOp>(dgrad[0]->shape).m, kT / 2);
  // t = 2: one step of both chunks after the swap of one.
  Workload t2 = make_workload(llama3(4, 4096, 32, 14336), 2, 2, 1, 1, 4);
  t2.training.sequence_parallel = true;
  t2.training.tp_comm_overlap = true;
  t2.system.sm_count = kSms;
  t2.training.tp_comm_overlap_gemms[kQkvFprop].aggregate = 1;
  const std::vector<Op> f = chunk(t2).forward;
  const auto gemms = indices(f, "qkv_gemm");
  ASSERT_EQ(gemms.size(), 1u);
  EXPECT_EQ(std::get<GemmOp>(f[static_cast<std::size_t>(gemms[0])].shape).m, kT);
  // QKV's one swap, then FC1's one exchange.
  EXPECT_EQ(indices(f, "tp_ring_exchange").size(), 2u);
}

TEST(UbAggregate, AnOddTensorParallelSizeIsRefused) {
  const auto has = [](const Errors& errors, const std::string& text) {
    for (const Error& e : errors) {
      if (e.key == "training.tp_comm_overlap_cfg" && e.message.find(text) != std::string::npos) {
        return true;
      }
    }
    return false;
  };
  Workload w = tp4();
  w.training.tp_comm_overlap_gemms[kQkvFprop].aggregate = 1;
  EXPECT_FALSE(has(validate_workload(w, "f"), "aggregate"));
  // t = 3 (other rules fail too: the heads do not split in 3).
  w.training.tensor_model_parallel_size = 3;
  w.training.world_size = 3 * 2;
  EXPECT_TRUE(has(validate_workload(w, "f"), "qkv_fprop.aggregate=true needs an even"));
}

}  // namespace
}  // namespace stepsim
