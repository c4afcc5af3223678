#pragma once
// The `memory` report: the analytic memory of every pipeline stage (weights, gradients,
// optimizer states, activations at the peak of the schedule), as text and as the JSON
// contract of docs/outputs.md. No simulation.

#include <cstdint>
#include <ostream>
#include <vector>

#include "stepsim/memory/memory_model.hpp"
#include "stepsim/report/fit_advice.hpp"
#include "stepsim/config/scenario.hpp"

namespace stepsim::sim {

/// One stage's analytic memory with its parameter count and in-flight micro-batches.
struct StageMemoryRow {
  StageMemory memory;
  std::int64_t parameters = 0;
  std::int64_t in_flight = 0;
};

std::vector<StageMemoryRow> stage_memory_rows(const Workload& w);

/// The `memory` JSON contract; with `advice` (the job does not fit) also "make_it_fit".
void write_memory_json(const Workload& w, std::ostream& out, const FitAdvice* advice = nullptr);
/// The `memory` table; with `advice` its first line says the job does not fit, followed by the
/// changes that do.
void write_memory_text(const Workload& w, std::ostream& out, const FitAdvice* advice = nullptr);

}  // namespace stepsim::sim
