#include "stepsim/layout/nccl_topology.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace stepsim {

namespace {

// Every constant below is NCCL's, from github.com/NVIDIA/nccl at commit
// 5067397c2676d5aed50042fc39e5c8ee96eb0027; the file is named at each.

// src/graph/search.cc: the per-channel speeds the search tries, highest first.
const std::vector<double>& speeds(NcclArch arch, bool inter) {
  static const std::vector<double> intra = {40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0,
                                            9.0,  7.0,  6.0,  5.0,  4.0,  3.0};
  static const std::vector<double> inter_ = {48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0,
                                             12.0, 10.0, 9.0,  7.0,  6.0,  5.0,  4.0,
                                             3.0,  2.4,  1.2,  0.24, 0.12};
  static const std::vector<double> sm90_intra = {60.0, 50.0, 40.0, 30.0, 24.0, 20.0,
                                                 15.0, 12.0, 11.0, 6.0,  3.0};
  static const std::vector<double> sm90_inter = {48.0, 45.0, 42.0, 40.0, 30.0, 24.0,
                                                 22.0, 20.0, 17.5, 15.0, 12.0, 6.0,
                                                 3.0,  2.4,  1.2,  0.24, 0.12};
  static const std::vector<double> sm100_intra = {90.0, 80.0, 70.0, 60.0, 50.0, 45.0,
                                                  40.0, 30.0, 24.0, 20.0, 19.0, 18.0};
  static const std::vector<double> sm100_inter = {96.0, 86.0, 80.0, 48.0, 45.1, 42.0, 40.0,
                                                  30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0,
                                                  6.0,  3.0,  2.4,  1.2,  0.24, 0.12};
  if (arch == NcclArch::kBlackwell) return inter ? sm100_inter : sm100_intra;
  if (arch == NcclArch::kHopper) return inter ? sm90_inter : sm90_intra;
  return inter ? inter_ : intra;
}

constexpr int kMaxRingChannels = 32;  // init.cc: ringGraph->maxChannels = MAXCHANNELS / 2
constexpr int kMaxNvlsArity = 32;     // device.h NCCL_MAX_NVLS_ARITY

// What one channel of a graph may use: `nics` NICs each carrying `nic_cap` GB/s (the lower of
// the NIC and the GPU's PCIe link), and `nvlink` GB/s of NVLink per GPU.
struct Fabric {
  bool inter = false;
  int nics = 0;
  double nic_cap = 0;
  double nvlink = 0;
  int local_gpus = 1;  ///< GPUs of the communicator in one node
};

// Channels a graph can place at per-channel speed `s`. In one node a channel crosses every
// GPU's NVSwitch link once. Across nodes a channel enters the node through one NIC and
// leaves through one, and inside the node it takes local_gpus - 1 NVLink hops, spread over
// the GPUs: each GPU's NVLink carries (local_gpus - 1) / local_gpus of the channels.
int channels_at(const Fabric& f, double s, int max_channels) {
  if (!f.inter)
    return std::clamp(static_cast<int>(std::floor(f.nvlink / s + 1e-9)), 0, max_channels);
  int ch = f.nics * static_cast<int>(std::floor(f.nic_cap / s + 1e-9));
  if (f.local_gpus > 1) {
    const double share = static_cast<double>(f.local_gpus - 1) / f.local_gpus;
    ch = std::min(ch, static_cast<int>(std::floor(f.nvlink / (s * share) + 1e-9)));
  }
  return std::clamp(ch, 0, max_channels);
}

// ncclTopoDupChannels (search.cc).
void dup_channels(NcclGraph& g, NcclArch arch) {
  if (g.channels == 0 || g.bw_intra < 25.0) return;
  if (arch > NcclArch::kAmpere && g.bw_intra < 50.0 && g.channels > 4) return;
  const int dup = std::min(g.channels * 2, kMaxRingChannels);
  const int div = (dup + g.channels - 1) / g.channels;
  g.bw_intra /= div;
  g.bw_inter /= div;
  g.channels = dup;
}

// The ring graph ncclTopoCompute reaches on an NVSwitch node: start at the highest speed the
// GPU's paths allow, keep the placement with the most bandwidth while lowering the speed (the
// search stops once the next speed is below 0.49 of the best or the GPU's bandwidth is used
// up), duplicate channels, then raise the speed while the channels still fit (pass 2).
NcclGraph ring_graph(NcclArch arch, const Fabric& f) {
  const std::vector<double>& sp = speeds(arch, f.inter);
  const double max_bw = f.inter ? f.nic_cap : f.nvlink;
  std::size_t i = 0;
  while (i + 1 < sp.size() && sp[i] > max_bw) ++i;
  NcclGraph best;
  for (; i < sp.size(); ++i) {
    if (best.channels > 0 && sp[i] / best.bw_inter <= .49) break;
    const int ch = channels_at(f, sp[i], kMaxRingChannels);
    if (ch > 0 && ch * sp[i] > best.channels * best.bw_inter)
      best = NcclGraph{.channels = ch, .bw_intra = sp[i], .bw_inter = sp[i]};
    if (best.channels * best.bw_inter >= f.nvlink) break;
  }
  if (best.channels == 0) return best;
  dup_channels(best, arch);
  // Pass 2: a higher speed with the same channels.
  std::size_t j = 0;
  while (j < sp.size() && sp[j] > best.bw_inter) ++j;
  while (j > 0 && sp[j - 1] <= max_bw &&
         channels_at(f, sp[j - 1], kMaxRingChannels) >= best.channels) {
    --j;
    best.bw_intra = best.bw_inter = sp[j];
  }
  return best;
}

// The tree graph: exactly the ring's channel count (init.cc), at the highest speed that fits;
// across nodes pass 2 then raises the intra-node speed up to twice the inter-node one.
NcclGraph tree_graph(NcclArch arch, const Fabric& f, int channels, bool single_gpu) {
  const std::vector<double>& sp = speeds(arch, f.inter);
  const double max_bw = f.inter ? f.nic_cap : f.nvlink;
  NcclGraph g;
  g.tree_pattern = single_gpu;  // search.cc: one GPU -> NCCL_TOPO_PATTERN_TREE
  std::size_t i = 0;
  for (; i < sp.size(); ++i) {
    if (sp[i] <= max_bw && channels_at(f, sp[i], channels) >= channels) break;
  }
  if (i == sp.size()) return g;
  g.channels = channels;
  g.bw_intra = g.bw_inter = sp[i];
  dup_channels(g, arch);
  if (!f.inter) return g;
  std::size_t j = 0;
  while (j < sp.size() && sp[j] > g.bw_intra) ++j;
  while (j > 0 && g.bw_intra < 2 * g.bw_inter &&
         (single_gpu ||
          channels_at(Fabric{.nvlink = f.nvlink}, sp[j - 1], g.channels) >= g.channels)) {
    g.bw_intra = sp[--j];
  }
  return g;
}

// The NVLS graph: one channel per local GPU (NVLS heads), all of them in one node
// (minChannels = maxChannels); pass 2 raises bwInter up to twice bwIntra where the fabric
// allows (in one node nothing limits it).
NcclGraph nvls_graph(NcclArch arch, const Fabric& f, int local_gpus) {
  const std::vector<double>& sp = speeds(arch, f.inter);
  NcclGraph g;
  const int heads = std::min(kMaxNvlsArity, local_gpus);
  const int want = f.inter ? std::min(heads, f.nics) : heads;
  const double max_bw = f.inter ? f.nic_cap : f.nvlink;
  std::size_t i = 0;
  for (; i < sp.size(); ++i) {
    if (sp[i] <= max_bw && (f.inter ? f.nics * std::floor(f.nic_cap / sp[i] + 1e-9) >= want
                                    : sp[i] * want <= f.nvlink + 1e-9)) {
      break;
    }
  }
  if (i == sp.size()) return g;
  g.channels = want;
  g.bw_intra = g.bw_inter = sp[i];
  while (i > 0 && g.bw_inter < 2 * g.bw_intra && (!f.inter || sp[i - 1] <= f.nic_cap)) {
    g.bw_inter = sp[--i];
  }
  return g;
}

}  // namespace

