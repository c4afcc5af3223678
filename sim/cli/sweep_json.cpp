// JSON outputs of `stepsim sweep`, written with the deterministic JsonWriter.

#include <charconv>

#include "stepsim/core/import.hpp"
#include "stepsim/sim/json_writer.hpp"
#include "sweep_output.hpp"

namespace stepsim::cli {
namespace {

// A knob column's text as a typed JSON value: integers, numbers and booleans unquoted.
void knob_value(sim::JsonWriter& j, const std::string& s) {
  if (s == "true" || s == "false") {
    j.value(s == "true");
    return;
  }
  std::int64_t i = 0;
  const char* end = s.data() + s.size();
  if (auto r = std::from_chars(s.data(), end, i); r.ec == std::errc() && r.ptr == end) {
    j.value(i);
    return;
  }
  double d = 0;
  if (auto r = std::from_chars(s.data(), end, d); r.ec == std::errc() && r.ptr == end) {
    j.value(d);
    return;
  }
  j.value(std::string_view(s));
}

// `workload`, when given, adds the configuration's Megatron-LM flags.
void row_object(sim::JsonWriter& j, const sim::SweepRow& row,
                const std::vector<std::string>& columns, const Workload* workload) {
  j.begin_object();
  j.field("index", row.index);
  if (workload != nullptr) j.field("megatron_args", std::string_view(megatron_args_of(*workload)));
  j.key("scenario").begin_object();
  for (std::size_t i = 0; i < columns.size() && i < row.knobs.size(); ++i) {
    j.key(columns[i]);
    knob_value(j, row.knobs[i]);
  }
  j.end_object();
  j.field("status", sim::to_string(row.status));
  if (row.status != sim::SweepStatus::kFeasible) {
    j.field("reason_key", std::string_view(row.reason_key));
    j.field("reason", std::string_view(row.reason));
  }
  j.field("simulated", row.simulated);
  const sim::SweepMetrics& m = row.metrics;
  j.key("metrics").begin_object();
  if (row.simulated) {
    j.field("step_time_s", m.step_time_s);
    j.field("tokens_per_s", m.tokens_per_s);
    j.field("mfu", m.mfu);
    j.field("hfu", m.hfu);
    j.field("tflops_per_gpu", m.tflops_per_gpu);
    j.field("bubble_fraction", m.bubble_fraction);
    j.field("peak_memory_bytes", m.peak_memory_bytes);
    j.field("memory_headroom", m.memory_headroom);
  }
  if (m.analytic_peak_bytes > 0) j.field("analytic_peak_bytes", m.analytic_peak_bytes);
  if (row.simulated) {
    j.key("critical_path").begin_object();
    j.field("compute_s", m.cp_compute_s);
    j.field("tp_comm_s", m.cp_tp_comm_s);
    j.field("p2p_s", m.cp_p2p_s);
    j.field("dp_comm_s", m.cp_dp_comm_s);
    j.field("optimizer_s", m.cp_optimizer_s);
    j.field("bubble_s", m.cp_bubble_s);
    j.end_object();
  }
  j.end_object();  // metrics
  j.end_object();
}

}  // namespace

void write_sweep_json(std::ostream& out, const sim::SweepSummary& s, double wall_s, int jobs,
                      std::int64_t ranks) {
  sim::JsonWriter j(out);
  j.begin_object();
  j.field("sweep", std::string_view(s.spec().file));
  j.field("objective", to_string(s.spec().objective));
  j.field("evaluated", s.evaluated());
  j.field("feasible", s.feasible());
  j.field("simulated", s.simulated());
  j.field("wall_s", wall_s);
  j.field("jobs", static_cast<std::int64_t>(jobs));
  j.field("ranks", ranks);
  j.field("configurations_per_s", wall_s > 0 ? static_cast<double>(s.evaluated()) / wall_s : 0.0);
  j.key("cut").begin_object();
  for (const auto& [key, n] : s.cut_by_reason()) j.field(key, n);
  j.end_object();
  j.key("best").begin_array();
  for (const sim::RankedConfig& r : s.top()) row_object(j, r.row, s.columns(), &r.workload);
  j.end_array();
  j.key("pareto").begin_array();
  for (const sim::RankedConfig& r : s.pareto()) row_object(j, r.row, s.columns(), nullptr);
  j.end_array();
  j.end_object();
  out << '\n';
}

void JsonRowsSink::add(const sim::SweepRow& row, const Workload& /*workload*/) {
  rows_.push_back(row);
}

void JsonRowsSink::write(std::ostream& out) const {
  sim::JsonWriter j(out);
  j.begin_object();
  j.key("rows").begin_array();
  for (const sim::SweepRow& r : rows_) row_object(j, r, columns_, nullptr);
  j.end_array();
  j.end_object();
  out << '\n';
}

}  // namespace stepsim::cli
