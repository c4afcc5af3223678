// TP-communication overlap (Transformer Engine's userbuffers under --tp-comm-overlap): which
// ops the linears become, that they do the same arithmetic and move the same bytes as the
// unoverlapped ones, which are not NCCL, which GEMMs run on fewer SMs, and Megatron's rules.
// Every expectation is written out from the shapes here.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "plan_ops.hpp"
#include "model_workloads.hpp"
#include "stepsim/plan/decompose.hpp"
#include "stepsim/memory/memory_model.hpp"
#include "stepsim/check/check.hpp"

namespace stepsim {
namespace {

using testing::llama3;
using testing::make_workload;

constexpr std::int64_t kSms = 132;  // H100 SXM5

/// Llama-3-like, 4 layers, t = 4 with sequence parallelism, p = 2.
Workload tp4(bool overlap) {
  Workload w = make_workload(llama3(4, 4096, 32, 14336), 4, 2, 1, 1, 4);
  w.training.sequence_parallel = true;
  w.training.tp_comm_overlap = overlap;
  w.system.sm_count = kSms;
  return w;
}

using testing::named;

double flops_of(const std::vector<const Op*>& ops) {
  double sum = 0;
  for (const Op* op : ops) sum += op->flops();
  return sum;
}

std::int64_t bytes_of(const std::vector<const Op*>& ops) {
  std::int64_t sum = 0;
  for (const Op* op : ops) {
    if (const auto* c = std::get_if<CollectiveOp>(&op->shape)) sum += c->bytes;
    if (const auto* p = std::get_if<P2POp>(&op->shape)) sum += p->bytes;
  }
  return sum;
}

double total_flops(const std::vector<Op>& ops) {
  double sum = 0;
  for (const Op& op : ops) sum += op.flops();
  return sum;
}

/// Stage 0's chunk (layers 0 and 1), by value: decompose() returns a temporary.
ChunkPlan middle(const WorkloadPlan& plan) { return plan.stages[0].chunks[0]; }

// Tokens per rank 8192 (s / cp * b), h 4096, bf16: the sequence-parallel input of a
// column-parallel GEMM is 8192 / 4 = 2048 rows of 4096.
constexpr std::int64_t kTokens = 8192;
constexpr std::int64_t kH = 4096;
constexpr std::int64_t kE = 2;

TEST(TpOverlap, OffByDefaultAndTheSameOpsAsBefore) {
  EXPECT_FALSE(TrainingConfig{}.tp_comm_overlap);
  const WorkloadPlan off = decompose(tp4(false));
  const ChunkPlan chunk = middle(off);
  for (const Op& op : chunk.forward) {
    EXPECT_EQ(op.sm_share, 1.0) << op.name;
    if (const auto* c = std::get_if<CollectiveOp>(&op.shape)) {
      EXPECT_TRUE(c->nccl) << op.name;
    }
  }
}

TEST(TpOverlap, EveryGemmDoesTheSameArithmetic) {
  const WorkloadPlan off = decompose(tp4(false));
  const WorkloadPlan on = decompose(tp4(true));
  for (std::size_t s = 0; s < off.stages.size(); ++s) {
    const ChunkPlan& a = off.stages[s].chunks[0];
    const ChunkPlan& b = on.stages[s].chunks[0];
    EXPECT_DOUBLE_EQ(total_flops(a.forward), total_flops(b.forward));
    EXPECT_DOUBLE_EQ(total_flops(a.backward), total_flops(b.backward));
  }
  const ChunkPlan a = middle(off);
  const ChunkPlan b = middle(on);
  for (const std::string name : {"qkv_gemm", "proj_gemm", "fc1_gemm", "fc2_gemm"}) {
    EXPECT_DOUBLE_EQ(flops_of(named(a.forward, name, 1)), flops_of(named(b.forward, name, 1)))
        << name;
  }
  for (const std::string name : {"qkv_dgrad", "qkv_wgrad", "proj_dgrad", "proj_wgrad",
                                 "fc1_dgrad", "fc1_wgrad", "fc2_dgrad", "fc2_wgrad"}) {
    EXPECT_DOUBLE_EQ(flops_of(named(a.backward, name, 1)), flops_of(named(b.backward, name, 1)))
        << name;
  }
}

TEST(TpOverlap, RingExchangeSplitsTheGemmInTpChunksBesideTpMinusOneCopies) {
  const ChunkPlan c = middle(decompose(tp4(true)));
  // QKV: (32 + 2 * 8) * 128 / 4 = 1536 output columns per rank, in 4 chunks of 2048 rows.
  const auto qkv = named(c.forward, "qkv_gemm", 1);
  ASSERT_EQ(qkv.size(), 4u);
  for (const Op* op : qkv) {
    EXPECT_EQ(std::get<GemmOp>(op->shape), (GemmOp{kTokens / 4, 1536, kH, 1, DType::kBf16, GemmLayout::kTN}));
    EXPECT_EQ(op->sm_share, 1.0);  // ring_exchange: no SM margin, the copy engine moves data
  }
  // The exchanges carry the all-gather's bytes less the local chunk: 3 of 2048 x 4096 x 2.
  std::int64_t ring_bytes = 0;
  int exchanges = 0;
  for (const Op& op : c.forward) {
    if (op.name != "tp_ring_exchange" || op.layer != 1) continue;
    const auto& p = std::get<P2POp>(op.shape);
    EXPECT_FALSE(p.nccl);
    EXPECT_FALSE(p.inter_node);
    EXPECT_EQ(op.stream, Stream::kTensorComm);
    ring_bytes += p.bytes;
    ++exchanges;
  }
  EXPECT_EQ(exchanges, 2 * 3);  // QKV and FC1
  EXPECT_EQ(ring_bytes, 2 * 3 * (kTokens / 4) * kH * kE);
  const std::int64_t all_gather = kTokens * kH * kE;  // nccl-tests size of the unoverlapped one
  EXPECT_EQ(ring_bytes / 2, all_gather * 3 / 4);
  // No NCCL all-gather left in the forward; the norm output is copied into the userbuffer.
  EXPECT_TRUE(named(c.forward, "tp_all_gather", 1).empty());
  const auto copy = named(c.forward, "qkv_ub_copy", 1);
  ASSERT_EQ(copy.size(), 1u);
  EXPECT_EQ(std::get<MemoryBoundOp>(copy[0]->shape).bytes, 2 * (kTokens / 4) * kH * kE);
}

TEST(TpOverlap, FirstExchangeStartsWithTheFirstChunkAndEachChunkWaitsForItsData) {
  const std::vector<Op> ops = middle(decompose(tp4(true))).forward;
  std::vector<std::int32_t> chunks;
  std::vector<std::int32_t> exchanges;
  std::int32_t copy = -1;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].layer != 1) continue;
    if (ops[i].name == "qkv_ub_copy") copy = static_cast<std::int32_t>(i);
    if (ops[i].name == "qkv_gemm") chunks.push_back(static_cast<std::int32_t>(i));
    if (ops[i].name == "tp_ring_exchange" && exchanges.size() < 3) {
      exchanges.push_back(static_cast<std::int32_t>(i));
    }
  }
  ASSERT_EQ(chunks.size(), 4u);
  ASSERT_EQ(exchanges.size(), 3u);
  EXPECT_EQ(ops[static_cast<std::size_t>(exchanges[0])].deps, std::vector<std::int32_t>{copy});
  EXPECT_TRUE(ops[static_cast<std::size_t>(exchanges[1])].deps.empty());  // stream order only
  EXPECT_TRUE(ops[static_cast<std::size_t>(chunks[0])].deps.empty());
  for (std::size_t i = 1; i < 4; ++i) {
    EXPECT_EQ(ops[static_cast<std::size_t>(chunks[i])].deps,
              std::vector<std::int32_t>{exchanges[i - 1]});
  }
}

