#include "stepsim/report/report.hpp"

#include <cstdio>
#include <string>
#include <vector>

#include "stepsim/config/enum_names.hpp"
#include "stepsim/layout/moe_layout.hpp"
#include "stepsim/layout/pipeline_split.hpp"
#include "stepsim/ops/flops.hpp"
#include "stepsim/report/json_writer.hpp"

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

}  // namespace

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

/// A peak in TFLOP/s as the report prints it: whole numbers for GPUs, three significant
/// digits below 10 (a CPU core's 0.166).
std::string peak_tflops(double flops_per_s) {
  const double tflops = flops_per_s / 1e12;
  return fmt(tflops >= 10 ? "%.0f" : "%.3g", tflops);
}

std::optional<Utilisation> fp8_peak_utilisation(const Workload& w, const Prediction& p) {
  const double peak = w.system.peak_flops(w.training.params_dtype);
  if (!w.training.fp8_enabled() || w.system.peak_flops_fp8 <= 0 || peak <= 0) return std::nullopt;
  // MFU and HFU count the same FLOPs against the FP8 peak instead of the params dtype's.
  const double scale = peak / w.system.peak_flops_fp8;
  return Utilisation{.mfu = p.mfu * scale, .hfu = p.hfu * scale};
}

double megatron_tflops_per_gpu(const Workload& w, double step_time_s) {
  const double gpus = static_cast<double>(w.training.world_size);
  if (step_time_s <= 0 || gpus <= 0) return 0.0;
  return megatron_logged_flops_per_step(w) / (step_time_s * gpus) / 1e12;
}

namespace {

/// The uneven split's keys and layers per stage and chunk, inside "configuration".
void write_pipeline_split_json(JsonWriter& j, const Workload& w) {
  const TrainingConfig& t = w.training;
  if (t.decoder_first_pipeline_num_layers > 0) {
    j.field("decoder_first_pipeline_num_layers", t.decoder_first_pipeline_num_layers);
  }
  if (t.decoder_last_pipeline_num_layers > 0) {
    j.field("decoder_last_pipeline_num_layers", t.decoder_last_pipeline_num_layers);
  }
  if (t.account_for_embedding_in_pipeline_split) {
    j.field("account_for_embedding_in_pipeline_split", true);
  }
  if (t.account_for_loss_in_pipeline_split) j.field("account_for_loss_in_pipeline_split", true);
  if (!t.pipeline_model_parallel_layout.empty()) {
    j.field("pipeline_model_parallel_layout", std::string_view(t.pipeline_model_parallel_layout));
  }
  const PipelineSplit split = pipeline_split(t, w.model);
  j.key("layers_per_stage").begin_array();
  for (std::int32_t r = 0; r < split.p; ++r) j.value(split.stage_layers(r));
  j.end_array();
  j.key("layers_per_chunk").begin_array();
  for (std::int32_t r = 0; r < split.p; ++r) {
    j.begin_array();
    for (std::int32_t c = 0; c < split.v; ++c) j.value(split.at(r, c).count);
    j.end_array();
  }
  j.end_array();
}

}  // namespace

