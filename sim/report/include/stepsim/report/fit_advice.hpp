#pragma once
// "Make it fit": what `memory`, `predict` and `check` say when a job does not fit in a GPU's
// memory, and the smallest changes of the scenario that do (found by make_it_fit() in
// stepsim/sweep/make_it_fit.hpp). Plain data and its text and JSON writers; the JSON contract
// is docs/outputs.md's "make_it_fit".

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace stepsim::sim {

class JsonWriter;

/// One scenario key changed, in the scenario's (Megatron's) names and printed values.
struct FitChange {
  std::string key;   ///< dotted scenario key: "training.recompute_granularity"
  std::string from;  ///< the value as given ("selective", "2", "false")
  std::string to;    ///< the value of the suggestion
  bool operator==(const FitChange&) const = default;
};

/// A change of one or two knobs (the keys a knob drags along, such as recompute_method with
/// full recompute, included) that fits, checked and priced as `predict` prices the job.
struct FitSuggestion {
  std::vector<FitChange> changes;
  /// The Megatron-LM flags that differ from the job's (megatron_args_of of both).
  std::string megatron_args;
  std::int64_t analytic_peak_bytes = 0;   ///< the memory model's largest stage peak
  std::int64_t simulated_peak_bytes = 0;  ///< the simulated step's largest peak
  double step_time_s = 0;                 ///< the simulated step
  bool operator==(const FitSuggestion&) const = default;
};

/// Why a job does not fit and what would. `peak_bytes` is the figure the command judged by:
/// the memory model's (`memory`, `check`) or the simulated step's (`predict`).
struct FitAdvice {
  bool simulated_peak = false;  ///< peak_bytes is the simulated step's, not the analytic one
  std::int64_t peak_bytes = 0;
  std::int64_t capacity_bytes = 0;
  std::int32_t stage = 0;  ///< the pipeline stage with that peak (the lowest of a tie)
  std::int64_t tried = 0;  ///< candidate changes checked against Megatron's rules and memory
  std::vector<FitSuggestion> suggestions;  ///< fastest first
  bool operator==(const FitAdvice&) const = default;
};

/// The first line ("does not fit: largest peak ... of ...; ...", `subject` after "does not
/// fit: " when given) and one entry per suggestion.
void write_fit_advice_text(const FitAdvice& advice, std::ostream& out,
                           std::string_view subject = {});

/// The "make_it_fit" object (docs/outputs.md): peak, capacity, stage, tried, suggestions.
void write_fit_advice_json(JsonWriter& j, const FitAdvice& advice);

}  // namespace stepsim::sim
