// The analytic memory report (memory_report.hpp), moved out of the `stepsim memory` command
// so that the Python module writes the same document.

#include "stepsim/report/memory_report.hpp"

#include <algorithm>
#include <iomanip>
#include <string>

#include "stepsim/ops/flops.hpp"
#include "stepsim/layout/pipeline_split.hpp"
#include "stepsim/report/json_writer.hpp"
#include "stepsim/report/report.hpp"

namespace stepsim::sim {

std::vector<StageMemoryRow> stage_memory_rows(const Workload& w) {
  std::vector<StageMemoryRow> rows;
  for (const StageMemory& m : analytic_memory(w)) {
    StageMemoryRow row;
    row.memory = m;
    for (std::int32_t c = 0; c < static_cast<std::int32_t>(
                                     w.training.virtual_pipeline_model_parallel_size);
         ++c) {
      row.parameters += chunk_parameters(w, m.stage, c);
    }
    row.in_flight = max_in_flight(w.training, m.stage);
    rows.push_back(row);
  }
  return rows;
}

namespace {

std::int64_t largest_peak(const std::vector<StageMemoryRow>& rows) {
  std::int64_t peak = 0;
  for (const StageMemoryRow& r : rows) peak = std::max(peak, r.memory.peak_bytes);
  return peak;
}

}  // namespace

/// The `memory` JSON contract: "stages" with the StageMemory fields, plus capacity and fit.
void write_memory_json(const Workload& w, std::ostream& out, const FitAdvice* advice) {
  const std::vector<StageMemoryRow> rows = stage_memory_rows(w);
  JsonWriter j(out);
  j.begin_object();
  j.field("scenario", std::string_view(w.name));
  j.field("capacity_bytes", w.system.memory_bytes);
  j.field("peak_bytes", largest_peak(rows));
  j.field("fits", largest_peak(rows) <= w.system.memory_bytes);
  if (advice != nullptr) {
    j.key("make_it_fit");
    write_fit_advice_json(j, *advice);
  }
  j.field("layer_activation_bytes", layer_activation_bytes(w));
  write_configuration_json(j, w);
  j.key("stages").begin_array();
  for (const StageMemoryRow& r : rows) {
    const StageMemory& m = r.memory;
    j.begin_object();
    j.field("stage", m.stage);
    j.field("weights_bytes", m.weights_bytes);
    j.field("gradients_bytes", m.gradients_bytes);
    j.field("optimizer_bytes", m.optimizer_bytes);
    j.field("activations_bytes", m.activations_bytes);
    j.field("layer_activations_bytes", m.layer_activations_bytes);
    j.field("comm_buffer_bytes", m.comm_buffer_bytes);
    j.field("peak_bytes", m.peak_bytes);
    j.field("parameters", r.parameters);
    j.field("in_flight_microbatches", r.in_flight);
    j.field("fits", m.peak_bytes <= w.system.memory_bytes);
    if (uneven_pipeline(w.training)) {
      j.field("transformer_layers", pipeline_split(w.training, w.model).stage_layers(m.stage));
    }
    j.end_object();
  }
  j.end_array();
  j.end_object();
  out << '\n';
}

namespace {

double gib(std::int64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0); }

}  // namespace

void write_memory_text(const Workload& w, std::ostream& out, const FitAdvice* advice) {
  const std::vector<StageMemoryRow> rows = stage_memory_rows(w);
  if (advice != nullptr) {
    write_fit_advice_text(*advice, out);
    out << "\n";
  }
  const std::int64_t capacity = w.system.memory_bytes;
  out << "memory of " << w.name << " per GPU (analytic, GiB; " << w.system.gpu_name << ": "
      << std::fixed << std::setprecision(1) << gib(capacity) << " GiB)\n";
  out << "stage  params(M)  weights   grads  optimizer  activations  (layers)  in-flight"
         "     peak\n";
  for (const StageMemoryRow& r : rows) {
    const StageMemory& m = r.memory;
    out << std::setw(5) << m.stage << std::setw(11) << std::setprecision(1)
        << static_cast<double>(r.parameters) / 1e6 << std::setprecision(2) << std::setw(9)
        << gib(m.weights_bytes) << std::setw(8) << gib(m.gradients_bytes) << std::setw(11)
        << gib(m.optimizer_bytes) << std::setw(13) << gib(m.activations_bytes) << std::setw(10)
        << gib(m.layer_activations_bytes) << std::setw(11) << r.in_flight << std::setw(9)
        << gib(m.peak_bytes) << (m.peak_bytes > capacity ? "  exceeds memory" : "") << '\n';
  }
  if (uneven_pipeline(w.training)) {
    out << "uneven stages: " << stage_layers_text(pipeline_split(w.training, w.model))
        << " transformer layers per stage\n";
  }
  std::int64_t buffers = 0;
  for (const StageMemoryRow& r : rows) buffers = std::max(buffers, r.memory.comm_buffer_bytes);
  if (buffers > 0) {
    out << "peak includes up to " << gib(buffers)
        << " GiB of communication buffers per GPU (Transformer Engine's tp_comm_overlap "
           "userbuffers, DeepEP's buffers)\n";
  }
  const std::int64_t peak = largest_peak(rows);
  out << (peak <= capacity ? "fits" : "does not fit") << ": largest peak " << gib(peak)
      << " GiB of " << gib(capacity) << " GiB\n";
}

}  // namespace stepsim::sim
