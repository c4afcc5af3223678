#include "cpu/cpu_backend.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <limits>
#include <string>

#include "bench_math.hpp"

namespace stepsim::calib {
namespace {

/// Largest working set one call may allocate: a guard against shapes meant for GPUs.
constexpr std::int64_t kMaxCpuBytes = std::int64_t{4} << 30;

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) break;
    std::string name = line.substr(colon + 1);
    const auto first = name.find_first_not_of(' ');
    return first == std::string::npos ? std::string("unknown CPU") : name.substr(first);
  }
  return "unknown CPU";
}

/// Size of one instance of the last-level cache, from cpu0's sysfs entries (a VM's guest
/// sees the 32 MiB L3 of its core complex there, where sysconf(_SC_LEVEL3_CACHE_SIZE)
/// reports the 384 MiB of the host's whole socket); else sysconf's L3, else its L2; 0 when
/// unknown.
std::int64_t last_level_cache_bytes() {
  int best_level = 0;
  std::int64_t best_bytes = 0;
  for (int index = 0; index < 8; ++index) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index);
    std::ifstream level_file(dir + "/level");
    std::ifstream size_file(dir + "/size");
    std::ifstream type_file(dir + "/type");
    int level = 0;
    std::string size;
    std::string type;
    if (!(level_file >> level) || !(size_file >> size) || !(type_file >> type)) continue;
    if (type == "Instruction" || level < best_level) continue;
    std::int64_t bytes = 0;
    std::size_t digits = 0;
    while (digits < size.size() && size[digits] >= '0' && size[digits] <= '9') {
      bytes = bytes * 10 + (size[digits++] - '0');
    }
    const std::string unit = size.substr(digits);
    const int shift = unit.empty() ? 0 : unit == "K" ? 10 : unit == "M" ? 20 : -1;
    if (shift < 0) continue;
    best_level = level;
    best_bytes = bytes << shift;
  }
  if (best_bytes > 0) return best_bytes;
  for (const int name : {_SC_LEVEL3_CACHE_SIZE, _SC_LEVEL2_CACHE_SIZE}) {
    const long bytes = sysconf(name);
    if (bytes > 0) return bytes;
  }
  return 0;
}

Error too_big(const std::string& what, std::int64_t bytes) {
  return Error{"", "",
               "cpu backend: " + what + " needs " + std::to_string(bytes >> 20) +
                   " MiB, more than the " + std::to_string(kMaxCpuBytes >> 20) +
                   " MiB a CPU measurement may use",
               ErrorKind::kRuntime};
}

}  // namespace

CpuBackend::CpuBackend(const BackendOptions& options)
    : options_(options), device_name_(cpu_model()) {
  Eigen::setNbThreads(options_.cpu_threads > 0 ? options_.cpu_threads : 1);
  device_name_ += " (" + std::to_string(Eigen::nbThreads()) + " Eigen thread" +
                  (Eigen::nbThreads() == 1 ? "" : "s") + " per rank)";
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  thread_multiple_ = provided == MPI_THREAD_MULTIPLE;
}