TEST(TpOverlap, PipelinedReduceScatterInFourChunksOnTheSmsLeft) {
  const ChunkPlan c = middle(decompose(tp4(true)));
  // FC2: 14336 / 4 = 3584 input columns; h = 4096 output features in 4 chunks of 1024.
  const auto fc2 = named(c.forward, "fc2_gemm", 1);
  ASSERT_EQ(fc2.size(), 4u);
  for (const Op* op : fc2) {
    EXPECT_EQ(std::get<GemmOp>(op->shape), (GemmOp{kTokens, kH / 4, 3584, 1, DType::kBf16, GemmLayout::kTN}));
    EXPECT_DOUBLE_EQ(op->sm_share, (kSms - 16.0) / kSms);
  }
  const auto rs = named(c.forward, "tp_ub_reduce_scatter", 1);
  ASSERT_EQ(rs.size(), 8u);  // projection and FC2
  for (const Op* op : rs) EXPECT_FALSE(std::get<CollectiveOp>(op->shape).nccl);
  // The chunks' bytes sum to the unoverlapped reduce-scatters' (two of tokens x h).
  const ChunkPlan off = middle(decompose(tp4(false)));
  const auto nccl_rs = named(off.forward, "tp_reduce_scatter", 1);
  EXPECT_EQ(bytes_of(rs), bytes_of(nccl_rs));
  EXPECT_EQ(bytes_of(rs), 2 * kTokens * kH * kE);
  EXPECT_TRUE(named(c.forward, "tp_reduce_scatter", 1).empty());
}

