#include "stepsim/sim/report.hpp"

#include <cstdio>
#include <string>

#include "stepsim/sim/json_writer.hpp"

namespace stepsim::sim {

namespace {

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// GiB for GPU-sized figures; MiB below 1 GiB, where validation models on CPUs live.
std::string gib(std::int64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (b < 1024.0 * 1024.0 * 1024.0) return fmt("%.1f MiB", b / (1024.0 * 1024.0));
  return fmt("%.1f GiB", b / (1024.0 * 1024.0 * 1024.0));
}

std::string_view recompute_name(const TrainingConfig& t) {
  switch (t.recompute_granularity) {
    case RecomputeGranularity::kNone: return "off";
    case RecomputeGranularity::kSelective: return "selective";
    case RecomputeGranularity::kFull:
      return t.recompute_method == RecomputeMethod::kBlock ? "full (block)" : "full (uniform)";
  }
  return "?";
}

std::string_view schedule_name(ScheduleKind k) {
  switch (k) {
    case ScheduleKind::kOneFOneB: return "1F1B";
    case ScheduleKind::kInterleaved: return "interleaved 1F1B";
    case ScheduleKind::kGPipe: return "GPipe";
  }
  return "?";
}

std::string share(double part, double whole) {
  return fmt("%.3f s", part) + (whole > 0 ? fmt(" (%.1f%%)", 100.0 * part / whole) : "");
}

}  // namespace

void write_prediction_text(const Workload& w, const SimulationResult& result,
                           const std::string& cost_model, std::ostream& out) {
  const Prediction& p = result.prediction;
  const TrainingConfig& t = w.training;
  const ModelConfig& m = w.model;
  out << "stepsim prediction: " << w.name << "\n\n";
  out << "  model       " << m.num_layers << " layers, hidden " << m.hidden_size << ", "
      << m.num_attention_heads << " heads";
  if (m.num_query_groups != m.num_attention_heads) out << " (" << m.num_query_groups << " query groups)";
  out << ", seq " << m.seq_length << ", vocab " << m.padded_vocab_size << "\n";
  out << "  parallel    TP " << t.tensor_model_parallel_size << " x PP "
      << t.pipeline_model_parallel_size << " x DP " << t.data_parallel_size << " = "
      << t.world_size << " GPUs";
  if (t.interleaved()) out << ", " << t.virtual_pipeline_model_parallel_size << " virtual stages";
  out << ", SP " << (t.sequence_parallel ? "on" : "off") << ", recompute " << recompute_name(t)
      << (t.use_distributed_optimizer ? ", distributed optimizer" : "") << "\n";
  out << "  batch       micro-batch " << t.micro_batch_size << ", " << t.num_microbatches
      << " micro-batches per pipeline, global batch " << t.global_batch_size << "\n";
  out << "  schedule    " << schedule_name(result.schedule->params.kind) << "\n";
  out << "  system      " << w.system.name << " (" << w.system.gpu_name << ", "
      << w.system.gpus_per_node << " per node)\n";
  out << "  cost model  " << cost_model << "\n\n";

  out << "  step time        " << fmt("%.4f s", p.step_time_s) << "\n";
  out << "  throughput       " << fmt("%.0f tokens/s", p.tokens_per_s) << ", "
      << fmt(p.tflops_per_gpu >= 1.0 ? "%.1f TFLOP/s per GPU" : "%.3g TFLOP/s per GPU",
                  p.tflops_per_gpu) << "\n";
  out << "  utilisation      MFU " << fmt("%.1f%%", 100.0 * p.mfu) << ", HFU "
      << fmt("%.1f%%", 100.0 * p.hfu) << "\n";
  out << "  pipeline bubble  " << fmt("%.1f%%", 100.0 * p.bubble_fraction) << " of compute\n";
  out << "  peak memory      " << gib(p.peak_memory_bytes) << " of " << gib(w.system.memory_bytes)
      << (p.fits_in_memory ? " (fits)" : " (DOES NOT FIT)") << "\n\n";

  const CriticalPath& cp = p.critical_path;
  out << "  critical path (stage " << cp.rank << ", the last to finish):\n";
  out << "    compute    " << share(cp.compute_s, p.step_time_s) << "\n";
  out << "    TP comm    " << share(cp.tp_comm_s, p.step_time_s) << "\n";
  out << "    P2P        " << share(cp.p2p_s, p.step_time_s) << "\n";
  out << "    DP comm    " << share(cp.dp_comm_s, p.step_time_s) << "\n";
  out << "    optimizer  " << share(cp.optimizer_s, p.step_time_s) << "\n";
  out << "    bubble     " << share(cp.bubble_s, p.step_time_s) << "\n\n";

  const CriticalChain& ch = p.critical_chain;
  out << "  critical chain (" << ch.tasks << " engine tasks, through dependencies):\n";
  out << "    compute    " << share(ch.compute_s, p.step_time_s) << "\n";
  out << "    TP comm    " << share(ch.tp_comm_s, p.step_time_s) << "\n";
  out << "    P2P        " << share(ch.p2p_s, p.step_time_s) << "\n";
  out << "    DP comm    " << share(ch.dp_comm_s, p.step_time_s) << "\n";
  out << "    optimizer  " << share(ch.optimizer_s, p.step_time_s) << "\n";
  out << "    waits      " << share(ch.wait_s, p.step_time_s) << "\n";
  for (const ChainSegment& seg : ch.longest) {
    out << "    longest: stage " << seg.rank << " " << seg.kind << " " << seg.what << " "
        << fmt("[%.4f, ", seg.start_s) << fmt("%.4f] s", seg.end_s) << "\n";
  }
  out << "\n";

  out << "  stage     busy s   bubble s   exposed comm s   peak memory\n";
  for (const StageSummary& s : p.stages) {
    char line[160];
    std::snprintf(line, sizeof line, "  %5d  %9.4f  %9.4f  %15.4f   %s\n", s.stage, s.busy_s,
                  s.bubble_s, s.exposed_comm_s, gib(s.peak_memory_bytes).c_str());
    out << line;
  }
  out << "\n  engine: " << p.engine_tasks << " tasks scheduled; timeline: " << p.simulated_tasks
      << " ops stamped\n";
  for (const std::string& warning : p.warnings) out << "  warning: " << warning << "\n";
}

void write_stages_json(JsonWriter& j, const std::vector<StageSummary>& stages) {
  j.key("stages").begin_array();
  for (const StageSummary& s : stages) {
    j.begin_object();
    j.field("stage", s.stage);
    j.field("busy_s", s.busy_s);
    j.field("bubble_s", s.bubble_s);
    j.field("exposed_comm_s", s.exposed_comm_s);
    j.field("peak_memory_bytes", s.peak_memory_bytes);
    j.end_object();
  }
  j.end_array();
}

void write_prediction_json(const Workload& w, const SimulationResult& result,
                           const std::string& cost_model, std::ostream& out) {
  const Prediction& p = result.prediction;
  const ScheduleParams& sp = result.schedule->params;
  JsonWriter j(out);
  j.begin_object();
  j.field("scenario", std::string_view(w.name));
  j.field("cost_model", std::string_view(cost_model));
  j.field("step_time_s", p.step_time_s);
  j.field("bubble_fraction", p.bubble_fraction);
  j.field("mfu", p.mfu);
  j.field("hfu", p.hfu);
  j.field("tflops_per_gpu", p.tflops_per_gpu);
  j.field("tokens_per_s", p.tokens_per_s);
  j.field("peak_memory_bytes", p.peak_memory_bytes);
  j.field("memory_capacity_bytes", w.system.memory_bytes);
  j.field("fits_in_memory", p.fits_in_memory);
  j.key("schedule").begin_object();
  j.field("kind", schedule_name(sp.kind));
  j.field("pipeline_model_parallel_size", sp.pipeline_size);
  j.field("virtual_pipeline_model_parallel_size", sp.virtual_size);
  j.field("num_microbatches", sp.microbatches);
  j.end_object();
  write_stages_json(j, p.stages);
  const CriticalPath& cp = p.critical_path;
  j.key("critical_path").begin_object();
  j.field("stage", cp.rank);
  j.field("compute_s", cp.compute_s);
  j.field("tp_comm_s", cp.tp_comm_s);
  j.field("p2p_s", cp.p2p_s);
  j.field("dp_comm_s", cp.dp_comm_s);
  j.field("optimizer_s", cp.optimizer_s);
  j.field("bubble_s", cp.bubble_s);
  j.end_object();
  const CriticalChain& ch = p.critical_chain;
  j.key("critical_chain").begin_object();
  j.field("tasks", ch.tasks);
  j.field("compute_s", ch.compute_s);
  j.field("tp_comm_s", ch.tp_comm_s);
  j.field("p2p_s", ch.p2p_s);
  j.field("dp_comm_s", ch.dp_comm_s);
  j.field("optimizer_s", ch.optimizer_s);
  j.field("wait_s", ch.wait_s);
  j.key("longest").begin_array();
  for (const ChainSegment& seg : ch.longest) {
    j.begin_object();
    j.field("stage", seg.rank);
    j.field("kind", std::string_view(seg.kind));
    j.field("what", std::string_view(seg.what));
    j.field("tasks", seg.tasks);
    j.field("start_s", seg.start_s);
    j.field("end_s", seg.end_s);
    j.end_object();
  }
  j.end_array();
  j.end_object();
  j.field("simulated_tasks", p.simulated_tasks);
  j.field("engine_tasks", p.engine_tasks);
  j.field("stamped_ops", p.simulated_tasks);
  j.key("warnings").begin_array();
  for (const std::string& warning : p.warnings) j.value(std::string_view(warning));
  j.end_array();
  j.end_object();
}

}  // namespace stepsim::sim
