#pragma once
// The one spelling of each scenario enum: Megatron-LM's argument value for every enumerator,
// in the enum's order (index = ordinal). The schema rows take their choices from these
// arrays; the reports, the launch-line exporter, the sweep summary and the checks' messages
// spell a value through to_string(), and readers turn a string back with parse_enum().

#include <array>
#include <concepts>
#include <cstddef>
#include <optional>
#include <span>
#include <string_view>

#include "stepsim/config/scenario.hpp"

namespace stepsim {

inline constexpr std::array<std::string_view, 3> kRecomputeGranularityNames = {"none", "selective",
                                                                               "full"};
inline constexpr std::array<std::string_view, 3> kRecomputeMethodNames = {"none", "uniform",
                                                                          "block"};
inline constexpr std::array<std::string_view, 3> kPositionEmbeddingNames = {"learned_absolute",
                                                                            "rope", "none"};
inline constexpr std::array<std::string_view, 2> kNormalizationNames = {"LayerNorm", "RMSNorm"};
inline constexpr std::array<std::string_view, 5> kAttentionBackendNames = {"auto", "flash", "fused",
                                                                           "unfused", "local"};
/// Megatron-Core's --softmax-type values (TransformerConfig.softmax_type).
inline constexpr std::array<std::string_view, 3> kSoftmaxTypeNames = {"vanilla", "off-by-one",
                                                                      "learnable"};
inline constexpr std::array<std::string_view, 3> kFp8FormatNames = {"none", "e4m3", "hybrid"};
inline constexpr std::array<std::string_view, 5> kFp8RecipeNames = {"delayed", "tensorwise",
                                                                    "blockwise", "mxfp8", "custom"};
inline constexpr std::array<std::string_view, 2> kFp4FormatNames = {"none", "e2m1"};
inline constexpr std::array<std::string_view, 2> kFp4RecipeNames = {"nvfp4", "custom"};
/// Megatron-LM's --cp-comm-type values (arguments.py).
inline constexpr std::array<std::string_view, 4> kCpCommTypeNames = {"p2p", "a2a", "allgather",
                                                                     "a2a+p2p"};
inline constexpr std::array<std::string_view, 2> kOptimizerImplNames = {
    "megatron", "apex_distributed_fused_adam"};
/// Megatron-LM's --data-parallel-sharding-strategy values (Megatron-FSDP's ZeRO stages 0-3).
inline constexpr std::array<std::string_view, 4> kDpShardingNames = {
    "no_shard", "optim", "optim_grads", "optim_grads_params"};
/// Megatron-LM's --optimizer values stepsim models, --muon-tp-mode and --cuda-graph-impl.
inline constexpr std::array<std::string_view, 2> kOptimizerKindNames = {"adam", "muon"};
inline constexpr std::array<std::string_view, 3> kMuonTpModeNames = {"blockwise", "duplicated",
                                                                     "distributed"};
inline constexpr std::array<std::string_view, 4> kCudaGraphImplNames = {
    "none", "local", "transformer_engine", "full_iteration"};
/// Megatron-Core's CudaGraphModule names (--cuda-graph-modules; cuda_graph_config.py).
inline constexpr std::array<std::string_view, 6> kCudaGraphModuleNames = {
    "attn", "mlp", "moe", "moe_router", "moe_preprocess", "mamba"};
/// Megatron-LM's --cross-entropy-fusion-impl values.
inline constexpr std::array<std::string_view, 2> kCrossEntropyFusionImplNames = {"native", "te"};
// Megatron-Core's MoE choices (arguments.py, transformer_config.py).
inline constexpr std::array<std::string_view, 3> kMoeDispatcherNames = {"allgather", "alltoall",
                                                                        "flex"};
inline constexpr std::array<std::string_view, 3> kMoeFlexBackendNames = {"deepep", "hybridep",
                                                                         "ncclep"};
inline constexpr std::array<std::string_view, 6> kMoeLoadBalancingNames = {
    "aux_loss", "seq_aux_loss", "global_aux_loss", "sinkhorn", "quantile_balancing", "none"};
inline constexpr std::array<std::string_view, 3> kMoeRouterDtypeNames = {"none", "fp32", "fp64"};
inline constexpr std::array<std::string_view, 3> kMoeRouterScoreNames = {"softmax", "sigmoid",
                                                                         "sqrtsoftplus"};

/// The spellings of an enum, found by overload on a value of it (index = ordinal); `last`,
/// its last enumerator, holds the table to one spelling per enumerator.
#define STEPSIM_ENUM_NAMES(Enum, names, last)                                    \
  constexpr std::span<const std::string_view> enum_names(Enum) { return names; } \
  static_assert(names.size() == static_cast<std::size_t>(Enum::last) + 1, #names)
STEPSIM_ENUM_NAMES(RecomputeGranularity, kRecomputeGranularityNames, kFull);
STEPSIM_ENUM_NAMES(RecomputeMethod, kRecomputeMethodNames, kBlock);
STEPSIM_ENUM_NAMES(PositionEmbedding, kPositionEmbeddingNames, kNone);
STEPSIM_ENUM_NAMES(Normalization, kNormalizationNames, kRmsNorm);
STEPSIM_ENUM_NAMES(AttentionBackend, kAttentionBackendNames, kLocal);
STEPSIM_ENUM_NAMES(SoftmaxType, kSoftmaxTypeNames, kLearnable);
STEPSIM_ENUM_NAMES(Fp8Format, kFp8FormatNames, kHybrid);
STEPSIM_ENUM_NAMES(Fp8Recipe, kFp8RecipeNames, kCustom);
STEPSIM_ENUM_NAMES(Fp4Format, kFp4FormatNames, kE2m1);
STEPSIM_ENUM_NAMES(Fp4Recipe, kFp4RecipeNames, kCustom);
STEPSIM_ENUM_NAMES(CpCommType, kCpCommTypeNames, kA2aP2p);
STEPSIM_ENUM_NAMES(OptimizerImpl, kOptimizerImplNames, kApexDistributedFusedAdam);
STEPSIM_ENUM_NAMES(DpSharding, kDpShardingNames, kOptimGradsParams);
STEPSIM_ENUM_NAMES(OptimizerKind, kOptimizerKindNames, kMuon);
STEPSIM_ENUM_NAMES(MuonTpMode, kMuonTpModeNames, kDistributed);
STEPSIM_ENUM_NAMES(CudaGraphImpl, kCudaGraphImplNames, kFullIteration);
STEPSIM_ENUM_NAMES(CrossEntropyFusionImpl, kCrossEntropyFusionImplNames, kTe);
STEPSIM_ENUM_NAMES(MoeDispatcher, kMoeDispatcherNames, kFlex);
STEPSIM_ENUM_NAMES(MoeFlexBackend, kMoeFlexBackendNames, kNcclEp);
STEPSIM_ENUM_NAMES(MoeLoadBalancing, kMoeLoadBalancingNames, kNone);
STEPSIM_ENUM_NAMES(MoeRouterDtype, kMoeRouterDtypeNames, kFp64);
STEPSIM_ENUM_NAMES(MoeRouterScore, kMoeRouterScoreNames, kSqrtSoftplus);
#undef STEPSIM_ENUM_NAMES

/// An enum with a spelling table above.
template <class E>
concept NamedEnum = requires(E e) {
  { enum_names(e) } -> std::same_as<std::span<const std::string_view>>;
};

/// The Megatron-LM spelling of `e` ("?" for a value outside the enum).
template <NamedEnum E>
constexpr std::string_view to_string(E e) {
  const std::span<const std::string_view> names = enum_names(e);
  const auto i = static_cast<std::size_t>(e);
  return i < names.size() ? names[i] : std::string_view("?");
}

/// The enumerator spelled `text`, or nullopt.
template <NamedEnum E>
constexpr std::optional<E> parse_enum(std::string_view text) {
  const std::span<const std::string_view> names = enum_names(E{});
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i] == text) return static_cast<E>(i);
  }
  return std::nullopt;
}

}  // namespace stepsim
