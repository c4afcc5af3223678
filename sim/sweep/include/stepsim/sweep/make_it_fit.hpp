#pragma once
// "Make it fit": when a job does not fit in a GPU's memory, the smallest changes of its
// scenario that do. Each candidate is a change of one knob (or, when too few single changes
// fit, of two) in Megatron's names: activation recompute (selective, then full with the
// fewest layers recomputed), sequence parallelism, the distributed optimizer, a smaller
// micro-batch (global batch kept), larger tensor, context, pipeline or expert parallelism
// (world size kept: data parallelism shrinks). Candidates are built by the sweep planner's own
// machinery (knob table, derived fields re-derived as the loader does, Megatron's rules),
// kept when the memory model fits them, then simulated by the sweep's evaluator (the engine
// `predict` runs) and kept when the simulated step fits too; listed fastest first.
// Activation and optimizer offloading are not suggested: stepsim does not model them
// (schema_unmodelled_megatron.cpp), so a prediction of them would be of a different job.

#include <cstddef>
#include <cstdint>
#include <optional>

#include "stepsim/config/scenario.hpp"
#include "stepsim/cost/cost_model.hpp"
#include "stepsim/report/fit_advice.hpp"
#include "stepsim/simulate/simulate.hpp"
#include "stepsim/sweep/sweep_spec.hpp"

namespace stepsim::sim {

struct MakeItFitOptions {
  std::size_t max_suggestions = 5;  ///< listed at most
  std::size_t max_simulated = 10;   ///< candidates that fit the memory model, simulated at most
  std::int64_t max_tried = 600;     ///< candidates checked against the rules and memory at most
};

/// The largest analytic peak of `w` (analytic_memory) and the lowest stage that has it.
struct LargestPeak {
  std::int64_t bytes = 0;
  std::int32_t stage = 0;
};
LargestPeak largest_analytic_peak(const Workload& w);

/// The suggestions for the valid job `w` (the advice's peak fields are the memory model's).
/// `defaulted`: the keys its scenario left to Megatron's defaults (defaulted_keys_of_scenario
/// of its text), re-derived for each candidate as the loader would. `cost` prices every
/// candidate (the job's own cost model; the system does not change).
FitAdvice make_it_fit(const Workload& w, const DefaultedKeys& defaulted, const CostModel& cost,
                      const MakeItFitOptions& options = {});

/// `memory` and `check`: the advice when the memory model does not fit `w`, else nullopt.
std::optional<FitAdvice> analytic_fit_advice(const Workload& w, const DefaultedKeys& defaulted,
                                             const CostModel& cost);

/// `predict`: the advice when the simulated step `p` of `w` does not fit, else nullopt; its
/// peak is the simulated one.
std::optional<FitAdvice> simulated_fit_advice(const Workload& w, const Prediction& p,
                                              const DefaultedKeys& defaulted,
                                              const CostModel& cost);

}  // namespace stepsim::sim
