#include "stepsim/cost/nccl_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "stepsim/base/assert.hpp"

namespace stepsim {

namespace {

// Every constant below is NCCL's, from github.com/NVIDIA/nccl at commit
// 5067397c2676d5aed50042fc39e5c8ee96eb0027; the file is named at each.

constexpr int kTree = 0, kRing = 1, kNvls = 2, kNvlsTree = 3, kPat = 4;
constexpr int kLL = 0, kLL128 = 1, kSimple = 2;
constexpr int kAllReduce = 0, kAllGather = 1, kReduceScatter = 2;
constexpr int kHwNvlink = 0, kHwPci = 1, kHwNet = 2;

int coll_index(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::kAllReduce:
      return kAllReduce;
    case CollectiveKind::kAllGather:
      return kAllGather;
    case CollectiveKind::kReduceScatter:
      return kReduceScatter;
    case CollectiveKind::kAllToAll:
    case CollectiveKind::kDeepEpDispatch:  // not NCCL's: deepep_cost.hpp
    case CollectiveKind::kDeepEpCombine:
      break;
  }
  STEPSIM_UNREACHABLE("NCCL's tuning model has no all-to-all (grouped sends and receives)");
  return kAllReduce;
}

// src/graph/tuning.cc, ncclTunerConstantsDefaults. Rows are NCCL's algorithms in the order
// Tree, Ring, NVLS, NVLS tree, PAT (CollNet direct/chain are left out: not modelled).
constexpr double kBaseLat[kNcclAlgos][kNcclProtos] = {
    {6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}, {0, 0, 0}, {0, 0, 0}, {8.0, 8.0, 8.0}};
constexpr double kHwLat[3][kNcclAlgos][kNcclProtos] = {
    /* NVLINK */ {{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}, {0, 0, 25}, {0, 0, 25}, {0, 0, 4.0}},
    /* PCI */ {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}, {0, 0, 0}, {0, 0, 0}, {0, 0, 4.0}},
    /* NET */ {{5.0, 8.5, 14}, {2.7, 4.0, 14.0}, {0, 0, 18}, {0, 0, 20.9}, {0, 0, 14}}};
// [index1][index2]: index1 is the GPU generation in one node and the CPU vendor across nodes
// (0 Intel, 1 AMD); index2 is 1, 2 or more nodes.
constexpr double kLlMaxBws[4][3] = {
    {39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {2 * 141.0, 2 * 45.0, 2 * 35.0}};
constexpr double kPerChMaxRingLL128Bws[4][3] = {
    {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}, {40.0, 40.0, 40.0}};
constexpr double kPerChMaxTreeLL128Bws[4][3] = {
    {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}};
constexpr double kPerChMaxTreeBws[4][3] = {
    {26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}};
constexpr double kPerChMaxNvlsTreeBws[4][3] = {
    {26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {0.0, 57.7, 45.5}, {0.0, 96.0, 80.0}};
constexpr double kNvlsEfficiency[4] = {0.0, 0.0, 0.85, 0.74};
// ncclTopoGetAlgoTime: tree correction per protocol, powers of two of size/64 B.
constexpr double kTreeCorrection[kNcclProtos][24] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7,  .7,  .7,  .6,  .5,
     .4,  .4,  .5,  .6,  .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7,  .6,  .6,
     .6,  .6,  .6,  .6,  .8,  .9, .9, .9, .9, 1.0, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5,
     .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9}};

int log2i(std::int64_t n) {  // src/include/bitops.h log2Down: -1 for 0
  int r = -1;
  while (n > 0) {
    n >>= 1;
    ++r;
  }
  return r;
}

}  // namespace

std::string_view to_string(NcclAlgo a) {
  switch (a) {
    case NcclAlgo::kTree:
      return "tree";
    case NcclAlgo::kRing:
      return "ring";
    case NcclAlgo::kNvls:
      return "nvls";
    case NcclAlgo::kNvlsTree:
      return "nvls_tree";
    case NcclAlgo::kPat:
      return "pat";
  }
  return "?";
}

std::string_view to_string(NcclProto p) {
  switch (p) {
    case NcclProto::kLL:
      return "LL";
    case NcclProto::kLL128:
      return "LL128";
    case NcclProto::kSimple:
      return "Simple";
  }
  return "?";
}