std::optional<NcclPlatform> nccl_platform(const SystemConfig& system) {
  const std::string& gpu = system.gpu_name;
  const auto has = [&](const char* s) { return gpu.find(s) != std::string::npos; };
  // Grace Blackwell superchips (GB200, GB300) sit on NVSwitch trays like SXM boards do.
  const bool superchip = has("GB200") || has("GB300");
  if (!has("NVIDIA") || !(has("SXM") || superchip)) return std::nullopt;
  NcclPlatform p;
  if (has("A100") || has("A800")) {
    // topo.h SM80_NVLINK_BW 20.0; PCIe Gen4 x16 = 24 GB/s in NCCL's topology (printed as
    // "PCI[24.0]" in the DGX A100 topology dump of github.com/NVIDIA/nccl-tests/issues/100);
    // DGX A100 hosts 2x AMD EPYC 7742 (DGX A100 User Guide, Hardware Overview).
    p = NcclPlatform{.arch = NcclArch::kAmpere,
                     .nvlink_bw_per_link = 20.0,
                     .pci_bw = 24.0,
                     .host_cpu_amd = true,
                     .source =
                         "NCCL topo.h SM80_NVLINK_BW; PCIe Gen4 x16 24 GB/s (nccl-tests "
                         "issue 100 topology dump); AMD EPYC 7742 host (DGX A100 User Guide)"};
  } else if (has("H100") || has("H200") || has("H800")) {
    // topo.h SM90_NVLINK_BW 20.6; PCIe Gen5 x16 = 48 GB/s in NCCL's topology ("PCI[48.0]" on
    // the Hopper HGX dump of github.com/NVIDIA/nccl/issues/1189); DGX H100/H200 host 2x Intel
    // Xeon Platinum 8480C (DGX H100/H200 User Guide, Hardware Overview).
    p = NcclPlatform{.arch = NcclArch::kHopper,
                     .nvlink_bw_per_link = 20.6,
                     .pci_bw = 48.0,
                     .host_cpu_amd = false,
                     .source =
                         "NCCL topo.h SM90_NVLINK_BW; PCIe Gen5 x16 48 GB/s (nccl issue 1189 "
                         "topology dump); Intel Xeon 8480C host (DGX H100/H200 User Guide)"};
  } else if (has("B300")) {
    // B300 and GB300 (compute capability 10.3: tuning.cc takes minCompCap >= 100 as
    // Blackwell, topo.h ncclTopoNVLinkBw SM100_NVLINK_BW 40.1 for cudaCompCap >= 100). Their
    // ConnectX-8 SuperNICs are PCIe Gen6 x16 to the GPU: topo.cc kvDictPciGen "64.0 GT/s PCIe"
    // = 480 (x100 Mb/s per lane) x 16 lanes / 80 = 96 GB/s. DGX B300 hosts Intel Xeon 6776P,
    // GB300 Grace (Arm; NCCL's cpuVendor is not AMD either way).
    p = NcclPlatform{.arch = NcclArch::kBlackwell,
                     .nvlink_bw_per_link = 40.1,
                     .pci_bw = 96.0,
                     .host_cpu_amd = false,
                     .source = "NCCL topo.h SM100_NVLINK_BW; PCIe Gen6 x16 96 GB/s (topo.cc "
                               "kvDictPciGen); Intel Xeon (DGX B300) or Grace (GB300) host"};
  } else if (superchip) {
    // GB200: the B200 GPU of a Grace Blackwell superchip, NVLink 5 (SM100_NVLINK_BW 40.1); its
    // ConnectX-7 NIC sits on PCIe Gen5 x16 (48 GB/s, as on DGX B200); Grace host (Arm).
    p = NcclPlatform{.arch = NcclArch::kBlackwell,
                     .nvlink_bw_per_link = 40.1,
                     .pci_bw = 48.0,
                     .host_cpu_amd = false,
                     .source = "NCCL topo.h SM100_NVLINK_BW; PCIe Gen5 x16 48 GB/s; Grace host "
                               "(DGX GB200 User Guide)"};
  } else if (has("B200")) {
    // topo.h SM100_NVLINK_BW 40.1; PCIe Gen5 x16 = 48 GB/s as on Hopper; DGX B200 hosts 2x
    // Intel Xeon Platinum 8570 (DGX B200 User Guide, Hardware Overview).
    p = NcclPlatform{.arch = NcclArch::kBlackwell,
                     .nvlink_bw_per_link = 40.1,
                     .pci_bw = 48.0,
                     .host_cpu_amd = false,
                     .source =
                         "NCCL topo.h SM100_NVLINK_BW; PCIe Gen5 x16 48 GB/s; Intel Xeon "
                         "8570 host (DGX B200 User Guide)"};
  } else {
    return std::nullopt;
  }
  // NVLink 3 and 4 both carry 25 GB/s per link and direction (A100 datasheet: 12 links,
  // 600 GB/s both ways; H100 SXM datasheet: 18 links, 900 GB/s), NVLink 5 50 GB/s (B200: 18
  // links, 1.8 TB/s both ways): the link count follows from the system file's per-direction
  // NVLink bandwidth.
  const double link_Bps = p.arch == NcclArch::kBlackwell ? 50e9 : 25e9;
  p.nvlinks = static_cast<int>(std::lround(system.intra_node.bandwidth_bytes_per_s / link_Bps));
  if (p.nvlinks < 1) return std::nullopt;
  return p;
}