CpuBackend::~CpuBackend() {
  {
    std::lock_guard<std::mutex> lock(async_mutex_);
    stop_progress_ = true;
  }
  async_cv_.notify_all();
  if (progress_.joinable()) progress_.join();
  {
    std::lock_guard<std::mutex> lock(coll_mutex_);
    coll_stop_ = true;
  }
  coll_cv_.notify_all();
  if (coll_thread_.joinable()) coll_thread_.join();
  int finalized = 0;
  MPI_Finalized(&finalized);
  for (auto& [group, comm] : coll_comms_) {
    if (finalized == 0 && comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
  }
}

Result<GroupId> CpuBackend::split(std::int32_t color, std::int32_t key,
                                  const CommOptions& /*options*/) {
  return world_.split(color, key);  // MPI's communicators have no CTAs to bound
}

Result<double> CpuBackend::gemm(const GemmOp& op) {
  if (op.m <= 0 || op.n <= 0 || op.k <= 0 || op.batch <= 0) {
    return Error{"", "", "cpu backend: GEMM shape must be positive (m, n, k, batch)",
                 ErrorKind::kRuntime};
  }
  const std::int64_t bytes = op.batch * (op.m * op.k + op.k * op.n + op.m * op.n) * 4;
  if (bytes > kMaxCpuBytes) return too_big("GEMM", bytes);
  if (!options_.verify) return gemm_reusing(op);
  const auto batch = static_cast<std::size_t>(op.batch);
  a_.resize(batch);
  b_.resize(batch);
  c_.resize(batch);
  for (std::size_t i = 0; i < batch; ++i) {
    // Deterministic, batch-dependent operands: A(r,c) = (r - c) / k, B(r,c) = (r + c + i) / k.
    a_[i] = Matrix::NullaryExpr(op.m, op.k, [&](Eigen::Index r, Eigen::Index c) {
      return static_cast<float>(r - c) / static_cast<float>(op.k);
    });
    b_[i] = Matrix::NullaryExpr(op.k, op.n, [&](Eigen::Index r, Eigen::Index c) {
      return static_cast<float>(r + c + static_cast<Eigen::Index>(i)) / static_cast<float>(op.k);
    });
    c_[i].resize(op.m, op.n);
  }
  const auto times = time_repeats([&] {
    for (std::size_t i = 0; i < batch; ++i) c_[i].noalias() = a_[i] * b_[i];
  });
  // Check corner elements against a plain dot product.
  for (std::size_t i = 0; i < batch; i += std::max<std::size_t>(1, batch - 1)) {
    for (const auto& [r, c] : {std::pair<Eigen::Index, Eigen::Index>{0, 0}, {op.m - 1, op.n - 1}}) {
      double want = 0.0;
      for (Eigen::Index t = 0; t < op.k; ++t) {
        want += static_cast<double>(a_[i](r, t)) * static_cast<double>(b_[i](t, c));
      }
      const double got = static_cast<double>(c_[i](r, c));
      if (std::abs(got - want) > 1e-3 * (1.0 + std::abs(want))) {
        return Error{"", "",
                     "cpu backend: GEMM result wrong at (" + std::to_string(r) + ", " +
                         std::to_string(c) + "): " + std::to_string(got) + " instead of " +
                         std::to_string(want),
                     ErrorKind::kRuntime};
      }
    }
  }
  return median(times);
}

void CpuBackend::flush_cache() const {
  if (flush_buffer_.empty()) {
    // Twice the last-level cache, so that nothing of the op's operands survives there: in a
    // step, the other ops' working sets (and the other ranks' on a shared L3) stream through
    // it between two uses of an operand. Flushing only the L2 left operands in the L3, and
    // the validation scenarios' GEMMs ran 5-15% slower in the step than calibrated
    // (scenarios/validation/README.md). 64 MiB when unknown.
    const std::int64_t llc = last_level_cache_bytes();
    const auto bytes = static_cast<std::size_t>(2 * (llc > 0 ? llc : std::int64_t{32} << 20));
    flush_buffer_.assign(bytes / sizeof(float), 1.0F);
  }
  // One write per cache line dirties every line of the buffer: the op's operands are
  // evicted, and the lines it replaces need writing back, as a previous kernel's output
  // does in a step. (A running sum over every float took 25 ms per flush: a dependency
  // chain, not memory traffic.)
  constexpr std::size_t kFloatsPerLine = 64 / sizeof(float);
  volatile float* buffer = flush_buffer_.data();
  for (std::size_t i = 0; i < flush_buffer_.size(); i += kFloatsPerLine) {
    buffer[i] = buffer[i] + 1.0F;
  }
}

Result<double> CpuBackend::gemm_reusing(const GemmOp& op) {
  const auto batch = static_cast<std::size_t>(op.batch);
  GemmOperands& x = gemm_cache_[{op.m, op.n, op.k, op.batch}];
  if (x.a.empty()) {
    x.a.assign(batch, Matrix::Constant(op.m, op.k, 0.5F));
    x.b.assign(batch, Matrix::Constant(op.k, op.n, 0.25F));
    x.c.assign(batch, Matrix(op.m, op.n));
  }
  const auto times = time_repeats([&] {
    for (std::size_t i = 0; i < batch; ++i) x.c[i].noalias() = x.a[i] * x.b[i];
  });
  return median(times);
}

float CpuBackend::last_gemm_output(std::int64_t b, std::int64_t i, std::int64_t j) const {
  return c_.at(static_cast<std::size_t>(b))(i, j);
}

Result<double> CpuBackend::attention(const AttentionOp& op) {
  if (op.batch <= 0 || op.heads <= 0 || op.kv_heads <= 0 || op.seq <= 0 || op.head_dim <= 0 ||
      op.heads % op.kv_heads != 0) {
    return Error{"", "",
                 "cpu backend: attention needs positive batch, heads, kv_heads, seq, head_dim "
                 "and kv_heads dividing heads",
                 ErrorKind::kRuntime};
  }
  // s queries attend skv keys (context parallelism's ring steps and all-gather attend a
  // block of keys other than their own); a causal mask is aligned bottom-right, as
  // Transformer Engine's is for such blocks: query r sees keys up to r + (skv - s).
  const std::int64_t s = op.seq;
  const std::int64_t skv = op.kv_seq();
  const std::int64_t d = op.head_dim;
  const std::int64_t q_elems = op.batch * op.heads * s * d;
  const std::int64_t kv_elems = op.batch * op.kv_heads * skv * d;
  const std::int64_t bytes = (3 * q_elems + 4 * kv_elems + 4 * s * skv) * 4;
  if (bytes > kMaxCpuBytes) return too_big("attention", bytes);

  using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  std::vector<float> q(static_cast<std::size_t>(q_elems));
  std::vector<float> o(q.size());
  std::vector<float> d_o(q.size());
  std::vector<float> k(static_cast<std::size_t>(kv_elems));
  std::vector<float> v(k.size());
  std::vector<float> dk(k.size());
  std::vector<float> dv(k.size());
  for (std::size_t i = 0; i < q.size(); ++i) {
    q[i] = static_cast<float>(static_cast<std::int64_t>(i % 17) - 8) / 16.0F;
    d_o[i] = static_cast<float>(static_cast<std::int64_t>(i % 5) - 2) / 8.0F;
  }
  for (std::size_t i = 0; i < k.size(); ++i) {
    k[i] = static_cast<float>(static_cast<std::int64_t>(i % 11) - 5) / 16.0F;
    v[i] = static_cast<float>(static_cast<std::int64_t>(i % 7) - 3) / 8.0F;
  }
  RowMatrix scores(s, skv);
  RowMatrix d_scores(s, skv);
  RowMatrix dq(s, d);
  const float scale = 1.0F / std::sqrt(static_cast<float>(d));
  const std::int64_t group = op.heads / op.kv_heads;

  auto one_head = [&](std::int64_t b, std::int64_t h) {
    using Map = Eigen::Map<RowMatrix>;
    const std::int64_t kvh = b * op.kv_heads + h / group;
    Map qm(q.data() + (b * op.heads + h) * s * d, s, d);
    Map om(o.data() + (b * op.heads + h) * s * d, s, d);
    Map dom(d_o.data() + (b * op.heads + h) * s * d, s, d);
    Map km(k.data() + kvh * skv * d, skv, d);
    Map vm(v.data() + kvh * skv * d, skv, d);
    Map dkm(dk.data() + kvh * skv * d, skv, d);
    Map dvm(dv.data() + kvh * skv * d, skv, d);
    // S = QK^T (recomputed in backward, as flash attention does), masked row softmax.
    scores.noalias() = (qm * km.transpose()) * scale;
    for (Eigen::Index r = 0; r < s; ++r) {
      const Eigen::Index last =
          op.causal ? std::clamp<Eigen::Index>(r + 1 + (skv - s), 0, skv) : skv;
      auto row = scores.row(r);
      if (last > 0) {
        const float mx = row.head(last).maxCoeff();
        row.head(last) = (row.head(last).array() - mx).exp();
        row.head(last) /= row.head(last).sum();
      }
      if (last < skv) row.tail(skv - last).setZero();
    }
    if (!op.backward) {
      om.noalias() = scores * vm;
      return;
    }
    dvm.noalias() += scores.transpose() * dom;
    d_scores.noalias() = dom * vm.transpose();
    // Softmax backward: dS = P * (dP - rowsum(dP * P)).
    for (Eigen::Index r = 0; r < s; ++r) {
      const float dot = scores.row(r).dot(d_scores.row(r));
      d_scores.row(r) = scores.row(r).array() * (d_scores.row(r).array() - dot);
    }
    dq.noalias() = (d_scores * km) * scale;
    dkm.noalias() += (d_scores.transpose() * qm) * scale;
  };
  const auto times = time_repeats([&] {
    for (std::int64_t b = 0; b < op.batch; ++b) {
      for (std::int64_t h = 0; h < op.heads; ++h) one_head(b, h);
    }
  });
  const float probe = op.backward ? dq(0, 0) + dk[0] : o[0];
  if (!std::isfinite(probe))
    return Error{"", "", "cpu backend: attention produced non-finite values", ErrorKind::kRuntime};
  return median(times);
}

Result<double> CpuBackend::memory_bound(const MemoryBoundOp& op) {
  if (op.bytes < 8)
    return Error{"", "", "cpu backend: memory-bound kernel needs at least 8 bytes",
                 ErrorKind::kRuntime};
  if (op.bytes > kMaxCpuBytes) return too_big("memory-bound kernel", op.bytes);
  // Half the bytes are read, half written: dst = src * 2 over float buffers.
  const auto n = static_cast<Eigen::Index>(op.bytes / 8);
  if (!options_.verify) {
    // Named references, not a structured binding: clang before 16 cannot capture those.
    auto& buffers = stream_cache_[n];
    Eigen::ArrayXf& src = buffers.first;
    Eigen::ArrayXf& dst = buffers.second;
    if (src.size() == 0) {
      src = Eigen::ArrayXf::Constant(n, 1.0F);
      dst = Eigen::ArrayXf::Zero(n);
    }
    return median(time_repeats([&] { dst = src * 2.0F; }, /*flush=*/false));
  }
  Eigen::ArrayXf src = Eigen::ArrayXf::LinSpaced(n, 0.0F, 1.0F);
  Eigen::ArrayXf dst(n);
  const auto times = time_repeats([&] { dst = src * 2.0F; }, /*flush=*/false);
  if (dst(n - 1) != 2.0F * src(n - 1)) {
    return Error{"", "", "cpu backend: memory-bound kernel result wrong", ErrorKind::kRuntime};
  }
  return median(times);
}

}  // namespace stepsim::calib
