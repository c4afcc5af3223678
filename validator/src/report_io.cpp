// The validation report as JSON (`stepsim validate --out`, contract in docs/outputs.md) and
// as text.

#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "figures_json.hpp"
#include "stepsim/validator/validate.hpp"
#include "stepsim/calibration/text_file.hpp"

namespace stepsim::calib {

Status write_report_json(const std::string& path, const ValidationReport& r) {
  return write_text_file(path, report_to_json(r));
}

std::string report_to_json(const ValidationReport& r) {
  nlohmann::ordered_json j;
  j["scenario"] = r.scenario;
  j["backend"] = r.backend;
  j["device"] = r.device;
  j["cost_model"] = r.cost_model;
  j["world_size"] = r.world_size;
  j["overrides"] = {{"num_layers", r.overrides.num_layers}, {"world_size", r.overrides.world_size}};
  j["warmup_steps"] = r.warmup_steps;
  j["steps"] = r.steps;
  j["async_p2p"] = r.async_p2p;
  j["async_grad_reduce"] = r.async_grad_reduce;
  j["device_timed"] = r.device_timed;
  j["predicted_step_time_s"] = r.predicted_step_time_s;
  j["measured_step_time_s"] = r.measured_step_time_s;
  j["relative_error"] = r.relative_error;
  j["measured_step_times_s"] = r.measured_step_times_s;
  j["measured_backend_step_time_s"] = r.measured_backend_step_time_s;
  j["backend_relative_error"] = r.backend_relative_error;
  auto stages = nlohmann::ordered_json::array();
  for (const auto& s : r.stages) {
    stages.push_back(
        {{"stage", s.stage},
         {"predicted", figures_json(s.predicted)},
         {"measured", figures_json(s.measured)},
         {"measured_backend_overhead_s", s.measured_backend_overhead_s},
         {"busy_relative_error", relative_error(s.predicted.busy_s, s.measured.busy_s)}});
  }
  j["stages"] = stages;
  auto ops = nlohmann::ordered_json::array();
  for (const auto& o : r.ops) {
    ops.push_back(
        {{"kind", std::string(to_string(o.category))},
         {"count", o.count},
         {"predicted_total_s", o.predicted_total_s},
         {"measured_total_s", o.measured_total_s},
         {"measured_wall_total_s", o.measured_wall_total_s},
         {"total_relative_error", relative_error(o.predicted_total_s, o.measured_total_s)},
         {"mean_relative_error", o.mean_relative_error},
         {"mean_abs_relative_error", o.mean_abs_relative_error}});
  }
  j["ops"] = ops;
  auto dev = nlohmann::ordered_json::array();
  for (const auto& d : r.largest_deviations) {
    dev.push_back({{"stage", d.stage},
                   {"name", d.name},
                   {"detail", d.detail},
                   {"kind", std::string(to_string(d.category))},
                   {"predicted_s", d.predicted_s},
                   {"measured_s", d.measured_s},
                   {"relative_error", d.relative_error}});
  }
  j["largest_deviations"] = dev;
  j["matched_slices"] = r.matched_slices;
  j["unmatched_predicted_slices"] = r.unmatched_predicted;
  j["unmatched_measured_slices"] = r.unmatched_measured;
  j["complete"] = r.complete;
  if (!r.failure.empty()) j["failure"] = r.failure;
  j["notes"] = r.notes;
  return j.dump(2) + "\n";
}

std::string format_report_text(const ValidationReport& r) {
  std::ostringstream s;
  char line[320];
  s << "validate " << r.scenario << " on " << r.backend << " (" << r.device << "), " << r.world_size
    << " ranks, " << r.steps << " measured steps after " << r.warmup_steps
    << " warm-up\ncost model: " << r.cost_model << "\n";
  std::snprintf(
      line, sizeof line, "step time: predicted %.3f ms, measured %.3f ms, error %+.1f%%\n",
      r.predicted_step_time_s * 1e3, r.measured_step_time_s * 1e3, r.relative_error * 100.0);
  s << line;
  std::snprintf(
      line, sizeof line,
      "           on the backend's clock (no operand setup/checks): %.3f ms, error %+.1f%%\n",
      r.measured_backend_step_time_s * 1e3, r.backend_relative_error * 100.0);
  s << line;
  if (r.async_p2p) {
    s << "non-blocking calls ran beside the compute (overlap_p2p_comm, the context-parallel "
         "ring, Transformer Engine's userbuffers), on "
      << (r.device_timed ? "a point-to-point stream of their own"
                         : "the backend's progress threads")
      << "\n";
  }
  if (r.async_grad_reduce) {
    s << "the gradient buckets' reductions ran beside the backward (overlap_grad_reduce), on "
      << (r.device_timed ? "a communication stream of their own"
                         : "the backend's collective thread")
      << "\n";
  }
  if (r.device_timed) {
    s << "every op was enqueued on the device's stream ahead of it, as Megatron's host runs "
         "ahead, and timed there (CUDA events)\n";
  } else if (!r.async_p2p && !r.async_grad_reduce) {
    s << "every call completed where it was issued (streams serialised)\n";
  }
  s << "stage   busy pred/meas (ms)   comm pred/meas (ms)   overlap pred/meas (ms)   idle "
       "pred/meas (ms)   meas waiting for peers (ms)   backend overhead (ms)\n";
  for (const auto& st : r.stages) {
    std::snprintf(
        line, sizeof line,
        "%5d   %8.3f / %8.3f   %8.3f / %8.3f   %8.3f / %8.3f      %8.3f / %8.3f   %25.3f   "
        "%21.3f\n",
        st.stage, st.predicted.busy_s * 1e3, st.measured.busy_s * 1e3, st.predicted.comm_s * 1e3,
        st.measured.comm_s * 1e3, st.predicted.overlap_s * 1e3, st.measured.overlap_s * 1e3,
        st.predicted.idle_s * 1e3, st.measured.idle_s * 1e3, st.measured.wait_s * 1e3,
        st.measured_backend_overhead_s * 1e3);
    s << line;
  }
  s << "op kind            count   pred total (ms)   meas total (ms)   wall total (ms)   mean rel "
       "err   mean |rel err|\n";
  for (const auto& o : r.ops) {
    std::snprintf(
        line, sizeof line, "%-16s %7lld   %15.3f   %15.3f   %15.3f   %+11.1f%%   %13.1f%%\n",
        std::string(to_string(o.category)).c_str(), static_cast<long long>(o.count),
        o.predicted_total_s * 1e3, o.measured_total_s * 1e3, o.measured_wall_total_s * 1e3,
        o.mean_relative_error * 100.0, o.mean_abs_relative_error * 100.0);
    s << line;
  }
  if (!r.largest_deviations.empty()) s << "largest deviations:\n";
  for (const auto& d : r.largest_deviations) {
    std::snprintf(line, sizeof line, "  stage %d %-36s pred %8.3f ms meas %8.3f ms (%+.0f%%)\n",
                  d.stage, d.name.c_str(), d.predicted_s * 1e3, d.measured_s * 1e3,
                  d.relative_error * 100.0);
    s << line;
  }
  if (!r.complete) s << "INCOMPLETE: " << r.failure << "\n";
  for (const auto& n : r.notes) s << "note: " << n << "\n";
  return s.str();
}

}  // namespace stepsim::calib
