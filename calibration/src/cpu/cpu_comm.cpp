// CpuBackend's communication: MPI collectives on split communicators and batched
// point-to-point, each result checked like nccl-tests do.

#include <sys/prctl.h>

#include <chrono>
#include <cmath>
#include <string>
#include <thread>

#include "bench_math.hpp"
#include "cpu/cpu_backend.hpp"
#include "mpi/mpi_check.hpp"

namespace stepsim::calib {
namespace {

double steady_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

constexpr std::int64_t kMaxMessageBytes = std::int64_t{1} << 31;

}  // namespace

namespace {

/// One MPI collective of `per` floats per rank (the per-rank share of nccl-tests' size).
int run_collective(CollectiveKind kind, const float* in, float* out, int per, MPI_Comm comm) {
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return MPI_Allreduce(in, out, per, MPI_FLOAT, MPI_SUM, comm);
    case CollectiveKind::kAllGather:
      return MPI_Allgather(in, per, MPI_FLOAT, out, per, MPI_FLOAT, comm);
    case CollectiveKind::kReduceScatter:
      return MPI_Reduce_scatter_block(in, out, per, MPI_FLOAT, MPI_SUM, comm);
    case CollectiveKind::kAllToAll:
      // `per` floats to and from each member, as NCCL's grouped sends and receives move them.
      return MPI_Alltoall(in, per, MPI_FLOAT, out, per, MPI_FLOAT, comm);
    case CollectiveKind::kDeepEpDispatch:  // DeepEP is not MPI (validate refuses flex)
    case CollectiveKind::kDeepEpCombine:
      break;
  }
  return MPI_ERR_OP;
}

}  // namespace

Result<CollectiveCounts> CpuBackend::check_collective(const CollectiveOp& op, GroupId group) const {
  if (!world_.valid(group)) {
    return Error{"", "", "cpu backend: unknown process group " + std::to_string(group.value),
                 ErrorKind::kRuntime};
  }
  const CollectiveCounts counts = collective_counts(op.kind, op.bytes, world_.group_size(group), 4);
  if (std::max(counts.in, counts.out) * 4 > kMaxMessageBytes) {
    return Error{"", "",
                 "cpu backend: collective of " + std::to_string(op.bytes) +
                     " bytes is larger than MPI's int counts allow",
                 ErrorKind::kRuntime};
  }
  return counts;
}

Result<double> CpuBackend::collective(const CollectiveOp& op, GroupId group) {
  auto checked = check_collective(op, group);
  if (!checked) return checked.errors();
  const CollectiveCounts counts = *checked;
  const std::int64_t n = world_.group_size(group);
  const std::int64_t g = world_.group_rank(group);
  if (!options_.verify) return collective_unverified(op, group);
  std::vector<float> in(static_cast<std::size_t>(counts.in));
  std::vector<float> out(static_cast<std::size_t>(counts.out), -1.0F);
  for (std::int64_t i = 0; i < counts.in; ++i)
    in[static_cast<std::size_t>(i)] = pattern_value(g, i);
  const MPI_Comm comm = world_.comm(group);
  const int per = static_cast<int>(counts.per_rank);

  int rc = MPI_SUCCESS;
  auto run = [&] { rc = run_collective(op.kind, in.data(), out.data(), per, comm); };
  const int repeats = options_.repeats > 0 ? options_.repeats : 1;
  std::vector<double> times;
  for (int i = 0; i < options_.warmup + repeats; ++i) {
    // Start together so the time is the collective's, not the wait for late members.
    int brc = MPI_Barrier(comm);
    if (brc != MPI_SUCCESS) return mpi_error("MPI_Barrier", brc);
    const double t0 = steady_s();
    run();
    const double dt = steady_s() - t0;
    if (rc != MPI_SUCCESS) return mpi_error(std::string(to_string(op.kind)), rc);
    if (i >= options_.warmup) times.push_back(dt);
  }
  std::int64_t wrong = 0;
  std::int64_t first_wrong = -1;
  for (std::int64_t j = 0; j < counts.out; ++j) {
    if (out[static_cast<std::size_t>(j)] != expected_value(op.kind, g, n, counts.per_rank, j)) {
      if (wrong++ == 0) first_wrong = j;
    }
  }
  // Every member learns whether any member saw a wrong result, so all return the same.
  std::int64_t wrong_total = 0;
  rc = MPI_Allreduce(&wrong, &wrong_total, 1, MPI_INT64_T, MPI_SUM, comm);
  if (rc != MPI_SUCCESS) return mpi_error("MPI_Allreduce", rc);
  if (wrong_total != 0) {
    return Error{
        "", "",
        "cpu backend: " + std::string(to_string(op.kind)) + " of " + std::to_string(op.bytes) +
            " bytes over " + std::to_string(n) + " ranks gave " + std::to_string(wrong_total) +
            " wrong elements" +
            (first_wrong >= 0 ? " (first on this rank at " + std::to_string(first_wrong) + ")"
                              : std::string())};
  }
  auto maxima = world_.max_over_group(times, group);
  if (!maxima.ok()) return maxima.errors();
  return median(maxima.value());
}

