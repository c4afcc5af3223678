// Reading calibration profiles (profile.hpp) from JSON. Every problem of a file is reported
// at once, each naming the file and the dotted key ("gemm[3].m"). Writing: profile_write.cpp.

#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>

#include "stepsim/base/json_input.hpp"
#include "stepsim/cost/profile.hpp"

namespace stepsim {

namespace {

using Json = nlohmann::json;

constexpr double kMinSeconds = 1e-12;
constexpr double kMaxSeconds = 1e6;
constexpr std::int64_t kMaxBytes = std::int64_t{1} << 50;
// Samples per list: a calibration measures thousands; millions are no profile (and every
// sample is a row of a least-squares fit).
constexpr std::size_t kMaxSamples = std::size_t{1} << 20;

constexpr std::string_view kCublasInt =
    "int32: cuBLAS and the attention kernels take GEMM and attention sizes as int";
constexpr std::string_view kWorld =
    "stepsim's limit of 2^24 GPUs (training.world_size), a group of which this is";
constexpr std::array<ProfileIntBound, 18> kProfileIntBounds = {{
    {"world_size", 1, std::int64_t{1} << 24, kWorld},
    {"group_size", 2, std::int64_t{1} << 24, kWorld},
    {"nodes_spanned", 1, std::int64_t{1} << 24, kWorld},
    {"m", 1, 2147483647, kCublasInt},
    {"n", 1, 2147483647, kCublasInt},
    {"k", 1, 2147483647, kCublasInt},
    {"batch", 1, 2147483647, kCublasInt},
    {"heads", 1, 2147483647, kCublasInt},
    {"kv_heads", 1, 2147483647, kCublasInt},
    {"seq", 1, 2147483647, kCublasInt},
    {"head_dim", 1, 2147483647, kCublasInt},
    {"bytes", 1, kMaxBytes, "bytes (1 PiB): the fits multiply sizes by 1/seconds in doubles"},
    {"min_bytes", 0, kMaxBytes, "bytes (1 PiB), as every size of a sample"},
    {"max_bytes", 0, kMaxBytes, "bytes (1 PiB), as every size of a sample"},
    {"samples", 0, 2147483647, "int32: a count of timed runs"},
    {"forward_kernels", 1, std::int64_t{1} << 20,
     "kernels per layer: times 2^14 layers stays far inside int64"},
    {"backward_kernels", 1, std::int64_t{1} << 20,
     "kernels per layer: times 2^14 layers stays far inside int64"},
    {"repeats", 2, 2147483647, "int32: a count of timed runs"},
}};


std::string format_value(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.6g", v);
  return buffer;
}

// Concatenates text and integers by appending (GCC 12 warns falsely on `"x" + std::string`).
template <typename... Parts>
std::string cat(const Parts&... parts) {
  std::string out;
  auto add = [&out](const auto& part) {
    if constexpr (std::is_integral_v<std::decay_t<decltype(part)>>) {
      out += std::to_string(part);
    } else {
      out += part;
    }
  };
  (add(parts), ...);
  return out;
}

// Reads fields of one JSON object, collecting errors under the object's dotted key.
class ObjectReader {
 public:
  ObjectReader(const Json& j, std::string key, const std::string& file, Errors& errors)
      : j_(j), key_(std::move(key)), file_(file), errors_(errors) {
    if (!j_.is_object())
      error(key_, key_.empty() ? "must be a JSON object" : " must be a JSON object");
  }

  bool is_object() const { return j_.is_object(); }
  bool has(const char* name) const { return j_.is_object() && j_.contains(name); }
  const Json& at(const char* name) const { return j_.at(name); }
  std::string path(std::string_view name) const {
    return key_.empty() ? std::string(name) : key_ + "." + std::string(name);
  }

  void error(const std::string& key, const std::string& message) {
    errors_.push_back(Error{file_, key, message});
  }

  /// Reports every member not in `known` (unknown keys are errors, not ignored).
  void reject_unknown(std::initializer_list<std::string_view> known) {
    if (!j_.is_object()) return;
    const std::set<std::string_view> names(known);
    for (const auto& [name, value] : j_.items()) {
      if (names.count(name) == 0) error(path(name), " is not a known key");
    }
  }

