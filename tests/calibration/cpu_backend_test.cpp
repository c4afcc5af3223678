// CpuBackend in one process (a one-rank MPI world).

#include "cpu/cpu_backend.hpp"

#include <gtest/gtest.h>

#include <tuple>

#include "mpi_environment.hpp"
#include "stepsim/calibration/backend.hpp"

namespace stepsim::calib {
namespace {

BackendOptions fast_options() {
  BackendOptions o;
  o.warmup = 1;
  o.repeats = 3;
  return o;
}

TEST(CpuBackend, GemmComputesTheProductAndTakesTime) {
  CpuBackend b(fast_options());
  const GemmOp op{33, 17, 45, 3, DType::kBf16};
  auto t = b.gemm(op);
  ASSERT_TRUE(t.ok()) << format_errors(t.errors());
  EXPECT_GT(t.value(), 0.0);
  // Operands as the backend defines them: A(r,c) = (r-c)/k, B(r,c) = (r+c+i)/k.
  for (std::int64_t batch = 0; batch < op.batch; ++batch) {
    for (const auto& [i, j] : {std::pair<std::int64_t, std::int64_t>{0, 0}, {5, 7}, {32, 16}}) {
      double want = 0.0;
      for (std::int64_t t2 = 0; t2 < op.k; ++t2) {
        want += static_cast<double>(i - t2) / 45.0 * static_cast<double>(t2 + j + batch) / 45.0;
      }
      EXPECT_NEAR(static_cast<double>(b.last_gemm_output(batch, i, j)), want, 1e-4)
          << "batch " << batch << " (" << i << ", " << j << ")";
    }
  }
}

TEST(CpuBackend, GemmRejectsEmptyAndHugeShapes) {
  CpuBackend b(fast_options());
  EXPECT_FALSE(b.gemm(GemmOp{0, 8, 8, 1, DType::kFp32}).ok());
  auto huge = b.gemm(GemmOp{1 << 20, 1 << 20, 1024, 1, DType::kFp32});
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.errors()[0].message.find("MiB"), std::string::npos);
}

TEST(CpuBackend, MemoryBoundStreamsTheBuffer) {
  CpuBackend b(fast_options());
  auto t = b.memory_bound(MemoryBoundOp{std::int64_t{8} << 20});
  ASSERT_TRUE(t.ok());
  EXPECT_GT(t.value(), 0.0);
  EXPECT_FALSE(b.memory_bound(MemoryBoundOp{4}).ok());
}

TEST(CpuBackend, AttentionForwardAndBackward) {
  CpuBackend b(fast_options());
  AttentionOp a;
  a.batch = 2;
  a.heads = 4;
  a.kv_heads = 2;
  a.seq = 64;
  a.head_dim = 32;
  auto fwd = b.attention(a);
  ASSERT_TRUE(fwd.ok()) << format_errors(fwd.errors());
  a.backward = true;
  auto bwd = b.attention(a);
  ASSERT_TRUE(bwd.ok()) << format_errors(bwd.errors());
  EXPECT_GT(fwd.value(), 0.0);
  EXPECT_GT(bwd.value(), 0.0);
  a.kv_heads = 3;  // does not divide the 4 heads
  EXPECT_FALSE(b.attention(a).ok());
}

// Context parallelism's kernels attend their queries to another block of keys: more keys
// than queries (the all-gather's causal bottom-right rectangle, the ring's full blocks) and
// fewer (the ring's half chunks), forward and backward, with finite results.
TEST(CpuBackend, AttentionOverAnotherBlockOfKeys) {
  CpuBackend b(fast_options());
  for (const auto& [seq, seq_kv, causal] : {std::tuple{32, 64, true}, std::tuple{32, 64, false},
                                           std::tuple{64, 32, false}, std::tuple{64, 32, true}}) {
    for (const bool backward : {false, true}) {
      AttentionOp a;
      a.batch = 1;
      a.heads = 2;
      a.kv_heads = 2;
      a.seq = seq;
      a.seq_kv = seq_kv;
      a.causal = causal;
      a.backward = backward;
      a.head_dim = 16;
      auto t = b.attention(a);
      ASSERT_TRUE(t.ok()) << seq << "x" << seq_kv << ": " << format_errors(t.errors());
      EXPECT_GT(t.value(), 0.0);
    }
  }
}

TEST(CpuBackend, SplitAndCollectivesWithOneRank) {
  CpuBackend b(fast_options());
  EXPECT_EQ(b.world_size(), 1);
  EXPECT_EQ(b.world_rank(), 0);
  EXPECT_EQ(b.group_size(GroupId{0}), 1);
  auto g = b.split(7, 0, CommOptions{});
  ASSERT_TRUE(g.ok());
  EXPECT_NE(g.value(), GroupId{0});
  EXPECT_EQ(b.group_size(g.value()), 1);
  EXPECT_EQ(b.group_size(GroupId{42}), 0);
  for (const CollectiveKind kind :
       {CollectiveKind::kAllReduce, CollectiveKind::kAllGather, CollectiveKind::kReduceScatter}) {
    CollectiveOp op;
    op.kind = kind;
    op.bytes = 4096;
    auto t = b.collective(op, g.value());
    ASSERT_TRUE(t.ok()) << format_errors(t.errors());
    EXPECT_GE(t.value(), 0.0);
  }
  EXPECT_FALSE(b.collective(CollectiveOp{}, GroupId{42}).ok());
}

TEST(CpuBackend, PointToPointNeedsAnotherRank) {
  CpuBackend b(fast_options());
  auto self = b.p2p({P2PRequest{true, 64, 0, 0}});
  ASSERT_FALSE(self.ok());
  EXPECT_NE(self.errors()[0].message.find("peer 0"), std::string::npos);
  EXPECT_FALSE(b.p2p({P2PRequest{true, 64, 3, 0}}).ok());
}

TEST(CpuBackend, ClocksBarrierAndGather) {
  CpuBackend b(fast_options());
  auto offset = b.align_clocks();
  ASSERT_TRUE(offset.ok());
  EXPECT_EQ(offset.value(), 0.0);  // rank 0 is the reference
  const double t0 = b.now_s();
  ASSERT_TRUE(b.barrier(GroupId{0}).ok());
  EXPECT_GE(b.now_s(), t0);
  auto all = b.gather_to_root({1.5, 2.5});
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all.value().size(), 1u);
  EXPECT_EQ(all.value()[0], (std::vector<double>{1.5, 2.5}));
}

TEST(MakeBackend, NamesAndOptions) {
  auto cpu = make_backend("cpu", fast_options());
  ASSERT_TRUE(cpu.ok());
  EXPECT_EQ(cpu.value()->name(), "cpu");
  EXPECT_FALSE(cpu.value()->device_name().empty());
  auto tpu = make_backend("tpu", fast_options());
  ASSERT_FALSE(tpu.ok());
  EXPECT_EQ(tpu.errors()[0].key, "--backend");
  BackendOptions bad = fast_options();
  bad.repeats = 0;
  EXPECT_FALSE(make_backend("cpu", bad).ok());
#ifndef STEPSIM_HAVE_CUDA
  auto cuda = make_backend("cuda", fast_options());
  ASSERT_FALSE(cuda.ok());
  EXPECT_NE(cuda.errors()[0].message.find("not built"), std::string::npos);
#endif
}

}  // namespace
}  // namespace stepsim::calib