double nccl_tuning_factor(const SystemConfig& system, const CollectiveOp& op) {
  // NCCL_ALGO / NCCL_PROTO reach NCCL's kernels only, not Transformer Engine's userbuffers
  // (CollectiveOp::nccl false), which NCCL_NVLS_ENABLE=0 prices as before.
  const bool restricted = op.nccl && system.nccl_enabled.restricted();
  if ((system.nccl_nvls && !restricted) || op.bytes <= 0) return 1.0;
  if (op.kind != CollectiveKind::kAllReduce && op.kind != CollectiveKind::kAllGather &&
      op.kind != CollectiveKind::kReduceScatter) {
    return 1.0;
  }
  SystemConfig defaults = system;
  defaults.nccl_nvls = true;
  defaults.nccl_enabled = NcclEnabled{};
  SystemConfig job = system;
  if (!restricted) job.nccl_enabled = NcclEnabled{};
  const auto at_defaults = nccl_comm(defaults, op.group_size, op.nodes_spanned);
  const auto as_run = nccl_comm(job, op.group_size, op.nodes_spanned);
  if (!at_defaults || !as_run) return 1.0;
  const NcclChoice chosen = NcclModel(*at_defaults).choose(op.kind, op.bytes);
  const NcclChoice run = NcclModel(*as_run).choose(op.kind, op.bytes);
  if (run.algo == chosen.algo && run.proto == chosen.proto) return 1.0;
  return run.seconds / chosen.seconds;  // infinite where NCCL is left no algorithm
}

