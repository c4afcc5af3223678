#include "stepsim/report/report.hpp"

#include <cstdio>
#include <string>

#include "report_words.hpp"
#include "stepsim/config/enum_names.hpp"
#include "stepsim/ops/flops.hpp"

// The figures and words that the text and JSON reports share; each writer has its file
// (report_text.cpp, report_json.cpp).

namespace stepsim::sim {

namespace report_words {

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string_view schedule_name(ScheduleKind k) {
  switch (k) {
    case ScheduleKind::kOneFOneB: return "1F1B";
    case ScheduleKind::kInterleaved: return "interleaved 1F1B";
    case ScheduleKind::kGPipe: return "GPipe";
  }
  return "?";
}

}  // namespace report_words

TimeToTrain time_to_train(const Workload& w, double step_time_s, std::int64_t tokens) {
  TimeToTrain t;
  t.tokens = tokens;
  const std::int64_t per_step = w.training.global_batch_size * w.model.seq_length;
  if (per_step <= 0 || tokens <= 0) return t;
  t.steps = tokens / per_step + (tokens % per_step != 0 ? 1 : 0);
  t.time_s = static_cast<double>(t.steps) * step_time_s;
  t.gpu_hours = t.time_s * static_cast<double>(w.training.world_size) / 3600.0;
  return t;
}

std::optional<Utilisation> fp8_peak_utilisation(const Workload& w, const Prediction& p) {
  const double peak = w.system.peak_flops(w.training.params_dtype);
  if (!w.training.fp8_enabled() || w.system.peak_flops_fp8 <= 0 || peak <= 0) return std::nullopt;
  // MFU and HFU count the same FLOPs against the FP8 peak instead of the params dtype's.
  const double scale = peak / w.system.peak_flops_fp8;
  return Utilisation{.mfu = p.mfu * scale, .hfu = p.hfu * scale};
}

std::optional<Utilisation> fp4_peak_utilisation(const Workload& w, const Prediction& p) {
  const double peak = w.system.peak_flops(w.training.params_dtype);
  if (!w.training.fp4_enabled() || w.system.peak_flops_fp4 <= 0 || peak <= 0) return std::nullopt;
  const double scale = peak / w.system.peak_flops_fp4;
  return Utilisation{.mfu = p.mfu * scale, .hfu = p.hfu * scale};
}

double megatron_tflops_per_gpu(const Workload& w, double step_time_s) {
  const double gpus = static_cast<double>(w.training.world_size);
  if (step_time_s <= 0 || gpus <= 0) return 0.0;
  return megatron_logged_flops_per_step(w) / (step_time_s * gpus) / 1e12;
}

}  // namespace stepsim::sim