std::vector<float>& CpuBackend::floats(std::int64_t count, int slot) {
  // Two slots (input, output) per size: the key's low bit says which.
  std::vector<float>& v = float_cache_[count * 2 + slot];
  if (v.size() != static_cast<std::size_t>(count)) v.assign(static_cast<std::size_t>(count), 1.0F);
  return v;
}

// The collective as training issues it: no barrier first, no checks, buffers kept. Its time
// includes waiting for late members, as it does in a real step.
Result<double> CpuBackend::collective_unverified(const CollectiveOp& op, GroupId group) {
  const std::int64_t n = world_.group_size(group);
  const CollectiveCounts counts = collective_counts(op.kind, op.bytes, n, 4);
  std::vector<float>& in = floats(counts.in, 0);
  std::vector<float>& out = floats(counts.out, 1);
  const MPI_Comm comm = world_.comm(group);
  const int per = static_cast<int>(counts.per_rank);
  int rc = MPI_SUCCESS;
  const auto times =
      time_repeats([&] { rc = run_collective(op.kind, in.data(), out.data(), per, comm); });
  if (rc != MPI_SUCCESS) return mpi_error(std::string(to_string(op.kind)), rc);
  return median(times);
}

// Megatron's batched isend/irecv and wait, with buffers kept per size and no handshake.
Result<double> CpuBackend::p2p_unverified(const std::vector<P2PRequest>& requests) {
  const MPI_Comm world = world_.comm(GroupId{0});
  std::vector<std::uint8_t*> data(requests.size());
  for (std::size_t r = 0; r < requests.size(); ++r) {
    // Several legs of one call may have the same size: key each leg by size and position.
    std::vector<std::uint8_t>& buf =
        byte_cache_[requests[r].bytes * 16 + static_cast<std::int64_t>(r % 16)];
    buf.resize(static_cast<std::size_t>(requests[r].bytes));
    data[r] = buf.data();
  }
  std::vector<MPI_Request> handles(requests.size(), MPI_REQUEST_NULL);
  int rc = MPI_SUCCESS;
  const auto times = time_repeats([&] {
    for (std::size_t r = 0; r < requests.size() && rc == MPI_SUCCESS; ++r) {
      const P2PRequest& q = requests[r];
      const int count = static_cast<int>(q.bytes);
      rc = q.send ? MPI_Isend(data[r], count, MPI_BYTE, q.peer, q.tag, world, &handles[r])
                  : MPI_Irecv(data[r], count, MPI_BYTE, q.peer, q.tag, world, &handles[r]);
    }
    if (rc == MPI_SUCCESS) {
      rc = MPI_Waitall(static_cast<int>(handles.size()), handles.data(), MPI_STATUSES_IGNORE);
    }
  });
  if (rc != MPI_SUCCESS) return mpi_error("point-to-point", rc);
  return median(times);
}

Status CpuBackend::check_requests(const std::vector<P2PRequest>& requests) const {
  for (const P2PRequest& q : requests) {
    if (q.peer < 0 || q.peer >= world_.size() || q.peer == world_.rank()) {
      return Error{"", "",
                   "cpu backend: point-to-point peer " + std::to_string(q.peer) +
                       " is not another rank of the world of " + std::to_string(world_.size()),
                   ErrorKind::kRuntime};
    }
    if (q.bytes <= 0 || q.bytes > kMaxMessageBytes) {
      return Error{"", "",
                   "cpu backend: point-to-point message of " + std::to_string(q.bytes) +
                       " bytes is out of range",
                   ErrorKind::kRuntime};
    }
  }
  return ok_status();
}

