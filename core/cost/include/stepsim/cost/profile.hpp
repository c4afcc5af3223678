#pragma once
// A calibration profile: raw microbenchmark samples and the fits made from them. Written by
// `stepsim calibrate`, read by CalibratedCostModel. Public reference profiles use the same
// format with `source` saying they are public data.

#include <cstdint>
#include <span>
#include <string_view>
#include <string>
#include <utility>
#include <vector>

#include "stepsim/base/dtype.hpp"
#include "stepsim/ops/ops.hpp"
#include "stepsim/base/result.hpp"

namespace stepsim {

struct GemmSample {
  std::int64_t m = 0, n = 0, k = 0, batch = 1;
  DType dtype = DType::kBf16;
  double seconds = 0;  ///< median of the repeats
  std::string citation;  ///< public profiles: where the figure comes from
  /// The operand layout it was measured in (Transformer Engine's names); kUnspecified for
  /// public data that does not say. The calibrated model prices a GEMM from the samples of
  /// its own layout when the profile has them.
  GemmLayout layout = GemmLayout::kUnspecified;
  /// An FP8 GEMM's operand scaling (GemmScaling); kTensor for every other sample.
  GemmScaling scaling = GemmScaling::kTensor;
  /// A per-tensor FP8 GEMM measured with fast accumulation (GemmOp::fast_accum).
  bool fast_accum = false;
  bool operator==(const GemmSample&) const = default;
};

struct AttentionSample {
  AttentionOp op;
  double seconds = 0;
  std::string citation;
  bool operator==(const AttentionSample&) const = default;
};

struct MemorySample {
  std::int64_t bytes = 0;  ///< read + written
  double seconds = 0;
  std::string citation;
  bool operator==(const MemorySample&) const = default;
};

struct CollectiveSample {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  std::int64_t group_size = 0;
  std::int64_t nodes_spanned = 1;
  std::int64_t bytes = 0;  ///< nccl-tests "size"
  double seconds = 0;
  std::string citation;
  bool operator==(const CollectiveSample&) const = default;
};

struct P2PSample {
  bool inter_node = false;
  std::int64_t bytes = 0;
  double seconds = 0;
  std::string citation;
  bool operator==(const P2PSample&) const = default;
};

/// time(bytes) = latency_s + bytes / bandwidth_bytes_per_s, fitted by least squares.
struct LinearFit {
  double latency_s = 0;
  double bandwidth_bytes_per_s = 0;  ///< algorithm bandwidth (bytes / time)
  double rms_relative_error = 0;     ///< of the fit over its samples
  std::int64_t samples = 0;
  std::int64_t min_bytes = 0, max_bytes = 0;  ///< measured range
  bool operator==(const LinearFit&) const = default;
};

struct CollectiveFit {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  std::int64_t group_size = 0;
  std::int64_t nodes_spanned = 1;
  LinearFit fit;
  bool operator==(const CollectiveFit&) const = default;
};

struct P2PFit {
  bool inter_node = false;
  LinearFit fit;
  bool operator==(const P2PFit&) const = default;
};

/// The host side of an eager training step (Megatron runs PyTorch eagerly): what issuing one
/// kernel costs the host, measured with the framework the job runs
/// (scenarios/profiles/measure_host_overhead.py). Absent from a profile (all zero): the host
/// is not modelled and kernels start as soon as their stream and inputs allow.
struct HostCosts {
  double op_issue_s = 0;           ///< one eager op: the median over a layer's op kinds
  double forward_op_issue_s = 0;   ///< per forward kernel of a layer, module overheads included
  double backward_op_issue_s = 0;  ///< the autograd engine's host seconds per backward kernel
  double kernel_gap_s = 0;         ///< the GPU's own time per back-to-back tiny kernel
  double sync_s = 0;               ///< a host synchronisation's round trip with the GPU idle
  std::vector<std::pair<std::string, double>> ops;  ///< op_issue_s per op kind
  std::int64_t layer_forward_kernels = 0, layer_backward_kernels = 0;
  double layer_forward_host_s = 0, layer_backward_host_s = 0;
  std::string citation;
  bool measured() const { return forward_op_issue_s > 0 && backward_op_issue_s > 0; }
  bool operator==(const HostCosts&) const = default;
};

/// Compute-communication interference on the calibrated machine (calibrate's microbenchmark,
/// run on two or more ranks by a backend that runs a collective beside the caller's work): a
/// GEMM timed alone and while a collective is in flight, the collective alone and while GEMMs
/// run back to back on the same device. Absent: the system file's cited coefficients apply.
struct MeasuredInterference {
  double compute_slowdown = 1;     ///< the GEMM's time beside the collective over alone
  double collective_slowdown = 1;  ///< the collective's time beside GEMMs over alone
  std::string gemm;                ///< the GEMM timed, e.g. "fp32 m=1024 n=1024 k=1024"
  std::string collective;          ///< e.g. "all_reduce of 16777216 bytes over 2 ranks"
  /// A backend that runs posted calls on threads of its own (the CPU backend's MPI progress
  /// and collective threads): how much later than alone a small call posted while the caller
  /// computes completes, because its thread waits for a core (the median over posts; 0: not
  /// measured, as in profiles written before it). Point-to-point and collectives apart: they
  /// run on different threads. `posted`: what was posted.
  double p2p_post_latency_s = 0;
  double collective_post_latency_s = 0;
  std::string posted;  ///< e.g. "send/recv of 65536 bytes, all_reduce of 65536 bytes over 2 ranks"
  bool measured() const { return !gemm.empty(); }
  bool operator==(const MeasuredInterference&) const = default;
};

/// The run-to-run spread of kernel times per kernel class, as `stepsim calibrate` observes it
/// in each sample's repeats (calib::Backend::last_spread): per class the median over its
/// samples of the repeats' coefficient of variation (standard deviation / mean). Absent from
/// a profile (repeats 0): not measured, and synchronisations cost no wait for a slower peer.
/// The engine's use of it: stepsim/cost/spread.hpp.
struct KernelSpread {
  double gemm_cv = 0;
  double attention_cv = 0;
  double memory_cv = 0;      ///< memory-bound kernels (elementwise, norms, optimizer...)
  double collective_cv = 0;
  double p2p_cv = 0;
  std::int64_t repeats = 0;  ///< timed repeats per sample the CVs come from
  std::string citation;
  bool measured() const { return repeats > 1; }
  bool operator==(const KernelSpread&) const = default;
};

struct Profile {
  int format_version = 1;
  std::string machine;   ///< host / GPU identity
  std::string backend;   ///< "cuda" | "cpu" | "public"
  std::string date;      ///< ISO 8601, when measured
  std::string source;    ///< "measured" or "public data, not measured here"
  std::vector<std::string> notes;
  std::int64_t world_size = 1;  ///< ranks the collectives were measured with