std::optional<NcclComm> nccl_comm(const SystemConfig& system, std::int64_t group_size,
                                  std::int64_t nodes_spanned) {
  const auto platform = nccl_platform(system);
  if (!platform || group_size < 2 || nodes_spanned < 1) return std::nullopt;
  NcclComm c;
  c.arch = platform->arch;
  c.ranks = static_cast<int>(group_size);
  c.nodes = static_cast<int>(nodes_spanned);
  c.host_cpu_amd = platform->host_cpu_amd;
  const int per_node = static_cast<int>(std::max<std::int64_t>(1, group_size / nodes_spanned));
  Fabric f;
  f.inter = nodes_spanned > 1;
  f.nvlink = platform->nvlink_bw_per_link * platform->nvlinks;
  // ncclIbGetSpeed: the port's rate in GB/s (HDR 200 Gb/s -> 25, NDR 400 Gb/s -> 50).
  f.nic_cap = std::min(system.inter_node.bandwidth_bytes_per_s / 1e9, platform->pci_bw);
  // The NICs next to the communicator's GPUs (one per GPU on DGX systems).
  const std::int64_t gpus = std::max<std::int64_t>(1, system.gpus_per_node);
  f.nics = static_cast<int>(std::max<std::int64_t>(1, per_node * system.nics_per_node / gpus));
  f.local_gpus = per_node;
  c.ring = ring_graph(c.arch, f);
  // No speed of the search fits (a link slower than NCCL's slowest speed): no model.
  if (c.ring.channels == 0) return std::nullopt;
  c.tree = tree_graph(c.arch, f, c.ring.channels, per_node == 1);
  // nvls.cc: multicast needs Hopper or newer on NVSwitch and 2 GPUs of the communicator;
  // NCCL_NVLS_ENABLE=0 turns it off (ncclNvlsInit).
  if (system.nccl_nvls && c.arch >= NcclArch::kHopper && per_node >= 2) {
    c.nvls = nvls_graph(c.arch, f, per_node);
    c.nvls_support = c.nvls.channels >= 2;
  }
  c.enabled = system.nccl_enabled;  // NCCL_ALGO / NCCL_PROTO of the job
  return c;
}