Result<double> CpuBackend::p2p(const std::vector<P2PRequest>& requests) {
  const MPI_Comm world = world_.comm(GroupId{0});
  std::vector<std::vector<std::uint8_t>> buffers(requests.size());
  if (auto checked = check_requests(requests); !checked) return checked.errors();
  if (!options_.verify) return p2p_unverified(requests);
  for (std::size_t r = 0; r < requests.size(); ++r) {
    buffers[r].resize(static_cast<std::size_t>(requests[r].bytes));
  }
  for (std::size_t r = 0; r < requests.size(); ++r) {
    if (!requests[r].send) continue;
    auto& buf = buffers[r];
    for (std::size_t i = 0; i < buf.size(); ++i) {
      buf[i] = p2p_pattern(world_.rank(), requests[r].tag, static_cast<std::int64_t>(i));
    }
  }
  const std::vector<std::int32_t> peers = distinct_peers(requests);
  auto exchange = [&]() -> Result<double> {
    for (std::size_t r = 0; r < requests.size(); ++r) {
      if (!requests[r].send) std::fill(buffers[r].begin(), buffers[r].end(), std::uint8_t{0});
    }
    auto shake = world_.handshake(peers);
    if (!shake.ok()) return shake.errors();
    std::vector<MPI_Request> handles(requests.size(), MPI_REQUEST_NULL);
    const double t0 = steady_s();
    for (std::size_t r = 0; r < requests.size(); ++r) {
      const P2PRequest& q = requests[r];
      const int count = static_cast<int>(q.bytes);
      const int rc =
          q.send ? MPI_Isend(buffers[r].data(), count, MPI_BYTE, q.peer, q.tag, world, &handles[r])
                 : MPI_Irecv(buffers[r].data(), count, MPI_BYTE, q.peer, q.tag, world, &handles[r]);
      if (rc != MPI_SUCCESS) return mpi_error(q.send ? "MPI_Isend" : "MPI_Irecv", rc);
    }
    const int rc =
        MPI_Waitall(static_cast<int>(handles.size()), handles.data(), MPI_STATUSES_IGNORE);
    const double dt = steady_s() - t0;
    if (rc != MPI_SUCCESS) return mpi_error("MPI_Waitall", rc);
    return dt;
  };
  std::vector<double> times;
  const int repeats = options_.repeats > 0 ? options_.repeats : 1;
  for (int i = 0; i < options_.warmup + repeats; ++i) {
    auto dt = exchange();
    if (!dt.ok()) return dt;
    if (i >= options_.warmup) times.push_back(dt.value());
  }
  for (std::size_t r = 0; r < requests.size(); ++r) {
    const P2PRequest& q = requests[r];
    if (q.send) continue;
    for (std::size_t i = 0; i < buffers[r].size(); ++i) {
      if (buffers[r][i] != p2p_pattern(q.peer, q.tag, static_cast<std::int64_t>(i))) {
        return Error{"", "",
                     "cpu backend: message from rank " + std::to_string(q.peer) + " (tag " +
                         std::to_string(q.tag) + ") wrong at byte " + std::to_string(i),
                     ErrorKind::kRuntime};
      }
    }
  }
  return median(times);
}

namespace {

// The progress thread's poll period while calls of ours are in flight, how long it goes on
// driving MPI's progress after a completion, and its period then (progress_loop).
constexpr auto kPoll = std::chrono::microseconds(20);
constexpr auto kLinger = std::chrono::milliseconds(1);
constexpr auto kLingerPoll = std::chrono::microseconds(200);

}  // namespace

