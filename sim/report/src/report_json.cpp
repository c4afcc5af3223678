#include <string>
#include <vector>

#include "report_words.hpp"
#include "stepsim/config/enum_names.hpp"
#include "stepsim/config/shipped.hpp"
#include "stepsim/layout/moe_layout.hpp"
#include "stepsim/layout/pipeline_split.hpp"
#include "stepsim/ops/flops.hpp"
#include "stepsim/report/json_writer.hpp"
#include "stepsim/report/report.hpp"

// The JSON report of `predict` and its parts that other documents reuse (configuration,
// stages).

namespace stepsim::sim {

namespace {

using report_words::schedule_name;

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

/// The parallel grid, batch, recompute, optimizer and overlaps, inside "configuration".
void write_parallel_json(JsonWriter& j, const TrainingConfig& t) {
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
}

/// The dtype, FP8 (only with FP8 on) and the norm kernels' SM margins (only when set).
void write_precision_json(JsonWriter& j, const TrainingConfig& t) {
  j.field("dtype", to_string(t.params_dtype));
  if (t.fp8_enabled()) {
    // Only with FP8 on, so that every other configuration's output stays as it was.
    j.field("fp8", to_string(t.fp8));
    j.field("fp8_recipe", to_string(t.fp8_recipe));
    j.field("fp8_param_gather", t.fp8_param_gather);
    if (t.reuse_grad_buf_for_mxfp8_param_ag) j.field("reuse_grad_buf_for_mxfp8_param_ag", true);
    j.field("fp8_amax_history_len", t.fp8_amax_history_len);
  }
  if (t.fp4_enabled()) {
    j.field("fp4", to_string(t.fp4));
    j.field("fp4_recipe", to_string(t.fp4_recipe));
    j.field("fp4_param_gather", t.fp4_param_gather);
  }
  if (t.fwd_layernorm_sm_margin > 0 || t.bwd_layernorm_sm_margin > 0) {
    // Only when set, so that every other configuration's output stays as it was.
    j.field("fwd_layernorm_sm_margin", t.fwd_layernorm_sm_margin);
    j.field("bwd_layernorm_sm_margin", t.bwd_layernorm_sm_margin);
  }
}

/// The NCCL settings that differ from NCCL's defaults, inside "configuration".
void write_nccl_json(JsonWriter& j, const TrainingConfig& t) {
  if (t.nccl_nvls_enable != 2) j.field("nccl_nvls_enable", t.nccl_nvls_enable);  // likewise
  if (!t.nccl_algo.empty()) j.field("nccl_algo", std::string_view(t.nccl_algo));
  if (!t.nccl_proto.empty()) j.field("nccl_proto", std::string_view(t.nccl_proto));
  if (t.nccl_min_nchannels > 0) j.field("nccl_min_nchannels", t.nccl_min_nchannels);
  if (t.nccl_max_nchannels > 0) j.field("nccl_max_nchannels", t.nccl_max_nchannels);
  if (!t.nccl_communicator_config_path.empty()) {
    j.field("nccl_communicator_config_path", std::string_view(t.nccl_communicator_config_path));
  }
  if (t.nccl_p2p_net_chunksize != 131072) {
    j.field("nccl_p2p_net_chunksize", t.nccl_p2p_net_chunksize);
  }
}

/// MLA's and the experts' settings, each only when the model has them.
void write_attention_and_experts_json(JsonWriter& j, const Workload& w) {
  const TrainingConfig& t = w.training;
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
}

/// The headline figures: step time, utilisation, throughput, memory and, on request, the
/// time to train.
void write_figures_json(JsonWriter& j, const Workload& w, const Prediction& p,
                        const ReportOptions& options) {
  j.field("step_time_s", p.step_time_s);
  j.field("iteration_time_ms", iteration_ms(p.step_time_s));
  j.field("bubble_fraction", p.bubble_fraction);
  j.field("mfu", p.mfu);
  j.field("hfu", p.hfu);
  if (const auto fp8 = fp8_peak_utilisation(w, p)) {
    j.field("mfu_fp8_peak", fp8->mfu);
    j.field("hfu_fp8_peak", fp8->hfu);
  }
  if (const auto fp4 = fp4_peak_utilisation(w, p)) {
    j.field("mfu_fp4_peak", fp4->mfu);
    j.field("hfu_fp4_peak", fp4->hfu);
  }
  j.field("tflops_per_gpu", p.tflops_per_gpu);
  j.field("megatron_tflops_per_gpu", megatron_tflops_per_gpu(w, p.step_time_s));
  j.field("tokens_per_s", p.tokens_per_s);
  j.field("tokens_per_s_per_gpu", p.tokens_per_s / static_cast<double>(w.training.world_size));
  j.field("peak_memory_bytes", p.peak_memory_bytes);
  j.field("memory_capacity_bytes", w.system.memory_bytes);
  j.field("fits_in_memory", p.fits_in_memory);
  if (options.fit_advice != nullptr) {
    j.key("make_it_fit");
    write_fit_advice_json(j, *options.fit_advice);
  }
  if (options.train_tokens > 0) {
    const TimeToTrain tt = time_to_train(w, p.step_time_s, options.train_tokens);
    j.key("time_to_train").begin_object();
    j.field("tokens", tt.tokens);
    j.field("steps", tt.steps);
    j.field("time_s", tt.time_s);
    j.field("gpu_hours", tt.gpu_hours);
    j.end_object();
  }
}

/// The last stage's time by kind, and the chain of engine tasks through dependencies.
void write_critical_json(JsonWriter& j, const Prediction& p) {
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
}

/// The text report's one bubble figure and its parts (BubbleBreakdown).
void write_bubble_json(JsonWriter& j, const BubbleBreakdown& b) {
  j.key("bubble").begin_object();
  j.field("mean_s", b.total_s);
  j.field("fraction_of_step", b.fraction_of_step);
  j.field("schedule_s", b.schedule_s);
  j.field("stage_imbalance_s", b.imbalance_s);
  j.field("waits_s", b.waits_s);
  j.end_object();
}

/// Full-rank runs only: which rank ended the step, its lane, the replica paces.
void write_full_rank_json(JsonWriter& j, const Prediction& p) {
  if (!p.full_rank) return;
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

/// "provenance": the text report's line and its facts (docs/outputs.md); absent when the
/// cost model says nothing of where its prices came from.
void write_provenance_json(JsonWriter& j, const Provenance& p) {
  const std::string line = provenance_line(p);
  if (line.empty()) return;
  j.key("provenance").begin_object();
  j.field("line", std::string_view(line));
  j.key("parts").begin_object();
  for (std::size_t i = 0; i < kPricedParts; ++i) {
    if (p.parts[i] == 0) continue;
    j.key(priced_part_key(i)).begin_array();
    for (const std::string_view origin : origin_keys(p.parts[i])) j.value(origin);
    j.end_array();
  }
  j.end_object();
  if (!p.measured_on.empty()) j.field("measured_on", std::string_view(p.measured_on));
  if (!p.borrowed_from.empty()) {
    j.key("borrowed_from").begin_array();
    for (const std::string& f : p.borrowed_from) j.value(std::string_view(f));
    j.end_array();
  }
  j.key("host").begin_object();
  j.field("origin", host_origin_key(p.host));
  if (!p.host_from.empty()) j.field("from", std::string_view(p.host_from));
  if (!p.host_detail.empty()) j.field("detail", std::string_view(p.host_detail));
  j.end_object();
  if (p.accuracy) {
    j.key("open_accuracy").begin_object();
    j.field("runs", p.accuracy->runs);
    if (p.accuracy->runs > 0) {
      j.field("mean_error", p.accuracy->mean_error);
      j.field("mean_absolute_error", p.accuracy->mean_absolute_error);
      j.field("min_error", p.accuracy->min_error);
      j.field("max_error", p.accuracy->max_error);
    }
    j.end_object();
  }
  j.end_object();
}

}  // namespace

void write_configuration_json(JsonWriter& j, const Workload& w) {
  const TrainingConfig& t = w.training;
  j.key("configuration").begin_object();
  write_parallel_json(j, t);
  if (uneven_pipeline(t)) write_pipeline_split_json(j, w);
  write_precision_json(j, t);
  write_nccl_json(j, t);
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
  write_attention_and_experts_json(j, w);
  j.end_object();
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
  // Only when the scenario left cost_model out (so that every other document stays): why this
  // cost model, and how to ask for the other.
  if (const std::string note = default_cost_model_note(w.cost_model, w.system.gpu_name);
      !note.empty()) {
    j.field("cost_model_default", std::string_view(note));
  }
  write_provenance_json(j, p.provenance);
  write_figures_json(j, w, p, options);
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
  write_critical_json(j, p);
  write_bubble_json(j, bubble_breakdown(p, sp));
  write_full_rank_json(j, p);
  j.field("simulated_tasks", p.simulated_tasks);
  j.field("engine_tasks", p.engine_tasks);
  j.field("stamped_ops", p.simulated_tasks);
  j.key("warnings").begin_array();
  for (const std::string& warning : p.warnings) j.value(std::string_view(warning));
  j.end_array();
  j.end_object();
}

}  // namespace stepsim::sim