bool nccl_nvls_capable(const SystemConfig& system) {
  const auto platform = nccl_platform(system);
  return platform && platform->arch >= NcclArch::kHopper;
}

int nccl_run_channels(const NcclComm& comm, std::int64_t min_nchannels, std::int64_t max_nchannels,
                      std::int64_t min_ctas, std::int64_t max_ctas) {
  constexpr int kMaxChannels = 64;  // device.h MAXCHANNELS
  // connect.cc:460, the ring's channels doubled: comm->nChannels = min(MAXCHANNELS, 2 x ring).
  int n = std::min(kMaxChannels, 2 * comm.ring.channels);
  // connect.cc:480-483: doubled again on Hopper and newer across nodes when the ring's
  // intra-node speed is above 45 GB/s and fewer than 16 channels run.
  if (comm.arch >= NcclArch::kHopper && comm.nodes > 1 && comm.ring.bw_intra > 45.0 && n < 16) {
    n = 2 * n;
  }
  // connect.cc:492-506, max first, then min: min(NCCL_MAX_NCHANNELS, maxCTAs), then the first
  // channels copied up to max(NCCL_MIN_NCHANNELS, minCTAs). Unset: NCCL_MAX_NCHANNELS and
  // maxCTAs MAXCHANNELS, NCCL_MIN_NCHANNELS 0, minCTAs 1 (init.cc ncclConfig defaults).
  const auto or_default = [](std::int64_t v, std::int64_t d) { return v > 0 ? v : d; };
  const std::int64_t cap =
      std::min(or_default(max_nchannels, kMaxChannels), or_default(max_ctas, kMaxChannels));
  n = static_cast<int>(std::min<std::int64_t>(n, std::min<std::int64_t>(cap, kMaxChannels)));
  const std::int64_t floor = std::max(min_nchannels, or_default(min_ctas, 1));
  return static_cast<int>(
      std::clamp<std::int64_t>(std::max<std::int64_t>(n, floor), 1, kMaxChannels));
}

}  // namespace stepsim