  /// An integer of at least `min` and at most its bound in profile_int_bounds().
  void integer(const char* name, std::int64_t& out, std::int64_t min, bool required = true) {
    if (!has(name)) {
      if (required) error(path(name), " is missing (an integer is required)");
      return;
    }
    const Json& v = at(name);
    if (!v.is_number_integer()) {
      error(path(name), " must be an integer");
      return;
    }
    const std::int64_t x = v.get<std::int64_t>();
    if (x < min) {
      error(path(name), cat("=", x, " must be at least ", min));
      return;
    }
    for (const ProfileIntBound& b : profile_int_bounds()) {
      if (b.key == name && x > b.max) {
        error(path(name), cat("=", x, " exceeds stepsim's limit of ", b.max, " (", b.why, ")"));
        return;
      }
    }
    out = x;
  }

  void number(const char* name, double& out, bool positive, bool required = true) {
    if (!has(name)) {
      if (required) error(path(name), " is missing (a number is required)");
      return;
    }
    const Json& v = at(name);
    if (!v.is_number()) {
      error(path(name), " must be a number");
      return;
    }
    const double x = v.get<double>();
    if (!std::isfinite(x) || x < 0 || (positive && x == 0)) {
      error(path(name),
            " must be a finite " + std::string(positive ? "positive" : "non-negative") + " number");
      return;
    }
    out = x;
  }

  /// A measured time: within [1 ps, 10^6 s]. Wider values are no measurement and make the
  /// least-squares fits (fit.cpp) overflow: 1/seconds weighs every row.
  void seconds(const char* name, double& out) {
    double x = 0;
    const std::size_t before = errors_.size();
    number(name, x, true);
    if (errors_.size() != before || !has(name)) return;
    if (x < kMinSeconds || x > kMaxSeconds) {
      error(path(name), cat("=", format_value(x), " must be between 1e-12 and 1e+06 seconds"));
      return;
    }
    out = x;
  }

  /// A size in bytes: within [1, 2^50] (a PiB; the fits multiply it by 1/seconds).
  void bytes(const char* name, std::int64_t& out) {
    integer(name, out, 1);
    if (out > kMaxBytes) {
      error(path(name), cat("=", out, " exceeds stepsim's limit of ", kMaxBytes, " bytes"));
      out = 1;
    }
  }

  void boolean(const char* name, bool& out, bool required = true) {
    if (!has(name)) {
      if (required) error(path(name), " is missing (true or false is required)");
      return;
    }
    if (!at(name).is_boolean()) {
      error(path(name), " must be true or false");
      return;
    }
    out = at(name).get<bool>();
  }

  void string(const char* name, std::string& out, bool required = true) {
    if (!has(name)) {
      if (required) error(path(name), " is missing (a string is required)");
      return;
    }
    if (!at(name).is_string()) {
      error(path(name), " must be a string");
      return;
    }
    out = at(name).get<std::string>();
  }

  void dtype(const char* name, DType& out) {
    std::string s;
    string(name, s);
    if (!has(name) || !at(name).is_string()) return;
    const auto t = parse_dtype(s);
    if (!t) {
      error(path(name), cat("=\"", s, "\" is not a dtype (fp32, fp16, bf16, fp8 or fp4)"));
      return;
    }
    out = *t;
  }

  /// An optional GEMM layout ("TN", "NN" or "NT"); absent: unspecified.
  void gemm_layout(const char* name, GemmLayout& out) {
    if (!has(name)) return;
    std::string s;
    string(name, s);
    if (!at(name).is_string()) return;
    const auto l = parse_gemm_layout(s);
    if (!l) {
      error(path(name), cat("=\"", s,
                            "\" is not a GEMM layout (TN, NN or NT: Transformer Engine's names)"));
      return;
    }
    out = *l;
  }

  /// An optional GEMM scaling ("tensor", "block_128x128", "block_1x128", "mx_1x32" or
  /// "nv_1x16"); absent: tensor.
  void gemm_scaling(const char* name, GemmScaling& out) {
    if (!has(name)) return;
    std::string s;
    string(name, s);
    if (!at(name).is_string()) return;
    const auto v = parse_gemm_scaling(s);
    if (!v) {
      error(path(name),
            cat("=\"", s,
                "\" is not a GEMM scaling (tensor, block_128x128, block_1x128, mx_1x32 or nv_1x16)"));
      return;
    }
    out = *v;
  }

