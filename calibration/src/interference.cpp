#include "interference.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>

#include "bench_math.hpp"
#include "stepsim/calibration/mpi_session.hpp"

namespace stepsim::calib {
namespace {

constexpr int kAloneCalls = 5;       // GEMM calls timed alone
constexpr int kAloneColls = 3;       // collectives timed alone
constexpr int kOverlapped = 3;       // overlapped runs
constexpr int kMaxCalls = 40;        // GEMM calls in one overlapped run, at most
constexpr int kMaxCollectives = 64;  // collectives posted in one overlapped run, at most
constexpr int kPosts = 9;            // small calls posted beside GEMMs (and alone), per kind
constexpr std::int64_t kPostedBytes = std::int64_t{64} << 10;  // their size
constexpr double kPostedSpan = 0.01;        // GEMM calls after each post: about this long
constexpr std::int32_t kPostedTag = 32000;  // below the validator's ring tags

double flops(const GemmOp& g) {
  return 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k) *
         static_cast<double>(g.batch);
}

std::string describe(const GemmOp& g) {
  std::string s = std::string(to_string(g.dtype)) + " m=" + std::to_string(g.m) +
                  " n=" + std::to_string(g.n) + " k=" + std::to_string(g.k);
  if (g.batch > 1) s += " batch=" + std::to_string(g.batch);
  return s;
}

std::string describe(const CollectiveOp& c) {
  return std::string(to_string(c.kind)) + " of " + std::to_string(c.bytes) + " bytes over " +
         std::to_string(c.group_size) + " ranks";
}

/// Every rank's value replaced by the largest over the world; an error on any rank is one on
/// all (so that none waits in a later collective).
Result<double> agree(const Result<double>& mine) {
  auto all = max_over_world({mine.ok() ? 0.0 : 1.0, mine.ok() ? mine.value() : 0.0});
  if (!all.ok()) return all.errors();
  if (!mine.ok()) return mine.errors();
  if (all.value()[0] != 0.0) {
    return Error{"", "", "interference microbenchmark stopped: another rank failed",
                 ErrorKind::kRuntime};
  }
  return all.value()[1];
}

/// Wall seconds of one backend GEMM call.
Result<double> gemm_call(Backend& b, const GemmOp& g) {
  const double t0 = b.now_s();
  auto r = b.gemm(g);
  if (!r.ok()) return r.errors();
  return b.now_s() - t0;
}

/// Seconds of one collective on the non-blocking path, posted and waited for at once.
Result<double> collective_alone(Backend& b, const CollectiveOp& c) {
  if (auto ok = b.barrier(GroupId{0}); !ok.ok()) return ok.errors();
  auto h = b.post_collective(c, GroupId{0});
  if (!h.ok()) return h.errors();
  auto done = b.wait_collective(h.value());
  if (!done.ok()) return done.errors();
  return done->completed_s - done->posted_s;
}

Result<double> median_of(int n, const std::function<Result<double>()>& f) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) {
    auto x = f();
    if (!x.ok()) return x.errors();
    v.push_back(x.value());
  }
  return median(std::move(v));
}

struct Overlapped {
  double compute_ratio = 0;     ///< median overlapped call over alone
  double collective_ratio = 0;  ///< the collectives' mean time over alone
};

