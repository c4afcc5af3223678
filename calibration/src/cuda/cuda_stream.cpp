// CudaBackend's stream mode (BackendOptions::verify = false), what the validator runs: every
// op is enqueued on the device's stream between two events and returns at once, the way
// Megatron's host runs ahead of its GPU, and end_step() reads the events once the step's
// kernels are done. Products are planned once per shape and operands written once per
// buffer, as a training step reuses its kernels' plans and tensors; nothing is checked (the
// calibration path checks every result). Timing each call by itself instead (synchronise,
// plan, fill, check) cost the host ~0.3 ms per op on an H100, which made a step's wall time
// 1.6-1.8x its kernels' time.

#include <algorithm>
#include <cstdio>
#include <string>

#include "bench_math.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/cuda_check.hpp"

namespace stepsim::calib {
namespace {

std::int64_t size_of(cuda::ElemType t) {
  switch (t) {
    case cuda::ElemType::kFp8E4M3:
      return 1;
    case cuda::ElemType::kBf16:
    case cuda::ElemType::kFp16:
      return 2;
    case cuda::ElemType::kFp32:
      return 4;
  }
  return 4;
}

/// A plan's identity: everything a cuBLASLt product is planned from.
std::string plan_key(const MatmulShape& s, cuda::ElemType t) {
  char key[400];
  std::snprintf(key, sizeof key,
                "%d %d %d %lld %lld %lld %p %lld %lld %p %lld %lld %p %lld %lld %lld %d %d %p %p",
                static_cast<int>(t), s.trans_a ? 1 : 0, s.trans_b ? 1 : 0,
                static_cast<long long>(s.m), static_cast<long long>(s.n),
                static_cast<long long>(s.k), s.a, static_cast<long long>(s.lda),
                static_cast<long long>(s.stride_a), s.b, static_cast<long long>(s.ldb),
                static_cast<long long>(s.stride_b), static_cast<void*>(s.d),
                static_cast<long long>(s.ldd), static_cast<long long>(s.stride_d),
                static_cast<long long>(s.batch), s.fast_accum ? 1 : 0, static_cast<int>(s.scaling),
                static_cast<const void*>(s.a_scale), static_cast<const void*>(s.b_scale));
  return key;
}

// Operand buffer roles.
constexpr int kA = 0, kB = 1, kD = 2, kSend = 3, kRecv = 4;
// Posted calls' buffers: their own, as the compute stream's may be in use meanwhile.
constexpr int kPostedSend = 5, kPostedRecv = 6, kPostedMessages = 7;

}  // namespace

Status CudaBackend::begin_step() {
  STEPSIM_CUDA_TRY(cudaStreamSynchronize(stream_));
  if (comm_stream_ != nullptr) STEPSIM_CUDA_TRY(cudaStreamSynchronize(comm_stream_));
  if (p2p_stream_ != nullptr) STEPSIM_CUDA_TRY(cudaStreamSynchronize(p2p_stream_));
  posted_.clear();
  p2p_handle_group_.clear();
  p2p_groups_.clear();
  p2p_open_.clear();
  if (base_ == nullptr) STEPSIM_CUDA_TRY(cudaEventCreate(&base_));
  // The device is idle: the base event completes as soon as it is recorded, so its device
  // time is now_s() right after it, to within the wake-up of cudaEventSynchronize.
  STEPSIM_CUDA_TRY(cudaEventRecord(base_, stream_));
  STEPSIM_CUDA_TRY(cudaEventSynchronize(base_));
  base_s_ = now_s();
  pending_.clear();
  next_event_ = 0;
  return ok_status();
}

Result<std::vector<Backend::DeviceTiming>> CudaBackend::end_step() {
  if (auto flushed = flush_posted_p2p(); !flushed.ok()) return flushed.errors();
  STEPSIM_CUDA_TRY(cudaStreamSynchronize(stream_));
  if (comm_stream_ != nullptr) STEPSIM_CUDA_TRY(cudaStreamSynchronize(comm_stream_));
  if (p2p_stream_ != nullptr) STEPSIM_CUDA_TRY(cudaStreamSynchronize(p2p_stream_));
  std::vector<DeviceTiming> out;
  std::map<std::int64_t, std::size_t> index;  // task -> its entry in out
  auto since_base = [this](std::size_t e) -> Result<double> {
    float ms = 0.0F;
    STEPSIM_CUDA_TRY(cudaEventElapsedTime(&ms, base_, events_[e]));
    return base_s_ + static_cast<double>(ms) * 1e-3;
  };
  for (const Pending& p : pending_) {
    auto start = since_base(p.start);
    auto stop = since_base(p.stop);
    if (!start.ok()) return start.errors();
    if (!stop.ok()) return stop.errors();
    const double busy = std::max(0.0, stop.value() - start.value());
    auto [it, added] = index.emplace(p.task, out.size());
    if (added) {
      out.push_back(DeviceTiming{
          .task = p.task, .start_s = start.value(), .end_s = stop.value(), .busy_s = busy});
      continue;
    }
    DeviceTiming& t = out[it->second];
    t.start_s = std::min(t.start_s, start.value());
    t.end_s = std::max(t.end_s, stop.value());
    t.busy_s += busy;
  }
  pending_.clear();
  next_event_ = 0;
  return out;
}

Result<cudaEvent_t> CudaBackend::pooled_event() {
  if (next_event_ == events_.size()) {
    cudaEvent_t e = nullptr;
    STEPSIM_CUDA_TRY(cudaEventCreate(&e));
    events_.push_back(e);
  }
  return events_[next_event_++];
}

template <typename Body>
Result<std::size_t> CudaBackend::timed_on(cudaStream_t stream, std::int64_t task, Body&& body) {
  const std::size_t start = next_event_;
  auto a = pooled_event();
  if (!a.ok()) return a.errors();
  STEPSIM_CUDA_TRY(cudaEventRecord(a.value(), stream));
  if (auto r = body(); !r.ok()) return r.errors();
  const std::size_t stop = next_event_;
  auto b = pooled_event();
  if (!b.ok()) return b.errors();
  STEPSIM_CUDA_TRY(cudaEventRecord(b.value(), stream));
  pending_.push_back(Pending{.task = task, .start = start, .stop = stop});
  return stop;
}

template <typename Body>
Result<double> CudaBackend::enqueue(Body&& body) {
  if (auto flushed = flush_posted_p2p(); !flushed.ok()) return flushed.errors();
  if (auto timed = timed_on(stream_, task_, std::forward<Body>(body)); !timed.ok()) {
    return timed.errors();
  }
  return 0.0;
}

Result<void*> CudaBackend::operand(int role, cuda::ElemType t, std::int64_t elems,
                                   std::uint32_t seed) {
  DeviceBuffer& buf = operands_[{role, t}];
  const std::int64_t bytes = elems * size_of(t);
  const bool fresh = bytes > buf.capacity();
  auto p = buf.reserve(bytes, "an operand of the validator's step");
  if (!p.ok()) return p.errors();
  if (fresh && seed != 0) STEPSIM_CUDA_TRY(cuda::fill_operand(p.value(), elems, t, seed, stream_));
  return p.value();
}

Result<double> CudaBackend::gemm_enqueued(const GemmOp& op) {
  const cuda::ElemType t = elem_type_of(op.dtype);
  // FP8 products write bf16; in Transformer Engine's layouts cuBLAS's A is the op's k x n
  // operand and B its m x k one (te_matmul_shape).
  const cuda::ElemType out = op.dtype == DType::kFp8 ? cuda::ElemType::kBf16 : t;
  const bool te = op.layout != GemmLayout::kUnspecified;
  auto a = operand(kA, t, op.batch * op.k * (te ? op.n : op.m), 1);
  auto b = operand(kB, t, op.batch * op.k * (te ? op.m : op.n), 2);
  auto d = operand(kD, out, op.batch * op.m * op.n, 0);
  if (!a.ok()) return a.errors();
  if (!b.ok()) return b.errors();
  if (!d.ok()) return d.errors();
  MatmulShape shape = te_matmul_shape(op, a.value(), b.value(), d.value());
  if (auto st = attach_block_scales(shape); !st.ok()) return st.errors();
  const std::string key = plan_key(shape, t);
  std::unique_ptr<LtMatmul>& mm = gemm_plans_[key];
  if (mm == nullptr) {
    auto planned = plan(shape, t);
    if (!planned.ok()) {
      gemm_plans_.erase(key);
      return planned.errors();
    }
    mm = std::move(planned).value();
  }
  const LtMatmul* run = mm.get();
  return enqueue([this, run] { return run->run(stream_); });
}

Result<double> CudaBackend::attention_enqueued(const AttentionOp& op) {
  // Planned over extra_, which only grows: a plan stays valid until extra_ moves.
  const auto key = [&op](const void* buffer) {
    char text[160];
    std::snprintf(text, sizeof text, "%d %lld %lld %lld %lld %lld %d %d %p",
                  static_cast<int>(op.dtype), static_cast<long long>(op.batch),
                  static_cast<long long>(op.heads), static_cast<long long>(op.kv_heads),
                  static_cast<long long>(op.seq), static_cast<long long>(op.head_dim),
                  op.causal ? 1 : 0, op.backward ? 1 : 0, buffer);
    return std::string(text);
  };
  auto found = attention_plans_.find(key(extra_.data()));
  if (found == attention_plans_.end()) {
    const void* before = extra_.data();
    auto planned = plan_attention(op, false);
    if (!planned.ok()) return planned.errors();
    if (extra_.data() != before) attention_plans_.clear();  // the older plans point to freed memory
    found = attention_plans_.emplace(key(extra_.data()), std::move(planned).value()).first;
  }
  const AttentionRun* run = &found->second;
  return enqueue([this, run] { return run_attention(*run); });
}

Result<double> CudaBackend::memory_bound_enqueued(const MemoryBoundOp& op) {
  // Half the bytes read, half written: dst = 2 * src over floats.
  const std::int64_t n = op.bytes / 8;
  auto src = operand(kA, cuda::ElemType::kFp32, n, 7);
  auto dst = operand(kB, cuda::ElemType::kFp32, n, 0);
  if (!src.ok()) return src.errors();
  if (!dst.ok()) return dst.errors();
  const auto* in = static_cast<const float*>(src.value());
  auto* out = static_cast<float*>(dst.value());
  return enqueue([this, in, out, n]() -> Status {
    STEPSIM_CUDA_TRY(cuda::scale_copy(in, out, n, stream_));
    return ok_status();
  });
}

Result<std::size_t> CudaBackend::collective_on(const CollectiveOp& op, GroupId group,
                                               cudaStream_t& stream, int send_role, int recv_role) {
  const std::int64_t n = world_.group_size(group);
  const CollectiveCounts counts = collective_counts(op.kind, op.bytes, n, 4);
  auto in = operand(send_role, cuda::ElemType::kFp32, counts.in, 8);
  auto out = operand(recv_role, cuda::ElemType::kFp32, counts.out, 0);
  if (!in.ok()) return in.errors();
  if (!out.ok()) return out.errors();
  // On a side stream it reduces what the compute stream made so far.
  if (&stream != &stream_) {
    if (auto waited = after_compute(stream); !waited.ok()) return waited.errors();
  }
  auto* send = static_cast<float*>(in.value());
  auto* recv = static_cast<float*>(out.value());
  const ncclComm_t comm = nccl_[static_cast<std::size_t>(group.value)];
  const auto per = static_cast<std::size_t>(counts.per_rank);
  // No barrier before it and no check after: a late peer's wait is part of the step.
  return timed_on(stream, task_, [&]() -> Status {
    return issue_collective(op.kind, send, recv, per, n, comm, stream);
  });
}

Result<double> CudaBackend::collective_enqueued(const CollectiveOp& op, GroupId group) {
  if (auto flushed = flush_posted_p2p(); !flushed.ok()) return flushed.errors();
  if (auto timed = collective_on(op, group, stream_, kSend, kRecv); !timed.ok()) {
    return timed.errors();
  }
  return 0.0;
}

Result<CollectiveHandle> CudaBackend::post_collective(const CollectiveOp& op, GroupId group) {
  if (options_.verify) {
    return Error{"", "", "cuda backend: collectives are posted only in stream mode",
                 ErrorKind::kInternal};
  }
  if (op.kind == CollectiveKind::kDeepEpDispatch || op.kind == CollectiveKind::kDeepEpCombine) {
    return Error{"", "", "cuda backend: DeepEP's kernels are not run", ErrorKind::kInternal};
  }
  if (auto flushed = flush_posted_p2p(); !flushed.ok()) return flushed.errors();
  // Buffers of its own: the compute stream's may be in use meanwhile.
  auto stop = collective_on(op, group, comm_stream_, kPostedSend, kPostedRecv);
  if (!stop.ok()) return stop.errors();
  posted_.push_back(Posted{.stop = static_cast<std::int64_t>(stop.value()), .posted_s = now_s()});
  return CollectiveHandle{static_cast<std::int64_t>(posted_.size()) - 1};
}

Status CudaBackend::after_compute(cudaStream_t& side) {
  if (side == nullptr) STEPSIM_CUDA_TRY(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
  // As PyTorch's process-group stream waits for the current stream before a call.
  auto ready = pooled_event();
  if (!ready.ok()) return ready.errors();
  STEPSIM_CUDA_TRY(cudaEventRecord(ready.value(), stream_));
  STEPSIM_CUDA_TRY(cudaStreamWaitEvent(side, ready.value(), 0));
  return ok_status();
}

Result<P2PHandle> CudaBackend::post_p2p(const std::vector<P2PRequest>& requests) {
  if (options_.verify) {
    return Error{"", "", "cuda backend: transfers are posted only in stream mode",
                 ErrorKind::kInternal};
  }
  if (requests.empty()) {
    return Error{"", "", "cuda backend: a posted call needs a transfer", ErrorKind::kInternal};
  }
  for (const P2PRequest& q : requests) {
    if (q.peer < 0 || q.peer >= world_.size() || q.bytes <= 0) {
      return Error{"", "",
                   "cuda backend: point-to-point peer " + std::to_string(q.peer) +
                       " of a world of " + std::to_string(world_.size()) + ", " +
                       std::to_string(q.bytes) + " bytes: needs a rank of the world and bytes > 0",
                   ErrorKind::kRuntime};
    }
  }
  // One group per posting task: another task's transfers start a group of their own.
  if (!p2p_open_.empty() && p2p_open_task_ != task_) {
    if (auto flushed = flush_posted_p2p(); !flushed.ok()) return flushed.errors();
  }
  p2p_open_task_ = task_;
  p2p_open_.insert(p2p_open_.end(), requests.begin(), requests.end());
  p2p_handle_group_.push_back(p2p_groups_.size());  // the group it will go out in
  return P2PHandle{static_cast<std::int64_t>(p2p_handle_group_.size()) - 1};
}

Status CudaBackend::flush_posted_p2p() {
  if (p2p_open_.empty()) return ok_status();
  std::vector<std::int64_t> offsets;
  std::int64_t total = 0;
  for (const P2PRequest& q : p2p_open_) {
    offsets.push_back(total);
    total += (q.bytes + 255) / 256 * 256;
  }
  auto buf = operand(kPostedMessages, cuda::ElemType::kFp8E4M3, total, 0);  // bytes
  if (!buf.ok()) return buf.errors();
  // What it sends is the compute stream's so far.
  if (auto waited = after_compute(p2p_stream_); !waited.ok()) return waited.errors();
  auto* base = static_cast<std::uint8_t*>(buf.value());
  auto stop = timed_on(p2p_stream_, p2p_open_task_, [&]() -> Status {
    return issue_p2p(p2p_open_, base, offsets, p2p_stream_);
  });
  if (!stop.ok()) return stop.errors();
  p2p_groups_.push_back(
      Posted{.stop = static_cast<std::int64_t>(stop.value()), .posted_s = now_s()});
  p2p_open_.clear();
  return ok_status();
}

Result<P2PCompletion> CudaBackend::wait_p2p(P2PHandle h) {
  if (h.value < 0 || h.value >= static_cast<std::int64_t>(p2p_handle_group_.size())) {
    return Error{"", "", "cuda backend: no such posted transfer", ErrorKind::kInternal};
  }
  if (auto flushed = flush_posted_p2p(); !flushed.ok()) return flushed.errors();
  const Posted& g = p2p_groups_[p2p_handle_group_[static_cast<std::size_t>(h.value)]];
  // Every transfer of the group ends with it: the first wait makes the compute stream wait,
  // the others find it waited for already (CUDA events may be waited on again).
  STEPSIM_CUDA_TRY(cudaStreamWaitEvent(stream_, events_[static_cast<std::size_t>(g.stop)], 0));
  return P2PCompletion{.posted_s = g.posted_s, .completed_s = now_s()};
}

Result<P2PCompletion> CudaBackend::wait_collective(CollectiveHandle h) {
  if (h.value < 0 || h.value >= static_cast<std::int64_t>(posted_.size()) ||
      posted_[static_cast<std::size_t>(h.value)].stop < 0) {
    return Error{"", "", "cuda backend: no such posted collective, or waited for already",
                 ErrorKind::kInternal};
  }
  // Transfers posted before this wait go out before it: they do not wait for the collective.
  if (auto flushed = flush_posted_p2p(); !flushed.ok()) return flushed.errors();
  Posted& p = posted_[static_cast<std::size_t>(h.value)];
  STEPSIM_CUDA_TRY(cudaStreamWaitEvent(stream_, events_[static_cast<std::size_t>(p.stop)], 0));
  p.stop = -1;
  // Its times on the device come with end_step(); the host only knows when it asked.
  return P2PCompletion{.posted_s = p.posted_s, .completed_s = now_s()};
}

Result<double> CudaBackend::p2p_enqueued(const std::vector<P2PRequest>& requests) {
  std::int64_t total = 0;
  std::vector<std::int64_t> offsets;
  for (const P2PRequest& q : requests) {
    offsets.push_back(total);
    total += (q.bytes + 255) / 256 * 256;
  }
  auto buf = operand(kSend, cuda::ElemType::kFp8E4M3, total, 0);  // bytes
  if (!buf.ok()) return buf.errors();
  auto* base = static_cast<std::uint8_t*>(buf.value());
  return enqueue([&]() -> Status { return issue_p2p(requests, base, offsets, stream_); });
}

}  // namespace stepsim::calib