void write_configuration_json(JsonWriter& j, const Workload& w) {
  const TrainingConfig& t = w.training;
  j.key("configuration").begin_object();
  j.field("world_size", t.world_size);
  j.field("tensor_model_parallel_size", t.tensor_model_parallel_size);
  j.field("pipeline_model_parallel_size", t.pipeline_model_parallel_size);
  j.field("virtual_pipeline_model_parallel_size", t.virtual_pipeline_model_parallel_size);
  j.field("data_parallel_size", t.data_parallel_size);
  j.field("micro_batch_size", t.micro_batch_size);
  j.field("global_batch_size", t.global_batch_size);
  j.field("num_microbatches", t.num_microbatches);
  j.field("sequence_parallel", t.sequence_parallel);
  j.field("recompute_granularity", to_string(t.recompute_granularity));
  j.field("recompute_method", to_string(t.recompute_method));
  j.field("recompute_num_layers", t.recompute_num_layers);
  j.field("distribute_saved_activations", t.distribute_saved_activations);
  j.field("use_distributed_optimizer", t.use_distributed_optimizer);
  if (t.optimizer_impl == OptimizerImpl::kApexDistributedFusedAdam) {
    // Only when not Megatron-Core's, so that every other configuration's output stays.
    j.field("optimizer_impl", to_string(t.optimizer_impl));
    j.field("apex_bucket_cap_mb", t.apex_bucket_cap_mb);
  }
  j.field("overlap_grad_reduce", t.overlap_grad_reduce);
  j.field("overlap_param_gather", t.overlap_param_gather);
  j.field("overlap_p2p_comm", t.overlap_p2p_comm);
  j.field("microbatch_group_size_per_vp_stage", t.microbatch_group_size_per_vp_stage);
  // The other overlaps only when on, so that every other configuration's output stays as it
  // was.
  if (t.tp_comm_overlap) {
    j.field("tp_comm_overlap", true);
    if (!t.tp_comm_overlap_cfg.empty()) {
      j.field("tp_comm_overlap_cfg", std::string_view(t.tp_comm_overlap_cfg));
    }
  }
  if (t.defer_embedding_wgrad_compute) {
    j.field("defer_embedding_wgrad_compute", true);
    j.field("wgrad_deferral_limit", t.wgrad_deferral_limit);
  }
  if (uneven_pipeline(t)) write_pipeline_split_json(j, w);
  j.field("dtype", to_string(t.params_dtype));
  if (t.fp8_enabled()) {
    // Only with FP8 on, so that every other configuration's output stays as it was.
    j.field("fp8", to_string(t.fp8));
    j.field("fp8_recipe", to_string(t.fp8_recipe));
    j.field("fp8_param_gather", t.fp8_param_gather);
    if (t.reuse_grad_buf_for_mxfp8_param_ag) j.field("reuse_grad_buf_for_mxfp8_param_ag", true);
    j.field("fp8_amax_history_len", t.fp8_amax_history_len);
  }
  if (t.fwd_layernorm_sm_margin > 0 || t.bwd_layernorm_sm_margin > 0) {
    // Only when set, so that every other configuration's output stays as it was.
    j.field("fwd_layernorm_sm_margin", t.fwd_layernorm_sm_margin);
    j.field("bwd_layernorm_sm_margin", t.bwd_layernorm_sm_margin);
  }
  if (t.nccl_nvls_enable != 2) j.field("nccl_nvls_enable", t.nccl_nvls_enable);  // likewise
  if (t.nccl_min_nchannels > 0) j.field("nccl_min_nchannels", t.nccl_min_nchannels);
  if (t.nccl_max_nchannels > 0) j.field("nccl_max_nchannels", t.nccl_max_nchannels);
  if (!t.nccl_communicator_config_path.empty()) {
    j.field("nccl_communicator_config_path", std::string_view(t.nccl_communicator_config_path));
  }
  if (t.nccl_p2p_net_chunksize != 131072) {
    j.field("nccl_p2p_net_chunksize", t.nccl_p2p_net_chunksize);
  }
  j.field("seq_length", w.model.seq_length);
  j.field("system", std::string_view(w.system.name));
  j.field("gpu", std::string_view(w.system.gpu_name));
  j.field("context_parallel_size", t.context_parallel_size);
  j.field("cp_comm_type", to_string(t.cp_comm_type));
  if (!t.hierarchical_context_parallel_sizes.empty()) {
    // Only when given, so that every other configuration's output stays as it was.
    j.key("hierarchical_context_parallel_sizes").begin_array();
    for (const std::int64_t n : t.hierarchical_context_parallel_sizes) j.value(n);
    j.end_array();
  }
  if (w.model.multi_latent_attention) {
    // Only with MLA, so that every other configuration's output stays as it was.
    j.field("multi_latent_attention", true);
    j.field("q_lora_rank", w.model.q_lora_rank);
    j.field("kv_lora_rank", w.model.kv_lora_rank);
    j.field("qk_head_dim", w.model.qk_head_dim);
    j.field("qk_pos_emb_head_dim", w.model.qk_pos_emb_head_dim);
    j.field("v_head_dim", w.model.v_head_dim);
  }
  if (w.model.moe()) {
    // Only with experts, so that every dense configuration's output stays as it was.
    j.field("num_experts", w.model.num_experts);
    j.field("moe_router_topk", w.model.moe_router_topk);
    j.field("expert_model_parallel_size", t.expert_model_parallel_size);
    j.field("expert_tensor_parallel_size", t.expert_tensor_parallel());
    j.field("expert_data_parallel_size", t.expert_data_parallel_size);
    j.field("moe_token_dispatcher_type", to_string(t.moe_token_dispatcher_type));
    j.field("moe_grouped_gemm", t.moe_grouped_gemm);
    // Only when it changes the job, so that the other MoE configurations' output stays.
    if (t.moe_shared_expert_overlap && w.model.moe_shared_expert_intermediate_size > 0) {
      j.field("moe_shared_expert_overlap", true);
    }
    j.field("parameters", count_parameters(w.model));
    j.field("active_parameters", count_active_parameters(w.model));
    j.field("active_parameters_without_input_embedding",
            count_active_parameters_without_input_embedding(w.model));
  }
  j.end_object();
}

