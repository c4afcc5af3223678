#include "stepsim/cost/roofline_cost_model.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

#include "stepsim/cost/deepep_cost.hpp"
#include "stepsim/cost/nccl_model.hpp"

namespace stepsim {

namespace {

// GEMM efficiency rises with size and saturates: eff(F) = max * F / (F + half), where F is
// the GEMM's FLOPs and `half` the size that reaches half of the saturated efficiency. This
// is the shape of published cuBLAS efficiency-vs-size curves; the two figures come from the
// system file, where they are cited.
double gemm_efficiency(const RooflineEfficiency& e, double flops) {
  if (e.gemm_half_flops <= 0) return e.gemm_max;
  return e.gemm_max * flops / (flops + e.gemm_half_flops);
}

}  // namespace

double bus_factor(CollectiveKind kind, std::int64_t group_size) {
  if (group_size <= 1) return 0.0;
  const double n = static_cast<double>(group_size);
  return kind == CollectiveKind::kAllReduce ? 2.0 * (n - 1.0) / n : (n - 1.0) / n;
}

double all_to_all_off_node_fraction(std::int64_t group_size, std::int64_t nodes_spanned) {
  if (group_size <= 1 || nodes_spanned <= 1) return 0.0;
  const double n = static_cast<double>(group_size);
  // Megatron's groups have as many members on every node they span.
  const double per_node = std::max(1.0, n / static_cast<double>(nodes_spanned));
  return (n - per_node) / n;
}

double RooflineCostModel::gemm_s(const GemmOp& op) const {
  const double flops = op.flops();
  if (flops <= 0) return 0.0;
  used_.note(PricedPart::kGemm, kFromRoofline);
  const double compute =
      flops / (system_.peak_flops(op.dtype) * gemm_efficiency(system_.efficiency, flops));
  // A GEMM also streams its operands once; small-k GEMMs can be bandwidth bound.
  const double bytes = gemm_bytes_of(op.dtype, op.m, op.n, op.k, op.batch);
  const double memory =
      bytes / (system_.hbm_bandwidth_bytes_per_s * system_.efficiency.memory_max);
  return system_.efficiency.kernel_launch_s + std::max(compute, memory);
}

double RooflineCostModel::attention_s(const AttentionOp& op) const {
  // Flash attention runs its matmuls on tensor cores; the softmax work is hidden inside the
  // tiles, so it is costed as a GEMM of the same arithmetic.
  const double flops = op.flops();
  if (flops > 0) used_.note(PricedPart::kAttention, kFromRoofline);
  const double compute =
      flops / (system_.peak_flops(op.dtype) * gemm_efficiency(system_.efficiency, flops));
  return system_.efficiency.kernel_launch_s + compute;
}

double RooflineCostModel::memory_bound_s(const MemoryBoundOp& op) const {
  if (op.bytes > 0) used_.note(PricedPart::kMemoryBound, kFromRoofline);
  return system_.efficiency.kernel_launch_s +
         static_cast<double>(op.bytes) /
             (system_.hbm_bandwidth_bytes_per_s * system_.efficiency.memory_max);
}

double RooflineCostModel::bus_bandwidth_bytes_per_s(std::int64_t group_size,
                                                    std::int64_t nodes_spanned) const {
  const double link = system_.efficiency.link_max;
  if (nodes_spanned <= 1) return system_.intra_node.bandwidth_bytes_per_s * link;
  // A ring crossing nodes is limited by the NICs. In Megatron's layout every GPU of a node
  // runs the same collective on its own group at the same time, so each group gets its
  // share of the node's NICs: a group with k members per node has k/gpus_per_node of them,
  // and NCCL's rings (one per NIC) add up to that share of the node's NIC bandwidth.
  const double ranks_per_node =
      std::max(1.0, static_cast<double>(group_size) / static_cast<double>(nodes_spanned));
  const double inter = system_.inter_node.bandwidth_bytes_per_s *
                       static_cast<double>(system_.nics_per_node) * ranks_per_node /
                       static_cast<double>(std::max<std::int64_t>(1, system_.gpus_per_node));
  return std::min(system_.intra_node.bandwidth_bytes_per_s, inter) * link;
}

double RooflineCostModel::collective_s(const CollectiveOp& op) const {
  if (op.kind == CollectiveKind::kDeepEpDispatch || op.kind == CollectiveKind::kDeepEpCombine) {
    used_.note(PricedPart::kCollective, kFromDeepEp);
    return deepep_s(system_, op);
  }
  if (op.group_size <= 1 || op.bytes <= 0) return 0.0;
  auto comm = op.kind == CollectiveKind::kAllToAll
                  ? std::nullopt
                  : nccl_comm(system_, op.group_size, op.nodes_spanned);
  used_.note(PricedPart::kCollective, comm ? kFromNcclModel : kFromRoofline);
  if (op.kind == CollectiveKind::kAllToAll) {
    // NCCL runs all-to-all as grouped sends and receives, one pair per peer (enqueue.cc,
    // taskAppend: ncclFuncAlltoAll appends a ncclFuncSend and a ncclFuncRecv task for every
    // rank; PyTorch's all_to_all_single is the same grouped send/recv), with no ring and no
    // algorithm choice in its tuning model. Each peer's chunk takes its own path at once: to
    // a peer on another node through this GPU's own NIC share, to one on the node over
    // NVLink. So the time is the slower of the two legs, not a ring's bus bandwidth.
    const double bytes = static_cast<double>(op.bytes);
    if (op.nodes_spanned <= 1) {
      // nccl-tests' alltoall bus-bandwidth factor (n-1)/n (doc/PERFORMANCE.md,
      // https://github.com/NVIDIA/nccl-tests) over the GPU's NVLink port.
      return system_.efficiency.kernel_launch_s + system_.intra_node.latency_s +
             bytes * bus_factor(op.kind, op.group_size) /
                 bus_bandwidth_bytes_per_s(op.group_size, 1);
    }
    const double off_node = all_to_all_off_node_fraction(op.group_size, op.nodes_spanned);
    const double on_node = bus_factor(op.kind, op.group_size) - off_node;
    // The off-node part leaves through this GPU's own nics_per_node / gpus_per_node NICs
    // (over PCIe, not NVLink): every rank of the node sends at once, so a group with k ranks
    // per node does not get k shares as a ring crossing nodes does (one ring per NIC).
    const double nic = system_.inter_node.bandwidth_bytes_per_s *
                       static_cast<double>(system_.nics_per_node) /
                       static_cast<double>(std::max<std::int64_t>(1, system_.gpus_per_node)) *
                       system_.efficiency.link_max;
    const double nvlink = bus_bandwidth_bytes_per_s(op.group_size, 1);
    return system_.efficiency.kernel_launch_s + system_.inter_node.latency_s +
           std::max(bytes * off_node / nic, bytes * on_node / nvlink);
  }
  // On NVIDIA NVSwitch platforms a collective costs what NCCL's own model says of the
  // algorithm and protocol NCCL picks (nccl_model.hpp); its latencies include the launch.
  if (comm) {
    if (!op.nccl) comm->enabled = NcclEnabled{};  // NCCL_ALGO/PROTO reach NCCL's kernels only
    return NcclModel(*comm).choose(op.kind, op.bytes).seconds * nccl_channel_factor(system_, op);
  }
  const double busbw = bus_bandwidth_bytes_per_s(op.group_size, op.nodes_spanned);
  const double bw_time = static_cast<double>(op.bytes) * bus_factor(op.kind, op.group_size) / busbw;
  const double hop =
      op.nodes_spanned > 1 ? system_.inter_node.latency_s : system_.intra_node.latency_s;
  // Elsewhere the cheaper of two algorithms, as collective libraries choose by size: the ring
  // (2(n-1) steps for all-reduce, n-1 for the others) and, for small messages, one of
  // logarithmic steps (NCCL's tree, src/graph/tuning.cc; HCCL's adaptive selection picks
  // recursive halving-doubling, "H-D_R", for small data: the HCCL_ALGO page of the CANN
  // reference,
  // https://www.hiascend.com/document/detail/en/canncommercial/800/apiref/envvar/envref_07_0079.html).
  // Recursive halving-doubling: 2 log2(n) steps for all-reduce, log2(n) for the others, the
  // ring's bytes; a group of n not a power of two first folds its extra ranks in and at the
  // end out again (two more steps, each moving the whole buffer).
  const double n = static_cast<double>(op.group_size);
  const bool all_reduce = op.kind == CollectiveKind::kAllReduce;
  const double ring = (all_reduce ? 2.0 * (n - 1.0) : n - 1.0) * hop + bw_time;
  const auto levels =
      static_cast<double>(std::bit_width(static_cast<std::uint64_t>(op.group_size)) - 1);
  const bool power_of_two = std::has_single_bit(static_cast<std::uint64_t>(op.group_size));
  const double halving_doubling =
      ((all_reduce ? 2.0 : 1.0) * levels + (power_of_two ? 0.0 : 2.0)) * hop + bw_time +
      (power_of_two ? 0.0 : 2.0 * static_cast<double>(op.bytes) / busbw);
  return system_.efficiency.kernel_launch_s + std::min(ring, halving_doubling);
}

double RooflineCostModel::p2p_s(const P2POp& op) const {
  if (op.bytes > 0) used_.note(PricedPart::kP2P, kFromRoofline);
  const LinkSpec& link = op.inter_node ? system_.inter_node : system_.intra_node;
  if (op.inter_node) {
    // Across nodes a message rides one NIC. Its rate is NCCL's for the NIC and the GPU's PCIe
    // link (nccl_model.hpp: 24 GB/s for HDR, 48 for NDR), which matches the measured
    // 24 GB/s busbw of one HDR NIC (github.com/NVIDIA/nccl/issues/1048) and 46-48 GB/s of one
    // NDR NIC (github.com/NVIDIA/nccl-tests/issues/290): link_max, an NVLink figure, is not
    // applied to InfiniBand.
    if (const auto platform = nccl_platform(system_)) {
      const double bw = std::min(link.bandwidth_bytes_per_s, platform->pci_bw * 1e9);
      return link.latency_s + static_cast<double>(op.bytes) / bw;
    }
  }
  return link.latency_s +
         static_cast<double>(op.bytes) / (link.bandwidth_bytes_per_s * system_.efficiency.link_max);
}

std::string RooflineCostModel::describe() const { return "roofline " + system_.name; }

Provenance RooflineCostModel::provenance() const {
  Provenance p;
  p.parts = used_.used();
  p.cost_data = "roofline";
  return p;  // the host is not modelled
}

}  // namespace stepsim
