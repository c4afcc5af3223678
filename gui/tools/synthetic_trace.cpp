#include "synthetic_trace.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <string_view>
#include <vector>

namespace stepsim::gui::synth {

namespace {

constexpr std::array<std::string_view, 6> kForwardOps = {"qkv_gemm", "attention", "proj_gemm",
                                                         "fc1_gemm", "fc2_gemm",  "layernorm"};
constexpr std::array<std::string_view, 3> kWeightOps = {"wgrad_qkv", "wgrad_fc1", "wgrad_fc2"};

class Writer {
 public:
  Writer(const SyntheticTraceSpec& spec, std::ostream& out) : spec_(spec), out_(out) {
    rng_ = spec.seed * 6364136223846793005ULL + 1442695040888963407ULL;
    buffer_.reserve(1 << 20);
  }

  SyntheticTraceInfo run();

 private:
  double jittered(double us) {
    if (spec_.jitter <= 0) return us;
    rng_ = rng_ * 6364136223846793005ULL + 1442695040888963407ULL;
    const double u = static_cast<double>(rng_ >> 11) * 0x1.0p-53;
    return us * (1.0 + spec_.jitter * u);
  }
  void slice(std::string_view cat, std::int32_t rank, std::int32_t tid, double start, double dur,
             char phase, std::int32_t mb, std::int32_t layer, std::string_view op,
             std::string_view detail);
  void counter(std::int32_t rank, double t, std::int64_t bytes);
  void raw(std::string_view s) {
    buffer_ += s;
    if (buffer_.size() > (1 << 20) - 4096) flush();
  }
  void flush() {
    out_.write(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
    buffer_.clear();
  }
  double pass(std::int32_t rank, std::int32_t mb, bool forward, double t);

  const SyntheticTraceSpec& spec_;
  std::ostream& out_;
  std::string buffer_;
  std::uint64_t rng_ = 0;
  SyntheticTraceInfo info_;
  bool first_event_ = true;
};

void Writer::slice(std::string_view cat, std::int32_t rank, std::int32_t tid, double start,
                   double dur, char phase, std::int32_t mb, std::int32_t layer, std::string_view op,
                   std::string_view detail) {
  char text[512];
  const int n = std::snprintf(
      text, sizeof text,
      "%s\n{\"ph\":\"X\",\"name\":\"%c mb%d c0 L%d %.*s\",\"cat\":\"%.*s\",\"pid\":%d,"
      "\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"mb\":%d,\"chunk\":%d,\"layer\":%d,"
      "\"op\":\"%.*s\",\"detail\":\"%.*s\"}}",
      first_event_ ? "" : ",", phase, mb, layer, static_cast<int>(op.size()), op.data(),
      static_cast<int>(cat.size()), cat.data(), rank, tid, spec_.origin_us + start, dur, mb,
      mb < 0 ? -1 : 0, layer, static_cast<int>(op.size()), op.data(),
      static_cast<int>(detail.size()), detail.data());
  first_event_ = false;
  raw(std::string_view(text, static_cast<std::size_t>(n)));
  ++info_.slices;
  info_.step_us = std::max(info_.step_us, start + dur);
}

void Writer::counter(std::int32_t rank, double t, std::int64_t bytes) {
  char text[160];
  const int n = std::snprintf(text, sizeof text,
                              ",\n{\"ph\":\"C\",\"name\":\"memory\",\"pid\":%d,\"ts\":%.3f,"
                              "\"args\":{\"bytes\":%lld}}",
                              rank, spec_.origin_us + t, static_cast<long long>(bytes));
  raw(std::string_view(text, static_cast<std::size_t>(n)));
  ++info_.counters;
}

// One forward or backward pass of micro-batch `mb` on `rank` from `t`; returns its end.
double Writer::pass(std::int32_t rank, std::int32_t mb, bool forward, double t) {
  const std::string_view detail = "m=2048 n=4608 k=12288 bf16";
  auto tp = [&](std::int32_t layer, std::string_view op) {
    if (!spec_.tp_comm) return;
    const double d = jittered(spec_.tp_us);
    slice("tp_comm", rank, 1, t, d, forward ? 'F' : 'B', mb, layer, op,
          "all-reduce 25165824 B tp=8");
    t += d;
  };
  auto compute = [&](std::string_view cat, char phase, std::int32_t layer, std::string_view op,
                     double us) {
    const double d = jittered(us);
    slice(cat, rank, 0, t, d, phase, mb, layer, op, detail);
    t += d;
  };
  const std::int32_t first_layer = rank * spec_.layers;
  for (std::int32_t l = 0; l < spec_.layers; ++l) {
    const std::int32_t layer = forward ? first_layer + l : first_layer + spec_.layers - 1 - l;
    if (forward) {
      for (std::int32_t k = 0; k < spec_.forward_ops; ++k) {
        compute("forward", 'F', layer,
                kForwardOps[static_cast<std::size_t>(k) % kForwardOps.size()], spec_.op_us);
        if (k == 0 || k + 1 == spec_.forward_ops)
          tp(layer, k == 0 ? "attn_allreduce" : "mlp_allreduce");
      }
      continue;
    }
    if (spec_.recompute) {
      for (std::int32_t k = 0; k < spec_.forward_ops; ++k) {
        compute("recompute", 'R', layer,
                kForwardOps[static_cast<std::size_t>(k) % kForwardOps.size()], spec_.op_us);
      }
    }
    for (std::int32_t k = 0; k < spec_.forward_ops; ++k) {
      compute("backward_input", 'B', layer,
              kForwardOps[static_cast<std::size_t>(k) % kForwardOps.size()], spec_.op_us * 1.1);
      if (k == 0 || k + 1 == spec_.forward_ops)
        tp(layer, k == 0 ? "mlp_allreduce" : "attn_allreduce");
    }
    for (std::int32_t k = 0; k < spec_.weight_ops; ++k) {
      compute("backward_weight", 'W', layer,
              kWeightOps[static_cast<std::size_t>(k) % kWeightOps.size()], spec_.op_us * 0.9);
    }
  }
  return t;
}

SyntheticTraceInfo Writer::run() {
  const std::int32_t p = spec_.ranks;
  const std::int32_t m = spec_.microbatches;
  raw("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[");
  for (std::int32_t r = 0; r < p; ++r) {
    char text[200];
    const int n = std::snprintf(
        text, sizeof text,
        "%s\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"args\":{\"name\":\"stage %d\"}}",
        r == 0 ? "" : ",", r, r);
    raw(std::string_view(text, static_cast<std::size_t>(n)));
  }
  first_event_ = false;
  // 1F1B program per rank: warm-up forwards, steady F/B pairs, cool-down backwards.
  std::vector<std::vector<std::pair<bool, std::int32_t>>> program(static_cast<std::size_t>(p));
  for (std::int32_t r = 0; r < p; ++r) {
    auto& prog = program[static_cast<std::size_t>(r)];
    const std::int32_t warmup = std::min(p - r - 1, m);
    std::int32_t f = 0;
    std::int32_t b = 0;
    for (; f < warmup; ++f) prog.emplace_back(true, f);
    while (f < m) {
      prog.emplace_back(true, f++);
      prog.emplace_back(false, b++);
    }
    while (b < m) prog.emplace_back(false, b++);
  }
  const double unknown = -1;
  // arrival[r][mb]: when the input of F (or the gradient of B) reaches rank r.
  std::vector<std::vector<double>> arrive_f(
      static_cast<std::size_t>(p), std::vector<double>(static_cast<std::size_t>(m), unknown));
  std::vector<std::vector<double>> arrive_b = arrive_f;
  std::vector<double> free_at(static_cast<std::size_t>(p), 0);
  std::vector<std::size_t> next(static_cast<std::size_t>(p), 0);
  const std::int64_t static_bytes = 20LL << 30;
  const std::int64_t act_bytes = 1LL << 30;
  std::vector<std::int64_t> memory(static_cast<std::size_t>(p), static_bytes);
  for (std::int32_t r = 0; r < p; ++r) counter(r, 0, static_bytes);
  bool progress = true;
  while (progress) {
    progress = false;
    for (std::int32_t r = 0; r < p; ++r) {
      const auto ru = static_cast<std::size_t>(r);
      while (next[ru] < program[ru].size()) {
        const auto [forward, mb] = program[ru][next[ru]];
        const auto mu = static_cast<std::size_t>(mb);
        double ready = 0;
        if (forward && r > 0) ready = arrive_f[ru][mu];
        if (!forward && r + 1 < p) ready = arrive_b[ru][mu];
        if (ready == unknown) break;
        double t = std::max(free_at[ru], ready);
        t = pass(r, mb, forward, t);
        memory[ru] += forward ? act_bytes : -act_bytes;
        counter(r, t, memory[ru]);
        const std::int32_t peer = forward ? r + 1 : r - 1;
        if (peer >= 0 && peer < p) {
          const double d = jittered(spec_.p2p_us);
          const char phase = forward ? 'F' : 'B';
          const std::string_view op = forward ? "send_forward" : "send_backward";
          const std::string_view rop = forward ? "recv_forward" : "recv_backward";
          slice("pp_comm", r, 2, t, d, phase, mb, -1, op, "p2p 25165824 B");
          slice("pp_comm", peer, 2, t, d, phase, mb, -1, rop, "p2p 25165824 B");
          (forward ? arrive_f : arrive_b)[static_cast<std::size_t>(peer)][mu] = t + d;
          t += d;
        }
        free_at[ru] = t;
        ++next[ru];
        progress = true;
      }
    }
  }
  for (std::int32_t r = 0; r < p; ++r) {
    const auto ru = static_cast<std::size_t>(r);
    double t = free_at[ru];
    const double dp = jittered(spec_.dp_us);
    slice("dp_comm", r, 3, t, dp, 'D', -1, -1, "grad_reduce_scatter",
          "reduce-scatter 1.2e9 B dp=8");
    t += dp;
    slice("optimizer", r, 0, t, jittered(spec_.optimizer_us), 'O', -1, -1, "adam_step", "");
  }
  raw("\n]");
  if (spec_.summary) {
    char text[256];
    const int n = std::snprintf(text, sizeof text,
                                ",\"stepsim\":{\"label\":\"%s\",\"step_time_s\":%.9f,\"ranks\":%d,"
                                "\"memory_capacity_bytes\":%lld}",
                                spec_.label.c_str(), info_.step_us * 1e-6, p,
                                static_cast<long long>(spec_.capacity_bytes));
    raw(std::string_view(text, static_cast<std::size_t>(n)));
  }
  raw("}\n");
  flush();
  return info_;
}

}  // namespace

SyntheticTraceInfo write_synthetic_trace(const SyntheticTraceSpec& spec, std::ostream& out) {
  return Writer(spec, out).run();
}

std::size_t synthetic_slice_count(const SyntheticTraceSpec& s) {
  const auto count = [](std::int32_t v) { return static_cast<std::size_t>(std::max(v, 0)); };
  const std::size_t tp = s.tp_comm ? 2 : 0;
  const std::size_t per_layer = 2 * count(s.forward_ops) + 2 * tp + count(s.weight_ops) +
                                (s.recompute ? count(s.forward_ops) : 0);
  const std::size_t p = count(s.ranks);
  const std::size_t m = count(s.microbatches);
  return p * m * count(s.layers) * per_layer + (p > 0 ? 4 * m * (p - 1) : 0) + 2 * p;
}

SyntheticTraceSpec spec_with_slices(std::size_t slices, std::int32_t ranks) {
  SyntheticTraceSpec spec;
  spec.ranks = ranks;
  spec.microbatches = 64;
  spec.forward_ops = 5;
  spec.weight_ops = 3;
  spec.layers = 1;
  while (synthetic_slice_count(spec) < slices) ++spec.layers;
  return spec;
}

}  // namespace stepsim::gui::synth
