// The sweep's knobs: the sweepable rows of the scenario schema (config/src/schema/), in its order,
// which is the enumeration order: systems, then the model, then the run's size, then the
// parallel layout from the outside in (t, p, v, SP, micro-batch), then memory and overlap
// options.

#include <array>
#include <charconv>
#include <cstdio>
#include <string>
#include <vector>

#include "stepsim/sweep/sweep_spec.hpp"

namespace stepsim {
namespace {

const std::vector<KnobInfo>& knobs() {
  static const std::vector<KnobInfo> table = [] {
    std::vector<KnobInfo> out;
    for (const KeyInfo& k : scenario_schema()) {
      if (k.sweep != Sweep::kNo) out.push_back(k);
    }
    return out;
  }();
  return table;
}

}  // namespace

std::span<const KnobInfo> knob_table() { return knobs(); }

KnobId find_knob(std::string_view key) {
  const auto& table = knobs();
  for (std::size_t i = 0; i < table.size(); ++i) {
    if (table[i].key == key) return static_cast<KnobId>(i);
  }
  return -1;
}

std::string format_knob_value(KnobId knob, const KnobValue& v,
                              std::span<const SystemConfig> systems) {
  const KnobInfo& info = knobs().at(static_cast<std::size_t>(knob));
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
    case KnobKind::kString:
      return {};  // never a knob
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
    case SweepObjective::kMaxTokensPerSPerGpu:
      return "max_tokens_per_s_per_gpu";
    case SweepObjective::kMinTimeToTrain:
      return "min_time_to_train";
    case SweepObjective::kMinCost:
      return "min_cost";
  }
  return "?";
}

namespace {
constexpr std::array<SweepObjective, 6> kObjectives = {
    SweepObjective::kMaxTokensPerS,       SweepObjective::kMinStepTime,
    SweepObjective::kMinGpus,             SweepObjective::kMaxTokensPerSPerGpu,
    SweepObjective::kMinTimeToTrain,      SweepObjective::kMinCost};
}  // namespace

std::optional<SweepObjective> sweep_objective_named(std::string_view name) {
  for (SweepObjective o : kObjectives) {
    if (to_string(o) == name) return o;
  }
  return std::nullopt;
}

std::string sweep_objective_names() {
  std::string out;
  for (SweepObjective o : kObjectives) {
    if (!out.empty()) out += ", ";
    out += to_string(o);
  }
  return out;
}

}  // namespace stepsim
