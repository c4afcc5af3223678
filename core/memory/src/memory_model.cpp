// Per-stage memory: static buffers by the 18-byte rule, and activations held over Megatron's
// pipeline schedule, replayed action by action (forward allocates a chunk's stored
// activations, backward first re-materialises its recompute buffers, then frees both).

#include "stepsim/memory/memory_model.hpp"

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "stepsim/ops/dfa.hpp"
#include "stepsim/ops/moe_flex.hpp"
#include "stepsim/ops/moe_fp8_ops.hpp"
#include "stepsim/ops/muon_ops.hpp"
#include "stepsim/layout/pipeline_split.hpp"
#include "stepsim/ops/flops.hpp"
#include "stepsim/ops/fsdp_units.hpp"
#include "stepsim/config/ub_cfg.hpp"
#include "stepsim/layout/workload_dims.hpp"

namespace stepsim {

namespace {

/// Megatron's number of warm-up forwards (schedules.py, get_pp_rank_microbatches).
std::int64_t warmup_of(const TrainingConfig& t, std::int64_t stage) {
  const std::int64_t p = t.pipeline_model_parallel_size;
  const std::int64_t v = t.virtual_pipeline_model_parallel_size;
  const std::int64_t m = std::max<std::int64_t>(1, t.num_microbatches);
  if (p <= 1) return 0;  // forward_backward_no_pipelining: one forward, one backward
  if (v <= 1) return std::min(p - stage - 1, m);
  const std::int64_t n =
      t.microbatch_group_size_per_vp_stage > 0 ? t.microbatch_group_size_per_vp_stage : p;
  return std::min((p - stage - 1) * 2 + (v - 1) * n, m * v);
}

/// Model chunk of each forward, in order (schedules.py, get_schedule_table).
std::vector<std::int32_t> forward_chunks(const TrainingConfig& t) {
  const std::int64_t p = t.pipeline_model_parallel_size;
  const std::int64_t v = t.virtual_pipeline_model_parallel_size;
  const std::int64_t m = std::max<std::int64_t>(1, t.num_microbatches);
  std::vector<std::int32_t> chunks;
  chunks.reserve(static_cast<std::size_t>(m * v));
  if (v <= 1) {
    chunks.assign(static_cast<std::size_t>(m), 0);
    return chunks;
  }
  const std::int64_t n =
      t.microbatch_group_size_per_vp_stage > 0 ? t.microbatch_group_size_per_vp_stage : p;
  for (std::int64_t first = 0; first < m; first += n) {
    const std::int64_t size = first + n >= m ? m - first : n;
    for (std::int64_t c = 0; c < v; ++c) {
      for (std::int64_t i = 0; i < size; ++i) chunks.push_back(static_cast<std::int32_t>(c));
    }
  }
  return chunks;
}

struct Held {
  std::int64_t total = 0;
  std::int64_t layers = 0;
};

}  // namespace

std::int64_t userbuffer_bytes(const Workload& w) {
  const TrainingConfig& tc = w.training;
  if (!tc.tp_comm_overlap) return 0;
  const std::int64_t rows = w.model.seq_length * tc.micro_batch_size / tc.context_parallel_size;
  const std::int64_t elements = rows * w.model.hidden_size;
  std::int64_t bytes = 0;
  for (std::size_t i = 0; i < kUbGemmNames.size(); ++i) {
    const std::string_view gemm = kUbGemmNames[i];
    // layers_all_gather_overlap: every GEMM but the four reduce-scatters (proj/FC2 fprop,
    // QKV/FC1 wgrad); a pipelined one also with its cfg's fp8_buf.
    const bool all_gather = gemm != "proj_fprop" && gemm != "fc2_fprop" &&
                            gemm != "qkv_wgrad" && gemm != "fc1_wgrad";
    const bool fp8_buf = all_gather || (detail::ub_default_method(gemm) == "pipeline" &&
                                        tc.tp_comm_overlap_gemms[i].fp8_buf == 1);
    const std::int64_t buffer = elements * (tc.fp8_enabled() && fp8_buf ? 1 : 2);
    // CommOverlapP2PBase::initialize: a ring-exchange reduce-scatter's buffer holds 2 tp - 1
    // chunks (its own tp partial results and the tp - 1 received for the final reduction).
    const std::int64_t t = tc.tensor_model_parallel_size;
    bytes += tc.tp_comm_overlap_gemms[i].ring_exchange == 1 &&
                     detail::ub_default_method(gemm) == "pipeline"
                 ? buffer / t * (2 * t - 1)
                 : buffer;
  }
  return bytes;
}

namespace {

/// Sharded data parallelism's unsharded buffers of one FSDP unit (a transformer layer): the
/// gathered parameters of the unit computing and of the one prefetched (Megatron-FSDP's
/// double buffer; FSDP2 likewise holds the next layer's all-gather output while the current
/// one computes) and one unit's full gradients, the reduce-scatter's input. FSDP2 without
/// resharding after forward keeps every layer's gathered parameters until its backward.
std::int64_t fsdp_buffer_bytes(const Workload& w) {
  const TrainingConfig& t = w.training;
  if (!t.fsdp()) return 0;
  const DpSharding s = fsdp_sharding(t);
  if (s == DpSharding::kNoShard || s == DpSharding::kOptim) return 0;
  const std::int64_t unit = fsdp_unit_parameters(w);
  const std::int64_t e = bytes_of(t.params_dtype);
  const std::int64_t grads = unit * t.grad_bytes();
  if (s == DpSharding::kOptimGrads) return grads;
  const std::int64_t gathered =
      t.use_torch_fsdp2 && !t.torch_fsdp2_reshard_after_forward ? w.model.num_layers : 2;
  return gathered * unit * e + grads;
}

}  // namespace

std::int64_t comm_buffer_bytes(const Workload& w, std::int64_t expert_parameters) {
  return userbuffer_bytes(w) + (expert_parameters > 0 ? detail::deepep_buffer_bytes(w) : 0) +
         fsdp_buffer_bytes(w);
}

StaticMemory static_memory(const TrainingConfig& t, std::int64_t parameters,
                           std::int64_t fp8_weight_elements, std::int64_t expert_parameters) {
  const bool mixed = t.params_dtype != DType::kFp32;
  // Mixed precision keeps fp32 master weights beside the two Adam moments.
  const std::int64_t optimizer_per_param = mixed ? 12 : 8;
  StaticMemory s;
  const std::int64_t sixteen_bit =
      t.fp8_param_gather ? parameters - fp8_weight_elements : parameters;
  // The FP8 weights (row- and column-wise copies, or copy and transpose), with MXFP8's E8M0
  // scales: one byte per 32 elements of each copy.
  s.weights_bytes = sixteen_bit * bytes_of(t.params_dtype) + 2 * fp8_weight_elements +
                    (t.fp8_recipe == Fp8Recipe::kMxfp8 ? 2 * (fp8_weight_elements / 32) : 0);
  if (t.fp4_enabled()) {
    // NVFP4 copies instead (NVFP4Tensor's row- and column-wise data, half a byte per element,
    // each with an E4M3 scale per 16: get_scale_shape); with fp4_param_gather they are the
    // parameters (fp8_model_init under get_fp4_context(is_init=True)), no 16-bit copy kept.
    const std::int64_t kept =
        t.fp4_param_gather ? parameters - fp8_weight_elements : parameters;
    s.weights_bytes = kept * bytes_of(t.params_dtype) +
                      2 * (fp8_weight_elements / 2 + fp8_weight_elements / 16);
  }
  s.gradients_bytes = parameters * t.grad_bytes();  // main grads: fp32, or bf16
  // Sharded data parallelism: Megatron-FSDP's optim_grads and optim_grads_params (and FSDP2)
  // keep only their shard of the main gradients, optim_grads_params and FSDP2 only their
  // shard of the 16-bit parameters (the gathered units are communication buffers).
  const DpSharding fsdp = t.fsdp() ? fsdp_sharding(t) : DpSharding::kNoShard;
  const std::int64_t dp_ranks = std::max<std::int64_t>(1, t.data_parallel_size);
  if (fsdp == DpSharding::kOptimGrads || fsdp == DpSharding::kOptimGradsParams) {
    s.gradients_bytes = detail::ceil_div(parameters, dp_ranks) * t.grad_bytes();
  }
  if (fsdp == DpSharding::kOptimGradsParams) {
    s.weights_bytes = detail::ceil_div(parameters, dp_ranks) * bytes_of(t.params_dtype);
  }
  // Megatron's distributed optimizer shards over the data-parallel group with context
  // parallelism (dp * cp ranks hold replicas of the same parameters).
  const std::int64_t dp = std::max<std::int64_t>(1, t.data_parallel_size) *
                          std::max<std::int64_t>(1, t.context_parallel_size);
  // The routed experts' states shard over the expert data-parallel group instead.
  const std::int64_t edp = std::max<std::int64_t>(1, t.expert_data_parallel_size);
  const bool shards_states =
      t.use_distributed_optimizer || (t.fsdp() && fsdp != DpSharding::kNoShard);
  const std::int64_t sharded =
      !shards_states ? parameters
      : expert_parameters > 0
          ? detail::ceil_div(parameters - expert_parameters, dp) +
                detail::ceil_div(expert_parameters, edp)
          : detail::ceil_div(parameters, dp);
  s.optimizer_bytes = sharded * optimizer_per_param;
  if (t.grad_bytes() == 2) s.optimizer_step_bytes = sharded * 4;
  return s;
}

namespace {

/// Muon (optimizer "muon") keeps one fp32 momentum buffer per matrix element where Adam keeps
/// two moments (OrthogonalizedOptimizer._init_group: state["momentum_buffer"] =
/// zeros_like(p)), and holds the largest matrix's Newton-Schulz working set during the step.
void add_muon_states(const Workload& w, std::int32_t stage, StaticMemory& s) {
  const detail::MuonStageStates muon = detail::muon_stage_states(w, stage);
  s.optimizer_bytes -= muon.elements * 4;
  s.optimizer_step_bytes = std::max(s.optimizer_step_bytes, muon.step_bytes);
}

/// The static buffers of CUDA graphs. Per-layer graphs (Transformer Engine's
/// make_graphed_callables as Megatron-Core's TECudaGraphHelper calls it, with
/// _reuse_graph_input_output_buffers from TE 2.7: transformer_engine/pytorch/graph.py keeps
/// per callable and micro-batch its static input surface, outputs, grad outputs and grad
/// inputs, and reuses a micro-batch's once its backward is done; Megatron-Core's own
/// CudaGraphManager likewise) hold four hidden-state tensors per captured callable and
/// micro-batch in flight. full_iteration (full_cuda_graph.py StaticBufferLoader) keeps every
/// micro-batch's tokens, labels, loss mask and position ids (int64, int64, fp32, int64).
std::int64_t cuda_graph_buffer_bytes(const Workload& w, std::int32_t stage,
                                     std::int64_t in_flight) {
  const TrainingConfig& t = w.training;
  if (t.cuda_graph_impl == CudaGraphImpl::kNone) return 0;
  const detail::Dims x = detail::dims_of(w);
  if (t.cuda_graph_impl == CudaGraphImpl::kFullIteration) {
    return std::max<std::int64_t>(1, t.num_microbatches) * x.s * x.b * (8 + 8 + 4 + 8);
  }
  std::vector<std::string> modules;
  std::istringstream in(t.cuda_graph_modules);
  for (std::string m; in >> m;) modules.push_back(m);
  const bool whole = modules.empty();
  const auto has = [&](std::string_view m) {
    return std::find(modules.begin(), modules.end(), m) != modules.end();
  };
  std::int64_t callables = 0;
  std::int64_t layers = 0;
  for (std::int32_t c = 0; c < static_cast<std::int32_t>(x.v); ++c) {
    const LayerRange range = layers_of(t, w.model, stage, c);
    layers += range.count;
    for (std::int64_t l = range.first; l < range.first + range.count; ++l) {
      const bool moe = x.is_moe(static_cast<std::int32_t>(l));
      const bool mlp_block = has(moe ? "moe" : "mlp");
      callables += whole ? 1 : (has("attn") ? 1 : 0) + (mlp_block ? 1 : 0);
    }
  }
  if (layers == 0) return 0;
  // in_flight counts forward actions (one model chunk each): callables per chunk times it.
  const std::int64_t per_chunk = detail::ceil_div(callables, x.v);
  return per_chunk * in_flight * 4 * x.sp_tokens * x.h * x.e;
}

}  // namespace

std::int64_t fp8_weight_elements(const Workload& w, std::int32_t stage) {
  if (!w.training.fp8_enabled() && !w.training.fp4_enabled()) return 0;
  const detail::Dims x = detail::dims_of(w);
  // Each layer's linears (moe_fp8_ops.hpp): an MoE layer's local experts in place of the MLP.
  std::int64_t elements = 0;
  for (std::int32_t c = 0; c < static_cast<std::int32_t>(x.v); ++c) {
    const LayerRange r = layers_of(w.training, w.model, stage, c);
    for (std::int32_t l = r.first; l < r.first + r.count; ++l) {
      elements += detail::fp8_layer_weight_elements(x, l);
    }
  }
  return elements;
}

std::int64_t max_in_flight(const TrainingConfig& t, std::int32_t stage) {
  const std::int64_t total = std::max<std::int64_t>(1, t.num_microbatches) *
                             std::max<std::int64_t>(1, t.virtual_pipeline_model_parallel_size);
  return std::min(warmup_of(t, stage) + 1, total);
}

void add_step_states(const Workload& w, std::int32_t stage, StaticMemory& s) {
  add_muon_states(w, stage, s);
  s.cuda_graph_bytes = cuda_graph_buffer_bytes(w, stage, max_in_flight(w.training, stage));
}

std::vector<StageMemory> analytic_memory(const Workload& w) {
  const TrainingConfig& tc = w.training;
  const std::int32_t p = static_cast<std::int32_t>(tc.pipeline_model_parallel_size);
  const std::int32_t v = static_cast<std::int32_t>(tc.virtual_pipeline_model_parallel_size);
  const std::vector<std::int32_t> chunk_of = forward_chunks(tc);
  const std::int64_t total = static_cast<std::int64_t>(chunk_of.size());

  std::vector<StageMemory> out;
  out.reserve(static_cast<std::size_t>(p));
  std::vector<ChunkActivations> acts(static_cast<std::size_t>(v));
  for (std::int32_t r = 0; r < p; ++r) {
    std::int64_t params = 0;
    std::int64_t experts = 0;
    std::int64_t transient = 0;
    for (std::int32_t c = 0; c < v; ++c) {
      acts[static_cast<std::size_t>(c)] = chunk_activations(w, r, c);
      params += chunk_parameters(w, r, c);
      experts += chunk_expert_parameters(w, r, c);
      transient = std::max(transient, acts[static_cast<std::size_t>(c)].transient_bytes);
    }
    // defer_embedding_wgrad_compute: the last stage keeps each deferred micro-batch's
    // output-layer input and logits gradient until the drain after its last backward.
    const bool defers = tc.defer_embedding_wgrad_compute && p > 1 && r == p - 1;
    std::int64_t deferred_bytes = 0;
    if (defers) {
      const detail::Dims x = detail::dims_of(w);
      deferred_bytes = x.sp_tokens * x.h * x.e + x.tokens * x.vocab_n() * x.e;
    }
    std::int64_t deferred = 0;
    // Replay the rank's schedule: warm-up forwards, steady 1F1B, cool-down backwards.
    Held held;
    Held peak;
    auto forward = [&](std::int64_t k) {
      const ChunkActivations& a = acts[static_cast<std::size_t>(chunk_of[static_cast<std::size_t>(k)])];
      held.total += a.stored_bytes;
      held.layers += a.layer_stored_bytes;
      if (held.total > peak.total) peak = held;
    };
    auto backward = [&](std::int64_t k) {
      const std::int32_t c = v - 1 - chunk_of[static_cast<std::size_t>(k)];
      const ChunkActivations& a = acts[static_cast<std::size_t>(c)];
      if (held.total + a.recompute_bytes > peak.total) {
        peak = {held.total + a.recompute_bytes, held.layers};
      }
      held.total -= a.stored_bytes;
      held.layers -= a.layer_stored_bytes;
      if (defers && c == v - 1 &&
          (tc.wgrad_deferral_limit == 0 || deferred < tc.wgrad_deferral_limit)) {
        held.total += deferred_bytes;
        ++deferred;
        if (held.total > peak.total) peak = held;
      }
    };
    const std::int64_t warmup = warmup_of(tc, r);
    for (std::int64_t k = 0; k < warmup; ++k) forward(k);
    for (std::int64_t k = 0; k < total - warmup; ++k) {
      forward(k + warmup);
      backward(k);
    }
    for (std::int64_t k = total - warmup; k < total; ++k) backward(k);

    StaticMemory s = tc.optimizer_impl == OptimizerImpl::kApexDistributedFusedAdam
                         ? detail::dfa_static_memory(detail::dfa_layout(w, detail::dims_of(w), r))
                         : static_memory(tc, params, fp8_weight_elements(w, r), experts);
    s.comm_buffer_bytes = comm_buffer_bytes(w, experts);
    if (tc.optimizer_impl != OptimizerImpl::kApexDistributedFusedAdam) add_step_states(w, r, s);
    StageMemory m;
    m.stage = r;
    m.weights_bytes = s.weights_bytes;
    m.gradients_bytes = s.gradients_bytes;
    m.optimizer_bytes = s.optimizer_bytes;
    m.activations_bytes = peak.total;
    m.layer_activations_bytes = peak.layers;
    m.comm_buffer_bytes = s.comm_buffer_bytes;
    m.peak_bytes = s.total() + std::max(peak.total + transient, s.optimizer_step_bytes);
    out.push_back(m);
  }
  return out;
}

}  // namespace stepsim
