#pragma once
// What DeepEP's normal (high-throughput) dispatch and combine kernels cost: the bytes a rank
// puts on RDMA and on NVLink, each over its link at the fraction of the link's peak that
// DeepEP measured, whichever leg is longer (the kernels pipeline both legs through their
// chunked buffers: csrc/kernels/legacy/internode.cu, RDMA senders and NVLink forwarders).

#include "stepsim/ops/ops.hpp"
#include "stepsim/config/scenario.hpp"

namespace stepsim {

/// DeepEP's measured bottleneck bandwidth over the link peak (docs/legacy.md, "Normal kernels
/// with NVLink and RDMA forwarding", H800 with one CX7 400 Gb/s NIC each), for a
/// kDeepEpDispatch or kDeepEpCombine op over `nodes` nodes. RDMA: per GPU NIC; NVLink: per GPU.
double deepep_rdma_fraction(CollectiveKind kind, std::int64_t nodes);
double deepep_nvlink_fraction(CollectiveKind kind);

/// Seconds of one DeepEP dispatch or combine (`op.kind` kDeepEpDispatch or kDeepEpCombine):
/// a kernel launch and one hop of the slowest link it uses, then max(RDMA bytes over the GPU's
/// NIC share, NVLink bytes over its NVLink port), each at DeepEP's measured fraction.
double deepep_s(const SystemConfig& system, const CollectiveOp& op);

}  // namespace stepsim
