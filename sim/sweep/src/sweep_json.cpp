// JSON outputs of `stepsim sweep`, written with the deterministic JsonWriter.

#include <charconv>

#include "stepsim/config/shipped.hpp"
#include "stepsim/import/import.hpp"
#include "stepsim/report/json_writer.hpp"
#include "stepsim/report/report.hpp"
#include "stepsim/sweep/sweep_plan.hpp"

namespace stepsim::sim {
namespace {

// A knob column's text as a typed JSON value: integers, numbers and booleans unquoted.
void knob_value(JsonWriter& j, const std::string& s) {
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
void row_object(JsonWriter& j, const SweepRow& row,
                const std::vector<std::string>& columns, const Workload* workload,
                const SweepPricing& pricing) {
  const std::int64_t train_tokens = pricing.train_tokens;
  j.begin_object();
  j.field("index", row.index);
  if (workload != nullptr) j.field("megatron_args", std::string_view(megatron_args_of(*workload)));
  j.key("scenario").begin_object();
  for (std::size_t i = 0; i < columns.size() && i < row.knobs.size(); ++i) {
    j.key(columns[i]);
    knob_value(j, row.knobs[i]);
  }
  j.end_object();
  j.field("status", to_string(row.status));
  if (row.status != SweepStatus::kFeasible) {
    j.field("reason_key", std::string_view(row.reason_key));
    j.field("reason", std::string_view(row.reason));
  }
  j.field("simulated", row.simulated);
  const SweepMetrics& m = row.metrics;
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
    if (workload != nullptr) {
      j.field("tokens_per_s_per_gpu",
              m.tokens_per_s / static_cast<double>(workload->training.world_size));
      j.field("megatron_tflops_per_gpu", megatron_tflops_per_gpu(*workload, m.step_time_s));
    }
    if (workload != nullptr && train_tokens > 0) {
      const TimeToTrain tt = time_to_train(*workload, m.step_time_s, train_tokens);
      j.key("time_to_train").begin_object();
      j.field("tokens", tt.tokens);
      j.field("steps", tt.steps);
      j.field("time_s", tt.time_s);
      j.field("gpu_hours", tt.gpu_hours);
      j.end_object();
    }
    const RowCost cost = row_cost(row, pricing);
    if (cost.priced) j.field("usd_per_million_tokens", cost.usd_per_million_tokens);
    if (cost.trained) j.field("train_time_s", cost.train_time_s);
    if (cost.priced && cost.trained) j.field("train_usd", cost.train_usd);
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

void number_or_null(JsonWriter& j, bool has, double v) {
  if (has) {
    j.value(v);
  } else {
    j.null();
  }
}

/// The rules configurations were cut by (as the text report's), most configurations first.
void write_cut_rules(JsonWriter& j, const SweepSummary& s) {
  j.key("cut_rules").begin_array();
  for (const CutRule& r : s.cut_rules()) {
    j.begin_object();
    j.field("rule", std::string_view(r.rule));
    j.field("key", std::string_view(r.key));
    j.field("after_simulating", r.after_simulating);
    j.field("configurations", r.count);
    j.field("example_index", r.example_index);
    j.field("example", std::string_view(r.example));
    j.end_object();
  }
  j.end_array();
}

}  // namespace

void write_sweep_record_json(std::ostream& out, const SweepRow& row,
                             const std::vector<std::string>& columns,
                             const SweepPricing& pricing) {
  JsonWriter j(out, 0);
  j.begin_object();
  j.field("index", row.index);
  j.field("scenario", std::string_view(row.label));
  for (std::size_t i = 0; i < columns.size() && i < row.knobs.size(); ++i) {
    j.key(columns[i]);
    if (row.knobs[i].empty()) {
      j.null();
    } else {
      knob_value(j, row.knobs[i]);
    }
  }
  j.field("status", to_string(row.status));
  for (const auto& [key, text] : {std::pair{"reason_key", &row.reason_key},
                                   std::pair{"reason", &row.reason}}) {
    j.key(key);
    if (text->empty()) {
      j.null();
    } else {
      j.value(std::string_view(*text));
    }
  }
  j.field("simulated", row.simulated);
  const SweepMetrics& m = row.metrics;
  const bool s = row.simulated;
  j.key("step_time_s");
  number_or_null(j, s, m.step_time_s);
  j.key("tokens_per_s");
  number_or_null(j, s, m.tokens_per_s);
  j.key("mfu");
  number_or_null(j, s, m.mfu);
  j.key("hfu");
  number_or_null(j, s, m.hfu);
  j.key("tflops_per_gpu");
  number_or_null(j, s, m.tflops_per_gpu);
  j.key("bubble_fraction");
  number_or_null(j, s, m.bubble_fraction);
  j.key("peak_memory_bytes");
  if (s) {
    j.value(m.peak_memory_bytes);
  } else {
    j.null();
  }
  j.key("memory_headroom");
  number_or_null(j, s, m.memory_headroom);
  j.key("analytic_peak_bytes");
  if (m.analytic_peak_bytes > 0) {
    j.value(m.analytic_peak_bytes);
  } else {
    j.null();
  }
  j.key("cp_compute_s");
  number_or_null(j, s, m.cp_compute_s);
  j.key("cp_tp_comm_s");
  number_or_null(j, s, m.cp_tp_comm_s);
  j.key("cp_p2p_s");
  number_or_null(j, s, m.cp_p2p_s);
  j.key("cp_dp_comm_s");
  number_or_null(j, s, m.cp_dp_comm_s);
  j.key("cp_optimizer_s");
  number_or_null(j, s, m.cp_optimizer_s);
  j.key("cp_bubble_s");
  number_or_null(j, s, m.cp_bubble_s);
  const RowCost cost = row_cost(row, pricing);
  j.key("usd_per_million_tokens");
  number_or_null(j, cost.priced, cost.usd_per_million_tokens);
  j.key("train_time_s");
  number_or_null(j, cost.trained, cost.train_time_s);
  j.key("train_usd");
  number_or_null(j, cost.priced && cost.trained, cost.train_usd);
  j.end_object();
}

void write_sweep_json(std::ostream& out, const SweepSummary& s, double wall_s, int jobs,
                      std::int64_t ranks) {
  JsonWriter j(out);
  j.begin_object();
  j.field("sweep", std::string_view(s.spec().file));
  j.field("objective", to_string(s.spec().objective));
  // A base without cost_model (only then): why its cost model, and how to ask for the other.
  if (const std::string note = default_cost_model_note(s.spec().base.cost_model,
                                                       s.spec().base.system.gpu_name);
      !note.empty()) {
    j.field("cost_model_default", std::string_view(note));
  }
  if (s.spec().train_tokens > 0) j.field("train_tokens", s.spec().train_tokens);
  if (s.spec().price_per_gpu_hour > 0) j.field("price_per_gpu_hour", s.spec().price_per_gpu_hour);
  j.field("evaluated", s.evaluated());
  j.field("feasible", s.feasible());
  j.field("simulated", s.simulated());
  j.field("wall_s", wall_s);
  j.field("jobs", static_cast<std::int64_t>(jobs));
  j.field("ranks", ranks);
  j.field("configurations_per_s", wall_s > 0 ? static_cast<double>(s.evaluated()) / wall_s : 0.0);
  // The swept knobs: the values listed, or "auto" (every valid value given the knobs before).
  j.key("swept").begin_array();
  for (const SweepAxis& axis : s.spec().axes) {
    j.begin_object();
    j.field("key", knob_table()[static_cast<std::size_t>(axis.knob)].key);
    j.key("values");
    if (axis.automatic) {
      j.value("auto");
    } else {
      j.begin_array();
      for (const KnobValue& v : axis.values) {
        knob_value(j, format_knob_value(axis.knob, v, s.spec().systems));
      }
      j.end_array();
    }
    j.end_object();
  }
  j.end_array();
  j.key("cut").begin_object();
  for (const auto& [key, n] : s.cut_by_reason()) j.field(key, n);
  j.end_object();
  write_cut_rules(j, s);
  j.key("best").begin_array();
  for (const RankedConfig& r : s.top()) row_object(j, r.row, s.columns(), &r.workload, s.pricing());
  j.end_array();
  j.key("best_per_gpu_count").begin_array();
  for (const auto& [gpus, r] : s.best_per_gpu_count()) {
    row_object(j, r.row, s.columns(), &r.workload, s.pricing());
  }
  j.end_array();
  j.key("pareto").begin_array();
  for (const RankedConfig& r : s.pareto()) row_object(j, r.row, s.columns(), nullptr, s.pricing());
  j.end_array();
  j.key("pareto_summary").begin_array();
  for (const RankedConfig* r : s.pareto_summary()) j.value(r->row.index);
  j.end_array();
  j.end_object();
  out << '\n';
}

void JsonRowsSink::add(const SweepRow& row, const Workload& /*workload*/) {
  rows_.push_back(row);
}

void JsonRowsSink::write(std::ostream& out) const {
  JsonWriter j(out);
  j.begin_object();
  j.key("rows").begin_array();
  for (const SweepRow& r : rows_) row_object(j, r, columns_, nullptr, pricing_);
  j.end_array();
  j.end_object();
  out << '\n';
}

}  // namespace stepsim::sim
