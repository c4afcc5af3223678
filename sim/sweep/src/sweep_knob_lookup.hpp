#pragma once
// Internal to the sweep planner (sweep_enumerate.cpp, sweep_auto_values.cpp): the knob table
// lookups both need.

#include <algorithm>
#include <string_view>

#include "stepsim/base/assert.hpp"
#include "stepsim/sweep/sweep_spec.hpp"

namespace stepsim::sim::detail {

/// The id of a knob the table must hold.
inline KnobId knob(std::string_view key) {
  const KnobId id = find_knob(key);
  STEPSIM_ASSERT(id >= 0);
  return id;
}

/// Whether the sweep has an axis for `id`.
inline bool swept(const SweepSpec& spec, KnobId id) {
  return std::any_of(spec.axes.begin(), spec.axes.end(),
                     [&](const SweepAxis& a) { return a.knob == id; });
}

}  // namespace stepsim::sim::detail
