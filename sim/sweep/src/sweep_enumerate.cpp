// Enumeration of a sweep's configurations: an odometer over the axes in knob-table order,
// where an "auto" axis gets the values that are valid given the knobs before it
// (sweep_auto_values.cpp). The fields the base left to Megatron's defaults are reset so that
// finalize_workload (the loader's own derivation) re-derives them for each configuration: no
// JSON in the loop.

#include <algorithm>

#include "stepsim/sweep/sweep.hpp"
#include "sweep_knob_lookup.hpp"

namespace stepsim::sim {
namespace {

using detail::knob;
using detail::swept;

bool is_system_knob(KnobId id) {
  return knob_table()[static_cast<std::size_t>(id)].key.starts_with("system");
}

}  // namespace

SweepEnumerator::SweepEnumerator(const SweepSpec& spec)
    : spec_(spec),
      values_(spec.axes.size()),
      pos_(spec.axes.size(), 0),
      partial_(spec.axes.size() + 1, spec.base) {}

void SweepEnumerator::enter(std::size_t level) {
  const SweepAxis& axis = spec_.axes[level];
  values_[level] = axis.automatic ? auto_values(axis.knob, partial_[level], spec_) : axis.values;
  if (values_[level].empty()) {
    // No value of this knob is valid with the knobs before it: keep the current one so the
    // configuration is still counted, with the rule it breaks.
    values_[level].push_back(
        knob_table()[static_cast<std::size_t>(axis.knob)].get(partial_[level]));
  }
  pos_[level] = 0;
}

namespace {

void apply(const SweepSpec& spec, const SweepAxis& axis, const KnobValue& value, Workload& w) {
  const KnobInfo& info = knob_table()[static_cast<std::size_t>(axis.knob)];
  if (info.kind == KnobKind::kSystem) {
    w.system = spec.systems[static_cast<std::size_t>(value.system)];
    return;
  }
  info.set(w, value);
  if (info.key == "training.recompute_granularity") {
    // Sweeping the granularity alone: give full recompute a method (Megatron requires one)
    // and take it away from the others (Megatron rejects a method without full).
    const bool full = w.training.recompute_granularity == RecomputeGranularity::kFull;
    if (!swept(spec, knob("training.recompute_method"))) {
      const RecomputeMethod base = spec.base.training.recompute_method;
      w.training.recompute_method =
          !full ? RecomputeMethod::kNone
                : (base != RecomputeMethod::kNone ? base : RecomputeMethod::kUniform);
    }
    if (!swept(spec, knob("training.recompute_num_layers"))) {
      const std::int64_t base = spec.base.training.recompute_num_layers;
      w.training.recompute_num_layers = !full ? 0 : (base > 0 ? base : 1);
    }
    if (!full && !swept(spec, knob("training.distribute_saved_activations"))) {
      w.training.distribute_saved_activations = false;
    }
  }
}

}  // namespace

bool SweepEnumerator::next(SweepConfig& out) {
  if (done_) return false;
  const std::size_t levels = spec_.axes.size();
  if (!started_) {
    started_ = true;
    for (std::size_t k = 0; k < levels; ++k) {
      enter(k);
      partial_[k + 1] = partial_[k];
      apply(spec_, spec_.axes[k], values_[k][0], partial_[k + 1]);
    }
  } else {
    std::size_t k = levels;
    while (k > 0) {
      --k;
      if (++pos_[k] < values_[k].size()) break;
      if (k == 0) {
        done_ = true;
        return false;
      }
    }
    if (levels == 0) {
      done_ = true;
      return false;
    }
    partial_[k + 1] = partial_[k];
    apply(spec_, spec_.axes[k], values_[k][pos_[k]], partial_[k + 1]);
    for (std::size_t j = k + 1; j < levels; ++j) {
      enter(j);
      partial_[j + 1] = partial_[j];
      apply(spec_, spec_.axes[j], values_[j][0], partial_[j + 1]);
    }
  }
  out.index = index_++;
  out.workload = partial_[levels];
  reset_derived_fields(out.workload, spec_);
  std::int32_t variant = 0;
  for (std::size_t k = 0; k < levels && is_system_knob(spec_.axes[k].knob); ++k) {
    variant =
        variant * static_cast<std::int32_t>(values_[k].size()) + static_cast<std::int32_t>(pos_[k]);
  }
  out.system_variant = variant;
  return true;
}

std::int64_t count_configurations(const SweepSpec& spec, std::int64_t stop_after) {
  SweepEnumerator e(spec);
  SweepConfig c;
  std::int64_t n = 0;
  while (n <= stop_after && e.next(c)) ++n;
  return n;
}

std::vector<SystemConfig> system_variants(const SweepSpec& spec) {
  std::vector<SystemConfig> out{spec.base.system};
  for (const SweepAxis& axis : spec.axes) {
    if (!is_system_knob(axis.knob)) break;
    std::vector<SystemConfig> next;
    for (const SystemConfig& s : out) {
      for (const KnobValue& v : axis.values) {
        Workload w;
        w.system = s;
        apply(spec, axis, v, w);
        next.push_back(w.system);
      }
    }
    out = std::move(next);
  }
  return out;
}

}  // namespace stepsim::sim