  std::vector<GemmSample> gemm;
  std::vector<AttentionSample> attention;
  std::vector<MemorySample> memory;
  std::vector<CollectiveSample> collectives;
  std::vector<P2PSample> p2p;

  LinearFit memory_fit;
  std::vector<CollectiveFit> collective_fits;
  std::vector<P2PFit> p2p_fits;

  HostCosts host;  ///< optional ("host" in the file)
  MeasuredInterference interference;  ///< optional ("interference" in the file)
  KernelSpread spread;  ///< optional ("spread" in the file)

  bool operator==(const Profile&) const = default;
};

/// Fills the fits of `p` from its samples (least squares, Eigen).
void fit_profile(Profile& p);

/// Least-squares latency + size/bandwidth fit of (bytes, seconds) pairs.
LinearFit fit_linear(const std::vector<std::int64_t>& bytes, const std::vector<double>& seconds);

Result<Profile> load_profile_file(const std::string& path);
Result<Profile> parse_profile(std::string_view json_text, const std::string& file_label);
std::string profile_to_json(const Profile& p);

/// The range of an integer of a calibration profile, by its key (the same name in every
/// sample kind: "m" of gemm[3], "group_size" of allreduce[0]) and why it is bounded there.
struct ProfileIntBound {
  std::string_view key;
  std::int64_t min = 1;
  std::int64_t max = 0;
  std::string_view why;
};

/// Every integer key of a profile with its range (the profile reader enforces them).
std::span<const ProfileIntBound> profile_int_bounds();

}  // namespace stepsim