  void collective_kind(const char* name, CollectiveKind& out) {
    std::string s;
    string(name, s);
    if (!has(name) || !at(name).is_string()) return;
    for (CollectiveKind k : {CollectiveKind::kAllReduce, CollectiveKind::kAllGather,
                             CollectiveKind::kReduceScatter, CollectiveKind::kAllToAll}) {
      if (to_string(k) == s) {
        out = k;
        return;
      }
    }
    error(path(name),
          cat("=\"", s, "\" is not a collective (all_reduce, all_gather, reduce_scatter or all_to_all)"));
  }

  /// Calls `each(element_json, element_key)` for each element of the array `name`.
  template <typename F>
  void array(const char* name, F each, bool required = true) {
    if (!has(name)) {
      if (required) error(path(name), " is missing (a list is required)");
      return;
    }
    const Json& v = at(name);
    if (!v.is_array()) {
      error(path(name), " must be a list");
      return;
    }
    if (v.size() > kMaxSamples) {
      error(path(name), cat(" has ", v.size(), " entries, beyond stepsim's limit of ",
                            kMaxSamples));
      return;
    }
    for (std::size_t i = 0; i < v.size(); ++i) {
      each(v[i], cat(path(name), "[", i, "]"));
    }
  }

  const std::string& file() const { return file_; }
  Errors& errors() { return errors_; }