namespace {

/// What tuning.cc's ncclTopoTuneModel reads of a communicator, once.
struct CommShape {
  int n_ranks = 0, n_nodes = 0, arch = 0;
  double ll_max_bw = 0, per_ch_max_tree_bw = 0, per_ch_max_ring_ll128_bw = 0,
         per_ch_max_tree_ll128_bw = 0, per_ch_max_nvls_tree_bw = 0;
  double ppn = 0;
  bool single_gpu_nodes = false;
  int intra_hw = 0;
  double net_overhead_base = 0;
};

CommShape shape_of(const NcclComm& comm) {
  CommShape c;
  c.n_ranks = comm.ranks;
  c.n_nodes = comm.nodes;
  c.arch = static_cast<int>(comm.arch);
  const int index2 = c.n_nodes <= 2 ? c.n_nodes - 1 : 2;
  const int index1 = c.n_nodes == 1 ? c.arch : (comm.host_cpu_amd ? 1 : 0);
  c.ll_max_bw = kLlMaxBws[index1][index2];
  c.per_ch_max_tree_bw = kPerChMaxTreeBws[c.arch][index2];
  c.per_ch_max_ring_ll128_bw = kPerChMaxRingLL128Bws[c.arch][index2];
  c.per_ch_max_tree_ll128_bw = kPerChMaxTreeLL128Bws[c.arch][index2];
  c.per_ch_max_nvls_tree_bw = kPerChMaxNvlsTreeBws[c.arch][index2];
  c.ppn = static_cast<double>(c.n_ranks) / c.n_nodes;
  c.single_gpu_nodes = c.n_ranks == c.n_nodes;
  // typeIntra is NVLink unless a node holds a single GPU of the communicator (PATH_LOC, which
  // tuning.cc's test against LINK_NVL counts as PCI).
  c.intra_hw = c.single_gpu_nodes ? kHwPci : kHwNvlink;
  // getNetOverhead: Intel 1 us, AMD 2 us.
  c.net_overhead_base = comm.host_cpu_amd ? 2.0 : 1.0;
  return c;
}

/// Whether NCCL tunes algorithm `a` with protocol `p` for collective `coll`.
bool tuned(const CommShape& c, int coll, int a, int p) {
  if ((coll == kReduceScatter || coll == kAllGather) && a != kPat && a != kRing && a != kNvls)
    return false;
  if (coll == kAllReduce && a == kPat) return false;
  if ((a == kNvls || a == kNvlsTree) && p != kSimple) return false;
  // ncclPatEnable: PAT only with one GPU per node (and SM60+, host network).
  if (a == kPat && (p != kSimple || !c.single_gpu_nodes)) return false;
  return true;
}

/// The bus bandwidth of (coll, a, p) over graph `g` (NVLS: at least 2 channels).
double bus_bandwidth(const CommShape& c, const NcclGraph& g, int coll, int a, int p,
                     int nsteps) {
  double bw = c.n_nodes <= 2 ? g.bw_intra : g.bw_inter;
  if (a == kNvls || a == kNvlsTree) {
    double intra_bw = g.bw_intra * kNvlsEfficiency[c.arch] * (g.channels - 1) / g.channels;
    intra_bw *= coll == kAllReduce ? 2.0 : (c.ppn - 1) / c.ppn;
    const double inter_bw = g.bw_inter * ((c.n_nodes <= 2 && a == kNvlsTree) ? 2 : 1);
    bw = std::min(
        {intra_bw, inter_bw,
         a == kNvlsTree ? c.per_ch_max_nvls_tree_bw : std::numeric_limits<double>::max()});
  }
  double bus_bw = g.channels * bw;
  if (a == kRing && p == kLL) bus_bw = std::min(c.ll_max_bw, bus_bw * .5);
  if (a == kRing && p == kLL128)
    bus_bw = std::min(bus_bw * 0.92, g.channels * c.per_ch_max_ring_ll128_bw);
  if (a == kTree && coll == kAllReduce)
    bus_bw = std::min(bus_bw * .92, g.channels * c.per_ch_max_tree_bw);
  if (a == kTree && p == kLL) bus_bw = std::min(bus_bw * 1.0 / 3.8, c.ll_max_bw);
  if (a == kTree && p == kLL128) {
    bus_bw = std::min(bus_bw * (c.n_nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0),
                      g.channels * c.per_ch_max_tree_ll128_bw);
  }
  if (a == kTree && g.tree_pattern) bus_bw *= .85;
  if (a == kPat) bus_bw *= .75;
  // NVLS reduce-scatter / all-gather across nodes needs CollNet (not modelled: off).
  if (a == kNvls && coll != kAllReduce && c.n_nodes > 1) bus_bw = 0;
  if (!(a != kRing && (coll == kAllGather || coll == kReduceScatter))) {
    const double ratio = (a == kRing || a == kNvls || a == kNvlsTree)
                             ? static_cast<double>(c.n_ranks) / nsteps
                             : .5;
    bus_bw *= ratio;
  }
  return bus_bw;
}

/// The latency of (coll, a, p), in microseconds.
double latency(const CommShape& c, int coll, int a, int p, int nsteps) {
  double lat = kBaseLat[a][p];
  double intra_lat = kHwLat[c.intra_hw][a][p];
  const double inter_lat = c.ppn == 1 ? kHwLat[kHwNet][kTree][p] : kHwLat[kHwNet][a][p];
  // (graph latencyInter is 0 for InfiniBand: net_ib props->latency "Not set".)
  if (a == kRing) {
    double net_overhead = 0;
    if (c.n_nodes > 1) net_overhead = c.net_overhead_base * (p == kSimple ? 3 : 1);
    intra_lat = std::max(intra_lat, net_overhead);
    const int inter_steps = c.n_nodes == 1     ? 0
                            : coll == kAllReduce ? 2 * (c.n_nodes - 1)
                                                 : c.n_nodes - 1;
    lat += (nsteps - inter_steps) * intra_lat + inter_steps * inter_lat;
  } else if (a == kTree) {
    if (coll == kAllReduce)
      lat += 2 * ((c.n_ranks / c.n_nodes - 1) * intra_lat + log2i(c.n_nodes) * inter_lat);
  } else if (a == kNvls) {
    lat = intra_lat;
    if (c.n_nodes > 1) lat += inter_lat;
  } else if (a == kNvlsTree) {
    lat += intra_lat + 2 * log2i(c.n_nodes) * inter_lat;
  } else if (a == kPat) {
    lat += log2i(c.n_nodes) * (inter_lat / 3.5) + c.n_ranks * 2.8;
  }
  return lat;
}

/// ncclTopoTuneModel's enabling: what NCCL turns off by itself and what NCCL_ALGO and
/// NCCL_PROTO turn off (comm->bandwidths set to 0).
void disable_as_nccl_does(const NcclComm& comm, const CommShape& c,
                          double (&bw)[3][kNcclAlgos][kNcclProtos]) {
  // Enabling (tuning.cc): NVLS tree off in one node; NVLS off across nodes without CollNet;
  // NVLS off without multicast. LL128 is on by default for NVLink inside the node and, across
  // nodes, NICs on the GPU's PCIe switch (DGX layout); Hopper allows up to PXN.
  for (int coll = 0; coll < 3; ++coll) {
    for (int p = 0; p < kNcclProtos; ++p) {
      if (c.n_nodes == 1) bw[coll][kNvlsTree][p] = 0;
      if (c.n_nodes > 1) bw[coll][kNvls][p] = 0;
      if (!comm.nvls_support) bw[coll][kNvls][p] = bw[coll][kNvlsTree][p] = 0;
      // enqueue.cc updateCollCostTable: NVLS and NVLS tree run all-gather and reduce-scatter
      // only with at most NCCL_MAX_NVLS_ARITY (device.h: 32) local ranks; a multi-node NVLink
      // domain holds more (72 on NVL72), and all-reduce keeps NVLS there.
      constexpr double kMaxNvlsArity = 32;
      if (coll != kAllReduce && c.ppn > kMaxNvlsArity) {
        bw[coll][kNvls][p] = bw[coll][kNvlsTree][p] = 0;
      }
    }
  }
  // NCCL_ALGO / NCCL_PROTO (algoEnable, protoEnable: "if (pEnable == 0) ... if
  // (algoEnable[...] == 0) comm->bandwidths[c][a][p] = 0"), in NCCL's indices.
  constexpr int kFunc[3] = {kNcclFuncAllReduce, kNcclFuncAllGather, kNcclFuncReduceScatter};
  constexpr int kAlgo[kNcclAlgos] = {0, 1, 4, 5, 6};  // Tree, Ring, NVLS, NVLSTree, PAT
  for (int coll = 0; coll < 3; ++coll) {
    for (int a = 0; a < kNcclAlgos; ++a) {
      for (int p = 0; p < kNcclProtos; ++p) {
        if (!comm.enabled.algo(kFunc[coll], kAlgo[a]) || !comm.enabled.proto(kFunc[coll], p)) {
          bw[coll][a][p] = 0;
        }
      }
    }
  }
}

}  // namespace