/// One overlapped run: `collectives` copies of the collective posted back to back (they run
/// one after another on the backend's thread), then `calls` GEMM calls back to back, enough
/// to outlast them.
Result<Overlapped> overlapped_run(Backend& b, const InterferencePair& pair, int collectives,
                                  int calls, double gemm_alone, double coll_alone) {
  if (auto ok = b.barrier(GroupId{0}); !ok.ok()) return ok.errors();
  std::vector<CollectiveHandle> handles;
  for (int i = 0; i < collectives; ++i) {
    auto h = b.post_collective(pair.collective, GroupId{0});
    if (!h.ok()) return h.errors();
    handles.push_back(h.value());
  }
  std::vector<std::pair<double, double>> spans;
  for (int i = 0; i < calls; ++i) {
    const double t0 = b.now_s();
    auto r = b.gemm(pair.gemm);
    if (!r.ok()) return r.errors();
    spans.emplace_back(t0, b.now_s());
  }
  double first_post = 0;
  double last_done = 0;
  for (std::size_t i = 0; i < handles.size(); ++i) {
    auto done = b.wait_collective(handles[i]);
    if (!done.ok()) return done.errors();
    if (i == 0) first_post = done->posted_s;
    last_done = done->completed_s;
  }
  std::vector<double> inside;
  for (const auto& [start, end] : spans) {
    if (end <= last_done) inside.push_back(end - start);
  }
  Overlapped o;
  // No call entirely inside (the collectives ended during the first): that call's ratio,
  // which understates the slowdown by the part of it that ran alone.
  o.compute_ratio =
      (inside.empty() ? spans.front().second - spans.front().first : median(inside)) / gemm_alone;
  o.collective_ratio = (last_done - first_post) / static_cast<double>(collectives) / coll_alone;
  return o;
}

/// One small call posted, `calls` GEMM calls (none: waited for at once), then waited for:
/// seconds from the post to its completion as the backend saw it. `p2p`: a send to the next
/// rank and a receive from the previous one (one handle each, as the validator posts them),
/// else an all-reduce over the world.
Result<double> posted_call(Backend& b, bool p2p, int calls, const GemmOp& gemm) {
  if (auto ok = b.barrier(GroupId{0}); !ok.ok()) return ok.errors();
  const std::int32_t n = b.world_size();
  const std::int32_t me = b.world_rank();
  std::vector<P2PHandle> transfers;
  CollectiveHandle collective;
  if (p2p) {
    for (const P2PRequest& q : {P2PRequest{true, kPostedBytes, (me + 1) % n, kPostedTag},
                                P2PRequest{false, kPostedBytes, (me + n - 1) % n, kPostedTag}}) {
      auto h = b.post_p2p({q});
      if (!h.ok()) return h.errors();
      transfers.push_back(h.value());
    }
  } else {
    auto h = b.post_collective(CollectiveOp{.kind = CollectiveKind::kAllReduce,
                                            .group = CommGroup::kData,
                                            .bytes = kPostedBytes,
                                            .group_size = n},
                               GroupId{0});
    if (!h.ok()) return h.errors();
    collective = h.value();
  }
  for (int i = 0; i < calls; ++i) {
    if (auto r = b.gemm(gemm); !r.ok()) return r.errors();
  }
  double posted = 0;
  double completed = 0;
  if (p2p) {
    for (std::size_t i = 0; i < transfers.size(); ++i) {
      auto done = b.wait_p2p(transfers[i]);
      if (!done.ok()) return done.errors();
      if (i == 0) posted = done->posted_s;
      completed = std::max(completed, done->completed_s);
    }
  } else {
    auto done = b.wait_collective(collective);
    if (!done.ok()) return done.errors();
    posted = done->posted_s;
    completed = done->completed_s;
  }
  return completed - posted;
}

/// How much later than alone a small posted call completes while the caller computes: the
/// median over kPosts posts beside about kPostedSpan of GEMM calls, less the median of the
/// call posted and waited for at once; the largest over the ranks.
Result<double> post_latency(Backend& b, bool p2p, const GemmOp& gemm, double gemm_alone) {
  const int calls = static_cast<int>(std::clamp(std::ceil(kPostedSpan / gemm_alone), 1.0, 200.0));
  auto alone = agree(median_of(kPosts, [&] { return posted_call(b, p2p, 0, gemm); }));
  if (!alone.ok()) return alone.errors();
  auto beside = agree(median_of(kPosts, [&] { return posted_call(b, p2p, calls, gemm); }));
  if (!beside.ok()) return beside.errors();
  return std::max(0.0, beside.value() - alone.value());
}

}  // namespace