 private:
  const Json& j_;
  std::string key_;
  const std::string& file_;
  Errors& errors_;
};

LinearFit read_fit(const Json& j, const std::string& key, const std::string& file, Errors& errors) {
  LinearFit f;
  ObjectReader r(j, key, file, errors);
  if (!r.is_object()) return f;
  r.reject_unknown({"latency_s", "bandwidth_bytes_per_s", "rms_relative_error", "samples",
                    "min_bytes", "max_bytes"});
  r.number("latency_s", f.latency_s, false);
  r.integer("samples", f.samples, 0);
  // An empty fit (no samples) has no bandwidth; a real one must.
  r.number("bandwidth_bytes_per_s", f.bandwidth_bytes_per_s, f.samples > 0);
  if (f.samples > 0 && r.has("bandwidth_bytes_per_s") && f.bandwidth_bytes_per_s < 1) {
    r.error(r.path("bandwidth_bytes_per_s"),
            cat("=", format_value(f.bandwidth_bytes_per_s), " must be at least 1 byte/s"));
  }
  if (f.latency_s > kMaxSeconds) {
    r.error(r.path("latency_s"), cat("=", format_value(f.latency_s), " must be at most 1e+06 s"));
  }
  r.number("rms_relative_error", f.rms_relative_error, false);
  r.integer("min_bytes", f.min_bytes, 0);
  r.integer("max_bytes", f.max_bytes, 0);
  if (f.max_bytes < f.min_bytes) {
    r.error(r.path("max_bytes"),
            cat("=", f.max_bytes, " must be at least min_bytes=", f.min_bytes));
  }
  return f;
}

void check_group(ObjectReader& r, std::int64_t group_size, std::int64_t nodes_spanned) {
  if (nodes_spanned > group_size) {
    r.error(r.path("nodes_spanned"),
            cat("=", nodes_spanned, " must not exceed group_size=", group_size));
  }
}

void read_samples(ObjectReader& top, Profile& p) {
  const std::string& file = top.file();
  Errors& errors = top.errors();
  top.array("gemm", [&](const Json& j, const std::string& key) {
    GemmSample s;
    ObjectReader r(j, key, file, errors);
    if (!r.is_object()) return;
    r.reject_unknown({"m", "n", "k", "batch", "dtype", "layout", "scaling", "fast_accum", "seconds",
                      "citation"});
    r.integer("m", s.m, 1);
    r.integer("n", s.n, 1);
    r.integer("k", s.k, 1);
    r.integer("batch", s.batch, 1, false);
    r.dtype("dtype", s.dtype);
    r.gemm_layout("layout", s.layout);
    r.gemm_scaling("scaling", s.scaling);
    r.boolean("fast_accum", s.fast_accum, false);
    if (s.dtype == DType::kFp4) {
      // NVFP4 GEMMs scale both operands per 16 elements (VEC16_UE4M3): nothing else.
      if (s.scaling == GemmScaling::kTensor) s.scaling = GemmScaling::kNv1x16;
      if (s.scaling != GemmScaling::kNv1x16) {
        r.error(r.path("scaling"), "=\"" + std::string(to_string(s.scaling)) +
                                       "\" with dtype \"fp4\": NVFP4 GEMMs are \"nv_1x16\"");
      }
    } else if (s.scaling == GemmScaling::kNv1x16) {
      r.error(r.path("scaling"), "=\"nv_1x16\" needs dtype \"fp4\" (NVFP4's 1x16 E4M3 scales)");
    } else if (s.scaling != GemmScaling::kTensor && s.dtype != DType::kFp8) {
      r.error(r.path("scaling"), "=\"" + std::string(to_string(s.scaling)) +
                                     "\" needs dtype \"fp8\" (block scaling is an FP8 recipe's)");
    }
    if (s.fast_accum && (s.dtype != DType::kFp8 || s.scaling != GemmScaling::kTensor)) {
      r.error(r.path("fast_accum"),
              "=true needs dtype \"fp8\" with per-tensor scaling (Transformer Engine's fprop "
              "under delayed and current scaling)");
    }
    r.seconds("seconds", s.seconds);
    r.string("citation", s.citation, false);
    p.gemm.push_back(std::move(s));
  });
  top.array(
      "attention",
      [&](const Json& j, const std::string& key) {
        AttentionSample s;
        ObjectReader r(j, key, file, errors);
        if (!r.is_object()) return;
        r.reject_unknown({"batch", "heads", "kv_heads", "seq", "head_dim", "causal", "backward",
                          "dtype", "seconds", "citation"});
        r.integer("batch", s.op.batch, 1);
        r.integer("heads", s.op.heads, 1);
        r.integer("kv_heads", s.op.kv_heads, 1);
        r.integer("seq", s.op.seq, 1);
        r.integer("head_dim", s.op.head_dim, 1);
        r.boolean("causal", s.op.causal);
        r.boolean("backward", s.op.backward);
        r.dtype("dtype", s.op.dtype);
        r.seconds("seconds", s.seconds);
        r.string("citation", s.citation, false);
        p.attention.push_back(std::move(s));
      },
      false);
  top.array("memory", [&](const Json& j, const std::string& key) {
    MemorySample s;
    ObjectReader r(j, key, file, errors);
    if (!r.is_object()) return;
    r.reject_unknown({"bytes", "seconds", "citation"});
    r.bytes("bytes", s.bytes);
    r.seconds("seconds", s.seconds);
    r.string("citation", s.citation, false);
    p.memory.push_back(std::move(s));
  });
  top.array("collectives", [&](const Json& j, const std::string& key) {
    CollectiveSample s;
    ObjectReader r(j, key, file, errors);
    if (!r.is_object()) return;
    r.reject_unknown({"kind", "group_size", "nodes_spanned", "bytes", "seconds", "citation"});
    r.collective_kind("kind", s.kind);
    r.integer("group_size", s.group_size, 2);
    r.integer("nodes_spanned", s.nodes_spanned, 1);
    check_group(r, s.group_size, s.nodes_spanned);
    r.bytes("bytes", s.bytes);
    r.seconds("seconds", s.seconds);
    r.string("citation", s.citation, false);
    p.collectives.push_back(std::move(s));
  });
  top.array("p2p", [&](const Json& j, const std::string& key) {
    P2PSample s;
    ObjectReader r(j, key, file, errors);
    if (!r.is_object()) return;
    r.reject_unknown({"inter_node", "bytes", "seconds", "citation"});
    r.boolean("inter_node", s.inter_node);
    r.bytes("bytes", s.bytes);
    r.seconds("seconds", s.seconds);
    r.string("citation", s.citation, false);
    p.p2p.push_back(std::move(s));
  });
}

void read_fits(ObjectReader& top, Profile& p) {
  const std::string& file = top.file();
  Errors& errors = top.errors();
  if (top.has("memory_fit")) {
    p.memory_fit = read_fit(top.at("memory_fit"), top.path("memory_fit"), file, errors);
  }
  top.array(
      "collective_fits",
      [&](const Json& j, const std::string& key) {
        CollectiveFit f;
        ObjectReader r(j, key, file, errors);
        if (!r.is_object()) return;
        r.reject_unknown({"kind", "group_size", "nodes_spanned", "fit"});
        r.collective_kind("kind", f.kind);
        r.integer("group_size", f.group_size, 2);
        r.integer("nodes_spanned", f.nodes_spanned, 1);
        check_group(r, f.group_size, f.nodes_spanned);
        if (!r.has("fit")) {
          r.error(r.path("fit"), " is missing (an object is required)");
        } else {
          f.fit = read_fit(r.at("fit"), r.path("fit"), file, errors);
        }
        p.collective_fits.push_back(f);
      },
      false);
  top.array(
      "p2p_fits",
      [&](const Json& j, const std::string& key) {
        P2PFit f;
        ObjectReader r(j, key, file, errors);
        if (!r.is_object()) return;
        r.reject_unknown({"inter_node", "fit"});
        r.boolean("inter_node", f.inter_node);
        if (!r.has("fit")) {
          r.error(r.path("fit"), " is missing (an object is required)");
        } else {
          f.fit = read_fit(r.at("fit"), r.path("fit"), file, errors);
        }
        p.p2p_fits.push_back(f);
      },
      false);
}

// The optional "host" object (measure_host_overhead.py): every figure a measured time.
void read_host(ObjectReader& top, Profile& p) {
  if (!top.has("host")) return;
  ObjectReader r(top.at("host"), top.path("host"), top.file(), top.errors());
  if (!r.is_object()) {
    r.error(top.path("host"), " must be an object");
    return;
  }
  HostCosts& h = p.host;
  r.reject_unknown({"op_issue_s", "forward_op_issue_s", "backward_op_issue_s", "kernel_gap_s",
                    "sync_s", "ops", "layer", "citation"});
  r.seconds("op_issue_s", h.op_issue_s);
  r.seconds("forward_op_issue_s", h.forward_op_issue_s);
  r.seconds("backward_op_issue_s", h.backward_op_issue_s);
  r.seconds("kernel_gap_s", h.kernel_gap_s);
  r.seconds("sync_s", h.sync_s);
  r.string("citation", h.citation);
  if (r.has("ops")) {
    const Json& ops = r.at("ops");
    if (!ops.is_object()) {
      r.error(r.path("ops"), " must be an object of op kind to seconds");
    } else {
      ObjectReader o(ops, r.path("ops"), top.file(), top.errors());
      for (const auto& [name, value] : ops.items()) {
        double x = 0;
        o.seconds(name.c_str(), x);
        h.ops.emplace_back(name, x);
      }
    }
  }
  if (r.has("layer")) {
    ObjectReader l(r.at("layer"), r.path("layer"), top.file(), top.errors());
    if (!l.is_object()) {
      r.error(r.path("layer"), " must be an object");
    } else {
      l.reject_unknown(
          {"forward_kernels", "backward_kernels", "forward_host_s", "backward_host_s"});
      l.integer("forward_kernels", h.layer_forward_kernels, 1);
      l.integer("backward_kernels", h.layer_backward_kernels, 1);
      l.seconds("forward_host_s", h.layer_forward_host_s);
      l.seconds("backward_host_s", h.layer_backward_host_s);
    }
  }
}

// The optional "interference" object (calibrate's microbenchmark): two time ratios in [1, 10]
// (the system file's rule for the same coefficients) and what was timed.
void read_interference(ObjectReader& top, Profile& p) {
  if (!top.has("interference")) return;
  ObjectReader r(top.at("interference"), top.path("interference"), top.file(), top.errors());
  if (!r.is_object()) {
    r.error(top.path("interference"), " must be an object");
    return;
  }
  MeasuredInterference& m = p.interference;
  r.reject_unknown({"compute_slowdown", "collective_slowdown", "gemm", "collective",
                    "p2p_post_latency_s", "collective_post_latency_s", "posted"});
  // A number within [lo, hi] (hi excluded when `below`), else an error naming the key.
  const auto ranged = [&](const char* name, double& out, double lo, double hi, bool below,
                          const std::string& rule) {
    double x = lo;
    const std::size_t before = top.errors().size();
    r.number(name, x, lo > 0);
    if (top.errors().size() != before) return;
    if (x < lo || x > hi || (below && x == hi)) {
      r.error(r.path(name), cat("=", format_value(x), rule));
      return;
    }
    out = x;
  };
  ranged("compute_slowdown", m.compute_slowdown, 1, 10, false, " must be between 1 and 10");
  ranged("collective_slowdown", m.collective_slowdown, 1, 10, false, " must be between 1 and 10");
  r.string("gemm", m.gemm);
  r.string("collective", m.collective);
  // The posted calls' latencies: optional (older profiles), given together with `posted`.
  if (r.has("posted") || r.has("p2p_post_latency_s") || r.has("collective_post_latency_s")) {
    ranged("p2p_post_latency_s", m.p2p_post_latency_s, 0, 1, true, " must be below 1 s");
    ranged("collective_post_latency_s", m.collective_post_latency_s, 0, 1, true,
           " must be below 1 s");
    r.string("posted", m.posted, true);
    if (m.posted.empty() && top.errors().empty()) r.error(r.path("posted"), " must not be empty");
  }
  if (m.gemm.empty() && top.errors().empty()) r.error(r.path("gemm"), " must not be empty");
}

// The optional "spread" object (calibrate's repeats): coefficients of variation in [0, 1] per
// kernel class, the repeats they come from and where they were measured.
void read_spread(ObjectReader& top, Profile& p) {
  if (!top.has("spread")) return;
  ObjectReader r(top.at("spread"), top.path("spread"), top.file(), top.errors());
  if (!r.is_object()) {
    r.error(top.path("spread"), " must be an object");
    return;
  }
  KernelSpread& s = p.spread;
  r.reject_unknown({"gemm_cv", "attention_cv", "memory_cv", "collective_cv", "p2p_cv", "repeats",
                    "citation"});
  const auto cv = [&](const char* name, double& out) {
    double x = 0;
    const std::size_t before = top.errors().size();
    r.number(name, x, false);
    if (top.errors().size() != before) return;
    if (!(x >= 0 && x <= 1)) {
      r.error(r.path(name), cat("=", format_value(x), " must be between 0 and 1"));
      return;
    }
    out = x;
  };
  cv("gemm_cv", s.gemm_cv);
  cv("attention_cv", s.attention_cv);
  cv("memory_cv", s.memory_cv);
  cv("collective_cv", s.collective_cv);
  cv("p2p_cv", s.p2p_cv);
  r.integer("repeats", s.repeats, 2);
  r.string("citation", s.citation);
}

}  // namespace

Result<Profile> parse_profile(std::string_view json_text, const std::string& file_label) {
  auto parsed = parse_json_text(json_text, file_label);
  if (!parsed) return parsed.errors();
  const Json j = std::move(parsed).value();
  Profile p;
  Errors errors;
  ObjectReader top(j, "", file_label, errors);
  if (!top.is_object()) return errors;
  top.reject_unknown({"format_version", "machine", "backend", "date", "source", "notes",
                      "world_size", "gemm", "attention", "memory", "collectives", "p2p",
                      "memory_fit", "collective_fits", "p2p_fits", "host", "interference",
                      "spread"});
  std::int64_t version = 0;
  top.integer("format_version", version, 1);
  if (version > 1) {
    top.error("format_version", cat("=", version, " is newer than this stepsim reads (1)"));
  }
  p.format_version = static_cast<int>(version);
  top.string("machine", p.machine);
  top.string("backend", p.backend);
  top.string("date", p.date);
  top.string("source", p.source);
  top.array(
      "notes",
      [&](const Json& n, const std::string& key) {
        if (!n.is_string()) {
          top.error(key, " must be a string");
          return;
        }
        p.notes.push_back(n.get<std::string>());
      },
      false);
  top.integer("world_size", p.world_size, 1);
  read_samples(top, p);
  read_fits(top, p);
  read_host(top, p);
  read_interference(top, p);
  read_spread(top, p);
  if (!errors.empty()) return errors;
  // A profile written by hand (the public reference profiles) may leave the fits out; they
  // are then made from its samples here, exactly as `stepsim calibrate` makes them.
  if (!top.has("memory_fit") && !top.has("collective_fits") && !top.has("p2p_fits")) {
    fit_profile(p);
  }
  return p;
}

Result<Profile> load_profile_file(const std::string& path) {
  auto text = read_input_file(path);
  if (!text) return text.errors();
  return parse_profile(*text, path);
}

std::span<const ProfileIntBound> profile_int_bounds() { return kProfileIntBounds; }

}  // namespace stepsim