TEST(TpOverlap, BackwardBulkOverlapsAndRingDgrad) {
  const ChunkPlan on = middle(decompose(tp4(true)));
  const ChunkPlan off = middle(decompose(tp4(false)));
  const double share = (kSms - 16.0) / kSms;
  // Projection/FC2 dgrad: ring exchange of the output gradient; the wgrad whole.
  EXPECT_EQ(named(on.backward, "proj_dgrad", 1).size(), 4u);
  EXPECT_EQ(named(on.backward, "fc2_wgrad", 1).size(), 1u);
  // QKV/FC1: bulk all-gather beside the dgrad, bulk reduce-scatter beside the wgrad.
  for (const std::string p : {"qkv", "fc1"}) {
    const auto dgrad = named(on.backward, p + "_dgrad", 1);
    const auto wgrad = named(on.backward, p + "_wgrad", 1);
    ASSERT_EQ(dgrad.size(), 1u);
    ASSERT_EQ(wgrad.size(), 1u);
    EXPECT_DOUBLE_EQ(dgrad[0]->sm_share, share);
    EXPECT_DOUBLE_EQ(wgrad[0]->sm_share, share);
  }
  const auto ag = named(on.backward, "tp_ub_all_gather", 1);
  const auto rs = named(on.backward, "tp_ub_reduce_scatter", 1);
  EXPECT_EQ(ag.size(), 2u);
  EXPECT_EQ(rs.size(), 2u);
  // Bytes: the bulk collectives are the NCCL ones of the same size; the ring exchanges of the
  // dgrads carry 3/4 of the two output-gradient all-gathers.
  const auto nccl_ag = named(off.backward, "tp_all_gather", 1);
  const auto nccl_rs = named(off.backward, "tp_reduce_scatter", 1);
  ASSERT_EQ(nccl_ag.size(), 4u);  // 2 re-gathers for wgrad + 2 output-gradient gathers
  EXPECT_EQ(bytes_of(ag), 2 * kTokens * kH * kE);
  EXPECT_EQ(bytes_of(rs), bytes_of(nccl_rs));
  EXPECT_EQ(bytes_of(named(on.backward, "tp_ring_exchange", 1)),
            (bytes_of(nccl_ag) - bytes_of(ag)) * 3 / 4);
  for (const Op* op : ag) EXPECT_FALSE(std::get<CollectiveOp>(op->shape).nccl);
}

TEST(TpOverlap, RsDgradPipelinesTheDgradAndDropsTheBulkOverlaps) {
  Workload w = tp4(true);
  w.training.tp_comm_overlap_rs_dgrad = true;
  const ChunkPlan c = middle(decompose(w));
  const auto dgrad = named(c.backward, "qkv_dgrad", 1);
  ASSERT_EQ(dgrad.size(), 4u);
  for (const Op* op : dgrad) {
    // dgrad output: tokens x h, in 4 chunks of h / 4; input width 1536.
    EXPECT_EQ(std::get<GemmOp>(op->shape), (GemmOp{kTokens, kH / 4, 1536, 1, DType::kBf16, GemmLayout::kNN}));
  }
  EXPECT_EQ(named(c.backward, "qkv_wgrad", 1)[0]->sm_share, 1.0);
  EXPECT_TRUE(named(c.backward, "tp_ub_all_gather", 1).empty());  // NCCL all-gather again
  EXPECT_EQ(named(c.backward, "tp_all_gather", 1).size(), 2u);
}

TEST(TpOverlap, SubSwitchesTurnSingleOverlapsOff) {
  Workload w = tp4(true);
  w.training.tp_comm_overlap_ag = false;
  w.training.tp_comm_overlap_rs = false;
  w.training.tp_comm_bulk_dgrad = false;
  w.training.tp_comm_bulk_wgrad = false;
  // The same ops; the userbuffers themselves are still registered (Megatron calls TE's
  // initialize_ub whenever tp_comm_overlap is on).
  WorkloadPlan all_off = decompose(w);
  ASSERT_GT(userbuffer_bytes(w), 0);
  for (StagePlan& s : all_off.stages) s.static_bytes -= userbuffer_bytes(w);
  EXPECT_EQ(all_off, decompose(tp4(false)));
}

TEST(TpOverlap, MegatronsRulesNameTheKey) {
  const auto has = [](const Errors& errors, const std::string& key, const std::string& text) {
    for (const Error& e : errors) {
      if (e.key == key && e.message.find(text) != std::string::npos) return true;
    }
    return false;
  };
  Workload w = tp4(true);
  EXPECT_TRUE(validate_workload(w, "f").empty());
  w.training.sequence_parallel = false;
  EXPECT_TRUE(has(validate_workload(w, "f"), "training.tp_comm_overlap", "sequence_parallel"));
  w = tp4(true);
  w.system.sm_count = 0;
  EXPECT_TRUE(has(validate_workload(w, "f"), "training.tp_comm_overlap", "sm_count"));
  w = tp4(true);
  w.system.gpus_per_node = 2;
  EXPECT_TRUE(has(validate_workload(w, "f"), "training.tp_comm_overlap", "across nodes"));
  w = make_workload(llama3(4, 4096, 32, 14336), 4, 1, 2, 1, 4);
  w.training.defer_embedding_wgrad_compute = true;
  EXPECT_TRUE(has(validate_workload(w, "f"), "training.defer_embedding_wgrad_compute",
                  "pipeline model parallel is not used"));
  w.training.pipeline_model_parallel_size = 2;
  w.training.data_parallel_size = 1;
  EXPECT_FALSE(has(validate_workload(w, "f"), "training.defer_embedding_wgrad_compute", ""));
}

}  // namespace
}  // namespace stepsim
