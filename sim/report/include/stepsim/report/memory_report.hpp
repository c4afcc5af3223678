#pragma once
// The `memory` report: the analytic memory of every pipeline stage (weights, gradients,
// optimizer states, activations at the peak of the schedule), as text and as the JSON
// contract of docs/outputs.md. No simulation.

#include <cstdint>
#include <ostream>
#include <vector>

#include "stepsim/memory/memory_model.hpp"
#include "stepsim/config/scenario.hpp"

namespace stepsim::sim {

/// One stage's analytic memory with its parameter count and in-flight micro-batches.
struct StageMemoryRow {
  StageMemory memory;
  std::int64_t parameters = 0;
  std::int64_t in_flight = 0;
};

std::vector<StageMemoryRow> stage_memory_rows(const Workload& w);

void write_memory_json(const Workload& w, std::ostream& out);
void write_memory_text(const Workload& w, std::ostream& out);

}  // namespace stepsim::sim
