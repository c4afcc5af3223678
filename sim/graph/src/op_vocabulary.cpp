#include "stepsim/graph/op_vocabulary.hpp"

#include <cstdio>
#include <type_traits>
#include <variant>

namespace stepsim::sim {

namespace {

std::string bytes_text(std::int64_t bytes) {
  char buf[48];
  const double b = static_cast<double>(bytes);
  if (b >= 1024.0 * 1024.0) {
    std::snprintf(buf, sizeof buf, "%.1f MiB", b / (1024.0 * 1024.0));
  } else if (b >= 1024.0) {
    std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024.0);
  } else {
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(bytes));
  }
  return buf;
}

}  // namespace

SliceKind slice_kind_of(const Op& op) {
  switch (op.stream) {
    case Stream::kTensorComm: return SliceKind::kTensorComm;
    case Stream::kPipelineComm: return SliceKind::kPipelineComm;
    case Stream::kDataComm: return SliceKind::kDataComm;
    case Stream::kContextComm: return SliceKind::kContextComm;
    case Stream::kCompute: break;
  }
  if (std::holds_alternative<CollectiveOp>(op.shape)) {
    return std::get<CollectiveOp>(op.shape).group == CommGroup::kTensor ? SliceKind::kTensorComm
                                                                         : SliceKind::kDataComm;
  }
  switch (op.phase) {
    case Phase::kForward: return SliceKind::kForward;
    case Phase::kBackwardInput: return SliceKind::kBackwardInput;
    case Phase::kBackwardWeight: return SliceKind::kBackwardWeight;
    case Phase::kRecompute: return SliceKind::kRecompute;
    case Phase::kStep: return SliceKind::kOptimizer;
  }
  return SliceKind::kForward;
}

std::string describe_shape(const OpShape& shape) {
  return std::visit(
      [](const auto& s) -> std::string {
        using T = std::decay_t<decltype(s)>;
        if constexpr (std::is_same_v<T, GemmOp>) {
          std::string out = "m=" + std::to_string(s.m) + " n=" + std::to_string(s.n) +
                            " k=" + std::to_string(s.k);
          if (s.batch != 1) out += " batch=" + std::to_string(s.batch);
          out += " " + std::string(to_string(s.dtype));
          if (s.scaling != GemmScaling::kTensor) out += " " + std::string(to_string(s.scaling));
          if (s.atomic_chunks > 1) {
            out += " (1/" + std::to_string(s.atomic_chunks) + " of an atomic GEMM)";
          }
          return out;
        } else if constexpr (std::is_same_v<T, AttentionOp>) {
          return "flash b=" + std::to_string(s.batch) + " heads=" + std::to_string(s.heads) +
                 " kv=" + std::to_string(s.kv_heads) + " s=" + std::to_string(s.seq) +
                 (s.seq_kv > 0 ? " s_kv=" + std::to_string(s.seq_kv) : std::string()) +
                 (s.causal ? "" : " full") +
                 (s.window > 0 ? " window=" + std::to_string(s.window) : std::string()) +
                 " d=" + std::to_string(s.head_dim) +
                 (s.v_head_dim > 0 ? " dv=" + std::to_string(s.v_head_dim) : std::string()) +
                 (s.backward ? " bwd" : " fwd");
        } else if constexpr (std::is_same_v<T, MemoryBoundOp>) {
          return bytes_text(s.bytes) + " moved" +
                 (s.kernels > 1 ? " in " + std::to_string(s.kernels) + " kernels" : std::string());
        } else if constexpr (std::is_same_v<T, CollectiveOp>) {
          return std::string(to_string(s.kind)) + " " + std::string(to_string(s.group)) + " x" +
                 std::to_string(s.group_size) + " " + bytes_text(s.bytes) +
                 (s.nodes_spanned > 1 ? " across " + std::to_string(s.nodes_spanned) + " nodes"
                                      : "") +
                 (s.nccl ? "" : " userbuffers");
        } else {
          return bytes_text(s.bytes) + (s.inter_node ? " inter-node" : " intra-node") +
                 (s.nccl ? "" : " userbuffers");
        }
      },
      shape);
}

std::string op_slice_name(const Op& op, std::int32_t microbatch, std::int32_t chunk,
                          std::int32_t bucket) {
  std::string name;
  if (microbatch >= 0) {
    name = std::string(op.phase == Phase::kForward ? "F" : "B") + " mb" +
           std::to_string(microbatch) + " c" + std::to_string(chunk) + " ";
    if (op.layer >= 0) name += "L" + std::to_string(op.layer) + " ";
  } else {
    if (chunk >= 0) name += "c" + std::to_string(chunk) + " ";
    if (bucket >= 0) name += "b" + std::to_string(bucket) + " ";
  }
  return name + op.name;
}

std::string transfer_slice_name(const Transfer& tr) {
  return transfer_op_name(tr) + " mb" + std::to_string(tr.microbatch) +
         (tr.send ? " to " : " from ") + "stage " + std::to_string(tr.peer);
}

}  // namespace stepsim::sim