Result<P2PHandle> CpuBackend::post_p2p(const std::vector<P2PRequest>& requests) {
  if (!thread_multiple_) {
    return Error{"", "",
                 "cpu backend: non-blocking point-to-point needs MPI_THREAD_MULTIPLE, which "
                 "this MPI did not provide",
                 ErrorKind::kInternal};
  }
  if (auto checked = check_requests(requests); !checked) return checked.errors();
  const MPI_Comm world = world_.comm(GroupId{0});
  InFlight call;
  call.requests.assign(requests.size(), MPI_REQUEST_NULL);
  call.buffers.resize(requests.size());
  call.posted_s = now_s();
  for (std::size_t r = 0; r < requests.size(); ++r) {
    const P2PRequest& q = requests[r];
    call.buffers[r].resize(static_cast<std::size_t>(q.bytes));
    const int count = static_cast<int>(q.bytes);
    const int rc = q.send ? MPI_Isend(call.buffers[r].data(), count, MPI_BYTE, q.peer, q.tag, world,
                                      &call.requests[r])
                          : MPI_Irecv(call.buffers[r].data(), count, MPI_BYTE, q.peer, q.tag, world,
                                      &call.requests[r]);
    if (rc != MPI_SUCCESS) return mpi_error(q.send ? "MPI_Isend" : "MPI_Irecv", rc);
  }
  std::int64_t handle = 0;
  {
    std::lock_guard<std::mutex> lock(async_mutex_);
    handle = next_handle_++;
    in_flight_.emplace(handle, std::move(call));
    if (!progress_.joinable()) progress_ = std::thread([this] { progress_loop(); });
  }
  async_cv_.notify_all();
  return P2PHandle{handle};
}

Result<P2PCompletion> CpuBackend::wait_p2p(P2PHandle h) {
  std::unique_lock<std::mutex> lock(async_mutex_);
  const auto it = in_flight_.find(h.value);
  if (it == in_flight_.end()) {
    return Error{"", "",
                 "cpu backend: no non-blocking point-to-point call " + std::to_string(h.value) +
                     " in flight",
                 ErrorKind::kInternal};
  }
  InFlight& call = it->second;
  if (call.completed_s < 0) {
    // The rank has nothing else to do: it waits in MPI itself, as fast as a blocking call,
    // instead of sleeping until the progress thread's next poll. The progress thread leaves
    // the call alone from here (a request is driven by one thread at a time).
    call.waiter_owns = true;
    lock.unlock();
    call.rc = MPI_Waitall(static_cast<int>(call.requests.size()), call.requests.data(),
                          MPI_STATUSES_IGNORE);
    const double completed = now_s();
    lock.lock();
    call.completed_s = completed;
    linger_until_ = std::chrono::steady_clock::now() + kLinger;
    async_cv_.notify_all();
  }
  const InFlight done = std::move(call);
  in_flight_.erase(it);
  if (done.rc != MPI_SUCCESS) return mpi_error("MPI_Testall", done.rc);
  return P2PCompletion{.posted_s = done.posted_s, .completed_s = done.completed_s};
}

// Polls every call in flight with MPI_Testall (which also drives MPI's progress: the
// shared-memory transport copies a large message inside such calls), then sleeps 20 us with
// a 1 us timer slack. The poll costs about a microsecond, so the thread takes a few percent
// of the core it shares with the rank's compute; a completion is seen within ~25 us. After
// the last call completes it goes on driving MPI's progress for a while (kLinger): a
// receiver's rendezvous acknowledgement may still be queued in MPI, and without it the
// sender's request would complete only at this rank's next MPI call, milliseconds later.
// It does so every 200 us (kLingerPoll), not every 20: the context-parallel ring posts a
// step every attention kernel, and a 20 us poll lingering after each kept the core's
// compute 1.5 to 2.7 times slower for most of the step (validation/cp2.json on a 2-vCPU VM:
// error -16% against -10% with the slower linger).
void CpuBackend::progress_loop() {
  prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);  // nanoseconds; the default is 50 us
  std::unique_lock<std::mutex> lock(async_mutex_);
  const auto pending = [this] {
    for (const auto& [handle, call] : in_flight_) {
      if (call.completed_s < 0 && !call.waiter_owns) return true;
    }
    return false;
  };
  const auto lingering = [this] { return std::chrono::steady_clock::now() < linger_until_; };
  for (;;) {
    if (!pending() && !lingering()) {
      async_cv_.wait(lock, [&] { return stop_progress_ || pending() || lingering(); });
    }
    if (stop_progress_) return;
    bool completed = false;
    bool polled = false;
    for (auto& [handle, call] : in_flight_) {
      if (call.completed_s >= 0 || call.waiter_owns) continue;
      int flag = 0;
      polled = true;
      call.rc = MPI_Testall(static_cast<int>(call.requests.size()), call.requests.data(), &flag,
                            MPI_STATUSES_IGNORE);
      if (flag != 0 || call.rc != MPI_SUCCESS) {
        call.completed_s = now_s();
        completed = true;
      }
    }
    if (!polled) {
      int flag = 0;  // nothing of ours in flight: only drive MPI's progress
      MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, world_.comm(GroupId{0}), &flag, MPI_STATUS_IGNORE);
    }
    if (completed) {
      async_cv_.notify_all();
      linger_until_ = std::chrono::steady_clock::now() + kLinger;
    }
    lock.unlock();
    std::this_thread::sleep_for(polled ? kPoll : kLingerPoll);
    lock.lock();
  }
}

}  // namespace stepsim::calib