void write_prediction_text(const Workload& w, const SimulationResult& result,
                           const std::string& cost_model, std::ostream& out,
                           const ReportOptions& options) {
  const Prediction& p = result.prediction;
  const TrainingConfig& t = w.training;
  const ModelConfig& m = w.model;
  out << "stepsim prediction: " << w.name << "\n\n";
  if (!w.unmodelled.empty()) {
    // --allow-unmodelled: the launch line's job is not the one predicted; say it loudly.
    out << "  !!! NOT THE JOB AS LAUNCHED: stepsim does not model";
    for (std::size_t i = 0; i < w.unmodelled.size(); ++i) {
      out << (i == 0 ? " " : ", ") << w.unmodelled[i];
    }
    out << "\n  !!! this predicts the job without them (--allow-unmodelled)\n\n";
  }
  out << "  model       " << m.num_layers << " layers, hidden " << m.hidden_size << ", "
      << m.num_attention_heads << " heads";
  if (m.num_query_groups != m.num_attention_heads) out << " (" << m.num_query_groups << " query groups)";
  if (m.multi_latent_attention) {
    out << ", MLA (q_lora " << m.q_lora_rank << ", kv_lora " << m.kv_lora_rank << ", head dims "
        << m.qk_head_dim << "+" << m.qk_pos_emb_head_dim << "/" << m.v_head_dim << ")";
  }
  out << ", seq " << m.seq_length << ", vocab " << m.padded_vocab_size << "\n";
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
  if (uneven_pipeline(t)) {
    out << "  layers      " << stage_layers_text(pipeline_split(t, m))
        << " per pipeline stage (uneven: " << uneven_split_name(t) << ")\n";
  }
  if (m.moe()) {
    out << "  experts     " << m.num_experts << " routed, top-" << m.moe_router_topk << ", EP "
        << t.expert_model_parallel_size << " x ETP " << t.expert_tensor_parallel()
        << " x expert DP " << t.expert_data_parallel_size << ", "
        << to_string(t.moe_token_dispatcher_type) << " dispatcher"
        << (t.moe_grouped_gemm ? ", grouped GEMM" : "")
        << (t.moe_shared_expert_overlap && m.moe_shared_expert_intermediate_size > 0
                ? ", shared experts beside the dispatcher"
                : "")
        << "; " << fmt("%.2fB", static_cast<double>(count_parameters(m)) / 1e9) << " parameters, "
        << fmt("%.2fB", static_cast<double>(count_active_parameters(m)) / 1e9) << " active ("
        << fmt("%.2fB",
               static_cast<double>(count_active_parameters_without_input_embedding(m)) / 1e9)
        << " without the input embedding)\n";
  }
  out << "  batch       micro-batch " << t.micro_batch_size << ", " << t.num_microbatches
      << " micro-batches per pipeline, global batch " << t.global_batch_size << "\n";
  out << "  schedule    " << schedule_name(result.schedule->params.kind) << "\n";
  out << "  system      " << w.system.name << " (" << w.system.gpu_name << ", "
      << w.system.gpus_per_node << " per node)";
  if (t.nccl_nvls_enable != 2) {
    out << ", NCCL_NVLS_ENABLE=" << t.nccl_nvls_enable
        << (t.nccl_nvls_enable == 0 ? " (no NVLink SHARP)" : " (NVLink SHARP forced)");
  }
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
  if (t.fp8_enabled()) {
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
  {
    // The overlaps and SM settings that are on (Megatron's flags, Transformer Engine's
    // variables), so that the job predicted can be read off the report.
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
    if (!on.empty()) {
      out << "  overlaps   ";
      for (std::size_t i = 0; i < on.size(); ++i) out << (i == 0 ? " " : ", ") << on[i];
      out << "\n";
    }
  }
  out << "  cost model  " << cost_model << "\n\n";

  out << "  step time        " << fmt("%.4f s", p.step_time_s) << "\n";
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
  out << "  pipeline bubble  " << fmt("%.1f%%", 100.0 * p.bubble_fraction) << " of compute\n";
  out << "  peak memory      " << gib(p.peak_memory_bytes) << " of " << gib(w.system.memory_bytes)
      << (p.fits_in_memory ? " (fits)" : " (DOES NOT FIT)") << "\n";
  if (options.train_tokens > 0) {
    const TimeToTrain tt = time_to_train(w, p.step_time_s, options.train_tokens);
    out << "  time to train    " << fmt("%.4g tokens: ", static_cast<double>(tt.tokens))
        << tt.steps << " steps, " << duration(tt.time_s) << ", "
        << fmt("%.0f GPU-hours", tt.gpu_hours) << "\n";
  }
  out << "\n";
  if (p.full_rank) {
    const FullRankSummary& f = *p.full_rank;
    out << "  full rank   all " << f.gpus << " GPUs simulated (" << f.paces
        << (f.paces == 1 ? " pace" : " distinct replica paces") << "); global rank "
        << f.critical_rank << " ended the step (the lowest of a tie): stages, critical path "
        << "and memory below are its pipeline (tp " << f.tp << ", cp " << f.cp << ", dp " << f.dp
        << ")\n\n";
  }

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
  if (ch.host_s > 0) out << "    host       " << share(ch.host_s, p.step_time_s) << "\n";
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

void write_stages_json(JsonWriter& j, const std::vector<StageSummary>& stages,
                       const PipelineSplit* split) {
  j.key("stages").begin_array();
  for (const StageSummary& s : stages) {
    j.begin_object();
    j.field("stage", s.stage);
    if (split != nullptr) j.field("transformer_layers", split->stage_layers(s.stage));
    j.field("busy_s", s.busy_s);
    j.field("bubble_s", s.bubble_s);
    j.field("exposed_comm_s", s.exposed_comm_s);
    j.field("peak_memory_bytes", s.peak_memory_bytes);
    j.end_object();
  }
  j.end_array();
}

void write_prediction_json(const Workload& w, const SimulationResult& result,
                           const std::string& cost_model, std::ostream& out,
                           const ReportOptions& options) {
  const Prediction& p = result.prediction;
  const ScheduleParams& sp = result.schedule->params;
  JsonWriter j(out);
  j.begin_object();
  j.field("scenario", std::string_view(w.name));
  if (!w.unmodelled.empty()) {
    // --allow-unmodelled: the job-changing flags this prediction leaves out.
    j.key("unmodelled").begin_array();
    for (const std::string& f : w.unmodelled) j.value(std::string_view(f));
    j.end_array();
  }
  j.field("cost_model", std::string_view(cost_model));
  j.field("step_time_s", p.step_time_s);
  j.field("bubble_fraction", p.bubble_fraction);
  j.field("mfu", p.mfu);
  j.field("hfu", p.hfu);
  if (const auto fp8 = fp8_peak_utilisation(w, p)) {
    j.field("mfu_fp8_peak", fp8->mfu);
    j.field("hfu_fp8_peak", fp8->hfu);
  }
  j.field("tflops_per_gpu", p.tflops_per_gpu);
  j.field("megatron_tflops_per_gpu", megatron_tflops_per_gpu(w, p.step_time_s));
  j.field("tokens_per_s", p.tokens_per_s);
  j.field("tokens_per_s_per_gpu", p.tokens_per_s / static_cast<double>(w.training.world_size));
  j.field("peak_memory_bytes", p.peak_memory_bytes);
  j.field("memory_capacity_bytes", w.system.memory_bytes);
  j.field("fits_in_memory", p.fits_in_memory);
  if (options.train_tokens > 0) {
    const TimeToTrain tt = time_to_train(w, p.step_time_s, options.train_tokens);
    j.key("time_to_train").begin_object();
    j.field("tokens", tt.tokens);
    j.field("steps", tt.steps);
    j.field("time_s", tt.time_s);
    j.field("gpu_hours", tt.gpu_hours);
    j.end_object();
  }
  write_configuration_json(j, w);
  j.key("schedule").begin_object();
  j.field("kind", schedule_name(sp.kind));
  j.field("pipeline_model_parallel_size", sp.pipeline_size);
  j.field("virtual_pipeline_model_parallel_size", sp.virtual_size);
  j.field("num_microbatches", sp.microbatches);
  j.end_object();
  if (uneven_pipeline(w.training)) {
    const PipelineSplit split = pipeline_split(w.training, w.model);
    write_stages_json(j, p.stages, &split);
  } else {
    write_stages_json(j, p.stages);
  }
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
  j.field("host_s", ch.host_s);
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
  if (p.full_rank) {
    const FullRankSummary& f = *p.full_rank;
    j.key("full_rank").begin_object();
    j.field("gpus", f.gpus);
    j.field("critical_rank", f.critical_rank);
    j.key("lane").begin_object();
    j.field("tp", f.tp);
    j.field("cp", f.cp);
    j.field("dp", f.dp);
    j.end_object();
    j.field("paces", f.paces);
    j.end_object();
  }
  j.field("simulated_tasks", p.simulated_tasks);
  j.field("engine_tasks", p.engine_tasks);
  j.field("stamped_ops", p.simulated_tasks);
  j.key("warnings").begin_array();
  for (const std::string& warning : p.warnings) j.value(std::string_view(warning));
  j.end_array();
  j.end_object();
}

}  // namespace stepsim::sim
