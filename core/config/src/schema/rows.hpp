#pragma once
// The scenario schema's rows, one file per section (top.cpp, system.cpp, model.cpp,
// training*.cpp in this folder): the helpers and macros they are written with, and
// the sections that schema.cpp joins, in table order, into scenario_schema(). Private to
// stepsim_config. Defaults and rules are Megatron-LM's (megatron/training/arguments.py,
// megatron/core/transformer/transformer_config.py); the rule texts point at the checks that
// enforce them.

#include <array>
#include <cstdint>
#include <span>
#include <string_view>

#include "stepsim/config/enum_names.hpp"
#include "stepsim/config/schema.hpp"

namespace stepsim::schema_rows {

inline KnobValue int_value(std::int64_t v) { return KnobValue{.integer = v}; }
inline KnobValue real_value(double v) { return KnobValue{.real = v}; }
inline KnobValue bool_value(bool v) { return KnobValue{.integer = v ? 1 : 0}; }

// The first fields of a row (key, kind, set, get) for a plain member. Their captureless
// lambdas convert to the row's function pointers.
#define STEPSIM_INT(k, member)                                          \
  .key = k, .kind = KnobKind::kInt,                                     \
  .set = [](Workload& w, const KnobValue& v) { w.member = v.integer; }, \
  .get = [](const Workload& w) { return int_value(w.member); }
#define STEPSIM_BOOL(k, member)                                              \
  .key = k, .kind = KnobKind::kBool,                                         \
  .set = [](Workload& w, const KnobValue& v) { w.member = v.integer != 0; }, \
  .get = [](const Workload& w) { return bool_value(w.member); }
#define STEPSIM_REAL(k, member)                                      \
  .key = k, .kind = KnobKind::kReal,                                 \
  .set = [](Workload& w, const KnobValue& v) { w.member = v.real; }, \
  .get = [](const Workload& w) { return real_value(w.member); }
#define STEPSIM_ENUM(k, member, Enum)                                                      \
  .key = k, .kind = KnobKind::kChoice,                                                     \
  .set = [](Workload& w, const KnobValue& v) { w.member = static_cast<Enum>(v.integer); }, \
  .get = [](const Workload& w) { return int_value(static_cast<std::int64_t>(w.member)); }

inline constexpr std::string_view kCited = "cited under `sources`";

/// The sections, each in table order.
std::span<const KeyInfo> top_keys();            ///< the top level and heterogeneity
std::span<const KeyInfo> system_keys();         ///< system files (and inline systems)
std::span<const KeyInfo> model_keys();          ///< model
std::span<const KeyInfo> training_keys();       ///< parallelism, batch, recompute, optimizer, FP8
std::span<const KeyInfo> training_comm_keys();  ///< TP overlap, norm kernels, NCCL
std::span<const KeyInfo> training_moe_keys();   ///< expert parallelism and the MoE layer
std::span<const KeyInfo> training_step_keys();  ///< the optimizer and CUDA graphs

}  // namespace stepsim::schema_rows
