#include "stepsim/ops/ops.hpp"

#include <type_traits>

#include "stepsim/layout/window_attention.hpp"

namespace stepsim {

namespace {

/// Forward: QK^T (2*scores*d_qk per head) and attention*V (2*scores*d_v). Backward does twice
/// the forward's matmul work (dQ, dK from dS; dV, dP from dO).
double attention_flops(const AttentionOp& a, double scores) {
  const double fwd = 2.0 * scores * static_cast<double>(a.head_dim + a.v_dim()) *
                     static_cast<double>(a.batch * a.heads);
  return a.backward ? 2.0 * fwd : fwd;
}

}  // namespace

double AttentionOp::scores() const {
  if (window > 0) return causal_band_scores(seq, window);
  return static_cast<double>(seq) * static_cast<double>(kv_seq());
}

double AttentionOp::flops() const { return attention_flops(*this, scores()); }

double AttentionOp::counted_flops() const {
  if (counted_scores > 0) return attention_flops(*this, static_cast<double>(counted_scores));
  return attention_flops(*this, static_cast<double>(seq) * static_cast<double>(kv_seq()));
}

double Op::flops() const {
  return std::visit(
      [](const auto& s) -> double {
        using T = std::decay_t<decltype(s)>;
        if constexpr (std::is_same_v<T, AttentionOp>) {
          return s.counted_flops();
        } else if constexpr (std::is_same_v<T, GemmOp>) {
          return s.flops();
        } else {
          return 0.0;
        }
      },
      shape);
}

std::string_view to_string(Phase p) {
  switch (p) {
    case Phase::kForward: return "forward";
    case Phase::kBackwardInput: return "backward_input";
    case Phase::kBackwardWeight: return "backward_weight";
    case Phase::kRecompute: return "recompute";
    case Phase::kStep: return "step";
  }
  return "?";
}

std::string_view to_string(Stream s) {
  switch (s) {
    case Stream::kCompute: return "compute";
    case Stream::kTensorComm: return "tp_comm";
    case Stream::kPipelineComm: return "pp_comm";
    case Stream::kDataComm: return "dp_comm";
    case Stream::kContextComm: return "cp_comm";
  }
  return "?";
}

std::string_view to_string(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::kAllReduce: return "all_reduce";
    case CollectiveKind::kAllGather: return "all_gather";
    case CollectiveKind::kReduceScatter: return "reduce_scatter";
    case CollectiveKind::kAllToAll: return "all_to_all";
    case CollectiveKind::kDeepEpDispatch:
      return "deepep_dispatch";
    case CollectiveKind::kDeepEpCombine:
      return "deepep_combine";
  }
  return "?";
}

std::string_view to_string(CommGroup g) {
  switch (g) {
    case CommGroup::kTensor: return "tp";
    case CommGroup::kData: return "dp";
    case CommGroup::kEmbedding: return "embedding";
    case CommGroup::kTensorData: return "tp_dp";
    case CommGroup::kContext: return "cp";
    case CommGroup::kExpert: return "ep";
    case CommGroup::kExpertTensor: return "etp";
    case CommGroup::kExpertTensorExpert: return "etp_ep";
    case CommGroup::kExpertData: return "edp";
    case CommGroup::kContextA2a: return "cp_a2a";
    case CommGroup::kGradStats: return "grad_stats";
    case CommGroup::kTensorContext:
      return "tp_cp";
  }
  return "?";
}

std::string_view to_string(GemmLayout l) {
  switch (l) {
    case GemmLayout::kUnspecified: return "";
    case GemmLayout::kTN: return "TN";
    case GemmLayout::kNN: return "NN";
    case GemmLayout::kNT: return "NT";
  }
  return "?";
}

std::string_view to_string(GemmScaling s) {
  switch (s) {
    case GemmScaling::kTensor:
      return "tensor";
    case GemmScaling::kBlock128x128:
      return "block_128x128";
    case GemmScaling::kBlock1x128:
      return "block_1x128";
    case GemmScaling::kMx1x32:
      return "mx_1x32";
    case GemmScaling::kNv1x16:
      return "nv_1x16";
  }
  return "?";
}

std::optional<GemmScaling> parse_gemm_scaling(std::string_view s) {
  if (s == "tensor") return GemmScaling::kTensor;
  if (s == "block_128x128") return GemmScaling::kBlock128x128;
  if (s == "block_1x128") return GemmScaling::kBlock1x128;
  if (s == "mx_1x32") return GemmScaling::kMx1x32;
  if (s == "nv_1x16") return GemmScaling::kNv1x16;
  return std::nullopt;
}

std::optional<GemmLayout> parse_gemm_layout(std::string_view s) {
  if (s == "TN") return GemmLayout::kTN;
  if (s == "NN") return GemmLayout::kNN;
  if (s == "NT") return GemmLayout::kNT;
  return std::nullopt;
}

GemmLayout te_linear_layout(Phase phase, DType dtype) {
  // NVFP4 GEMMs also run TN only (cublaslt_gemm.cu CanonicalizeGemmInput: "NVFP4 gemm is
  // only supported in TN layout"), on the row- or column-wise copy each operand needs.
  if (dtype == DType::kFp8 || dtype == DType::kFp4) return GemmLayout::kTN;
  switch (phase) {
    case Phase::kBackwardInput: return GemmLayout::kNN;
    case Phase::kBackwardWeight: return GemmLayout::kNT;
    case Phase::kForward:
    case Phase::kRecompute:
    case Phase::kStep: return GemmLayout::kTN;
  }
  return GemmLayout::kTN;
}

}  // namespace stepsim