namespace stepsim::calib {

Result<CollectiveHandle> CpuBackend::post_collective(const CollectiveOp& op, GroupId group) {
  if (!thread_multiple_) {
    return Error{"", "",
                 "cpu backend: non-blocking collectives need MPI_THREAD_MULTIPLE, which this "
                 "MPI did not provide",
                 ErrorKind::kInternal};
  }
  if (auto checked = check_collective(op, group); !checked) return checked.errors();
  PostedCollective posted;
  posted.op = op;
  posted.group_size = world_.group_size(group);
  {
    std::lock_guard<std::mutex> lock(coll_mutex_);
    MPI_Comm& comm = coll_comms_.try_emplace(group.value, MPI_COMM_NULL).first->second;
    if (comm == MPI_COMM_NULL) {
      // Collective over the group: every member's first post on it is the same collective.
      const int rc = MPI_Comm_dup(world_.comm(group), &comm);
      if (rc != MPI_SUCCESS) return mpi_error("MPI_Comm_dup", rc);
    }
    posted.comm = comm;
  }
  posted.posted_s = now_s();
  std::int64_t handle = 0;
  {
    std::lock_guard<std::mutex> lock(coll_mutex_);
    handle = coll_next_++;
    coll_posted_.emplace(handle, posted);
    if (!coll_thread_.joinable()) coll_thread_ = std::thread([this] { collective_loop(); });
  }
  coll_cv_.notify_all();
  return CollectiveHandle{handle};
}

Result<P2PCompletion> CpuBackend::wait_collective(CollectiveHandle h) {
  std::unique_lock<std::mutex> lock(coll_mutex_);
  auto it = coll_posted_.find(h.value);
  if (it == coll_posted_.end()) {
    return Error{
        "", "", "cpu backend: no non-blocking collective " + std::to_string(h.value) + " in flight",
        ErrorKind::kInternal};
  }
  // Sleeps until the thread has run it: the core is the collective thread's meanwhile.
  coll_cv_.wait(lock, [&] { return it->second.completed_s >= 0; });
  const PostedCollective done = it->second;
  coll_posted_.erase(it);
  if (done.rc != MPI_SUCCESS) return mpi_error(std::string(to_string(done.op.kind)), done.rc);
  return P2PCompletion{.posted_s = done.posted_s, .completed_s = done.completed_s};
}

// Runs the posted collectives in handle order (the order every member posted them in), each
// a blocking MPI collective: MPI's own algorithms, as fast as the blocking path calibration
// measures, while the rank's thread computes beside it.
void CpuBackend::collective_loop() {
  std::unique_lock<std::mutex> lock(coll_mutex_);
  std::int64_t next = 0;
  for (;;) {
    coll_cv_.wait(lock, [&] { return coll_stop_ || coll_posted_.count(next) != 0; });
    if (coll_stop_) return;
    const PostedCollective call = coll_posted_.at(next);
    lock.unlock();
    const CollectiveCounts counts =
        collective_counts(call.op.kind, call.op.bytes, call.group_size, 4);
    std::vector<float>& in = coll_floats_[counts.in * 2];
    std::vector<float>& out = coll_floats_[counts.out * 2 + 1];
    if (in.size() != static_cast<std::size_t>(counts.in))
      in.assign(static_cast<std::size_t>(counts.in), 1.0F);
    if (out.size() != static_cast<std::size_t>(counts.out))
      out.assign(static_cast<std::size_t>(counts.out), 0.0F);
    const int rc = run_collective(call.op.kind, in.data(), out.data(),
                                  static_cast<int>(counts.per_rank), call.comm);
    const double completed = now_s();
    lock.lock();
    PostedCollective& c = coll_posted_.at(next);
    c.rc = rc;
    c.completed_s = completed;
    ++next;
    coll_cv_.notify_all();
  }
}

}  // namespace stepsim::calib
