#pragma once
// Writers for predictions: a text report readable at a glance, the `predict` JSON contract
// (docs/outputs.md), and Chrome trace JSON (docs/trace.md). Writers take the stream.

#include <ostream>
#include <string>

#include "stepsim/core/scenario.hpp"
#include "stepsim/sim/simulate.hpp"

namespace stepsim::sim {

void write_prediction_text(const Workload& w, const SimulationResult& result,
                           const std::string& cost_model, std::ostream& out);

void write_prediction_json(const Workload& w, const SimulationResult& result,
                           const std::string& cost_model, std::ostream& out);

class JsonWriter;

/// The "stages" array both the predict JSON and the trace's summary carry.
void write_stages_json(JsonWriter& j, const std::vector<StageSummary>& stages);

/// Chrome trace event JSON of `timeline` (one pid per rank, one tid per stream, memory
/// counters, and a "stepsim" summary object with the stages).
void write_chrome_trace(const Timeline& timeline, const std::vector<StageSummary>& stages,
                        std::ostream& out);

}  // namespace stepsim::sim
