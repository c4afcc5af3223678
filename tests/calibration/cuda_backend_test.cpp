// CudaBackend on a real GPU (label `gpu`); without a device only the clean failure is tested.

#include "cuda/cuda_backend.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <map>

#include "mpi_environment.hpp"

namespace stepsim::calib {
namespace {

int visible_devices() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
}

std::unique_ptr<Backend> cuda_or_skip() {
  BackendOptions o;
  o.warmup = 1;
  o.repeats = 3;
  auto b = make_backend("cuda", o);
  EXPECT_TRUE(b.ok()) << format_errors(b.errors());
  return b.ok() ? std::move(b).value() : nullptr;
}

#define STEPSIM_SKIP_WITHOUT_GPU() \
  if (visible_devices() == 0) GTEST_SKIP() << "no CUDA device visible"

TEST(CudaBackend, WithoutADeviceTheErrorSaysSo) {
  if (visible_devices() > 0) GTEST_SKIP() << "a CUDA device is visible";
  auto b = make_backend("cuda", BackendOptions{});
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.errors()[0].message.rfind("cuda backend: no CUDA device visible", 0), 0u)
      << b.errors()[0].message;
}

TEST(CudaBackend, GemmInEveryDtype) {
  STEPSIM_SKIP_WITHOUT_GPU();
  auto b = cuda_or_skip();
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->name(), "cuda");
  for (const DType t : {DType::kBf16, DType::kFp16, DType::kFp32}) {
    auto small = b->gemm(GemmOp{256, 256, 256, 1, t});
    auto big = b->gemm(GemmOp{4096, 4096, 4096, 1, t});
    auto batched = b->gemm(GemmOp{512, 512, 64, 16, t});
    ASSERT_TRUE(small.ok() && big.ok() && batched.ok()) << to_string(t);
    EXPECT_GT(small.value(), 0.0);
    EXPECT_GT(big.value(), 0.0);
    EXPECT_GT(batched.value(), 0.0);
  }
}

