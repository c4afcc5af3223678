// `stepsim memory`: the analytic memory of every pipeline stage (weights, gradients,
// optimizer states, activations at the peak of the schedule), without simulating.

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdint>
#include <iomanip>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "common.hpp"
#include "stepsim/core/flops.hpp"
#include "stepsim/core/memory_model.hpp"

namespace stepsim::cli {
namespace {

struct MemoryOptions {
  std::string scenario;
  std::string format = "text";
};

struct StageRow {
  StageMemory memory;
  std::int64_t parameters = 0;
  std::int64_t in_flight = 0;
};

std::vector<StageRow> stage_rows(const Workload& w) {
  std::vector<StageRow> rows;
  for (const StageMemory& m : analytic_memory(w)) {
    StageRow row;
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

std::int64_t largest_peak(const std::vector<StageRow>& rows) {
  std::int64_t peak = 0;
  for (const StageRow& r : rows) peak = std::max(peak, r.memory.peak_bytes);
  return peak;
}

/// The `memory` JSON contract: "stages" with the StageMemory fields, plus capacity and fit.
void write_json(std::ostream& out, const Workload& w, const std::vector<StageRow>& rows) {
  nlohmann::ordered_json doc;
  doc["scenario"] = w.name;
  doc["capacity_bytes"] = w.system.memory_bytes;
  doc["peak_bytes"] = largest_peak(rows);
  doc["fits"] = largest_peak(rows) <= w.system.memory_bytes;
  doc["layer_activation_bytes"] = layer_activation_bytes(w);
  nlohmann::ordered_json stages = nlohmann::ordered_json::array();
  for (const StageRow& r : rows) {
    const StageMemory& m = r.memory;
    nlohmann::ordered_json s;
    s["stage"] = m.stage;
    s["weights_bytes"] = m.weights_bytes;
    s["gradients_bytes"] = m.gradients_bytes;
    s["optimizer_bytes"] = m.optimizer_bytes;
    s["activations_bytes"] = m.activations_bytes;
    s["layer_activations_bytes"] = m.layer_activations_bytes;
    s["peak_bytes"] = m.peak_bytes;
    s["parameters"] = r.parameters;
    s["in_flight_microbatches"] = r.in_flight;
    s["fits"] = m.peak_bytes <= w.system.memory_bytes;
    stages.push_back(std::move(s));
  }
  doc["stages"] = std::move(stages);
  out << doc.dump(2) << '\n';
}

double gib(std::int64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0); }

void write_text(std::ostream& out, const Workload& w, const std::vector<StageRow>& rows) {
  const std::int64_t capacity = w.system.memory_bytes;
  out << "memory of " << w.name << " per GPU (analytic, GiB; " << w.system.gpu_name << ": "
      << std::fixed << std::setprecision(1) << gib(capacity) << " GiB)\n";
  out << "stage  params(M)  weights   grads  optimizer  activations  (layers)  in-flight"
         "     peak\n";
  for (const StageRow& r : rows) {
    const StageMemory& m = r.memory;
    out << std::setw(5) << m.stage << std::setw(11) << std::setprecision(1)
        << static_cast<double>(r.parameters) / 1e6 << std::setprecision(2) << std::setw(9)
        << gib(m.weights_bytes) << std::setw(8) << gib(m.gradients_bytes) << std::setw(11)
        << gib(m.optimizer_bytes) << std::setw(13) << gib(m.activations_bytes) << std::setw(10)
        << gib(m.layer_activations_bytes) << std::setw(11) << r.in_flight << std::setw(9)
        << gib(m.peak_bytes) << (m.peak_bytes > capacity ? "  exceeds memory" : "") << '\n';
  }
  const std::int64_t peak = largest_peak(rows);
  out << (peak <= capacity ? "fits" : "does not fit") << ": largest peak " << gib(peak)
      << " GiB of " << gib(capacity) << " GiB\n";
}

int run_memory(const MemoryOptions& o, Env& env) {
  const std::optional<Workload> w = load_or_report(o.scenario, env);
  if (!w) return env.exit_code != 0 ? env.exit_code : 2;
  const std::vector<StageRow> rows = stage_rows(*w);
  std::ostream& out = *env.out;
  if (o.format == "json") {
    write_json(out, *w, rows);
  } else {
    write_text(out, *w, rows);
  }
  out.flush();
  return out ? 0 : 1;
}

}  // namespace

void add_memory_command(CLI::App& app, Env& env) {
  auto opts = std::make_shared<MemoryOptions>();
  CLI::App* cmd = app.add_subcommand(
      "memory",
      "Analytic memory per pipeline stage, without simulating: weights, gradients and\n"
      "optimizer states (18 bytes per parameter, 6 + 12/dp with the distributed optimizer)\n"
      "and activations at the peak of Megatron's schedule (Korthikanti et al. 2022).");
  cmd->add_option("scenario", opts->scenario, "scenario file (JSON)")->required();
  cmd->add_option("--format", opts->format, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  cmd->callback([opts, &env] { env.exit_code = run_memory(*opts, env); });
}

}  // namespace stepsim::cli
