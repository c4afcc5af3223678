// CpuBackend and the runner across ranks: run under mpirun with 2 (or more) ranks.

#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "mpi_environment.hpp"
#include "stepsim/calibration/backend.hpp"
#include "stepsim/calibration/calibrate.hpp"

namespace stepsim::calib {
namespace {

std::unique_ptr<Backend> cpu() {
  BackendOptions o;
  o.warmup = 1;
  o.repeats = 2;
  auto b = make_backend("cpu", o);
  EXPECT_TRUE(b.ok());
  return std::move(b).value();
}

TEST(CpuBackendMpi, HasSeveralRanks) {
  auto b = cpu();
  ASSERT_GE(b->world_size(), 2) << "run this test under mpirun -np 2";
}

// MpiSession::start asks Open MPI to yield the core while a call waits: the backend's
// progress and collective threads share the cores with the rank's compute. Read back through
// MPI's tool interface, where the library exposes the variable.
TEST(CpuBackendMpi, OpenMpiYieldsTheCoreWhileACallWaits) {
  const char* env = std::getenv("OMPI_MCA_mpi_yield_when_idle");
  ASSERT_NE(env, nullptr);
  EXPECT_STREQ(env, "1");
  int provided = 0;
  // The session's thread level: Open MPI's MPI_T_init_thread sets the process's level to the
  // one asked for (with MPI_THREAD_SINGLE here, the later tests lost MPI_THREAD_MULTIPLE).
  ASSERT_EQ(MPI_T_init_thread(MPI_THREAD_MULTIPLE, &provided), MPI_SUCCESS);
  int index = -1;
  if (MPI_T_cvar_get_index("mpi_yield_when_idle", &index) != MPI_SUCCESS) {
    MPI_T_finalize();
    GTEST_SKIP() << "this MPI has no mpi_yield_when_idle control variable (not Open MPI)";
  }
  MPI_T_cvar_handle handle{};
  int count = 0;
  ASSERT_EQ(MPI_T_cvar_handle_alloc(index, nullptr, &handle, &count), MPI_SUCCESS);
  int value = 0;  // a bool variable, read as MPI_INT
  EXPECT_EQ(MPI_T_cvar_read(handle, &value), MPI_SUCCESS);
  EXPECT_NE(value, 0);
  MPI_T_cvar_handle_free(&handle);
  MPI_T_finalize();
}

TEST(CpuBackendMpi, CollectivesAreCorrectOnSplitGroups) {
  auto b = cpu();
  const std::int32_t n = b->world_size();
  // The world as one group, pairs (contiguous), and everyone alone.
  auto pairs = b->split(b->world_rank() / 2, b->world_rank(), CommOptions{});
  auto alone = b->split(b->world_rank(), 0, CommOptions{});
  ASSERT_TRUE(pairs.ok() && alone.ok());
  EXPECT_EQ(b->group_size(pairs.value()), std::min(2, n - b->world_rank() / 2 * 2));
  EXPECT_EQ(b->group_size(alone.value()), 1);
  for (const GroupId g : {GroupId{0}, pairs.value(), alone.value()}) {
    for (const CollectiveKind kind : {CollectiveKind::kAllReduce, CollectiveKind::kAllGather,
                                      CollectiveKind::kReduceScatter, CollectiveKind::kAllToAll}) {
      for (const std::int64_t bytes : {std::int64_t{64}, std::int64_t{1} << 20}) {
        CollectiveOp op;
        op.kind = kind;
        op.bytes = bytes;
        op.group_size = b->group_size(g);
        auto t = b->collective(op, g);
        ASSERT_TRUE(t.ok()) << to_string(kind) << " " << bytes << ": " << format_errors(t.errors());
        EXPECT_GE(t.value(), 0.0);
      }
    }
  }
}

TEST(CpuBackendMpi, PointToPointBothWaysAtOnce) {
  auto b = cpu();
  const std::int32_t me = b->world_rank();
  if (me > 1) {
    SUCCEED();
    return;
  }
  const std::int32_t peer = 1 - me;
  // Two messages each way with different tags and sizes, posted together.
  const std::vector<P2PRequest> reqs{{true, 1000, peer, 1},
                                     {true, 300000, peer, 2},
                                     {false, 1000, peer, 1},
                                     {false, 300000, peer, 2}};
  auto t = b->p2p(reqs);
  ASSERT_TRUE(t.ok()) << format_errors(t.errors());
  EXPECT_GT(t.value(), 0.0);
}

// Megatron's non-blocking P2P (overlap_p2p_comm): the transfer progresses on the backend's
// thread while both ranks compute, so it is done long before the ranks wait for it.
TEST(CpuBackendMpi, NonBlockingTransferProgressesBesideCompute) {
  auto b = cpu();
  ASSERT_TRUE(b->async_p2p()) << "MPI did not give MPI_THREAD_MULTIPLE";
  const std::int32_t me = b->world_rank();
  if (me > 1) {
    (void)b->barrier(GroupId{0});
    return;
  }
  ASSERT_TRUE(b->align_clocks().ok());
  const std::int64_t bytes = std::int64_t{1} << 20;  // a rendezvous message
  ASSERT_TRUE(b->barrier(GroupId{0}).ok());
  // Rank 0 receives, rank 1 sends; then both compute for much longer than the transfer.
  auto h = b->post_p2p({P2PRequest{me == 1, bytes, 1 - me, 7}});
  ASSERT_TRUE(h.ok()) << format_errors(h.errors());
  const double posted = b->now_s();
  // Compute on this core (no MPI call) for 0.2 s: only the backend's thread drives MPI.
  volatile double sink = 0;
  while (b->now_s() - posted < 0.2) {
    for (int i = 0; i < 10000; ++i) sink = sink + 1e-9 * i;
  }
  const double waited = b->now_s();
  auto done = b->wait_p2p(h.value());
  ASSERT_TRUE(done.ok()) << format_errors(done.errors());
  EXPECT_LE(done->posted_s, posted);
  EXPECT_GE(done->completed_s, done->posted_s);
  // Seen done while the rank computed, not when it came to wait.
  EXPECT_LT(done->completed_s, waited - 0.1)
      << "posted " << done->posted_s << " completed " << done->completed_s << " waited " << waited;
  EXPECT_FALSE(b->wait_p2p(h.value()).ok());  // a handle is waited for once
  (void)b->barrier(GroupId{0});
}

// Megatron's overlapped gradient reduction (overlap_grad_reduce): posted collectives run in
// posting order on the backend's collective thread while the rank computes, on the world and
// on a split group alike.
TEST(CpuBackendMpi, PostedCollectivesRunInOrderBesideTheCaller) {
  auto b = cpu();
  ASSERT_TRUE(b->async_collectives()) << "MPI did not give MPI_THREAD_MULTIPLE";
  ASSERT_TRUE(b->align_clocks().ok());
  auto pairs = b->split(b->world_rank() / 2, b->world_rank(), CommOptions{});
  ASSERT_TRUE(pairs.ok());
  ASSERT_TRUE(b->barrier(GroupId{0}).ok());
  const std::int64_t bytes = std::int64_t{8} << 20;
  const CollectiveOp reduce{.kind = CollectiveKind::kAllReduce,
                            .group = CommGroup::kData,
                            .bytes = bytes,
                            .group_size = b->world_size()};
  auto first = b->post_collective(reduce, GroupId{0});
  auto second = b->post_collective(CollectiveOp{.kind = CollectiveKind::kAllGather,
                                                .group = CommGroup::kData,
                                                .bytes = bytes,
                                                .group_size = b->group_size(pairs.value())},
                                   pairs.value());
  ASSERT_TRUE(first.ok() && second.ok());
  // The caller does something else than MPI for 0.4 s (sleeps, so that the collective thread
  // has the core: what it costs a computing caller is calibration's interference figure).
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  const double waited = b->now_s();
  auto a = b->wait_collective(second.value());  // waited for out of order: fine
  auto c = b->wait_collective(first.value());
  ASSERT_TRUE(a.ok() && c.ok());
  EXPECT_LE(c->completed_s, a->completed_s);  // run in posting order
  EXPECT_GE(c->completed_s, c->posted_s);
  EXPECT_LT(a->completed_s, waited - 0.1)
      << "posted " << a->posted_s << " completed " << a->completed_s << " waited " << waited;
  EXPECT_FALSE(b->wait_collective(first.value()).ok());  // a handle is waited for once
  (void)b->barrier(GroupId{0});
}

TEST(CpuBackendMpi, GatherAndClocks) {
  auto b = cpu();
  auto offset = b->align_clocks();
  ASSERT_TRUE(offset.ok());
  if (b->world_rank() == 0) {
    EXPECT_EQ(offset.value(), 0.0);
  }
  // All ranks run on this machine's one steady clock, so the estimated offsets are small.
  EXPECT_LT(std::abs(offset.value()), 0.05);
  auto all = b->gather_to_root(std::vector<double>(static_cast<std::size_t>(b->world_rank() + 1),
                                                   static_cast<double>(b->world_rank())));
  ASSERT_TRUE(all.ok());
  if (b->world_rank() != 0) {
    EXPECT_TRUE(all.value().empty());
    return;
  }
  ASSERT_EQ(all.value().size(), static_cast<std::size_t>(b->world_size()));
  for (std::size_t r = 0; r < all.value().size(); ++r) {
    EXPECT_EQ(all.value()[r], std::vector<double>(r + 1, static_cast<double>(r)));
  }
}

TEST(RunCalibrationMpi, MeasuresCollectivesAndMessages) {
  auto b = cpu();
  BenchPlanOptions o;
  o.node_ids = std::vector<std::int32_t>(static_cast<std::size_t>(b->world_size()), 0);
  std::vector<BenchPoint> points{GemmOp{64, 64, 64, 1, DType::kFp32}};
  for (const std::int64_t bytes :
       {std::int64_t{1} << 10, std::int64_t{1} << 16, std::int64_t{1} << 20}) {
    points.emplace_back(
        CollectivePoint{CollectiveKind::kAllReduce, 2, GroupLayout::kContiguous, 1, bytes});
    points.emplace_back(
        CollectivePoint{CollectiveKind::kAllGather, 2, GroupLayout::kContiguous, 1, bytes});
    points.emplace_back(P2PPoint{0, 1, false, bytes});
  }
  CalibrationOptions opts;  // no journal
  auto run = run_calibration(*b, points, opts, nullptr);
  ASSERT_TRUE(run.ok()) << format_errors(run.errors());
  EXPECT_TRUE(run.value().complete);
  EXPECT_EQ(run.value().measured, static_cast<std::int64_t>(points.size()));
  if (b->world_rank() != 0) return;
  const Profile& p = run.value().profile;
  EXPECT_EQ(p.world_size, b->world_size());
  ASSERT_EQ(p.collectives.size(), 6u);
  ASSERT_EQ(p.p2p.size(), 3u);
  for (const auto& c : p.collectives) EXPECT_GT(c.seconds, 0.0);
  EXPECT_FALSE(p.collective_fits.empty());
  EXPECT_FALSE(p.p2p_fits.empty());
  // Then the interference microbenchmark: the largest GEMM beside an all-reduce over the
  // world of the largest world collective's size (a 64^3 GEMM call is far shorter than it).
  ASSERT_TRUE(p.interference.measured());
  EXPECT_EQ(p.interference.gemm, "fp32 m=64 n=64 k=64");
  EXPECT_EQ(p.interference.collective,
            "all_reduce of 1048576 bytes over " + std::to_string(b->world_size()) + " ranks");
  for (const double x : {p.interference.compute_slowdown, p.interference.collective_slowdown}) {
    EXPECT_GE(x, 1.0);
    EXPECT_LE(x, 10.0);
  }
}

}  // namespace
}  // namespace stepsim::calib
