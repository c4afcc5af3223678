#include "cuda/cuda_backend.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "bench_math.hpp"
#include "cuda/cuda_check.hpp"
#include "mpi/mpi_check.hpp"
#include "stepsim/calibration/mpi_session.hpp"

namespace stepsim::calib {
namespace {

/// cuBLASLt workspace: 32 MiB, NVIDIA's recommendation for Hopper.
constexpr std::int64_t kWorkspaceBytes = std::int64_t{32} << 20;

std::int64_t align256(std::int64_t bytes) { return (bytes + 255) / 256 * 256; }

}  // namespace

DeviceBuffer::~DeviceBuffer() {
  if (ptr_ != nullptr) cudaFree(ptr_);
}

void DeviceBuffer::release() {
  if (ptr_ != nullptr) cudaFree(ptr_);
  ptr_ = nullptr;
  bytes_ = 0;
}

void CudaBackend::release_buffers() {
  if (stream_ != nullptr) cudaStreamSynchronize(stream_);
  if (comm_stream_ != nullptr) cudaStreamSynchronize(comm_stream_);
  if (p2p_stream_ != nullptr) cudaStreamSynchronize(p2p_stream_);
  for (DeviceBuffer* b : {&a_, &b_, &c_, &extra_, &send_, &recv_, &flush_, &scales_}) {
    b->release();
  }
  // Stream mode's plans point into the buffers.
  gemm_plans_.clear();
  attention_plans_.clear();
  operands_.clear();
}

Result<void*> DeviceBuffer::reserve(std::int64_t bytes, const char* what) {
  if (bytes <= bytes_) return ptr_;
  if (ptr_ != nullptr) cudaFree(ptr_);
  ptr_ = nullptr;
  bytes_ = 0;
  if (const cudaError_t e = cudaMalloc(&ptr_, static_cast<std::size_t>(bytes)); e != cudaSuccess) {
    ptr_ = nullptr;
    return Error{"", "",
                 std::string("cuda backend: cannot allocate ") + std::to_string(bytes >> 20) +
                     " MiB for " + what + ": " + cudaGetErrorString(e),
                 ErrorKind::kRuntime};
  }
  bytes_ = bytes;
  return ptr_;
}

Result<std::unique_ptr<Backend>> make_cuda_backend(const BackendOptions& o) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    return Error{"", "",
                 std::string("cuda backend: no CUDA device visible") +
                     (e != cudaSuccess ? std::string(" (") + cudaGetErrorString(e) + ")" : ""),
                 ErrorKind::kRuntime};
  }
  // One process per GPU: the rank's place on its node picks the device.
  auto local = node_local_rank();
  if (!local.ok()) return local.errors();
  auto backend = std::make_unique<CudaBackend>(o, local.value() % count);
  auto ok = backend->init();
  if (!ok.ok()) return ok.errors();
  return std::unique_ptr<Backend>(std::move(backend));
}

