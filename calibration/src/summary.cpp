#include <algorithm>
#include <cstdio>
#include <map>
#include <ostream>
#include <string>
#include <tuple>

#include "stepsim/calibration/calibrate.hpp"

namespace stepsim::calib {
namespace {

std::string fmt(const char* format, double v) {
  char buf[64] = {};
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string size_text(std::int64_t bytes) {
  const auto b = static_cast<double>(bytes);
  if (bytes >= (std::int64_t{1} << 30)) return fmt("%.0f GiB", b / (1 << 30));
  if (bytes >= (std::int64_t{1} << 20)) return fmt("%.0f MiB", b / (1 << 20));
  if (bytes >= (std::int64_t{1} << 10)) return fmt("%.0f KiB", b / (1 << 10));
  return std::to_string(bytes) + " B";
}

std::string pad(const std::string& s, std::size_t width) {
  return s.size() >= width ? s + " " : s + std::string(width - s.size(), ' ');
}

}  // namespace

double bus_bandwidth_factor(CollectiveKind kind, std::int64_t group_size) {
  const auto n = static_cast<double>(group_size);
  if (group_size <= 1) return 0.0;
  return kind == CollectiveKind::kAllReduce ? 2.0 * (n - 1.0) / n : (n - 1.0) / n;
}

void write_summary(std::ostream& out, const Profile& p) {
  out << "Calibration of " << p.machine << " (" << p.backend << ", " << p.world_size
      << (p.world_size == 1 ? " rank" : " ranks") << ", " << p.date << ")\n";
  if (!p.gemm.empty()) {
    const auto best =
        std::max_element(p.gemm.begin(), p.gemm.end(), [](const auto& a, const auto& b) {
          return GemmOp{a.m, a.n, a.k, a.batch, a.dtype}.flops() / a.seconds <
                 GemmOp{b.m, b.n, b.k, b.batch, b.dtype}.flops() / b.seconds;
        });
    const double tflops =
        GemmOp{best->m, best->n, best->k, best->batch, best->dtype}.flops() / best->seconds / 1e12;
    out << "GEMM: " << p.gemm.size() << " shapes, peak " << fmt("%.3f", tflops) << " TFLOP/s at "
        << to_string(best->dtype) << " m=" << best->m << " n=" << best->n << " k=" << best->k
        << (best->batch > 1 ? " batch=" + std::to_string(best->batch) : "") << "\n";
  }
  if (!p.attention.empty()) {
    double best = 0.0;
    for (const auto& a : p.attention) best = std::max(best, a.op.flops() / a.seconds / 1e12);
    out << "Attention: " << p.attention.size() << " kernels, peak " << fmt("%.3f", best)
        << " TFLOP/s\n";
  }
  if (!p.memory.empty()) {
    double best = 0.0;
    for (const auto& m : p.memory) best = std::max(best, static_cast<double>(m.bytes) / m.seconds);
    out << "Memory-bound: " << p.memory.size() << " sizes, peak " << fmt("%.2f", best / 1e9)
        << " GB/s; fit " << fmt("%.2f", p.memory_fit.bandwidth_bytes_per_s / 1e9) << " GB/s + "
        << fmt("%.1f", p.memory_fit.latency_s * 1e6) << " us\n";
  }
  if (p.collectives.empty()) {
    out << "Collectives: none measured (collectives need ranks: run under mpirun -np N)\n";
  } else {
    // Per (kind, group, span): the best bus bandwidth over sizes, as nccl-tests shows it.
    using Key = std::tuple<CollectiveKind, std::int64_t, std::int64_t>;
    std::map<Key, const CollectiveSample*> best;
    for (const auto& c : p.collectives) {
      const Key k{c.kind, c.group_size, c.nodes_spanned};
      const auto bw = [](const CollectiveSample& s) {
        return static_cast<double>(s.bytes) / s.seconds;
      };
      if (best.count(k) == 0 || bw(c) > bw(*best[k])) best[k] = &c;
    }
    out << "Collectives (best size; nccl-tests algbw/busbw; fit from all sizes):\n  "
        << pad("kind", 16) << pad("ranks", 7) << pad("nodes", 7) << pad("size", 10)
        << pad("time us", 11) << pad("algbw GB/s", 12) << pad("busbw GB/s", 12)
        << pad("fit lat us", 12) << "fit busbw GB/s\n";
    for (const auto& [k, s] : best) {
      const auto& [kind, group, span] = k;
      const double algbw = static_cast<double>(s->bytes) / s->seconds;
      const double factor = bus_bandwidth_factor(kind, group);
      std::string fit_lat = "-";
      std::string fit_bw = "-";
      for (const auto& f : p.collective_fits) {
        if (f.kind == kind && f.group_size == group && f.nodes_spanned == span) {
          fit_lat = fmt("%.1f", f.fit.latency_s * 1e6);
          fit_bw = fmt("%.2f", f.fit.bandwidth_bytes_per_s * factor / 1e9);
        }
      }
      out << "  " << pad(std::string(to_string(kind)), 16) << pad(std::to_string(group), 7)
          << pad(std::to_string(span), 7) << pad(size_text(s->bytes), 10)
          << pad(fmt("%.1f", s->seconds * 1e6), 11) << pad(fmt("%.2f", algbw / 1e9), 12)
          << pad(fmt("%.2f", algbw * factor / 1e9), 12) << pad(fit_lat, 12) << fit_bw << "\n";
    }
  }
  for (const bool inter : {false, true}) {
    double best = 0.0;
    std::int64_t n = 0;
    for (const auto& s : p.p2p) {
      if (s.inter_node != inter) continue;
      ++n;
      best = std::max(best, static_cast<double>(s.bytes) / s.seconds);
    }
    if (n == 0) continue;
    out << "P2P " << (inter ? "inter-node" : "intra-node") << ": " << n << " sizes, peak "
        << fmt("%.2f", best / 1e9) << " GB/s\n";
  }
}

}  // namespace stepsim::calib