NcclModel::NcclModel(const NcclComm& comm) : comm_(comm) {
  const CommShape c = shape_of(comm);
  const NcclGraph* graphs[kNcclAlgos] = {&comm.tree, &comm.ring, &comm.nvls, &comm.nvls,
                                         &comm.tree};
  for (int coll = 0; coll < 3; ++coll) {
    const int nsteps = coll == kAllReduce ? 2 * (c.n_ranks - 1) : c.n_ranks - 1;
    for (int a = 0; a < kNcclAlgos; ++a) {
      const NcclGraph& g = *graphs[a];
      for (int p = 0; p < kNcclProtos; ++p) {
        if (!tuned(c, coll, a, p)) continue;
        if ((a == kNvls || a == kNvlsTree) && g.channels < 2) continue;
        bw_[coll][a][p] = bus_bandwidth(c, g, coll, a, p, nsteps);
        lat_[coll][a][p] = latency(c, coll, a, p, nsteps);
      }
    }
  }
  disable_as_nccl_does(comm, c, bw_);
}

bool NcclModel::available(CollectiveKind kind) const {
  const int coll = coll_index(kind);
  for (int a = 0; a < kNcclAlgos; ++a) {
    for (int p = 0; p < kNcclProtos; ++p) {
      if (bw_[coll][a][p] > 0) return true;
    }
  }
  return false;
}

double NcclModel::latency_us(CollectiveKind kind, NcclAlgo algo, NcclProto proto) const {
  return lat_[coll_index(kind)][static_cast<int>(algo)][static_cast<int>(proto)];
}

double NcclModel::bandwidth_gbps(CollectiveKind kind, NcclAlgo algo, NcclProto proto) const {
  return bw_[coll_index(kind)][static_cast<int>(algo)][static_cast<int>(proto)];
}

std::optional<double> NcclModel::time_s(CollectiveKind kind, NcclAlgo algo, NcclProto proto,
                                        std::int64_t bytes) const {
  const int coll = coll_index(kind);
  const int a = static_cast<int>(algo);
  const int p = static_cast<int>(proto);
  double bw = bw_[coll][a][p];
  double lat = lat_[coll][a][p];
  if (bw <= 0) return std::nullopt;
  const int log_size = log2i(bytes >> 6);
  if (a == kTree && coll == kAllReduce && log_size >= 0 && log_size < 23)
    bw *= kTreeCorrection[p][log_size];
  // NVLS tree correction applies to Blackwell on x86 hosts.
  if (a == kNvlsTree && coll == kAllReduce && log_size >= 0 && log_size < 24 &&
      comm_.arch >= NcclArch::kBlackwell) {
    bw *= kTreeCorrection[p][log_size];
  }
  const int channels = std::min(comm_.tree.channels, comm_.ring.channels);
  if (a == kRing && p == kSimple && comm_.nodes > 1 && coll == kAllReduce && channels > 0 &&
      bytes / (static_cast<std::int64_t>(channels) * comm_.ranks) >= 64) {
    lat *= comm_.arch < NcclArch::kAmpere ? 1.9 : 1.4;  // plateau effect of ring
  }
  return (lat + static_cast<double>(bytes) / (1000.0 * bw)) * 1e-6;
}

NcclChoice NcclModel::choose(CollectiveKind kind, std::int64_t bytes) const {
  NcclChoice best;
  best.seconds = std::numeric_limits<double>::infinity();
  for (int a = 0; a < kNcclAlgos; ++a) {
    for (int p = 0; p < kNcclProtos; ++p) {
      const auto t = time_s(kind, static_cast<NcclAlgo>(a), static_cast<NcclProto>(p), bytes);
      if (t && *t < best.seconds) {
        best = NcclChoice{
            .algo = static_cast<NcclAlgo>(a), .proto = static_cast<NcclProto>(p), .seconds = *t};
      }
    }
  }
  return best;
}

}  // namespace stepsim
