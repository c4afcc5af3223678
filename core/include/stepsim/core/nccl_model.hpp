#pragma once
// NcclModel: NCCL's own cost model of a collective, as NCCL uses it to choose an algorithm
// (ring | tree | NVLS | NVLS tree | PAT) and a protocol (LL | LL128 | Simple).
//
// Source: github.com/NVIDIA/nccl at commit 5067397c2676d5aed50042fc39e5c8ee96eb0027:
// - src/graph/tuning.cc, ncclTopoTuneModel: per (collective, algorithm, protocol) a latency
//   (base + hardware latency per step) and a bus bandwidth (channels x per-channel bandwidth,
//   with the per-generation caps), turned into algorithm bandwidth; ncclTopoGetAlgoTime: time
//   = latency + bytes / bandwidth, with the tree correction factors and the ring plateau.
// - src/enqueue.cc, updateCollCostTable / topoGetAlgoInfo: the enabled algorithm/protocol of
//   least time wins.
// - src/graph/search.cc (ncclTopoCompute, ncclTopoDupChannels, the speed arrays) and
//   src/graph/topo.h (per-link NVLink bandwidth per generation): the channels and per-channel
//   bandwidth of the ring, tree and NVLS graphs, which NcclComm derives for a DGX-style node
//   (every GPU on the NVSwitch, one NIC per GPU on the GPU's PCIe switch).
// - src/init.cc: the graph each algorithm uses (Tree, PAT: tree graph; NVLS, NVLS tree: NVLS
//   graph); src/transport/nvls.cc: NVLS needs NVSwitch multicast (Hopper and newer) and at
//   least 2 GPUs of the communicator in the node.
// NCCL_NVLS_ENABLE=0 (SystemConfig::nccl_nvls false) leaves the NVLS graph out, as ncclNvlsInit
// does. Not modelled: CollNet/SHARP (off unless the cluster has a SHARP plugin: NCCL's default
// collnetEnable is 0), user NCCL_ALGO/NCCL_PROTO overrides, tuner plugins, aggregation of
// several operations (numPipeOps is 1), fp8 reductions.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "stepsim/core/ops.hpp"
#include "stepsim/core/scenario.hpp"

namespace stepsim {

enum class NcclAlgo : std::uint8_t { kTree, kRing, kNvls, kNvlsTree, kPat };
enum class NcclProto : std::uint8_t { kLL, kLL128, kSimple };
/// NCCL's compute-capability index (NCCL_VOLTA_COMPCAP_IDX .. NCCL_BLACKWELL_COMPCAP_IDX).
enum class NcclArch : std::uint8_t { kVolta, kAmpere, kHopper, kBlackwell };

inline constexpr int kNcclAlgos = 5;
inline constexpr int kNcclProtos = 3;

std::string_view to_string(NcclAlgo a);
std::string_view to_string(NcclProto p);

/// One of NCCL's topology graphs: channels and per-channel bandwidth (GB/s, NCCL's units).
struct NcclGraph {
  int channels = 0;
  double bw_intra = 0;
  double bw_inter = 0;
  bool tree_pattern = false;  ///< NCCL_TOPO_PATTERN_TREE (a single GPU per node)
  bool operator==(const NcclGraph&) const = default;
};

/// What NCCL's tuner sees of a communicator.
struct NcclComm {
  NcclArch arch = NcclArch::kAmpere;
  int ranks = 0;
  int nodes = 0;
  bool host_cpu_amd = false;  ///< NCCL picks LL ceilings and network overheads by CPU vendor
  NcclGraph ring, tree, nvls;
  bool nvls_support = false;
  bool operator==(const NcclComm&) const = default;
};

/// The platform facts NCCL's topology detection reads, for the GPU of a system file: its
/// generation, NVLink count, the PCIe path GPU -> NIC and the host CPU vendor. nullopt for a
/// system NCCL does not run on or that is not a known NVSwitch platform.
struct NcclPlatform {
  NcclArch arch = NcclArch::kAmpere;
  double nvlink_bw_per_link = 0;  ///< topo.h SMxx_NVLINK_BW (GB/s)
  int nvlinks = 0;                ///< NVLinks from a GPU to the NVSwitch fabric
  double pci_bw = 0;              ///< NCCL's bandwidth of the GPU's PCIe x16 link (GB/s)
  bool host_cpu_amd = false;
  std::string source;  ///< where the facts are cited
};
std::optional<NcclPlatform> nccl_platform(const SystemConfig& system);

/// Whether NCCL can use NVLink SHARP on `system` at all (multicast: Hopper or newer on
/// NVSwitch), whatever SystemConfig::nccl_nvls says.
bool nccl_nvls_capable(const SystemConfig& system);

/// The communicator of `group_size` ranks spread evenly over `nodes_spanned` nodes of
/// `system` (Megatron's groups: the same number of ranks on each node), with the graphs
/// NCCL's search reaches on that platform. nullopt when nccl_platform() is, or when the
/// links are too slow for any speed of NCCL's search (then no ring can be placed).
std::optional<NcclComm> nccl_comm(const SystemConfig& system, std::int64_t group_size,
                                  std::int64_t nodes_spanned);

struct NcclChoice {
  NcclAlgo algo = NcclAlgo::kRing;
  NcclProto proto = NcclProto::kSimple;
  double seconds = 0;
};

/// A measured collective's time on `system` with NVLink SHARP off (SystemConfig::nccl_nvls
/// false) is its measurement times this factor: NCCL's own model of the group without NVLS
/// over its model with it (the measurements ran with NCCL's default, NVLS where supported).
/// 1 with NVLS on, where NCCL has no model of the platform or the group, or where NCCL would
/// not have picked an NVLS algorithm for it anyway.
double nccl_nvls_off_factor(const SystemConfig& system, CollectiveKind kind,
                            std::int64_t group_size, std::int64_t nodes_spanned,
                            std::int64_t bytes);

/// The options of Megatron's --nccl-communicator-config-path (TrainingConfig::
/// nccl_group_options) for the process group stepsim's `group` runs on: "tp" kTensor, "dp_cp"
/// kData (DDP's and the distributed optimizer's group), "embd" kEmbedding, "cp" kContext,
/// "tp_dp_cp" kTensorData and "tp_cp" kTensorContext (FP8's amax reductions), "mp" kGradStats
/// without the distributed optimizer (with it the grad norm runs on the default group, which
/// takes none). nullopt: NCCL's defaults.
std::optional<NcclGroupOptions> nccl_group_options(const TrainingConfig& t, CommGroup group);

/// The channels (one CTA, so one SM, each) a communicator shaped as `comm` runs its
/// collectives on under NCCL's limits (src/graph/connect.cc ncclTopoPostset, lines 460-506):
/// twice the ring search's channels (MAXCHANNELS = 64 at most), twice again on Hopper and
/// newer across nodes when the ring's intra-node speed is above 45 GB/s and fewer than 16 run,
/// then min(NCCL_MAX_NCHANNELS, maxCTAs), then raised to max(NCCL_MIN_NCHANNELS, minCTAs):
/// the minimum wins. Arguments <= 0 are unset (NCCL's defaults).
int nccl_run_channels(const NcclComm& comm, std::int64_t min_nchannels, std::int64_t max_nchannels,
                      std::int64_t min_ctas, std::int64_t max_ctas);

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
  /// The enabled pair of least time, as topoGetAlgoInfo picks it.
  NcclChoice choose(CollectiveKind kind, std::int64_t bytes) const;

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
