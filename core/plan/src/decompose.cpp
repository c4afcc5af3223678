// Workload decomposition: per pipeline rank and model chunk, one micro-batch's ops on one
// representative TP rank, in the order Megatron-LM runs them; plus each chunk's gradient
// reduction and each rank's once-per-step ops.

#include "stepsim/plan/decompose.hpp"

#include <algorithm>
#include <optional>

#include "stepsim/ops/dfa.hpp"
#include "stepsim/ops/embedding_ops.hpp"
#include "stepsim/ops/fp8_ops.hpp"
#include "stepsim/ops/layer_ops.hpp"
#include "stepsim/ops/moe_flex.hpp"
#include "stepsim/ops/mtp_ops.hpp"
#include "stepsim/ops/fsdp_units.hpp"
#include "stepsim/ops/muon_ops.hpp"
#include "stepsim/ops/optimizer_ops.hpp"
#include "stepsim/layout/recompute_layout.hpp"
#include "stepsim/ops/flops.hpp"
#include "stepsim/memory/memory_model.hpp"
#include "stepsim/layout/pipeline_split.hpp"
#include "stepsim/layout/rank_layout.hpp"
#include "stepsim/layout/workload_dims.hpp"
#include "fsdp_plan.hpp"

namespace stepsim {

namespace {

using detail::Dims;
using detail::OpList;

/// Where the ranks of the job sit: Megatron's RankGenerator (order tp-cp-ep-dp-pp) and the
/// NVLink domain's size (gpus_per_node unless the system gives nvlink_domain_size): a group's
/// "nodes" below are the NVLink domains it spans, NCCL's nodes (init.cc: nNvlDomains = nNodes). The representative rank of a stage is its first rank (TP rank 0 of CP rank 0 of
/// DP replica 0).
struct Layout {
  RankGenerator ranks;
  std::int64_t gpus_per_node = 1;
  std::int64_t p = 1;
  std::int64_t first_rank(std::int64_t stage) const {
    return ranks.rank(ParallelCoords{.pp = stage});
  }
  /// Nodes of the group that reduces gradients: Megatron's data-parallel group with context
  /// parallelism ("dp-cp"; the "dp" group without CP).
  std::int64_t dp_nodes(std::int64_t stage) const {
    return ranks.nodes_spanned("dp-cp", first_rank(stage), gpus_per_node);
  }
  /// That group as a collective's members (kind and bytes left to the caller).
  CollectiveOp dp_group(const Dims& x, std::int64_t stage) const {
    return CollectiveOp{
        .group = CommGroup::kData, .group_size = x.dp * x.cp, .nodes_spanned = dp_nodes(stage)};
  }
  /// Nodes spanned by the stage's tensor x data parallel group with context parallelism (FP8
  /// amax reduction: fp8_utils.py asks get_amax_reduction_group(with_context_parallel=True)).
  std::int64_t tp_dp_nodes(std::int64_t stage) const {
    return ranks.nodes_spanned("tp-cp-dp", first_rank(stage), gpus_per_node);
  }
  /// ... with tp_only_amax_red, its tensor x context group
  /// (get_amax_reduction_group(with_context_parallel=True, tp_only_amax_red=True)).
  std::int64_t tp_cp_nodes(std::int64_t stage) const {
    return ranks.nodes_spanned("tp-cp", first_rank(stage), gpus_per_node);
  }
  /// Nodes of the expert data-parallel group of the stage's first rank (Megatron's expert
  /// rank generator: tp = etp, ep, dp = expert dp, pp).
  std::int64_t edp_nodes(const Dims& x, std::int64_t stage) const {
    const RankGenerator experts(ParallelSizes{.tp = x.etp, .ep = x.ep, .dp = x.edp, .pp = x.p});
    return experts.nodes_spanned("dp", experts.rank(ParallelCoords{.pp = stage}), gpus_per_node);
  }
  /// Size and nodes of the optimizer's grad-stats group (CommGroup::kGradStats): the world
  /// with the distributed optimizer (ranks node-major: every node), the model-parallel group
  /// "tp-pp" of the stage's first rank otherwise.
  CollectiveOp grad_stats(bool world, const Dims& x, std::int64_t stage) const {
    if (world) {
      const std::int64_t n = ranks.world_size();
      return CollectiveOp{.group = CommGroup::kGradStats,
                          .group_size = n,
                          .nodes_spanned = (n + gpus_per_node - 1) / gpus_per_node};
    }
    return CollectiveOp{
        .group = CommGroup::kGradStats,
        .group_size = x.t * x.p,
        .nodes_spanned = ranks.nodes_spanned("tp-pp", first_rank(stage), gpus_per_node)};
  }
  std::int64_t embedding_nodes() const {
    return first_rank(0) / gpus_per_node == first_rank(p - 1) / gpus_per_node ? 1 : 2;
  }
};

/// The layers of `range` in the order backward first uses them: a checkpointed group's in
/// forward order (its recompute), the others in reverse.
std::vector<std::int32_t> backward_use_order(const TrainingConfig& tc, const LayerRange& range) {
  const detail::RecomputeLayout layout(tc, range.count);
  std::vector<std::int32_t> order;
  for (std::int64_t i = range.count - 1; i >= 0;) {
    const detail::CheckpointGroup group = layout.group_of(i);
    for (std::int64_t k = 0; k < group.size; ++k) {
      const std::int64_t at = group.checkpointed ? group.first + k : group.first + group.size - 1 - k;
      order.push_back(static_cast<std::int32_t>(range.first + at));
    }
    i = group.first - 1;
  }
  return order;
}

/// `fsdp`: sharded data parallelism's per-layer reduce-scatters (null: none); `gathers`: its
/// per-layer gathers in backward (null: none).
void emit_chunk_backward(OpList& ops, const TrainingConfig& tc, const LayerRange& range,
                         const detail::FsdpChunk* fsdp, detail::FsdpGathers* gathers) {
  const Dims& x = ops.dims();
  const bool selective = tc.recompute_granularity == RecomputeGranularity::kSelective;
  const detail::RecomputeLayout layout(tc, range.count);
  const auto use = [&](std::int32_t l) {
    if (gathers != nullptr) gathers->before(ops, l);
  };
  std::int64_t i = range.count - 1;
  while (i >= 0) {
    const detail::CheckpointGroup group = layout.group_of(i);
    if (group.checkpointed) {
      // CheckpointFunction.backward: gather the distributed input, re-run the group.
      const auto first = static_cast<std::int32_t>(range.first + group.first);
      if (x.dist_saved) {
        ops.wait(ops.tp_collective(CollectiveKind::kAllGather, first, Phase::kRecompute,
                                   x.tokens * x.h * x.e));
      }
      for (std::int64_t k = 0; k < group.size; ++k) {
        use(static_cast<std::int32_t>(first + k));
        detail::emit_layer_forward(ops, static_cast<std::int32_t>(first + k), Phase::kRecompute);
      }
    }
    for (std::int64_t k = group.first + group.size - 1; k >= group.first; --k) {
      const auto l = static_cast<std::int32_t>(range.first + k);
      use(l);
      detail::emit_layer_backward(ops, l, selective);
      if (fsdp != nullptr) detail::emit_fsdp_reduce(ops, *fsdp, l);
    }
    i = group.first - 1;
  }
}

/// The last chunk's tail with multi-token prediction, in GPTModel's order: the decoder's
/// final norm, the MTP depths (MultiTokenPredictionBlock), the main head and loss, then each
/// depth's head and loss (_postprocess, process_mtp_loss) on the shared output weight.
void emit_mtp_forward(OpList& ops) {
  const Dims& x = ops.dims();
  ops.norm("final_norm", -1, Phase::kForward, detail::norm_forward_bytes(x, x.sp_tokens));
  for (std::int64_t k = 0; k < x.mtp; ++k) detail::emit_mtp_layer_forward(ops, k);
  for (std::int64_t k = 0; k <= x.mtp; ++k) detail::emit_output_head_forward(ops);
}

/// Its backward: the heads' (depths in reverse, then the main one), the depths' in reverse,
/// then the final norm's with the gradients of the main head and the first depth summed.
void emit_mtp_backward(OpList& ops, bool selective) {
  const Dims& x = ops.dims();
  for (std::int64_t k = 0; k <= x.mtp; ++k) detail::emit_output_head_backward(ops);
  for (std::int64_t k = x.mtp - 1; k >= 0; --k) detail::emit_mtp_layer_backward(ops, k, selective);
  ops.norm("final_norm_bwd", -1, Phase::kBackwardInput,
           detail::norm_backward_bytes(x, x.sp_tokens));
}

/// The chunk's gradient reductions once per step (Megatron's DDP buckets, reduced over the
/// data-parallel group: its dense parameters and its routed experts' apart).
void add_grad_sync(ChunkPlan& plan, const Workload& w, const Dims& x, const Layout& layout,
                   std::int32_t stage, std::int32_t chunk) {
  const TrainingConfig& tc = w.training;
  // Context-parallel ranks hold the same parameters: gradients are reduced over dp * cp. A
  // chunk without parameters (an empty stage of an uneven layout) has nothing to reduce.
  // The routed experts' gradients are reduced over the expert data-parallel group instead
  // (Megatron's DDP keeps them in buffers of their own).
  const std::int64_t dp_cp = x.dp * x.cp;
  const std::int64_t experts = chunk_expert_parameters(w, stage, chunk);
  const std::int64_t dense = plan.parameters - experts;
  const bool scatter = tc.use_distributed_optimizer;
  if (dp_cp > 1 && dense > 0) {
    Op& op = plan.grad_sync.emplace_back();
    op.name = scatter ? "dp_grad_reduce_scatter" : "dp_grad_all_reduce";
    op.phase = Phase::kStep;
    op.stream = Stream::kDataComm;
    op.shape = CollectiveOp{scatter ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce,
                            CommGroup::kData, dense * tc.grad_bytes(), dp_cp, layout.dp_nodes(stage)};
  }
  if (x.edp > 1 && experts > 0) {
    Op& op = plan.grad_sync.emplace_back();
    op.name = scatter ? "edp_grad_reduce_scatter" : "edp_grad_all_reduce";
    op.phase = Phase::kStep;
    op.stream = Stream::kDataComm;
    op.shape = CollectiveOp{scatter ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce,
                            CommGroup::kExpertData, experts * tc.grad_bytes(), x.edp,
                            layout.edp_nodes(x, stage)};
  }
}

ChunkPlan build_chunk(const Workload& w, const Dims& x, const Layout& layout, std::int32_t stage,
                      std::int32_t chunk) {
  const TrainingConfig& tc = w.training;
  const LayerRange range = layers_of(tc, w.model, stage, chunk);
  ChunkPlan plan;
  plan.stage = stage;
  plan.chunk = chunk;
  plan.first_layer = range.first;
  plan.num_layers = range.count;
  plan.has_embedding = stage == 0 && chunk == 0;
  plan.has_loss = stage == x.p - 1 && chunk == x.v - 1;

  // Roughly 20 forward and 40 backward ops per layer (more with recompute).
  plan.forward.reserve(static_cast<std::size_t>(24 * range.count + 16));
  plan.backward.reserve(static_cast<std::size_t>(72 * range.count + 24));

  const std::optional<detail::FsdpChunk> fsdp = detail::fsdp_chunk(w, layout.dp_group(x, stage));
  const bool gather = fsdp && fsdp->gather;
  OpList fwd(plan.forward, x);
  std::optional<detail::FsdpGathers> gathers;
  if (gather) {
    std::vector<std::int32_t> order;
    for (std::int32_t l = range.first; l < range.first + range.count; ++l) order.push_back(l);
    gathers.emplace(*fsdp, Phase::kForward, std::move(order));
    detail::emit_fsdp_root_gather(fwd, *fsdp);
    gathers->prime(fwd);
  }
  if (plan.has_embedding) detail::emit_embedding_forward(fwd);
  for (std::int32_t l = range.first; l < range.first + range.count; ++l) {
    if (gathers) gathers->before(fwd, l);
    detail::emit_layer_forward(fwd, l, Phase::kForward);
  }
  const bool amax_reduction =
      x.fp8 && !x.fp4 && tc.fp8_recipe == Fp8Recipe::kDelayed && range.count > 0;
  // Megatron's amax reduction group (fp8_utils.py: get_amax_reduction_group(
  // with_context_parallel=True, tp_only_amax_red=config.tp_only_amax_red)).
  const bool tp_only = tc.tp_only_amax_red;
  const CommGroup amax_group = tp_only ? CommGroup::kTensorContext : CommGroup::kTensorData;
  const std::int64_t amax_ranks = x.t * x.cp * (tp_only ? 1 : x.dp);
  const std::int64_t amax_nodes = !amax_reduction ? 0
                                  : tp_only       ? layout.tp_cp_nodes(stage)
                                                  : layout.tp_dp_nodes(stage);
  if (amax_reduction) {
    detail::emit_fp8_amax_reduction(fwd, range.count, true, tc.fp8_param_gather,
                                    tc.fp8_amax_history_len, amax_group, amax_ranks, amax_nodes);
  }
  if (plan.has_loss && x.mtp > 0) {
    emit_mtp_forward(fwd);
  } else if (plan.has_loss) {
    detail::emit_output_forward(fwd);
  }

  const auto emit_backward = [&](std::vector<Op>& list, bool defer_wgrad) {
    OpList bwd(list, x);
    std::optional<detail::FsdpGathers> bwd_gathers;
    if (gather && fsdp->regather_backward) {
      bwd_gathers.emplace(*fsdp, Phase::kBackwardInput, backward_use_order(tc, range));
      bwd_gathers->prime(bwd);
    }
    if (plan.has_loss && x.mtp > 0) {
      emit_mtp_backward(bwd, tc.recompute_granularity == RecomputeGranularity::kSelective);
    } else if (plan.has_loss) {
      detail::emit_output_backward(bwd, defer_wgrad);
    }
    emit_chunk_backward(bwd, tc, range, fsdp ? &*fsdp : nullptr,
                        bwd_gathers ? &*bwd_gathers : nullptr);
    if (amax_reduction) {
      detail::emit_fp8_amax_reduction(bwd, range.count, false, tc.fp8_param_gather,
                                      tc.fp8_amax_history_len, amax_group, amax_ranks, amax_nodes);
    }
    if (plan.has_embedding) detail::emit_embedding_backward(bwd);
    if (fsdp) detail::emit_fsdp_reduce(bwd, *fsdp, -1);
  };
  emit_backward(plan.backward, false);
  // Megatron defers only on the last pipeline stage (its post_process model chunk).
  if (plan.has_loss && tc.defer_embedding_wgrad_compute && x.p > 1) {
    emit_backward(plan.backward_wgrad_deferred, true);
    OpList drain(plan.deferred_wgrad, x);
    detail::emit_output_deferred_wgrad(drain);
    plan.deferred_wgrad_bytes = x.sp_tokens * x.h * x.e + x.tokens * x.vocab_n() * x.e;
  }

  plan.p2p_bytes = x.sp_tokens * x.h * x.e;
  const ChunkActivations acts = chunk_activations(w, stage, chunk);
  plan.stored_activation_bytes = acts.stored_bytes;
  plan.recompute_activation_bytes = acts.recompute_bytes;
  plan.parameters = chunk_parameters(w, stage, chunk);

  // FSDP reduced every unit's gradients in each backward: nothing is left for the step.
  if (!fsdp) add_grad_sync(plan, w, x, layout, stage, chunk);
  return plan;
}

/// The FP8 copies (and transposes) of the layers' linear weights that Transformer Engine makes
/// in a step's first micro-batch (is_first_microbatch) and caches for the others: one
/// cast-transpose kernel per weight, charged to the end of the step before, on the compute
/// stream after the optimizer (and after the parameter all-gather when that is not
/// overlapped with the next forward), where the next step's first forward would run them.
void add_fp8_weight_casts(StagePlan& stage, const Workload& w, const Dims& x,
                          std::int32_t step_index) {
  std::vector<Op>& ops = stage.step_ops;
  std::vector<std::int32_t> deps{step_index};
  const TrainingConfig& tc = w.training;
  if (tc.use_distributed_optimizer && x.dp * x.cp > 1 && !tc.overlap_param_gather) {
    deps.push_back(static_cast<std::int32_t>(ops.size()) - 1);  // dp_param_all_gather
  }
  const std::int64_t dense[] = {x.qkv_n() * x.h, x.h * x.attn_n(), x.fc1_n() * x.h,
                                x.h * x.ffn_n()};
  // An MoE layer: the local experts' FC1 and FC2 weights, one cast kernel per expert's
  // (GroupedLinear quantizes each weight of the group).
  const std::int64_t moe[] = {x.qkv_n() * x.h, x.h * x.attn_n(),
                              x.local_experts() * x.h * x.expert_fc1_n(),
                              x.local_experts() * x.expert_ffn_n() * x.h};
  for (const ChunkPlan& chunk : stage.chunks) {
    for (std::int32_t l = chunk.first_layer; l < chunk.first_layer + chunk.num_layers; ++l) {
      const bool moe_layer = x.is_moe(l);
      for (std::size_t i = 0; i < 4; ++i) {
        const std::int64_t elements = moe_layer ? moe[i] : dense[i];
        // FP8 parameters (fp8_param_gather) arrive in FP8: only their transposes are made.
        // MXFP8 ones arrive in 16 bits and are quantized into both copies
        // (param_and_grad_buffer.py _post_param_sync: copy_tensors_to_quantized_params).
        // NVFP4 ones (fp4_param_gather) arrive row-wise: post_all_gather_processing makes
        // their column-wise copies (utils.py _nvfp4_2d_multi_tensor_transpose).
        const bool transposed = (tc.fp8_param_gather && !x.fp8_mx) || tc.fp4_param_gather;
        Op& cast = ops.emplace_back();
        cast.name = transposed && x.fp4 ? "nvfp4_weight_transpose"
                    : transposed        ? "fp8_weight_transpose"
                    : x.fp8_mx_params   ? "mxfp8_param_quantize"
                    : x.fp4             ? "nvfp4_weight_quantize"
                                        : "fp8_weight_cast";
        cast.layer = l;
        cast.phase = Phase::kStep;
        cast.stream = Stream::kCompute;
        cast.shape = MemoryBoundOp{transposed ? detail::fp8_weight_transpose_bytes(x, elements)
                                              : detail::fp8_weight_cast_bytes(x, elements),
                                   moe_layer && i >= 2 ? x.local_experts() : 1};
        cast.deps = deps;
      }
    }
  }
}

/// Apex DistributedFusedAdam's step ops for `stage` over its buckets `dfa`.
void build_dfa_step_ops(StagePlan& stage, const Workload& w, const Dims& x, const Layout& layout,
                        const detail::DfaLayout& dfa) {
  std::vector<Op>& ops = stage.step_ops;
  const CollectiveOp embedding{
      .group = CommGroup::kEmbedding, .group_size = 2, .nodes_spanned = layout.embedding_nodes()};
  const bool tied_copy = x.tied && x.p > 1 && (stage.stage == 0 || stage.stage == x.p - 1);
  const std::int32_t last = detail::append_dfa_step_ops(
      ops, x, dfa, layout.dp_group(x, stage.stage),
      CollectiveOp{.group = CommGroup::kTensor, .group_size = x.t, .nodes_spanned = x.tp_nodes},
      tied_copy ? &embedding : nullptr, layout.grad_stats(true, x, stage.stage));
  add_fp8_weight_casts(stage, w, x, last);
}

/// The gradient all-reduces before the optimizer: the tied embedding's between the first and
/// last stage, and with SP MLA's replicated down projections' over TP. Returns their indices.
std::vector<std::int32_t> add_grad_all_reduces(StagePlan& stage, const Workload& w, const Dims& x,
                                               const Layout& layout) {
  const TrainingConfig& tc = w.training;
  std::vector<Op>& ops = stage.step_ops;
  std::int32_t embedding = -1;
  // finalize_model_grads._get_shared_word_embedding_weight: tied, or with multi-token
  // prediction (whose last stage holds a copy of the word embedding).
  if ((x.tied || x.mtp > 0) && x.p > 1 && (stage.stage == 0 || stage.stage == x.p - 1)) {
    Op& op = ops.emplace_back();
    op.name = "embedding_grad_all_reduce";
    op.phase = Phase::kStep;
    op.stream = Stream::kDataComm;
    op.shape = CollectiveOp{CollectiveKind::kAllReduce, CommGroup::kEmbedding,
                            x.vocab_n() * x.h * tc.grad_bytes(), 2, layout.embedding_nodes()};
    embedding = 0;
  }
  std::int32_t replicated = -1;
  if (x.mla && x.sp) {
    // finalize_model_grads (_allreduce_non_tensor_model_parallel_grads): with SP each TP rank
    // ran MLA's duplicated down projections on its own tokens, so their weight gradients are
    // summed over TP (one coalesced all-reduce of the main grads) before the optimizer.
    std::int64_t layers = 0;
    for (const ChunkPlan& c : stage.chunks) layers += c.num_layers;
    const std::int64_t per_layer = x.h * (x.q_lora + x.kv_lora + x.dr);
    if (layers > 0) {
      replicated = static_cast<std::int32_t>(ops.size());
      Op& op = ops.emplace_back();
      op.name = "tp_replicated_grad_all_reduce";
      op.phase = Phase::kStep;
      op.stream = Stream::kTensorComm;
      op.shape = CollectiveOp{CollectiveKind::kAllReduce, CommGroup::kTensor,
                              layers * per_layer * tc.grad_bytes(), x.t, x.tp_nodes};
    }
  }
  std::vector<std::int32_t> step_deps;
  if (embedding >= 0) step_deps.push_back(embedding);
  if (replicated >= 0) step_deps.push_back(replicated);
  return step_deps;
}

/// The optimizers' shards of a stage, and the FP8 parameters' share of the dense one.
struct StageShards {
  std::vector<detail::OptimizerShard> optimizers;
  detail::OptimizerShard fp8_shard;
  std::int64_t fp8_tensors = 0;
};

StageShards stage_shards(const StagePlan& stage, const Workload& w, const Dims& x,
                         std::int64_t dense, std::int64_t experts, std::int64_t fp8_params) {
  const TrainingConfig& tc = w.training;
  const std::int64_t dp_cp = x.dp * x.cp;
  // The optimizers' shards: the distributed optimizer shards the dense parameters over
  // dp * cp and the routed experts' (a second optimizer) over the expert data-parallel group;
  // a shard of a flat bucket holds about its share of the tensors, plus the one cut at its end.
  detail::ParameterTensors tensors;
  for (const ChunkPlan& c : stage.chunks) {
    const detail::ParameterTensors t =
        detail::chunk_parameter_tensors(x, c, stage.stage == x.p - 1);
    tensors.dense += t.dense;
    tensors.expert += t.expert;
  }
  // FSDP2's optimizer steps on its DTensor shards as the distributed optimizer does.
  const bool sharded = tc.use_distributed_optimizer || tc.use_torch_fsdp2;
  const auto shard_tensors = [&](std::int64_t n, std::int64_t ways) {
    return sharded && ways > 1 ? detail::ceil_div(n, ways) + 1 : n;
  };
  StageShards out;
  std::vector<detail::OptimizerShard>& optimizers = out.optimizers;
  optimizers = {
      {.elements = sharded ? detail::ceil_div(dense, dp_cp) : dense,
       .tensors = shard_tensors(tensors.dense, dp_cp)}};
  if (experts > 0) {
    optimizers.push_back(
        {.elements = tc.use_distributed_optimizer ? detail::ceil_div(experts, x.edp) : experts,
         .tensors = shard_tensors(tensors.expert, x.edp)});
  }
  // The FP8 parameters' share of the dense optimizer's shard, and their tensors.
  std::int64_t& fp8_tensors = out.fp8_tensors;
  detail::OptimizerShard& fp8_shard = out.fp8_shard;
  if (fp8_params > 0) {
    for (const ChunkPlan& c : stage.chunks)
      fp8_tensors += c.num_layers * detail::kFp8LinearsPerLayer;
    fp8_shard = {
        .elements = tc.use_distributed_optimizer ? detail::ceil_div(fp8_params, dp_cp) : fp8_params,
        .tensors = std::min(shard_tensors(fp8_tensors, dp_cp), optimizers[0].tensors)};
    fp8_shard.elements = std::min(fp8_shard.elements, optimizers[0].elements);
  }
  return out;
}

/// The parameters gathered after the step (distributed optimizer): the dense ones over
/// dp x cp (FP8 ones in 1 byte), the experts' over the expert data-parallel group.
void add_param_gathers(StagePlan& stage, const Workload& w, const Dims& x, const Layout& layout,
                       std::int64_t dense, std::int64_t experts, std::int64_t fp8_params,
                       std::int32_t step_index) {
  const TrainingConfig& tc = w.training;
  const std::int64_t dp_cp = x.dp * x.cp;
  std::vector<Op>& ops = stage.step_ops;
  // Megatron-FSDP's optim_grads_params (and FSDP2) keep the parameters sharded after the step:
  // the next forward gathers them unit by unit.
  const bool sharded_params =
      tc.fsdp() && fsdp_sharding(tc) == DpSharding::kOptimGradsParams;
  if (tc.use_distributed_optimizer && dp_cp > 1 && !sharded_params) {
    // With fp8_param_gather the FP8 parameters are gathered in 1 byte, the rest in 16 bits;
    // with fp4_param_gather the NVFP4 ones in half a byte (their packed row-wise data,
    // param_and_grad_buffer.py _compute_nvfp4_packed_layout; no scales: every rank computes
    // them from the reduced amaxes).
    const std::int64_t quantized = tc.fp4_param_gather ? fp8_params / 2 : fp8_params;
    Op& gather = ops.emplace_back();
    gather.name = "dp_param_all_gather";
    gather.phase = Phase::kStep;
    gather.stream = Stream::kDataComm;
    gather.shape = CollectiveOp{CollectiveKind::kAllGather, CommGroup::kData,
                                (dense - fp8_params) * x.e + quantized, dp_cp,
                                layout.dp_nodes(stage.stage)};
    gather.deps.push_back(step_index);
  }
  if (tc.use_distributed_optimizer && x.edp > 1 && experts > 0) {
    Op& gather = ops.emplace_back();
    gather.name = "edp_param_all_gather";
    gather.phase = Phase::kStep;
    gather.stream = Stream::kDataComm;
    gather.shape = CollectiveOp{CollectiveKind::kAllGather, CommGroup::kExpertData,
                                experts * x.e, x.edp, layout.edp_nodes(x, stage.stage)};
    gather.deps.push_back(step_index);
  }
}

/// Muon's matrices of a stage (optimizer "muon"), and their share of each optimizer's shard:
/// every 2-D weight but the embeddings and the output layer (_is_muon_excluded). Muon runs
/// without the distributed optimizer (check_step), so the shards are whole.
std::vector<detail::MuonMatrix> assign_muon(const StagePlan& stage, const Workload& w,
                                            const Dims& x, StageShards& shards) {
  std::vector<detail::MuonMatrix> matrices;
  if (w.training.optimizer != OptimizerKind::kMuon) return matrices;
  for (const ChunkPlan& c : stage.chunks) {
    const std::vector<detail::MuonMatrix> m =
        detail::chunk_muon_matrices(x, c, w.training.muon_split_qkv);
    matrices.insert(matrices.end(), m.begin(), m.end());
    // The parameters: the fused QKV weight is one however orthogonalize splits it.
    for (const detail::MuonMatrix& mx : detail::chunk_muon_matrices(x, c, false)) {
      detail::OptimizerShard& o = shards.optimizers[mx.expert ? 1 : 0];
      o.muon_elements += mx.elements();
      ++o.muon_tensors;
    }
  }
  return matrices;
}

/// Megatron's train_step (megatron/training/training.py) starts every step with
/// model_chunk.zero_grad_buffer() for each chunk: _ParamAndGradBuffer.reset
/// (megatron/core/distributed/param_and_grad_buffer.py) zeroes grad_data, every parameter of
/// the chunk in the buffer's dtype (grad_bytes), one kernel per buffer (the dense one, and the
/// experts' where the chunk has experts). optimizer.zero_grad() after it sets the main grads
/// to None (no kernel). Charged to the end of the step before, after the optimizer has read
/// the gradients, on the compute stream where the next step's start runs it. Megatron-FSDP's
/// and FSDP2's sharded buffers are not charged here.
void add_grad_buffer_zeroing(StagePlan& stage, const Workload& w, std::int64_t experts,
                             std::int32_t step_index) {
  const TrainingConfig& tc = w.training;
  if (tc.fsdp() || stage.parameters <= 0) return;
  const auto buffers =
      static_cast<std::int64_t>(stage.chunks.size()) * (experts > 0 ? 2 : 1);
  Op& op = stage.step_ops.emplace_back(
      detail::step_compute_op("zero_grad_buffer", stage.parameters * tc.grad_bytes(), buffers));
  op.deps = {step_index};
}

/// The step ops of `stage`; `dfa`: the stage's buckets under Apex DistributedFusedAdam (null
/// with Megatron-Core's optimizer).
void build_step_ops(StagePlan& stage, const Workload& w, const Dims& x, const Layout& layout,
                    const detail::DfaLayout* dfa) {
  if (dfa != nullptr) {
    build_dfa_step_ops(stage, w, x, layout, *dfa);
    return;
  }
  const TrainingConfig& tc = w.training;
  std::vector<Op>& ops = stage.step_ops;
  const std::vector<std::int32_t> step_deps = add_grad_all_reduces(stage, w, x, layout);
  const std::int64_t dp_cp = x.dp * x.cp;
  std::int64_t experts = 0;
  for (const ChunkPlan& c : stage.chunks) experts += chunk_expert_parameters(w, stage.stage, c.chunk);
  const std::int64_t dense = stage.parameters - experts;
  // FP8 parameters (fp8_param_gather): the linears' weights, FP8 on every rank, their master
  // shards quantized by the optimizer and gathered in 1 byte. MXFP8 parameters are not
  // (reuse_grad_buf_for_mxfp8_param_ag, distrib_optimizer.py
  // _copy_main_params_to_param_buffer): every shard is copied in bf16 into the gradient
  // buffer and gathered there in 16 bits, then quantized (add_fp8_weight_casts).
  // NVFP4 parameters (fp4_param_gather) likewise, gathered in half a byte.
  const std::int64_t fp8_params = (tc.fp8_param_gather && !x.fp8_mx) || tc.fp4_param_gather
                                      ? fp8_weight_elements(w, stage.stage)
                                      : 0;
  StageShards shards = stage_shards(stage, w, x, dense, experts, fp8_params);
  const std::vector<detail::MuonMatrix> muon = assign_muon(stage, w, x, shards);
  const detail::MuonGroups muon_groups{
      .tensor = {.group = CommGroup::kTensor, .group_size = x.t, .nodes_spanned = x.tp_nodes},
      .expert_tensor = {.group = CommGroup::kExpertTensor,
                        .group_size = x.etp,
                        .nodes_spanned = x.etp_nodes}};
  const detail::OptimizerShard& fp8_shard = shards.fp8_shard;
  const std::int64_t fp8_tensors = shards.fp8_tensors;
  std::int32_t step_index = detail::append_optimizer_ops(
      ops, w, shards.optimizers, fp8_shard, step_deps,
      layout.grad_stats(tc.use_distributed_optimizer, x, stage.stage), &muon, &muon_groups);
  const CollectiveOp dp_amax{.kind = CollectiveKind::kAllReduce,
                             .group = CommGroup::kData,
                             .group_size = dp_cp,
                             .nodes_spanned = layout.dp_nodes(stage.stage)};
  if (fp8_params > 0 && tc.fp4_param_gather) {
    // quantize_nvfp4_param_shard over the data-parallel group.
    step_index = detail::append_nvfp4_param_quantization(ops, fp8_shard, fp8_tensors, fp8_params,
                                                         dp_amax, step_index);
  } else if (fp8_params > 0) {
    // quantize_param_shard over the data-parallel group (dp x cp: the optimizer's shards).
    step_index = detail::append_fp8_param_quantization(ops, tc.fp8_recipe, fp8_shard,
                                                       fp8_tensors, fp8_params, dp_amax,
                                                       step_index);
  }
  add_param_gathers(stage, w, x, layout, dense, experts, fp8_params, step_index);
  if (x.fp8) add_fp8_weight_casts(stage, w, x, step_index);
  add_grad_buffer_zeroing(stage, w, experts, step_index);
}

}  // namespace

WorkloadPlan decompose(const Workload& w) {
  const Dims x = detail::dims_of(w);
  const Layout layout{.ranks = RankGenerator(
                          ParallelSizes{.tp = x.t, .cp = x.cp, .dp = x.dp, .pp = x.p}),
                      .gpus_per_node = std::max<std::int64_t>(1, w.system.nvlink_domain()),
                      .p = x.p};

  WorkloadPlan plan;
  plan.stages.resize(static_cast<std::size_t>(x.p));
  for (std::int32_t r = 0; r < static_cast<std::int32_t>(x.p); ++r) {
    StagePlan& stage = plan.stages[static_cast<std::size_t>(r)];
    stage.stage = r;
    stage.chunks.reserve(static_cast<std::size_t>(x.v));
    // The stage's own expert groups: where an NVLink domain boundary cuts through the stage,
    // its most split EP group prices the dispatcher's collectives.
    detail::Dims xs = x;
    detail::set_stage_expert_nodes(xs, w, r);
    for (std::int32_t c = 0; c < static_cast<std::int32_t>(x.v); ++c) {
      stage.chunks.push_back(build_chunk(w, xs, layout, r, c));
      stage.parameters += stage.chunks.back().parameters;
    }
    std::int64_t experts = 0;
    for (std::int32_t c = 0; c < static_cast<std::int32_t>(x.v); ++c) {
      experts += chunk_expert_parameters(w, r, c);
    }
    // Weights, gradients, optimizer states and communication buffers (TE's userbuffers,
    // DeepEP's): held the whole step.
    // Apex DistributedFusedAdam: the stage's buckets, once, for its chunks' collectives, its
    // memory and its step.
    std::optional<detail::DfaLayout> dfa;
    if (w.training.optimizer_impl == OptimizerImpl::kApexDistributedFusedAdam) {
      dfa = detail::dfa_layout(w, x, r);
      for (ChunkPlan& chunk : stage.chunks) {
        detail::add_dfa_chunk_ops(chunk, *dfa, layout.dp_group(x, r));
      }
    }
    StaticMemory held =
        dfa ? detail::dfa_static_memory(*dfa)
            : static_memory(w.training, stage.parameters, fp8_weight_elements(w, r), experts);
    held.comm_buffer_bytes = comm_buffer_bytes(w, experts);
    if (!dfa) add_step_states(w, r, held);
    stage.static_bytes = held.total();
    build_step_ops(stage, w, x, layout, dfa ? &*dfa : nullptr);
  }
  return plan;
}

}  // namespace stepsim
