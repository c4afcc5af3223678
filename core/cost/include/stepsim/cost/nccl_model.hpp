#pragma once
// NcclModel: NCCL's own cost model of a collective (tuning.cc), as NCCL uses it to choose an
// algorithm and a protocol.
// Details: docs/models.md, "NcclModel".

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "stepsim/base/result.hpp"
#include "stepsim/ops/ops.hpp"
#include "stepsim/ops/plan.hpp"
#include "stepsim/config/scenario.hpp"
#include "stepsim/layout/nccl_topology.hpp"

namespace stepsim {

enum class NcclAlgo : std::uint8_t { kTree, kRing, kNvls, kNvlsTree, kPat };
enum class NcclProto : std::uint8_t { kLL, kLL128, kSimple };
inline constexpr int kNcclAlgos = 5;
inline constexpr int kNcclProtos = 3;

std::string_view to_string(NcclAlgo a);
std::string_view to_string(NcclProto p);

struct NcclChoice {
  NcclAlgo algo = NcclAlgo::kRing;
  NcclProto proto = NcclProto::kSimple;
  double seconds = 0;
};

/// A measured collective's time under the job's NCCL settings that restrict NCCL's choice
/// (SystemConfig::nccl_nvls false: NCCL_NVLS_ENABLE=0; SystemConfig::nccl_enabled: NCCL_ALGO,
/// NCCL_PROTO) is its measurement times this factor: NCCL's own model of the choice under the
/// restrictions over its choice at NCCL's defaults (the measurements ran with NCCL's default:
/// every algorithm and protocol, NVLS where supported). 1 without restrictions, where NCCL
/// has no model of the platform or the group, or where the restricted choice is the default
/// one; infinite where the restrictions leave NCCL no algorithm (nccl_unavailable_errors
/// refuses such a job first). NCCL_ALGO and NCCL_PROTO do not reach a kernel that is not
/// NCCL's (CollectiveOp::nccl false).
double nccl_tuning_factor(const SystemConfig& system, const CollectiveOp& op);

/// Errors naming training.nccl_algo (or nccl_proto when only it is set) for each collective
/// of `plan` that NCCL_ALGO and NCCL_PROTO leave no algorithm and protocol (NCCL stops with
/// "No algorithm/protocol available", enqueue.cc topoGetAlgoInfo); empty without them.
Errors nccl_unavailable_errors(const Workload& w, const WorkloadPlan& plan);

/// The options of Megatron's --nccl-communicator-config-path (TrainingConfig::
/// nccl_group_options) for the process group stepsim's `group` runs on: "tp" kTensor, "dp_cp"
/// kData (DDP's and the distributed optimizer's group), "embd" kEmbedding, "cp" kContext,
/// "tp_dp_cp" kTensorData and "tp_cp" kTensorContext (FP8's amax reductions), "mp" kGradStats
/// without the distributed optimizer (with it the grad norm runs on the default group, which
/// takes none). nullopt: NCCL's defaults.
std::optional<NcclGroupOptions> nccl_group_options(const TrainingConfig& t, CommGroup group);

/// A collective's time under the job's NCCL channel limits (SystemConfig::nccl_min_nchannels,
/// nccl_max_nchannels, nccl_group_limits of op.group) is its time at NCCL's defaults times
/// this factor (>= 1). NCCL's tuning does not see the limits (tuning.cc computes bandwidth
/// from the search graphs' channels), so the algorithm and protocol stay; the kernel runs
/// nccl_run_channels() channels, priced with NCCL's own bandwidth formula (graph channels x
/// per-channel speed) with at most that many channels of each graph. 1 for kernels that are
/// not NCCL collectives, without limits, or where NCCL has no model of the platform.
double nccl_channel_factor(const SystemConfig& system, const CollectiveOp& op);

class NcclModel {
 public:
  explicit NcclModel(const NcclComm& comm);

  /// ncclTopoGetAlgoTime in seconds; nullopt where NCCL gives the pair no bandwidth
  /// (disabled or unsupported).
  std::optional<double> time_s(CollectiveKind kind, NcclAlgo algo, NcclProto proto,
                               std::int64_t bytes) const;
  /// The enabled pair of least time, as topoGetAlgoInfo picks it (seconds infinite when
  /// none is: see available).
  NcclChoice choose(CollectiveKind kind, std::int64_t bytes) const;
  /// Whether any algorithm and protocol is enabled for `kind` (NCCL_ALGO and NCCL_PROTO can
  /// leave none: NCCL then stops).
  bool available(CollectiveKind kind) const;

  /// Latency (us) and algorithm bandwidth (GB/s) of ncclTopoTuneModel's tables.
  double latency_us(CollectiveKind kind, NcclAlgo algo, NcclProto proto) const;
  double bandwidth_gbps(CollectiveKind kind, NcclAlgo algo, NcclProto proto) const;

  const NcclComm& comm() const { return comm_; }

 private:
  NcclComm comm_;
  /// [collective][algorithm][protocol]: algorithm bandwidth (GB/s, 0 = not available) and
  /// latency (us), as ncclTopoTuneModel fills comm->bandwidths and comm->latencies.
  double bw_[3][kNcclAlgos][kNcclProtos] = {};
  double lat_[3][kNcclAlgos][kNcclProtos] = {};
};

}  // namespace stepsim