InterferencePair interference_pair(const std::vector<BenchPoint>& points, std::int32_t world_size) {
  InterferencePair pair;
  pair.gemm = GemmOp{.m = 1024, .n = 1024, .k = 1024, .batch = 1, .dtype = DType::kFp32};
  bool have_gemm = false;
  std::int64_t bytes = 0;
  for (const BenchPoint& p : points) {
    if (const auto* g = std::get_if<GemmOp>(&p)) {
      if (!have_gemm || flops(*g) > flops(pair.gemm)) pair.gemm = *g;
      have_gemm = true;
    } else if (const auto* c = std::get_if<CollectivePoint>(&p)) {
      if (c->group_size == world_size) bytes = std::max(bytes, c->bytes);
    }
  }
  if (bytes <= 0) bytes = std::int64_t{16} << 20;
  pair.collective = CollectiveOp{.kind = CollectiveKind::kAllReduce,
                                 .group = CommGroup::kData,
                                 .bytes = bytes,
                                 .group_size = world_size};
  return pair;
}

Result<MeasuredInterference> measure_interference(Backend& b, InterferencePair pair) {
  if (!b.async_collectives() || b.world_size() < 2) {
    return Error{"", "",
                 "interference microbenchmark: needs two or more ranks and a backend that runs "
                 "a collective beside its caller",
                 ErrorKind::kInternal};
  }
  auto gemm_alone = agree(median_of(kAloneCalls, [&] { return gemm_call(b, pair.gemm); }));
  if (!gemm_alone.ok()) return gemm_alone.errors();
  auto coll_alone =
      agree(median_of(kAloneColls, [&] { return collective_alone(b, pair.collective); }));
  if (!coll_alone.ok()) return coll_alone.errors();
  // Enough collectives back to back to outlast three GEMM calls, and calls enough to outlast
  // those slowed twice over: the same counts on every rank (the backend's calibration GEMM
  // starts its timed runs together).
  const int collectives = static_cast<int>(std::clamp(
      std::ceil(3.0 * gemm_alone.value() / coll_alone.value()), 1.0, double{kMaxCollectives}));
  const int calls = static_cast<int>(
      std::clamp(std::ceil(2.0 * collectives * coll_alone.value() / gemm_alone.value()) + 1, 3.0,
                 double{kMaxCalls}));
  std::vector<double> compute, collective;
  for (int i = 0; i < kOverlapped; ++i) {
    auto o = overlapped_run(b, pair, collectives, calls, gemm_alone.value(), coll_alone.value());
    auto c = agree(o.ok() ? Result<double>(o->compute_ratio) : Result<double>(o.errors()));
    if (!c.ok()) return c.errors();
    auto k = agree(o->collective_ratio);
    if (!k.ok()) return k.errors();
    compute.push_back(c.value());
    collective.push_back(k.value());
  }
  MeasuredInterference m;
  m.compute_slowdown = std::clamp(median(compute), 1.0, 10.0);
  m.collective_slowdown = std::clamp(median(collective), 1.0, 10.0);
  m.gemm = describe(pair.gemm);
  m.collective = describe(pair.collective);
  // The latency of small posted calls, on the threads that run each kind.
  const CollectiveOp small{.kind = CollectiveKind::kAllReduce,
                           .group = CommGroup::kData,
                           .bytes = kPostedBytes,
                           .group_size = b.world_size()};
  auto coll_latency = post_latency(b, false, pair.gemm, gemm_alone.value());
  if (!coll_latency.ok()) return coll_latency.errors();
  m.collective_post_latency_s = coll_latency.value();
  m.posted = describe(small);
  if (b.async_p2p()) {
    auto p2p_latency = post_latency(b, true, pair.gemm, gemm_alone.value());
    if (!p2p_latency.ok()) return p2p_latency.errors();
    m.p2p_post_latency_s = p2p_latency.value();
    m.posted = "send/recv of " + std::to_string(kPostedBytes) + " bytes, " + m.posted;
  }
  return m;
}

}  // namespace stepsim::calib