namespace {

/// "13.0" from CUDA's 13000.
std::string cuda_version_text(int v) {
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

}  // namespace

bool CudaBackend::runs_block_scaled_fp8() const {
  // cuBLASLt's VEC128_32F and BLK128x128_32F scales run on Hopper (Transformer Engine's
  // Float8BlockScaling GEMMs; cublaslt_gemm.cu asks for cuBLAS 12.9).
  return cc_major_ == 9 && cublasLtGetVersion() >= 120900;
}

bool CudaBackend::runs_mxfp8() const {
  // cuBLASLt's VEC32_UE8M0 scales (CUDA 12.8) run on Blackwell; Transformer Engine's
  // check_mxfp8_support asks for compute capability 10.0 or higher.
  return cc_major_ >= 10 && cublasLtGetVersion() >= 120800;
}

std::string CudaBackend::versions() const {
  std::string out;
  // The kernel module's version line, "NVRM version: NVIDIA UNIX Open Kernel Module for
  // x86_64  580.159.04  Release Build ...": the first word after "Module" that starts with a
  // digit.
  std::ifstream proc("/proc/driver/nvidia/version");
  std::string line;
  if (std::getline(proc, line)) {
    const auto at = line.find("Module");
    std::istringstream words(at == std::string::npos ? "" : line.substr(at));
    for (std::string w; words >> w;) {
      if (std::isdigit(static_cast<unsigned char>(w.front())) != 0) {
        out += "driver " + w + ", ";
        break;
      }
    }
  }
  int driver_cuda = 0, runtime = 0, nccl = 0;
  cudaDriverGetVersion(&driver_cuda);
  cudaRuntimeGetVersion(&runtime);
  ncclGetVersion(&nccl);
  const std::size_t lt = cublasLtGetVersion();
  out += "CUDA driver API " + cuda_version_text(driver_cuda) + ", runtime " +
         cuda_version_text(runtime) + ", cuBLASLt " + std::to_string(lt / 10000) + "." +
         std::to_string((lt / 100) % 100) + "." + std::to_string(lt % 100) + ", NCCL " +
         std::to_string(nccl / 10000) + "." + std::to_string((nccl / 100) % 100) + "." +
         std::to_string(nccl % 100) + ", compute capability " + std::to_string(cc_major_) + "." +
         std::to_string(cc_minor_);
  return out;
}

CudaBackend::CudaBackend(const BackendOptions& options, int device)
    : options_(options), device_(device) {}

CudaBackend::~CudaBackend() {
  if (stream_ != nullptr) cudaStreamSynchronize(stream_);
  if (comm_stream_ != nullptr) cudaStreamSynchronize(comm_stream_);
  if (p2p_stream_ != nullptr) cudaStreamSynchronize(p2p_stream_);
  for (ncclComm_t c : nccl_) {
    if (c != nullptr) ncclCommDestroy(c);
  }
  gemm_plans_.clear();
  attention_plans_.clear();
  if (lt_ != nullptr) cublasLtDestroy(lt_);
  for (cudaEvent_t e : events_) cudaEventDestroy(e);
  if (base_ != nullptr) cudaEventDestroy(base_);
  if (start_ != nullptr) cudaEventDestroy(start_);
  if (stop_ != nullptr) cudaEventDestroy(stop_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
  if (comm_stream_ != nullptr) cudaStreamDestroy(comm_stream_);
  if (p2p_stream_ != nullptr) cudaStreamDestroy(p2p_stream_);
}

Status CudaBackend::init() {
  STEPSIM_CUDA_TRY(cudaSetDevice(device_));
  cudaDeviceProp prop{};
  STEPSIM_CUDA_TRY(cudaGetDeviceProperties(&prop, device_));
  device_name_ = prop.name;
  cc_major_ = prop.major;
  cc_minor_ = prop.minor;
  l2_bytes_ = prop.l2CacheSize;
  STEPSIM_CUDA_TRY(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  STEPSIM_CUDA_TRY(cudaEventCreate(&start_));
  STEPSIM_CUDA_TRY(cudaEventCreate(&stop_));
  STEPSIM_CUBLAS_TRY(cublasLtCreate(&lt_));
  auto ws = workspace_.reserve(kWorkspaceBytes, "the cuBLASLt workspace");
  if (!ws.ok()) return ws.errors();
  // NCCL bootstrap as nccl-tests do: rank 0 makes the unique id, MPI broadcasts it.
  ncclUniqueId id{};
  if (world_.rank() == 0) STEPSIM_NCCL_TRY(ncclGetUniqueId(&id));
  const int rc = MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, world_.comm(GroupId{0}));
  if (rc != MPI_SUCCESS) return mpi_error("MPI_Bcast", rc);
  ncclComm_t world = nullptr;
  STEPSIM_NCCL_TRY(ncclCommInitRank(&world, world_.size(), id, world_.rank()));
  nccl_.push_back(world);
  return ok_status();
}

Result<std::unique_ptr<LtMatmul>> CudaBackend::plan(const MatmulShape& s, cuda::ElemType t) {
  return LtMatmul::plan(lt_, s, t, workspace_.data(), static_cast<std::size_t>(kWorkspaceBytes));
}

Status CudaBackend::flush_l2() {
  auto buf = flush_.reserve(2 * l2_bytes_, "the L2 flush buffer");
  if (!buf.ok()) return buf.errors();
  STEPSIM_CUDA_TRY(
      cudaMemsetAsync(buf.value(), 0, static_cast<std::size_t>(2 * l2_bytes_), stream_));
  return ok_status();
}

Status CudaBackend::attach_block_scales(MatmulShape& s) {
  if (s.scaling == GemmScaling::kTensor) return ok_status();
  if (s.scaling == GemmScaling::kMx1x32) {
    // E8M0 scales, one byte per 32 values along k, in cuBLASLt's padded 128 x 4 tiles; every
    // byte 127 (2^0 = 1.0). Written before the timed runs.
    const std::int64_t a_bytes = mx_scale_bytes(s.m, s.k);
    const std::int64_t bytes = a_bytes + mx_scale_bytes(s.n, s.k);
    const bool fresh = bytes > scales_.capacity() || !scales_e8m0_;
    auto buf = scales_.reserve(bytes, "MXFP8 scales");
    if (!buf.ok()) return buf.errors();
    auto* scales = static_cast<unsigned char*>(buf.value());
    if (fresh) {
      STEPSIM_CUDA_TRY(cudaMemset(scales, 127, static_cast<std::size_t>(scales_.capacity())));
      scales_e8m0_ = true;
    }
    s.a_scale = scales;
    s.b_scale = scales + a_bytes;
    return ok_status();
  }
  const std::int64_t a_floats = block_scale_floats(s.m, s.k);
  const std::int64_t floats = a_floats + block_scale_floats(s.n, s.k);
  const bool fresh = floats * 4 > scales_.capacity() || scales_e8m0_;
  auto buf = scales_.reserve(floats * 4, "block-scaled FP8 scales");
  if (!buf.ok()) return buf.errors();
  auto* scales = static_cast<float*>(buf.value());
  if (fresh) {
    const std::vector<float> ones(static_cast<std::size_t>(scales_.capacity() / 4), 1.0F);
    STEPSIM_CUDA_TRY(
        cudaMemcpy(scales, ones.data(), ones.size() * sizeof(float), cudaMemcpyHostToDevice));
    scales_e8m0_ = false;
  }
  s.a_scale = scales;
  s.b_scale = scales + a_floats;
  return ok_status();
}

template <typename Body>
Result<std::vector<double>> CudaBackend::time_repeats(Body&& body, bool flush) {
  for (int i = 0; i < options_.warmup; ++i) {
    auto r = body();
    if (!r.ok()) return r.errors();
  }
  std::vector<double> times;
  for (int i = 0; i < options_.repeats; ++i) {
    if (flush) {
      auto f = flush_l2();
      if (!f.ok()) return f.errors();
    }
    STEPSIM_CUDA_TRY(cudaEventRecord(start_, stream_));
    auto r = body();
    if (!r.ok()) return r.errors();
    STEPSIM_CUDA_TRY(cudaEventRecord(stop_, stream_));
    STEPSIM_CUDA_TRY(cudaEventSynchronize(stop_));
    float ms = 0.0F;
    STEPSIM_CUDA_TRY(cudaEventElapsedTime(&ms, start_, stop_));
    times.push_back(static_cast<double>(ms) * 1e-3);
  }
  last_spread_ = RepeatSpread{coefficient_of_variation(times), static_cast<int>(times.size())};
  return times;
}

Result<double> CudaBackend::gemm(const GemmOp& op) {
  if (op.m <= 0 || op.n <= 0 || op.k <= 0 || op.batch <= 0) {
    return Error{"", "", "cuda backend: GEMM shape must be positive (m, n, k, batch)",
                 ErrorKind::kRuntime};
  }
  if (op.dtype == DType::kFp4) {
    // NVFP4 (CUBLASLT_MATMUL_MATRIX_SCALE_VEC16_UE4M3 operands, Blackwell) is not measured
    // yet: a profile without fp4 samples prices NVFP4 GEMMs by the roofline, and says so.
    return Error{"", "", "cuda backend: NVFP4 GEMMs (dtype fp4) are not measured yet",
                 ErrorKind::kRuntime};
  }
  const bool mx = op.dtype == DType::kFp8 && op.scaling == GemmScaling::kMx1x32;
  if (op.dtype == DType::kFp8 && !mx && op.layout != GemmLayout::kUnspecified &&
      op.layout != GemmLayout::kTN) {
    return Error{"", "", "cuda backend: an FP8 GEMM runs in the TN layout only (cuBLASLt on Hopper)",
                 ErrorKind::kRuntime};
  }
  if (mx && !runs_mxfp8()) {
    return Error{"", "",
                 "cuda backend: MXFP8 GEMMs (fp8_recipe \"mxfp8\") run on Blackwell (compute "
                 "capability 10.0 or newer) with cuBLASLt 12.8 or newer; this GPU is compute "
                 "capability " +
                     std::to_string(cc_major_) + "." + std::to_string(cc_minor_),
                 ErrorKind::kRuntime};
  }
  if (mx && (op.m % 32 != 0 || op.n % 32 != 0 || op.k % 32 != 0)) {
    return Error{"", "",
                 "cuda backend: an MXFP8 GEMM needs m, n and k divisible by 32 (its scale "
                 "blocks)",
                 ErrorKind::kRuntime};
  }
  if (op.dtype == DType::kFp8 && cc_major_ * 10 + cc_minor_ < 89) {
    return Error{"", "",
                 "cuda backend: FP8 GEMMs need compute capability 8.9 or newer (Ada, Hopper); "
                 "this GPU is " +
                     std::to_string(cc_major_) + "." + std::to_string(cc_minor_),
                 ErrorKind::kRuntime};
  }
  if (op.dtype == DType::kFp8 && !mx && op.scaling != GemmScaling::kTensor &&
      !runs_block_scaled_fp8()) {
    return Error{"", "",
                 "cuda backend: block-scaled FP8 GEMMs (fp8_recipe \"blockwise\") run on Hopper "
                 "with cuBLASLt 12.9 or newer; this GPU is compute capability " +
                     std::to_string(cc_major_) + "." + std::to_string(cc_minor_),
                 ErrorKind::kRuntime};
  }
  if (op.dtype == DType::kFp8 && (op.m % 16 != 0 || op.n % 16 != 0 || op.k % 16 != 0)) {
    return Error{"", "", "cuda backend: an FP8 GEMM needs m, n and k divisible by 16 (cuBLASLt)",
                 ErrorKind::kRuntime};
  }
  if (!options_.verify) return gemm_enqueued(op);
  const cuda::ElemType t = elem_type_of(op.dtype);
  const bool fp8 = op.dtype == DType::kFp8;
  const std::int64_t e = bytes_of(op.dtype);
  const std::int64_t e_out = fp8 ? bytes_of(DType::kBf16) : e;  // FP8 products write bf16
  // In Transformer Engine's layouts cuBLAS's A is the op's k x n operand (the weight, or
  // the output gradient) and B its m x k one (see matmul_shape).
  const bool te = op.layout != GemmLayout::kUnspecified;
  const std::int64_t a_elems = op.batch * op.k * (te ? op.n : op.m);
  const std::int64_t b_elems = op.batch * op.k * (te ? op.m : op.n);
  auto a = a_.reserve(a_elems * e, "GEMM operand A");
  auto b = b_.reserve(b_elems * e, "GEMM operand B");
  auto c = c_.reserve(op.batch * op.m * op.n * e_out, "GEMM result");
  if (!a.ok()) return a.errors();
  if (!b.ok()) return b.errors();
  if (!c.ok()) return c.errors();
  STEPSIM_CUDA_TRY(cuda::fill_operand(a.value(), a_elems, t, 1, stream_));
  STEPSIM_CUDA_TRY(cuda::fill_operand(b.value(), b_elems, t, 2, stream_));
  MatmulShape shape = te_matmul_shape(op, a.value(), b.value(), c.value());
  if (auto st = attach_block_scales(shape); !st.ok()) return st.errors();
  auto mm = plan(shape, t);
  if (!mm.ok()) return mm.errors();
  auto times = time_repeats([&] { return mm.value()->run(stream_); }, options_.flush_cache);
  if (!times.ok()) return times.errors();
  return median(times.value());
}

Result<double> CudaBackend::attention(const AttentionOp& op) {
  if (op.batch <= 0 || op.heads <= 0 || op.kv_heads <= 0 || op.seq <= 0 || op.head_dim <= 0 ||
      op.heads % op.kv_heads != 0) {
    return Error{"", "",
                 "cuda backend: attention needs positive batch, heads, kv_heads, seq, head_dim "
                 "and kv_heads dividing heads",
                 ErrorKind::kRuntime};
  }
  if (op.dtype == DType::kFp8) {
    return Error{"", "", "cuda backend: attention runs in bf16, fp16 or fp32, not fp8",
                 ErrorKind::kRuntime};
  }
  if (op.kv_seq() != op.seq) {
    return Error{"", "",
                 "cuda backend: attention of " + std::to_string(op.seq) + " queries over " +
                     std::to_string(op.kv_seq()) +
                     " keys (a context-parallel step) is not run yet; the CPU backend runs it",
                 ErrorKind::kRuntime};
  }
  if (!options_.verify) return attention_enqueued(op);
  auto run = plan_attention(op, true);
  if (!run.ok()) return run.errors();
  auto times = time_repeats([&] { return run_attention(run.value()); }, false);
  if (!times.ok()) return times.errors();
  return median(times.value());
}

Result<CudaBackend::AttentionRun> CudaBackend::plan_attention(const AttentionOp& op, bool fill) {
  // Unfused attention: per key/value head, its group of G query heads stacked as G*s rows,
  // so one strided batch of b*kv products serves grouped-query attention too.
  const cuda::ElemType t = elem_type_of(op.dtype);
  const std::int64_t e = bytes_of(op.dtype);
  const std::int64_t s = op.seq, d = op.head_dim, gs = (op.heads / op.kv_heads) * op.seq;
  const std::int64_t batch = op.batch * op.kv_heads;
  const std::int64_t q = align256(batch * gs * d * e), kv = align256(batch * s * d * e);
  const std::int64_t sc = align256(batch * gs * s * e);
  // Q, K, V, O, S; backward adds dO, dP, dQ, dK, dV.
  const std::int64_t bytes = 2 * q + 2 * kv + sc + (op.backward ? 2 * q + 2 * kv + sc : 0);
  // reserve() reallocates exactly when the buffer is smaller than asked.
  const bool fresh = extra_.capacity() < bytes;
  auto buf = extra_.reserve(bytes, "attention");
  if (!buf.ok()) return buf.errors();
  auto* base = static_cast<char*>(buf.value());
  if (!fill && fresh) {
    // Stream mode: every operand written once, when the buffer is new.
    STEPSIM_CUDA_TRY(cuda::fill_operand(base, extra_.capacity() / e, t, 3, stream_));
  }
  std::int64_t off = 0;
  auto take = [&](std::int64_t n) {
    void* p = base + off;
    off += n;
    return p;
  };
  void* Q = take(q);
  void* K = take(kv);
  void* V = take(kv);
  void* O = take(q);
  void* S = take(sc);
  void* dO = op.backward ? take(q) : nullptr;
  void* dP = op.backward ? take(sc) : nullptr;
  void* dQ = op.backward ? take(q) : nullptr;
  void* dK = op.backward ? take(kv) : nullptr;
  void* dV = op.backward ? take(kv) : nullptr;
  if (fill) {
    STEPSIM_CUDA_TRY(cuda::fill_operand(Q, batch * gs * d, t, 3, stream_));
    STEPSIM_CUDA_TRY(cuda::fill_operand(K, batch * s * d, t, 4, stream_));
    STEPSIM_CUDA_TRY(cuda::fill_operand(V, batch * s * d, t, 5, stream_));
    if (op.backward) STEPSIM_CUDA_TRY(cuda::fill_operand(dO, batch * gs * d, t, 6, stream_));
  }
  // Row-major X[r x c] is column-major X^T with ld = c. Each shape below is the transposed
  // (column-major) form of the row-major product named beside it.
  auto shape = [&](bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, const void* a,
                   std::int64_t lda, std::int64_t sa, const void* b, std::int64_t ldb,
                   std::int64_t sb, void* dd, std::int64_t ldd, std::int64_t sd) {
    MatmulShape r;
    r.trans_a = ta;
    r.trans_b = tb;
    r.m = m;
    r.n = n;
    r.k = k;
    r.a = a;
    r.lda = lda;
    r.stride_a = sa;
    r.b = b;
    r.ldb = ldb;
    r.stride_b = sb;
    r.d = dd;
    r.ldd = ldd;
    r.stride_d = sd;
    r.batch = batch;
    return r;
  };
  AttentionRun run;
  auto add = [&](const MatmulShape& ms) -> Status {
    auto p = plan(ms, t);
    if (!p.ok()) return p.errors();
    run.mms.push_back(std::move(p).value());
    return ok_status();
  };
  const std::int64_t qs = gs * d, kvs = s * d, ss = gs * s;
  std::vector<Status> planned;
  planned.push_back(add(shape(true, false, s, gs, d, K, d, kvs, Q, d, qs, S, s, ss)));  // S = Q K^T
  if (!op.backward) {
    planned.push_back(
        add(shape(false, false, d, gs, s, V, d, kvs, S, s, ss, O, d, qs)));  // O = P V
  } else {
    planned.push_back(
        add(shape(false, true, d, s, gs, dO, d, qs, S, s, ss, dV, d, kvs)));  // dV = P^T dO
    planned.push_back(
        add(shape(true, false, s, gs, d, V, d, kvs, dO, d, qs, dP, s, ss)));  // dP = dO V^T
    planned.push_back(
        add(shape(false, false, d, gs, s, K, d, kvs, dP, s, ss, dQ, d, qs)));  // dQ = dS K
    planned.push_back(
        add(shape(false, true, d, s, gs, Q, d, qs, dP, s, ss, dK, d, kvs)));  // dK = dS^T Q
  }
  for (const auto& p : planned) {
    if (!p.ok()) return p.errors();
  }
  run.S = S;
  run.dP = dP;
  run.rows = batch * gs;
  run.cols = s;
  run.scale = 1.0F / std::sqrt(static_cast<float>(d));
  run.type = t;
  run.causal = op.causal;
  run.backward = op.backward;
  return run;
}

Status CudaBackend::run_attention(const AttentionRun& r) {
  const auto& mms = r.mms;
  auto st = mms[0]->run(stream_);  // S (recomputed in backward, as flash attention does)
  if (!st.ok()) return st;
  STEPSIM_CUDA_TRY(cuda::softmax_rows(r.S, r.rows, r.cols, r.scale, r.causal, r.type, stream_));
  if (!r.backward) return mms[1]->run(stream_);
  for (std::size_t i = 1; i <= 2; ++i) {  // dV, dP
    st = mms[i]->run(stream_);
    if (!st.ok()) return st;
  }
  STEPSIM_CUDA_TRY(cuda::softmax_backward_rows(r.S, r.dP, r.rows, r.cols, r.type, stream_));
  for (std::size_t i = 3; i <= 4; ++i) {  // dQ, dK
    st = mms[i]->run(stream_);
    if (!st.ok()) return st;
  }
  return ok_status();
}

std::int64_t CudaBackend::train_length(std::int64_t bytes) {
  // A first guess at one kernel's time: 2 us, plus its bytes at 3 TB/s (an H100's HBM).
  constexpr double kTrainS = 200e-6;
  const double guess_s = 2e-6 + static_cast<double>(bytes) / 3e12;
  return std::clamp<std::int64_t>(static_cast<std::int64_t>(std::ceil(kTrainS / guess_s)),
                                  kMinTrain, kMaxTrain);
}

Result<double> CudaBackend::memory_bound(const MemoryBoundOp& op) {
  if (op.bytes < 8)
    return Error{"", "", "cuda backend: memory-bound kernel needs at least 8 bytes",
                 ErrorKind::kRuntime};
  if (!options_.verify) return memory_bound_enqueued(op);
  // Half the bytes read, half written: dst = 2 * src over floats.
  const std::int64_t n = op.bytes / 8;
  auto src = a_.reserve(n * 4, "memory-bound source");
  auto dst = b_.reserve(n * 4, "memory-bound destination");
  if (!src.ok()) return src.errors();
  if (!dst.ok()) return dst.errors();
  auto* in = static_cast<float*>(src.value());
  auto* out = static_cast<float*>(dst.value());
  STEPSIM_CUDA_TRY(cuda::fill_operand(in, n, cuda::ElemType::kFp32, 7, stream_));
  // In a step the host runs ahead and a memory-bound kernel starts as the one before it ends:
  // its launch and the previous kernel's tail overlap. Timed alone between two events, a
  // kernel pays both (a 512-byte kernel on an H100: 7.4 us alone, 3.5 us in a train, paced
  // by the host's launches).
  // So each repeat times a train of back-to-back launches, long enough (about 200 us) that
  // the events' own cost is a small part, and records the train's time per kernel.
  const std::int64_t train = train_length(op.bytes);
  auto times = time_repeats(
      [&]() -> Status {
        for (std::int64_t i = 0; i < train; ++i) {
          STEPSIM_CUDA_TRY(cuda::scale_copy(in, out, n, stream_));
        }
        return ok_status();
      },
      false);
  if (!times.ok()) return times.errors();
  for (double& t : times.value()) t /= static_cast<double>(train);
  float first_in = 0.0F, first_out = 0.0F;
  STEPSIM_CUDA_TRY(cudaMemcpy(&first_in, in, sizeof(float), cudaMemcpyDeviceToHost));
  STEPSIM_CUDA_TRY(cudaMemcpy(&first_out, out, sizeof(float), cudaMemcpyDeviceToHost));
  if (first_out != 2.0F * first_in) {
    return Error{"", "", "cuda backend: memory-bound kernel result wrong", ErrorKind::kRuntime};
  }
  return median(times.value());
}

Result<double> CudaBackend::barrier(GroupId group) {
  STEPSIM_CUDA_TRY(cudaStreamSynchronize(stream_));
  return world_.barrier(group);
}

}  // namespace stepsim::calib
