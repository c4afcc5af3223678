#include "stepsim/cost/deepep_cost.hpp"

#include <algorithm>

#include "stepsim/base/assert.hpp"

namespace stepsim {

namespace {

// DeepEP docs/legacy.md (github.com/deepseek-ai/DeepEP at dd758ca), "Normal kernels with
// NVLink and RDMA forwarding": H800 (~160 GB/s NVLink maximum; 200 GB/s each way, the H800
// datasheet's 400 GB/s both directions), one CX7 InfiniBand 400 Gb/s NIC per GPU (~50 GB/s),
// DeepSeek-V3's pretraining setting (4096 tokens, hidden 7168, top-4 groups, top-8 experts).
// Its bandwidths are the bytes tests/legacy/test_internode.py counts (tokens x distinct
// destination nodes, the own node included, for RDMA; received tokens for NVLink) over the
// kernel's time, the same bytes CollectiveOp carries, so their ratio to the link peak is the
// fraction applied here (logical bytes may exceed what crosses the NIC: 58 GB/s on 4 nodes).
constexpr double kH800NvlinkPeak = 200e9;
constexpr double kCx7Peak = 50e9;
// Intranode EP 8: dispatch 153 GB/s, combine 158 GB/s (NVLink).
constexpr double kNvlDispatch = 153e9 / kH800NvlinkPeak;
constexpr double kNvlCombine = 158e9 / kH800NvlinkPeak;
// Internode EP 16, 32, 64 (2, 4, 8 nodes of 8): dispatch 43, 58, 51 GB/s; combine 43, 57,
// 50 GB/s (RDMA).
struct RdmaRow {
  std::int64_t nodes;
  double dispatch;
  double combine;
};
constexpr RdmaRow kRdma[] = {{2, 43e9 / kCx7Peak, 43e9 / kCx7Peak},
                             {4, 58e9 / kCx7Peak, 57e9 / kCx7Peak},
                             {8, 51e9 / kCx7Peak, 50e9 / kCx7Peak}};

bool is_deepep(CollectiveKind k) {
  return k == CollectiveKind::kDeepEpDispatch || k == CollectiveKind::kDeepEpCombine;
}

}  // namespace

double deepep_rdma_fraction(CollectiveKind kind, std::int64_t nodes) {
  STEPSIM_ASSERT(is_deepep(kind));
  // The measured row of the most nodes not above `nodes` (3 nodes: the 2-node figure; more
  // than 8: the 8-node one, DeepEP's largest published).
  const RdmaRow* row = &kRdma[0];
  for (const RdmaRow& r : kRdma) {
    if (r.nodes <= nodes) row = &r;
  }
  return kind == CollectiveKind::kDeepEpDispatch ? row->dispatch : row->combine;
}

double deepep_nvlink_fraction(CollectiveKind kind) {
  STEPSIM_ASSERT(is_deepep(kind));
  return kind == CollectiveKind::kDeepEpDispatch ? kNvlDispatch : kNvlCombine;
}

double deepep_s(const SystemConfig& system, const CollectiveOp& op) {
  STEPSIM_ASSERT(is_deepep(op.kind));
  if (op.group_size <= 1 || (op.bytes <= 0 && op.rdma_bytes <= 0)) return 0.0;
  const double nvl = static_cast<double>(op.bytes) /
                     (system.intra_node.bandwidth_bytes_per_s * deepep_nvlink_fraction(op.kind));
  double rdma = 0;
  const bool inter = op.nodes_spanned > 1 && op.rdma_bytes > 0;
  if (inter) {
    // Each GPU sends through its own NIC (DeepEP's RDMA rank = rank / 8, one NIC per GPU):
    // its share of the node's NICs.
    const double nic = system.inter_node.bandwidth_bytes_per_s *
                       static_cast<double>(std::max<std::int64_t>(1, system.nics_per_node)) /
                       static_cast<double>(std::max<std::int64_t>(1, system.gpus_per_node));
    rdma = static_cast<double>(op.rdma_bytes) /
           (nic * deepep_rdma_fraction(op.kind, op.nodes_spanned));
  }
  const double hop = inter ? system.inter_node.latency_s : system.intra_node.latency_s;
  return system.efficiency.kernel_launch_s + hop + std::max(nvl, rdma);
}

}  // namespace stepsim
