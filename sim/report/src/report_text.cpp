#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "report_words.hpp"
#include "stepsim/config/enum_names.hpp"
#include "stepsim/config/shipped.hpp"
#include "stepsim/layout/moe_layout.hpp"
#include "stepsim/layout/pipeline_split.hpp"
#include "stepsim/ops/flops.hpp"
#include "stepsim/report/report.hpp"

// The text report of `predict`: the job, the headline figures, where the step went.

namespace stepsim::sim {

namespace {

using report_words::fmt;
using report_words::schedule_name;

// GiB for GPU-sized figures; MiB below 1 GiB, where validation models on CPUs live.
std::string gib(std::int64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (b < 1024.0 * 1024.0 * 1024.0) return fmt("%.1f MiB", b / (1024.0 * 1024.0));
  return fmt("%.1f GiB", b / (1024.0 * 1024.0 * 1024.0));
}

// The granularity, and full recomputation's method (uniform unless block): "full (block)".
std::string recompute_name(const TrainingConfig& t) {
  if (t.recompute_granularity == RecomputeGranularity::kNone) return "off";
  std::string name(to_string(t.recompute_granularity));
  if (t.recompute_granularity == RecomputeGranularity::kFull) {
    const RecomputeMethod method = t.recompute_method == RecomputeMethod::kBlock
                                       ? RecomputeMethod::kBlock
                                       : RecomputeMethod::kUniform;
    name += " (" + std::string(to_string(method)) + ")";
  }
  return name;
}

std::string share(double part, double whole) {
  return fmt("%.3f s", part) + (whole > 0 ? fmt(" (%.1f%%)", 100.0 * part / whole) : "");
}

/// Which keys made the stages uneven, for the text report.
std::string uneven_split_name(const TrainingConfig& t) {
  if (!t.pipeline_model_parallel_layout.empty()) {
    return "pipeline_model_parallel_layout " + t.pipeline_model_parallel_layout;
  }
  std::string out;
  const auto add = [&out](const std::string& what) { out += (out.empty() ? "" : ", ") + what; };
  if (t.decoder_first_pipeline_num_layers > 0) {
    add("first stage " + std::to_string(t.decoder_first_pipeline_num_layers));
  }
  if (t.decoder_last_pipeline_num_layers > 0) {
    add("last stage " + std::to_string(t.decoder_last_pipeline_num_layers));
  }
  if (t.account_for_embedding_in_pipeline_split) add("embedding counted as a layer");
  if (t.account_for_loss_in_pipeline_split) add("loss counted as a layer");
  return out;
}

/// "12.3 days" / "5.1 hours" / "42 min".
std::string duration(double s) {
  if (s >= 2 * 86400.0) return fmt("%.1f days", s / 86400.0);
  if (s >= 2 * 3600.0) return fmt("%.1f hours", s / 3600.0);
  return fmt("%.0f min", s / 60.0);
}


/// A peak in TFLOP/s as the report prints it: whole numbers for GPUs, three significant
/// digits below 10 (a CPU core's 0.166).
std::string peak_tflops(double flops_per_s) {
  const double tflops = flops_per_s / 1e12;
  return fmt(tflops >= 10 ? "%.0f" : "%.3g", tflops);
}
/// --allow-unmodelled: the launch line's job is not the one predicted; say it loudly.
void write_unmodelled(std::ostream& out, const Workload& w) {
  if (w.unmodelled.empty()) return;
  out << "  !!! NOT THE JOB AS LAUNCHED: stepsim does not model";
  for (std::size_t i = 0; i < w.unmodelled.size(); ++i) {
    out << (i == 0 ? " " : ", ") << w.unmodelled[i];
  }
  out << "\n  !!! this predicts the job without them (--allow-unmodelled)\n\n";
}

/// "  model ..." : layers, widths, attention, sequence and vocabulary.
void write_model_line(std::ostream& out, const ModelConfig& m) {
  out << "  model       " << m.num_layers << " layers, hidden " << m.hidden_size << ", "
      << m.num_attention_heads << " heads";
  if (m.num_query_groups != m.num_attention_heads) out << " (" << m.num_query_groups << " query groups)";
  if (m.multi_latent_attention) {
    out << ", MLA (q_lora " << m.q_lora_rank << ", kv_lora " << m.kv_lora_rank << ", head dims "
        << m.qk_head_dim << "+" << m.qk_pos_emb_head_dim << "/" << m.v_head_dim << ")";
  }
  out << ", seq " << m.seq_length << ", vocab " << m.padded_vocab_size << "\n";
}

/// "  parallel ..." : the grid, SP, recompute and the optimizer.
void write_parallel_line(std::ostream& out, const TrainingConfig& t) {
  out << "  parallel    TP " << t.tensor_model_parallel_size;
  if (t.context_parallel_size > 1) out << " x CP " << t.context_parallel_size;
  out << " x PP " << t.pipeline_model_parallel_size << " x DP " << t.data_parallel_size << " = "
      << t.world_size << " GPUs";
  if (t.context_parallel_size > 1) out << ", cp_comm_type " << to_string(t.cp_comm_type);
  if (t.hierarchical_context_parallel_sizes.size() == 2) {
    out << " (a2a " << t.hierarchical_context_parallel_sizes[0] << " x p2p "
        << t.hierarchical_context_parallel_sizes[1] << ")";
  }
  if (t.interleaved()) out << ", " << t.virtual_pipeline_model_parallel_size << " virtual stages";
  out << ", SP " << (t.sequence_parallel ? "on" : "off") << ", recompute " << recompute_name(t)
      << (t.use_distributed_optimizer ? ", distributed optimizer" : "");
  if (t.optimizer_impl == OptimizerImpl::kApexDistributedFusedAdam) {
    out << " (Apex DistributedFusedAdam, " << t.apex_bucket_cap_mb << " MiB buckets)";
  }
  out << "\n";
}

/// "  experts ..." (with experts only): routing, the expert grid, the parameter counts.
void write_experts_line(std::ostream& out, const TrainingConfig& t, const ModelConfig& m) {
  if (!m.moe()) return;
  out << "  experts     " << m.num_experts << " routed, top-" << m.moe_router_topk << ", EP "
      << t.expert_model_parallel_size << " x ETP " << t.expert_tensor_parallel()
      << " x expert DP " << t.expert_data_parallel_size << ", "
      << to_string(t.moe_token_dispatcher_type) << " dispatcher"
      << (t.moe_grouped_gemm ? ", grouped GEMM" : "")
      << (t.moe_shared_expert_overlap && m.moe_shared_expert_intermediate_size > 0
              ? ", shared experts beside the dispatcher"
              : "")
      << "; "
      << fmt("%.2fB", static_cast<double>(count_parameters(m)) / 1e9) << " parameters, "
      << fmt("%.2fB", static_cast<double>(count_active_parameters(m)) / 1e9) << " active ("
      << fmt("%.2fB",
             static_cast<double>(count_active_parameters_without_input_embedding(m)) / 1e9)
      << " without the input embedding)\n";
}

/// "  system ..." : the machine and the NCCL settings that differ from NCCL's defaults.
void write_system_line(std::ostream& out, const Workload& w) {
  const TrainingConfig& t = w.training;
  out << "  system      " << w.system.name << " (" << w.system.gpu_name << ", "
      << w.system.gpus_per_node << " per node";
  if (w.system.nvlink_domain() > w.system.gpus_per_node) {
    out << ", NVLink domain of " << w.system.nvlink_domain();
  }
  out << ")";
  if (t.nccl_nvls_enable != 2) {
    out << ", NCCL_NVLS_ENABLE=" << t.nccl_nvls_enable
        << (t.nccl_nvls_enable == 0 ? " (no NVLink SHARP)" : " (NVLink SHARP forced)");
  }
  if (!t.nccl_algo.empty()) out << ", NCCL_ALGO=" << t.nccl_algo;
  if (!t.nccl_proto.empty()) out << ", NCCL_PROTO=" << t.nccl_proto;
  if (t.nccl_min_nchannels > 0) out << ", NCCL_MIN_NCHANNELS=" << t.nccl_min_nchannels;
  if (t.nccl_max_nchannels > 0) out << ", NCCL_MAX_NCHANNELS=" << t.nccl_max_nchannels;
  if (!t.nccl_communicator_config_path.empty()) {
    out << ", NCCL options per group from " << t.nccl_communicator_config_path;
  }
  if (t.nccl_p2p_net_chunksize != 131072) {
    // init.cc computeBuffSizes: at most the 4 MiB buffer over NCCL_STEPS = 8.
    out << ", NCCL_P2P_NET_CHUNKSIZE=" << t.nccl_p2p_net_chunksize << " (NCCL uses "
        << std::min<std::int64_t>(t.nccl_p2p_net_chunksize, 524288) << ")";
  }
  out << "\n";
}

/// "  precision ..." (with FP8 only): the format, the recipe, where FP8 applies.
void write_precision_line(std::ostream& out, const TrainingConfig& t) {
  if (t.fp4_enabled()) {
    out << "  precision   FP4 " << to_string(t.fp4) << " (" << to_string(t.fp4_recipe)
        << ": 1x16 E4M3 scales, 16x16 weight blocks, Hadamard-transformed wgrad operands, "
           "stochastically rounded gradients) in the layers' linears"
        << (t.fp4_param_gather ? ", NVFP4 parameters gathered in FP4" : "")
        << "; embedding, attention and output layer " << to_string(t.params_dtype) << "\n";
    return;
  }
  if (!t.fp8_enabled()) return;
  out << "  precision   FP8 " << to_string(t.fp8) << " (" << to_string(t.fp8_recipe)
      << " scaling";
  if (t.fp8_recipe == Fp8Recipe::kDelayed) out << ", amax history " << t.fp8_amax_history_len;
  out << ") in the layers' linears"
      << (!t.fp8_param_gather ? ""
          : t.fp8_recipe == Fp8Recipe::kMxfp8
              ? ", MXFP8 parameters (16-bit all-gather through the gradient buffer)"
              : ", FP8 parameters (1-byte all-gather)")
      << "; embedding, attention and output layer " << to_string(t.params_dtype) << "\n";
}

/// "  overlaps ..." : the overlaps and SM settings that are on (Megatron's flags, Transformer
/// Engine's variables), so that the job predicted can be read off the report.
void write_overlaps_line(std::ostream& out, const TrainingConfig& t,
                         const SimulationResult& result) {
  std::vector<std::string> on;
  if (t.overlap_grad_reduce) on.emplace_back("gradient reduce");
  if (t.overlap_param_gather) on.emplace_back("parameter gather");
  if (result.schedule->params.overlap_p2p_comm) on.emplace_back("P2P");
  if (t.tp_comm_overlap) {
    on.emplace_back(
        "TP communication (userbuffers" +
        (t.tp_comm_overlap_cfg.empty() ? std::string() : ", " + t.tp_comm_overlap_cfg) + ")");
  }
  if (t.defer_embedding_wgrad_compute) on.emplace_back("deferred embedding wgrad");
  if (t.fwd_layernorm_sm_margin > 0 || t.bwd_layernorm_sm_margin > 0) {
    on.emplace_back("norm kernels leave " + std::to_string(t.fwd_layernorm_sm_margin) + "/" +
                    std::to_string(t.bwd_layernorm_sm_margin) +
                    " SMs (NVTE_FWD/BWD_LAYERNORM_SM_MARGIN)");
  }
  if (on.empty()) return;
  out << "  overlaps   ";
  for (std::size_t i = 0; i < on.size(); ++i) out << (i == 0 ? " " : ", ") << on[i];
  out << "\n";
}

/// The job as predicted: model, parallelism, batch, schedule, system, precision, overlaps.
void write_job(std::ostream& out, const Workload& w, const SimulationResult& result,
               const std::string& cost_model) {
  const TrainingConfig& t = w.training;
  const ModelConfig& m = w.model;
  write_model_line(out, m);
  write_parallel_line(out, t);
  if (uneven_pipeline(t)) {
    out << "  layers      " << stage_layers_text(pipeline_split(t, m))
        << " per pipeline stage (uneven: " << uneven_split_name(t) << ")\n";
  }
  write_experts_line(out, t, m);
  out << "  batch       micro-batch " << t.micro_batch_size << ", " << t.num_microbatches
      << " micro-batches per pipeline, global batch " << t.global_batch_size << "\n";
  out << "  schedule    " << schedule_name(result.schedule->params.kind) << "\n";
  write_system_line(out, w);
  write_precision_line(out, t);
  write_overlaps_line(out, t, result);
  out << "  cost model  " << cost_model << "\n";
  // No cost_model given: why this one, and how to ask for the other (on its own line, the
  // profile's description being long already).
  if (const std::string note = default_cost_model_note(w.cost_model, w.system.gpu_name);
      !note.empty()) {
    out << "              (" << note << ")\n";
  }
  // Where each part's prices came from, and what the open report measured with them.
  if (const std::string line = provenance_line(result.prediction.provenance); !line.empty()) {
    out << "  provenance  " << line << "\n";
  }
  out << "\n";
}

/// "  step time ..." in seconds and in Megatron-LM's milliseconds per iteration.
void write_step_time(std::ostream& out, const Prediction& p) {
  out << "  step time        " << fmt("%.4f s", p.step_time_s) << ", "
      << fmt("%.1f ms", iteration_ms(p.step_time_s))
      << " per iteration (as Megatron-LM logs it)\n";
}

/// "  pipeline bubble ..." : the one bubble figure, its parts on the line below.
void write_bubble(std::ostream& out, const Prediction& p, const ScheduleParams& schedule) {
  const BubbleBreakdown b = bubble_breakdown(p, schedule);
  out << "  pipeline bubble  " << fmt("%.3f s", b.total_s) << " a stage on average, "
      << fmt("%.1f%%", 100.0 * b.fraction_of_step) << " of the step:\n"
      << "                   schedule " << fmt("%.3f s", b.schedule_s) << " + stage imbalance "
      << fmt("%.3f s", b.imbalance_s) << " + waits for communication "
      << fmt("%.3f s", b.waits_s) << "\n";
}

/// The headline figures: step time, throughput, TFLOP/s, utilisation, bubble, memory and, on
/// request, the time to train.
void write_figures(std::ostream& out, const Workload& w, const SimulationResult& result,
                   const ReportOptions& options) {
  const TrainingConfig& t = w.training;
  const Prediction& p = result.prediction;
  write_step_time(out, p);
  const char* tflops = p.tflops_per_gpu >= 1.0 ? "%.1f" : "%.3g";
  out << "  throughput       " << fmt("%.0f tokens/s", p.tokens_per_s) << ", "
      << fmt("%.0f tokens/s per GPU", p.tokens_per_s / static_cast<double>(t.world_size))
      << "\n";
  out << "  TFLOP/s per GPU  " << fmt(tflops, megatron_tflops_per_gpu(w, p.step_time_s))
      << " model (as Megatron-LM logs it), " << fmt(tflops, p.tflops_per_gpu)
      << " hardware (recompute included)\n";
  out << "  utilisation      MFU " << fmt("%.1f%%", 100.0 * p.mfu) << ", HFU "
      << fmt("%.1f%%", 100.0 * p.hfu) << " of "
      << peak_tflops(w.system.peak_flops(t.params_dtype)) << " TFLOP/s "
      << to_string(t.params_dtype) << " peak\n";
  if (const auto fp8 = fp8_peak_utilisation(w, p)) {
    out << "  FP8 peak         MFU " << fmt("%.1f%%", 100.0 * fp8->mfu) << ", HFU "
        << fmt("%.1f%%", 100.0 * fp8->hfu) << " of "
        << peak_tflops(w.system.peak_flops_fp8)
        << " TFLOP/s FP8 peak (the same FLOPs; the line above is Megatron-LM's)\n";
  }
  if (const auto fp4 = fp4_peak_utilisation(w, p)) {
    out << "  FP4 peak         MFU " << fmt("%.1f%%", 100.0 * fp4->mfu) << ", HFU "
        << fmt("%.1f%%", 100.0 * fp4->hfu) << " of "
        << peak_tflops(w.system.peak_flops_fp4)
        << " TFLOP/s dense NVFP4 peak (the same FLOPs; the line above is Megatron-LM's)\n";
  }
  write_bubble(out, p, result.schedule->params);
  out << "  peak memory      " << gib(p.peak_memory_bytes) << " of " << gib(w.system.memory_bytes)
      << (p.fits_in_memory ? " (fits)" : " (DOES NOT FIT)") << "\n";
  if (options.train_tokens > 0) {
    const TimeToTrain tt = time_to_train(w, p.step_time_s, options.train_tokens);
    out << "  time to train    " << fmt("%.4g tokens: ", static_cast<double>(tt.tokens))
        << tt.steps << " steps, " << duration(tt.time_s) << ", "
        << fmt("%.0f GPU-hours", tt.gpu_hours) << "\n";
  }
  out << "\n";
}

/// Full-rank runs only: which rank ended the step, and so whose pipeline the rest shows.
void write_full_rank(std::ostream& out, const Prediction& p) {
  if (!p.full_rank) return;
  const FullRankSummary& f = *p.full_rank;
  out << "  full rank   all " << f.gpus << " GPUs simulated (" << f.paces
      << (f.paces == 1 ? " pace" : " distinct replica paces") << "); global rank "
      << f.critical_rank << " ended the step (the lowest of a tie): stages and memory "
      << "below are its pipeline (tp " << f.tp << ", cp " << f.cp << ", dp " << f.dp
      << ")\n\n";
}

/// The engine's critical chain: the tasks that set the step time, by kind, and its longest
/// stretches (one per stage and kind: consecutive micro-batches read alike).
void write_critical(std::ostream& out, const Prediction& p) {
  const CriticalChain& ch = p.critical_chain;
  out << "  critical chain (" << ch.tasks << " engine tasks that set the step time):\n";
  out << "    compute    " << share(ch.compute_s, p.step_time_s) << "\n";
  out << "    TP comm    " << share(ch.tp_comm_s, p.step_time_s) << "\n";
  out << "    P2P        " << share(ch.p2p_s, p.step_time_s) << "\n";
  out << "    DP comm    " << share(ch.dp_comm_s, p.step_time_s) << "\n";
  out << "    optimizer  " << share(ch.optimizer_s, p.step_time_s) << "\n";
  out << "    waits      " << share(ch.wait_s, p.step_time_s) << "\n";
  if (ch.host_s > 0) out << "    host       " << share(ch.host_s, p.step_time_s) << "\n";
  std::vector<std::pair<std::int32_t, std::string>> shown;
  for (const ChainSegment& seg : ch.longest) {
    const std::pair<std::int32_t, std::string> key{seg.rank, seg.kind};
    if (std::find(shown.begin(), shown.end(), key) != shown.end()) continue;
    shown.push_back(key);
    out << "    longest    stage " << seg.rank << " " << seg.kind << " " << seg.what << ", "
        << fmt("%.3f s", seg.end_s - seg.start_s) << fmt(" from %.4f s", seg.start_s) << "\n";
  }
  out << "\n";
}

/// One line per stage, then the engine's counts and the warnings.
void write_stages(std::ostream& out, const Prediction& p) {
  out << "  stage     busy s   bubble s   exposed comm s   peak memory\n";
  for (const StageSummary& s : p.stages) {
    char line[160];
    std::snprintf(line, sizeof line, "  %5d  %9.4f  %9.4f  %15.4f   %s\n", s.stage, s.busy_s,
                  s.bubble_s, s.exposed_comm_s, gib(s.peak_memory_bytes).c_str());
    out << line;
  }
  out << "\n  engine: " << p.engine_tasks << " tasks scheduled; timeline: " << p.simulated_tasks
      << " ops stamped\n";
}

/// The warnings: one short line each, or (--verbose) with every detail.
void write_warnings(std::ostream& out, const Prediction& p, bool verbose) {
  if (verbose) {
    for (const std::string& warning : p.warnings) out << "  warning: " << warning << "\n";
    return;
  }
  constexpr std::size_t kColumns = 100 - sizeof("  warning: ") + 1;
  for (const std::string& line : short_warnings(p.warnings, kColumns)) {
    out << "  warning: " << line << "\n";
  }
  if (!p.warnings.empty()) out << "  (--verbose lists the cases of each warning)\n";
}

}  // namespace

void write_prediction_text(const Workload& w, const SimulationResult& result,
                           const std::string& cost_model, std::ostream& out,
                           const ReportOptions& options) {
  const Prediction& p = result.prediction;
  if (options.fit_advice != nullptr) {
    write_fit_advice_text(*options.fit_advice, out);
    out << "\n";
  }
  out << "stepsim prediction: " << w.name << "\n\n";
  write_unmodelled(out, w);
  write_job(out, w, result, cost_model);
  write_figures(out, w, result, options);
  write_full_rank(out, p);
  write_critical(out, p);
  write_stages(out, p);
  write_warnings(out, p, options.verbose);
}

}  // namespace stepsim::sim
