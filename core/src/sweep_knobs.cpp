// The table of sweepable knobs: dotted scenario key, value kind, setter and getter. Its order is
// the enumeration order: systems, then the model, then the run's size, then the parallel
// layout from the outside in (t, p, v, SP, micro-batch), then memory and overlap options.

#include <array>
#include <charconv>
#include <cstdio>
#include <string>

#include "stepsim/core/sweep_spec.hpp"

namespace stepsim {
namespace {

constexpr std::array<std::string_view, 3> kGranularity = {"none", "selective", "full"};
constexpr std::array<std::string_view, 3> kMethod = {"none", "uniform", "block"};
constexpr std::array<std::string_view, 3> kPosition = {"learned_absolute", "rope", "none"};
constexpr std::array<std::string_view, 2> kNorm = {"LayerNorm", "RMSNorm"};

KnobValue int_value(std::int64_t v) { return KnobValue{v, 0.0, -1}; }
KnobValue real_value(double v) { return KnobValue{0, v, -1}; }
KnobValue bool_value(bool v) { return KnobValue{v ? 1 : 0, 0.0, -1}; }

// One table row per field. The macros keep each row on one line; their captureless lambdas
// convert to the table's function pointers.
#define STEPSIM_INT_KNOB(key, member)                                                              \
  KnobInfo {                                                                                       \
    key, KnobKind::kInt, {}, false, [](Workload& w, const KnobValue& v) { w.member = v.integer; }, \
        [](const Workload& w) { return int_value(w.member); }                                      \
  }
#define STEPSIM_AUTO_INT_KNOB(key, member)                                                        \
  KnobInfo {                                                                                      \
    key, KnobKind::kInt, {}, true, [](Workload& w, const KnobValue& v) { w.member = v.integer; }, \
        [](const Workload& w) { return int_value(w.member); }                                     \
  }
#define STEPSIM_BOOL_KNOB(key, member, autoable)                            \
  KnobInfo {                                                                \
    key, KnobKind::kBool, {}, autoable,                                     \
        [](Workload& w, const KnobValue& v) { w.member = v.integer != 0; }, \
        [](const Workload& w) { return bool_value(w.member); }              \
  }
#define STEPSIM_REAL_KNOB(key, member)                                                           \
  KnobInfo {                                                                                     \
    key, KnobKind::kReal, {}, false, [](Workload& w, const KnobValue& v) { w.member = v.real; }, \
        [](const Workload& w) { return real_value(w.member); }                                   \
  }

const std::array kKnobs = {
    // The system file itself: its value indexes SweepSpec::systems. The enumerator swaps the
    // whole SystemConfig; set/get only carry the index through.
    KnobInfo{"system",
             KnobKind::kSystem,
             {},
             false,
             [](Workload&, const KnobValue&) {},
             [](const Workload&) { return KnobValue{}; }},
    STEPSIM_INT_KNOB("system.gpus_per_node", system.gpus_per_node),
    STEPSIM_INT_KNOB("system.nics_per_node", system.nics_per_node),
    STEPSIM_INT_KNOB("system.memory_bytes", system.memory_bytes),
    STEPSIM_REAL_KNOB("system.peak_flops_fp32", system.peak_flops_fp32),
    STEPSIM_REAL_KNOB("system.peak_flops_fp16", system.peak_flops_fp16),
    STEPSIM_REAL_KNOB("system.peak_flops_bf16", system.peak_flops_bf16),
    STEPSIM_REAL_KNOB("system.hbm_bandwidth_Bps", system.hbm_bandwidth_bytes_per_s),
    STEPSIM_REAL_KNOB("system.intra_node.bandwidth_Bps", system.intra_node.bandwidth_bytes_per_s),
    STEPSIM_REAL_KNOB("system.intra_node.latency_s", system.intra_node.latency_s),
    STEPSIM_REAL_KNOB("system.inter_node.bandwidth_Bps", system.inter_node.bandwidth_bytes_per_s),
    STEPSIM_REAL_KNOB("system.inter_node.latency_s", system.inter_node.latency_s),
    STEPSIM_REAL_KNOB("system.efficiency.gemm_max", system.efficiency.gemm_max),
    STEPSIM_REAL_KNOB("system.efficiency.gemm_half_flops", system.efficiency.gemm_half_flops),
    STEPSIM_REAL_KNOB("system.efficiency.memory_max", system.efficiency.memory_max),
    STEPSIM_REAL_KNOB("system.efficiency.kernel_launch_s", system.efficiency.kernel_launch_s),
    STEPSIM_REAL_KNOB("system.efficiency.link_max", system.efficiency.link_max),

    STEPSIM_INT_KNOB("model.num_layers", model.num_layers),
    STEPSIM_INT_KNOB("model.hidden_size", model.hidden_size),
    STEPSIM_INT_KNOB("model.num_attention_heads", model.num_attention_heads),
    STEPSIM_INT_KNOB("model.num_query_groups", model.num_query_groups),
    STEPSIM_INT_KNOB("model.kv_channels", model.kv_channels),
    STEPSIM_INT_KNOB("model.ffn_hidden_size", model.ffn_hidden_size),
    STEPSIM_INT_KNOB("model.seq_length", model.seq_length),
    STEPSIM_INT_KNOB("model.max_position_embeddings", model.max_position_embeddings),
    STEPSIM_INT_KNOB("model.vocab_size", model.vocab_size),
    STEPSIM_INT_KNOB("model.make_vocab_size_divisible_by", model.make_vocab_size_divisible_by),
    STEPSIM_INT_KNOB("model.padded_vocab_size", model.padded_vocab_size),
    STEPSIM_BOOL_KNOB("model.swiglu", model.swiglu, false),
    STEPSIM_BOOL_KNOB("model.untie_embeddings_and_output_weights",
                      model.untie_embeddings_and_output_weights, false),
    STEPSIM_BOOL_KNOB("model.use_flash_attn", model.use_flash_attn, true),
    STEPSIM_BOOL_KNOB("model.add_bias_linear", model.add_bias_linear, false),
    KnobInfo{"model.position_embedding_type", KnobKind::kChoice, kPosition, false,
             [](Workload& w, const KnobValue& v) {
               w.model.position_embedding_type = static_cast<PositionEmbedding>(v.integer);
             },
             [](const Workload& w) {
               return int_value(static_cast<std::int64_t>(w.model.position_embedding_type));
             }},
    KnobInfo{"model.normalization", KnobKind::kChoice, kNorm, false,
             [](Workload& w, const KnobValue& v) {
               w.model.normalization = static_cast<Normalization>(v.integer);
             },
             [](const Workload& w) {
               return int_value(static_cast<std::int64_t>(w.model.normalization));
             }},

    STEPSIM_INT_KNOB("training.world_size", training.world_size),
    STEPSIM_INT_KNOB("training.global_batch_size", training.global_batch_size),
    KnobInfo{"training.bf16",
             KnobKind::kBool,
             {},
             false,
             [](Workload& w, const KnobValue& v) {
               if (v.integer != 0) {
                 w.training.params_dtype = DType::kBf16;
               } else if (w.training.params_dtype == DType::kBf16) {
                 w.training.params_dtype = DType::kFp32;
               }
             },
             [](const Workload& w) { return bool_value(w.training.params_dtype == DType::kBf16); }},
    KnobInfo{"training.fp16",
             KnobKind::kBool,
             {},
             false,
             [](Workload& w, const KnobValue& v) {
               if (v.integer != 0) {
                 w.training.params_dtype = DType::kFp16;
               } else if (w.training.params_dtype == DType::kFp16) {
                 w.training.params_dtype = DType::kFp32;
               }
             },
             [](const Workload& w) { return bool_value(w.training.params_dtype == DType::kFp16); }},
    STEPSIM_AUTO_INT_KNOB("training.tensor_model_parallel_size",
                          training.tensor_model_parallel_size),
    STEPSIM_AUTO_INT_KNOB("training.pipeline_model_parallel_size",
                          training.pipeline_model_parallel_size),
    STEPSIM_AUTO_INT_KNOB("training.virtual_pipeline_model_parallel_size",
                          training.virtual_pipeline_model_parallel_size),
    STEPSIM_AUTO_INT_KNOB("training.num_layers_per_virtual_pipeline_stage",
                          training.num_layers_per_virtual_pipeline_stage),
    STEPSIM_BOOL_KNOB("training.sequence_parallel", training.sequence_parallel, true),
    STEPSIM_AUTO_INT_KNOB("training.micro_batch_size", training.micro_batch_size),
    KnobInfo{"training.recompute_granularity", KnobKind::kChoice, kGranularity, true,
             [](Workload& w, const KnobValue& v) {
               w.training.recompute_granularity = static_cast<RecomputeGranularity>(v.integer);
             },
             [](const Workload& w) {
               return int_value(static_cast<std::int64_t>(w.training.recompute_granularity));
             }},
    KnobInfo{"training.recompute_method", KnobKind::kChoice, kMethod, true,
             [](Workload& w, const KnobValue& v) {
               w.training.recompute_method = static_cast<RecomputeMethod>(v.integer);
             },
             [](const Workload& w) {
               return int_value(static_cast<std::int64_t>(w.training.recompute_method));
             }},
    STEPSIM_AUTO_INT_KNOB("training.recompute_num_layers", training.recompute_num_layers),
    STEPSIM_BOOL_KNOB("training.distribute_saved_activations",
                      training.distribute_saved_activations, true),
    STEPSIM_BOOL_KNOB("training.use_distributed_optimizer", training.use_distributed_optimizer,
                      true),
    STEPSIM_BOOL_KNOB("training.overlap_grad_reduce", training.overlap_grad_reduce, true),
    STEPSIM_BOOL_KNOB("training.overlap_param_gather", training.overlap_param_gather, true),
    STEPSIM_BOOL_KNOB("training.overlap_p2p_comm", training.overlap_p2p_comm, true),
    STEPSIM_AUTO_INT_KNOB("training.microbatch_group_size_per_vp_stage",
                          training.microbatch_group_size_per_vp_stage),
};

#undef STEPSIM_INT_KNOB
#undef STEPSIM_AUTO_INT_KNOB
#undef STEPSIM_BOOL_KNOB
#undef STEPSIM_REAL_KNOB

}  // namespace

std::span<const KnobInfo> knob_table() { return kKnobs; }

KnobId find_knob(std::string_view key) {
  for (std::size_t i = 0; i < kKnobs.size(); ++i) {
    if (kKnobs[i].key == key) return static_cast<KnobId>(i);
  }
  return -1;
}

std::string format_knob_value(KnobId knob, const KnobValue& v,
                              std::span<const SystemConfig> systems) {
  const KnobInfo& info = kKnobs.at(static_cast<std::size_t>(knob));
  switch (info.kind) {
    case KnobKind::kInt:
      return std::to_string(v.integer);
    case KnobKind::kBool:
      return v.integer != 0 ? "true" : "false";
    case KnobKind::kChoice:
      return std::string(info.choices[static_cast<std::size_t>(v.integer)]);
    case KnobKind::kSystem:
      return v.system >= 0 && static_cast<std::size_t>(v.system) < systems.size()
                 ? systems[static_cast<std::size_t>(v.system)].name
                 : std::string("base");
    case KnobKind::kReal: {
      // Shortest text that reads back to the same double: keeps CSV rows round-trippable.
      std::array<char, 32> buf{};
      const auto res = std::to_chars(buf.data(), buf.data() + buf.size(), v.real);
      return std::string(buf.data(), res.ptr);
    }
  }
  return {};
}

std::string_view to_string(SweepObjective o) {
  switch (o) {
    case SweepObjective::kMaxTokensPerS:
      return "max_tokens_per_s";
    case SweepObjective::kMinStepTime:
      return "min_step_time";
    case SweepObjective::kMinGpus:
      return "min_gpus";
  }
  return "?";
}

}  // namespace stepsim