TEST(CudaBackend, Fp8GemmRunsFasterThanBf16OnHopper) {
  STEPSIM_SKIP_WITHOUT_GPU();
  cudaDeviceProp prop{};
  ASSERT_EQ(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
  if (prop.major * 10 + prop.minor < 89) GTEST_SKIP() << "FP8 GEMMs need compute capability 8.9+";
  auto b = cuda_or_skip();
  ASSERT_NE(b, nullptr);
  auto fp8 = b->gemm(GemmOp{8192, 8192, 8192, 1, DType::kFp8});
  auto bf16 = b->gemm(GemmOp{8192, 8192, 8192, 1, DType::kBf16});
  ASSERT_TRUE(fp8.ok()) << format_errors(fp8.errors());
  ASSERT_TRUE(bf16.ok()) << format_errors(bf16.errors());
  // Hopper's FP8 tensor-core peak is twice bf16's; a large product gets well over 1.3x.
  EXPECT_LT(fp8.value() * 1.3, bf16.value()) << fp8.value() << " s vs " << bf16.value() << " s";
  // With fast accumulation (Transformer Engine's fprop under per-tensor scaling): no slower.
  auto fast = b->gemm({.m = 8192,
                       .n = 8192,
                       .k = 8192,
                       .dtype = DType::kFp8,
                       .layout = GemmLayout::kTN,
                       .fast_accum = true});
  ASSERT_TRUE(fast.ok()) << format_errors(fast.errors());
  EXPECT_LT(fast.value(), fp8.value() * 1.05) << fast.value() << " s vs " << fp8.value() << " s";
  auto odd = b->gemm(GemmOp{8200, 8192, 8192, 1, DType::kFp8});
  ASSERT_FALSE(odd.ok());
  EXPECT_NE(odd.errors()[0].message.find("divisible by 16"), std::string::npos);
  AttentionOp a;
  a.batch = 1;
  a.heads = a.kv_heads = 4;
  a.seq = 256;
  a.head_dim = 64;
  a.dtype = DType::kFp8;
  EXPECT_FALSE(b->attention(a).ok());
}

// Transformer Engine's three layouts on non-square shapes (the operands are sized per layout:
// an m x n GemmOp's A is k x n, its B m x k in cuBLAS's terms) in bf16 and batched; FP8 only
// in TN, the one layout cuBLASLt runs FP8 in on Hopper.
TEST(CudaBackend, GemmInEachTransformerEngineLayout) {
  STEPSIM_SKIP_WITHOUT_GPU();
  auto b = cuda_or_skip();
  ASSERT_NE(b, nullptr);
  for (const GemmLayout l : {GemmLayout::kTN, GemmLayout::kNN, GemmLayout::kNT}) {
    for (const GemmOp op : {GemmOp{.m = 256, .n = 8192, .k = 16384, .layout = l},
                            GemmOp{.m = 8192, .n = 256, .k = 512, .layout = l},
                            GemmOp{.m = 512, .n = 1024, .k = 64, .batch = 8, .layout = l}}) {
      auto t = b->gemm(op);
      ASSERT_TRUE(t.ok()) << to_string(l) << ": " << format_errors(t.errors());
      EXPECT_GT(t.value(), 0.0);
    }
  }
  cudaDeviceProp prop{};
  ASSERT_EQ(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
  if (prop.major * 10 + prop.minor < 89) return;
  EXPECT_TRUE(b->gemm({.m = 256, .n = 8192, .k = 16384, .dtype = DType::kFp8,
                       .layout = GemmLayout::kTN})
                  .ok());
  auto nn = b->gemm({.m = 4096, .n = 4096, .k = 4096, .dtype = DType::kFp8,
                     .layout = GemmLayout::kNN});
  ASSERT_FALSE(nn.ok());
  EXPECT_NE(nn.errors()[0].message.find("TN layout only"), std::string::npos);
}

// Transformer Engine's block-scaled FP8 GEMMs (fp8_recipe "blockwise") as cuBLASLt 12.9+ runs
// them on Hopper: fprop/dgrad with 128x128 blocks on the weight and 1x128 tiles on the other
// operand, wgrad with 1x128 tiles on both; a batch runs as its products one after the other.
TEST(CudaBackend, BlockScaledFp8GemmsInBothModes) {
  STEPSIM_SKIP_WITHOUT_GPU();
  cudaDeviceProp prop{};
  ASSERT_EQ(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
  if (prop.major != 9) GTEST_SKIP() << "cuBLASLt's 128-element block scaling runs on Hopper";
  auto b = cuda_or_skip();
  ASSERT_NE(b, nullptr);
  EXPECT_TRUE(b->runs_block_scaled_fp8());  // so calibrate measures them (and --fp8's twins)
  const auto op = [](std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch,
                     GemmScaling s) {
    return GemmOp{.m = m,
                  .n = n,
                  .k = k,
                  .batch = batch,
                  .dtype = DType::kFp8,
                  .layout = GemmLayout::kTN,
                  .scaling = s};
  };
  for (const GemmScaling s : {GemmScaling::kBlock128x128, GemmScaling::kBlock1x128}) {
    for (const GemmOp& g :
         {op(4096, 4096, 4096, 1, s), op(256, 14336, 4096, 1, s), op(1024, 4096, 1024, 4, s)}) {
      auto t = b->gemm(g);
      ASSERT_TRUE(t.ok()) << to_string(s) << ": " << format_errors(t.errors());
      EXPECT_GT(t.value(), 0.0);
    }
  }
  // Scaling every 1x128 tile of both operands costs the main loop: a large wgrad-like product
  // is slower than its per-tensor twin (about 40% on an H100: profiles/README.md).
  auto tensor = b->gemm(op(8192, 8192, 8192, 1, GemmScaling::kTensor));
  auto tiles = b->gemm(op(8192, 8192, 8192, 1, GemmScaling::kBlock1x128));
  ASSERT_TRUE(tensor.ok() && tiles.ok());
  EXPECT_GT(tiles.value(), tensor.value()) << tiles.value() << " s vs " << tensor.value() << " s";

  BackendOptions o;
  o.verify = false;
  auto made = make_backend("cuda", o);
  ASSERT_TRUE(made.ok()) << format_errors(made.errors());
  Backend& stream = *made.value();
  for (int step = 0; step < 2; ++step) {  // the second step reuses the plans and the scales
    ASSERT_TRUE(stream.begin_step().ok());
    stream.tag(0);
    ASSERT_TRUE(stream.gemm(op(4096, 4096, 4096, 1, GemmScaling::kBlock128x128)).ok());
    stream.tag(1);
    ASSERT_TRUE(stream.gemm(op(4096, 4096, 4096, 1, GemmScaling::kBlock1x128)).ok());
    stream.tag(2);  // a wider product: the scales' buffer grows under the first plans
    ASSERT_TRUE(stream.gemm(op(4096, 16384, 4096, 2, GemmScaling::kBlock1x128)).ok());
    auto t = stream.end_step();
    ASSERT_TRUE(t.ok()) << format_errors(t.errors());
    ASSERT_EQ(t.value().size(), 3U);
    for (const auto& d : t.value()) EXPECT_GT(d.busy_s, 0.0);
  }
}

// Transformer Engine's MXFP8 GEMMs (fp8_recipe "mxfp8"): E8M0 scales per 32 values of both
// operands, in the layouts of 16-bit GEMMs; on Blackwell only (before it, a clear error).
TEST(CudaBackend, MxFp8GemmsInEachLayoutOnBlackwell) {
  STEPSIM_SKIP_WITHOUT_GPU();
  cudaDeviceProp prop{};
  ASSERT_EQ(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
  auto b = cuda_or_skip();
  ASSERT_NE(b, nullptr);
  const auto op = [](GemmLayout l, std::int64_t batch) {
    return GemmOp{.m = 4096,
                  .n = 4096,
                  .k = 4096,
                  .batch = batch,
                  .dtype = DType::kFp8,
                  .layout = l,
                  .scaling = GemmScaling::kMx1x32};
  };
  if (prop.major < 10) {
    EXPECT_FALSE(b->runs_mxfp8());
    auto t = b->gemm(op(GemmLayout::kNN, 1));
    ASSERT_FALSE(t.ok());
    EXPECT_NE(format_errors(t.errors()).find("run on Blackwell"), std::string::npos);
    return;
  }
  EXPECT_TRUE(b->runs_mxfp8());
  for (const GemmLayout l : {GemmLayout::kTN, GemmLayout::kNN, GemmLayout::kNT}) {
    for (const std::int64_t batch : {1, 2}) {
      auto t = b->gemm(op(l, batch));
      ASSERT_TRUE(t.ok()) << to_string(l) << ": " << format_errors(t.errors());
      EXPECT_GT(t.value(), 0.0);
    }
  }
}

// Calibration times memory-bound kernels in trains of back-to-back launches, as a step runs
// them: a tiny kernel costs what the host's launches pace it at there (3.5-4.6 us on the
// H100 of 2026-11-28), not the 7.4 us one kernel between two events shows; a large one costs
// its bytes at HBM bandwidth.
TEST(CudaBackend, MemoryBoundKernelsAreTimedInTrains) {
  STEPSIM_SKIP_WITHOUT_GPU();
  auto b = cuda_or_skip();
  ASSERT_NE(b, nullptr);
  auto tiny = b->memory_bound(MemoryBoundOp{4096});
  auto large = b->memory_bound(MemoryBoundOp{std::int64_t{1} << 30});
  ASSERT_TRUE(tiny.ok() && large.ok());
  EXPECT_LT(tiny.value(), 6e-6) << tiny.value();
  EXPECT_GT(tiny.value(), 2e-7) << tiny.value();
  // 1 GiB through any HBM of today (under 8 TB/s) takes over 0.13 ms.
  EXPECT_GT(large.value(), 1.3e-4) << large.value();
}

TEST(CudaBackend, SaysItsVersionsAndGivesMemoryBack) {
  STEPSIM_SKIP_WITHOUT_GPU();
  auto b = cuda_or_skip();
  ASSERT_NE(b, nullptr);
  const std::string v = b->versions();
  for (const char* part : {"runtime ", "cuBLASLt ", "NCCL ", "compute capability "}) {
    EXPECT_NE(v.find(part), std::string::npos) << v;
  }
  ASSERT_TRUE(b->gemm(GemmOp{8192, 8192, 8192, 1, DType::kBf16}).ok());
  std::size_t free_before = 0, free_after = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_before, &total), cudaSuccess);
  b->release_buffers();
  ASSERT_EQ(cudaMemGetInfo(&free_after, &total), cudaSuccess);
  EXPECT_GE(free_after, free_before + (std::size_t{3} * 8192 * 8192 * 2) / 2)
      << "three 128 MiB operands should have been freed";
  EXPECT_TRUE(b->gemm(GemmOp{256, 256, 256, 1, DType::kBf16}).ok());  // allocates again
}

TEST(CudaBackend, AttentionMemoryAndOneRankCollectives) {
  STEPSIM_SKIP_WITHOUT_GPU();
  auto b = cuda_or_skip();
  ASSERT_NE(b, nullptr);
  AttentionOp a;
  a.batch = 2;
  a.heads = 8;
  a.kv_heads = 2;
  a.seq = 1024;
  a.head_dim = 128;
  auto fwd = b->attention(a);
  a.backward = true;
  auto bwd = b->attention(a);
  ASSERT_TRUE(fwd.ok()) << format_errors(fwd.errors());
  ASSERT_TRUE(bwd.ok()) << format_errors(bwd.errors());
  EXPECT_GT(fwd.value(), 0.0);
  EXPECT_GT(bwd.value(), 0.0);
  auto mem = b->memory_bound(MemoryBoundOp{std::int64_t{256} << 20});
  ASSERT_TRUE(mem.ok()) << format_errors(mem.errors());
  EXPECT_GT(mem.value(), 0.0);
  // A communicator made with a group's ncclConfig_t (Megatron's --nccl-communicator-config-
  // path: max_ctas 2, cga_cluster_size 2) runs and checks its collectives like any other.
  auto g = b->split(0, b->world_rank(),
                    CommOptions{.min_ctas = 1, .max_ctas = 2, .cga_cluster_size = 2});
  ASSERT_TRUE(g.ok()) << format_errors(g.errors());
  for (const CollectiveKind kind :
       {CollectiveKind::kAllReduce, CollectiveKind::kAllGather, CollectiveKind::kReduceScatter}) {
    CollectiveOp op;
    op.kind = kind;
    op.bytes = std::int64_t{8} << 20;
    op.group_size = b->world_size();
    auto t = b->collective(op, g.value());
    ASSERT_TRUE(t.ok()) << format_errors(t.errors());
    EXPECT_GT(t.value(), 0.0);
  }
  EXPECT_FALSE(b->p2p({P2PRequest{true, 64, b->world_rank(), 0}}).ok());
}

// The validator's stream mode (verify = false) on this process's GPU.
std::unique_ptr<Backend> stream_mode() {
  BackendOptions o;
  o.verify = false;
  auto made = make_backend("cuda", o);
  EXPECT_TRUE(made.ok()) << format_errors(made.errors());
  return made.ok() ? std::move(made).value() : nullptr;
}

TEST(CudaBackend, StreamModeEnqueuesAndTimesEachTaskOnTheDevice) {
  // verify = false, as the validator runs it: calls return at once, the step's kernels are
  // timed on the device when it ends, per task, in issue order and one after the other.
  STEPSIM_SKIP_WITHOUT_GPU();
  auto made = stream_mode();
  ASSERT_NE(made, nullptr);
  Backend& b = *made;
  ASSERT_TRUE(b.deferred_timing());
  AttentionOp a;
  a.batch = 1;
  a.heads = 8;
  a.kv_heads = 8;
  a.seq = 1024;
  a.head_dim = 128;
  for (int step = 0; step < 2; ++step) {  // the second step reuses every plan and operand
    ASSERT_TRUE(b.begin_step().ok());
    b.tag(0);
    auto g =
        b.gemm({.m = 4096, .n = 4096, .k = 4096, .dtype = DType::kBf16, .layout = GemmLayout::kTN});
    ASSERT_TRUE(g.ok()) << format_errors(g.errors());
    EXPECT_EQ(g.value(), 0.0);
    b.tag(1);
    ASSERT_TRUE(b.attention(a).ok());
    b.tag(2);  // two launches, one task
    ASSERT_TRUE(b.memory_bound(MemoryBoundOp{std::int64_t{64} << 20}).ok());
    ASSERT_TRUE(b.memory_bound(MemoryBoundOp{std::int64_t{64} << 20}).ok());
    auto t = b.end_step();
    ASSERT_TRUE(t.ok()) << format_errors(t.errors());
    ASSERT_EQ(t.value().size(), 3U);
    for (std::size_t i = 0; i < 3; ++i) {
      const auto& d = t.value()[i];
      EXPECT_EQ(d.task, static_cast<std::int64_t>(i));
      EXPECT_GT(d.busy_s, 0.0);
      EXPECT_GE(d.end_s - d.start_s, d.busy_s - 1e-6);
      if (i > 0) {
        EXPECT_GE(d.start_s, t.value()[i - 1].end_s - 1e-6);
      }
    }
    // 137 GFLOP at well under Hopper's 989 TFLOP/s peak: over 0.1 ms, under 10 ms.
    EXPECT_GT(t.value()[0].busy_s, 1e-4);
    EXPECT_LT(t.value()[0].busy_s, 1e-2);
  }
}

// Two steps of a GEMM (task 0), `post` (task 1), a GEMM (task 2), `wait`, then a small kernel
// (task 3): the posted work starts when the first GEMM is done, runs beside the second, and
// the kernel after the wait starts when both are done.
void expect_posted_beside_compute(Backend& b, const std::function<void()>& post,
                                  const std::function<void()>& wait) {
  const GemmOp big{
      .m = 8192, .n = 8192, .k = 8192, .dtype = DType::kBf16, .layout = GemmLayout::kTN};
  for (int step = 0; step < 2; ++step) {
    ASSERT_TRUE(b.begin_step().ok());
    b.tag(0);
    ASSERT_TRUE(b.gemm(big).ok());
    b.tag(1);
    post();
    b.tag(2);
    ASSERT_TRUE(b.gemm(big).ok());
    wait();
    b.tag(3);
    ASSERT_TRUE(b.memory_bound(MemoryBoundOp{std::int64_t{1} << 20}).ok());
    auto t = b.end_step();
    ASSERT_TRUE(t.ok()) << format_errors(t.errors());
    std::map<std::int64_t, Backend::DeviceTiming> by_task;
    for (const auto& d : t.value()) by_task[d.task] = d;
    ASSERT_EQ(by_task.size(), 4U) << "each task timed once, the posted one as one";
    const auto &first = by_task[0], &posted = by_task[1], &beside = by_task[2], &after = by_task[3];
    EXPECT_GT(posted.busy_s, 0.0);
    EXPECT_GE(posted.start_s, first.end_s - 1e-6) << "it waited for the compute before it";
    EXPECT_LT(beside.start_s, posted.end_s) << "the GEMM after it ran beside it";
    EXPECT_GE(after.start_s, posted.end_s - 1e-6) << "the compute stream waited for it";
    EXPECT_GE(after.start_s, beside.end_s - 1e-6);
  }
}

TEST(CudaBackend, StreamModePostsCollectivesOnACommunicationStream) {
  // overlap_grad_reduce as the validator runs it on a GPU. One rank: NCCL's all-reduce is a
  // device copy, but it runs on the communication stream all the same.
  STEPSIM_SKIP_WITHOUT_GPU();
  auto made = stream_mode();
  ASSERT_NE(made, nullptr);
  Backend& b = *made;
  ASSERT_TRUE(b.async_collectives());
  auto g = b.split(0, b.world_rank(), CommOptions{});
  ASSERT_TRUE(g.ok());
  CollectiveOp reduce;
  reduce.kind = CollectiveKind::kAllReduce;
  reduce.bytes = std::int64_t{1} << 30;
  reduce.group_size = b.world_size();
  CollectiveHandle h;
  expect_posted_beside_compute(
      b,
      [&] {
        auto posted = b.post_collective(reduce, g.value());
        ASSERT_TRUE(posted.ok()) << format_errors(posted.errors());
        h = posted.value();
      },
      [&] {
        auto done = b.wait_collective(h);
        ASSERT_TRUE(done.ok()) << format_errors(done.errors());
        EXPECT_LE(done.value().posted_s, done.value().completed_s);
        EXPECT_FALSE(b.wait_collective(h).ok()) << "each handle is waited for once";
      });
}

TEST(CudaBackend, StreamModePostsATasksTransfersAsOneGroupBesideTheCompute) {
  // overlap_p2p_comm as the validator runs it on a GPU: one task's posted transfers go out
  // together on the point-to-point stream. One rank: a send to itself and its receive (NCCL
  // allows a rank to send to itself).
  STEPSIM_SKIP_WITHOUT_GPU();
  auto made = stream_mode();
  ASSERT_NE(made, nullptr);
  Backend& b = *made;
  ASSERT_TRUE(b.async_p2p());
  const std::int64_t bytes = std::int64_t{1} << 30;
  const std::int32_t me = b.world_rank();
  std::vector<P2PHandle> handles;
  expect_posted_beside_compute(
      b,
      [&] {  // a call of two transfers, each with its handle
        handles.clear();
        for (const bool send : {true, false}) {
          auto posted = b.post_p2p({P2PRequest{send, bytes, me, 0}});
          ASSERT_TRUE(posted.ok()) << format_errors(posted.errors());
          handles.push_back(posted.value());
        }
      },
      [&] {
        for (const P2PHandle h : handles) {
          auto done = b.wait_p2p(h);
          ASSERT_TRUE(done.ok()) << format_errors(done.errors());
          EXPECT_LE(done.value().posted_s, done.value().completed_s);
        }
        EXPECT_FALSE(b.wait_p2p(P2PHandle{99}).ok());
      });
}

}  // namespace
}  // namespace stepsim::calib
