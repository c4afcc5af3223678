#pragma once
// What NCCL's topology detection and graph search find for a communicator of a system file:
// the platform facts (GPU generation, NVLinks, PCIe path to the NICs, host CPU vendor), the
// ring, tree and NVLS graphs (channels and per-channel bandwidth) and the channels NCCL runs
// under its limits. Facts of the machine, read by the checks and priced by cost/nccl_model.hpp.
//
// Source: github.com/NVIDIA/nccl at commit 5067397c2676d5aed50042fc39e5c8ee96eb0027:
// src/graph/search.cc (ncclTopoCompute, ncclTopoDupChannels, the speed arrays), src/graph/topo.h
// (per-link NVLink bandwidth per generation), src/graph/connect.cc (channel limits),
// src/transport/nvls.cc (NVLS needs NVSwitch multicast and 2 GPUs of the communicator).

#include <cstdint>
#include <optional>
#include <string>

#include "stepsim/config/scenario.hpp"

namespace stepsim {

/// NCCL's compute-capability index (NCCL_VOLTA_COMPCAP_IDX .. NCCL_BLACKWELL_COMPCAP_IDX).
enum class NcclArch : std::uint8_t { kVolta, kAmpere, kHopper, kBlackwell };


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
  /// What NCCL_ALGO and NCCL_PROTO leave NCCL's tuning (SystemConfig::nccl_enabled).
  NcclEnabled enabled;
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
/// NCCL's search reaches on that platform. A "node" is an NVLink domain
/// (SystemConfig::nvlink_domain()): with multi-node NVLink NCCL fuses the topologies of a
/// clique's hosts into one (topo.cc ncclTopoGetSystem, comm->MNNVL: nLocalRanks =
/// clique.size) and counts the domains as its nodes (init.cc: nNvlDomains = nNodes), so the
/// graphs see one NVSwitch node of up to nvlink_domain() GPUs. nullopt when nccl_platform() is, or when the
/// links are too slow for any speed of NCCL's search (then no ring can be placed).
std::optional<NcclComm> nccl_comm(const SystemConfig& system, std::int64_t group_size,
                                  std::int64_t nodes_spanned);

/// The channels (one CTA, so one SM, each) a communicator shaped as `comm` runs its
/// collectives on under NCCL's limits (src/graph/connect.cc ncclTopoPostset, lines 460-506):
/// twice the ring search's channels (MAXCHANNELS = 64 at most), twice again on Hopper and
/// newer across nodes when the ring's intra-node speed is above 45 GB/s and fewer than 16 run,
/// then min(NCCL_MAX_NCHANNELS, maxCTAs), then raised to max(NCCL_MIN_NCHANNELS, minCTAs):
/// the minimum wins. Arguments <= 0 are unset (NCCL's defaults).
int nccl_run_channels(const NcclComm& comm, std::int64_t min_nchannels, std::int64_t max_nchannels,
                      std::int64_t min_ctas, std::int64_t max_ctas);

}  // namespace stepsim
