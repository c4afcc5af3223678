// Megatron-LM's rules on mixture of experts and expert parallelism, and what stepsim does not
// model of them yet. Sources: megatron/training/arguments.py (validate_args: the expert
// parallelism checks), megatron/core/transformer/transformer_config.py (__post_init__),
// megatron/core/parallel_state.py (initialize_model_parallel: the expert rank generator),
// megatron/core/transformer/moe/moe_layer.py and shared_experts.py.

#include <string>
#include <string_view>
#include <utility>

#include "stepsim/base/json_fields.hpp"
#include "stepsim/layout/moe_layout.hpp"
#include "check_internal.hpp"

namespace stepsim::detail {

namespace {

constexpr std::string_view kNotModelled = " is not modelled yet";

/// The MoE keys that only apply with num_experts: each one given without it is an error.
void check_without_experts(const Workload& w, Checker& check) {
  const ModelConfig& m = w.model;
  const TrainingConfig& t = w.training;
  if (t.expert_model_parallel_size > 1) {
    // transformer_config.py: "num_moe_experts must be non None to use expert-parallel."
    check.fail("training.expert_model_parallel_size",
               "=" + str(t.expert_model_parallel_size) +
                   " needs num_experts (num_experts must be non None to use expert-parallel)");
  }
  if (m.moe_ffn_hidden_size > 0) {
    check.fail("model.moe_ffn_hidden_size",
               "=" + str(m.moe_ffn_hidden_size) +
                   " is set but num_experts is None: give num_experts or leave it out");
  }
  if (m.moe_shared_expert_intermediate_size > 0) {
    check.fail("model.moe_shared_expert_intermediate_size",
               "=" + str(m.moe_shared_expert_intermediate_size) + " needs num_experts");
  }
  if (t.moe_expert_capacity_factor > 0) {
    check.fail("training.moe_expert_capacity_factor", " needs num_experts");
  }
  if (t.moe_pad_expert_input_to_capacity) {
    check.fail("training.moe_pad_expert_input_to_capacity", "=true needs num_experts");
  }
  if (t.moe_aux_loss_coeff > 0) check.fail("training.moe_aux_loss_coeff", " needs num_experts");
  if (t.moe_load_skew != 1 || !t.moe_load_shares.empty()) {
    check.fail("training.moe_load", " needs num_experts (it is the routing of the experts)");
  }
  if (m.moe_router_score_function != MoeRouterScore::kSoftmax) {
    check.fail("model.moe_router_score_function", " is set but num_experts is None");
  }
  if (m.moe_router_enable_expert_bias) {
    check.fail("model.moe_router_enable_expert_bias", "=true needs num_experts");
  }
  if (m.moe_router_num_groups > 0) {
    check.fail("model.moe_router_num_groups", "=" + str(m.moe_router_num_groups) +
                                                  " needs num_experts");
  }
  if (m.moe_router_group_topk > 0) {
    check.fail("model.moe_router_group_topk", "=" + str(m.moe_router_group_topk) +
                                                  " needs num_experts");
  }
}

/// The router's options (transformer_config.py __post_init__): expert bias only with the
/// sigmoid-like score functions, group-limited routing over groups that divide the experts.
void check_router(const ModelConfig& m, Checker& check) {
  if (m.moe_router_enable_expert_bias &&
      m.moe_router_score_function == MoeRouterScore::kSoftmax) {
    check.fail("model.moe_router_enable_expert_bias",
               "=true with moe_router_score_function \"softmax\": Expert bias for "
               "aux-loss-free routing only supports 'sigmoid' and 'sqrtsoftplus' score "
               "functions");
  }
  const std::int64_t groups = m.moe_router_num_groups;
  if (groups > 0 && m.num_experts % groups != 0) {
    check.fail("model.moe_router_num_groups",
               "=" + str(groups) + " does not divide num_experts=" + str(m.num_experts) +
                   " (num_moe_experts should be divisible by moe_router_num_groups)");
  }
  const std::int64_t group_topk = m.moe_router_group_topk;
  if (group_topk > 0 && groups == 0) {
    check.fail("model.moe_router_group_topk",
               "=" + str(group_topk) +
                   " needs moe_router_num_groups (When using group limited routing, "
                   "moe_router_num_groups must be specified)");
  }
  if (group_topk > 0 && groups > 0 && group_topk > groups) {
    check.fail("model.moe_router_group_topk",
               "=" + str(group_topk) + " exceeds moe_router_num_groups=" + str(groups) +
                   " (moe_router_group_topk should be smaller than moe_router_num_groups)");
  }
}

/// stepsim's routing imbalance (training.moe_load): a skew factor within what one EP rank
/// can receive, or one non-negative share per expert.
void check_load(const Workload& w, Checker& check) {
  const TrainingConfig& t = w.training;
  const std::int64_t e = w.model.num_experts;
  const std::int64_t ep = t.expert_model_parallel_size;
  const std::string key = "training.moe_load";
  if (!t.moe_load_shares.empty()) {
    const auto n = static_cast<std::int64_t>(t.moe_load_shares.size());
    if (n != e) {
      check.fail(key, " has " + str(n) + " shares; give one per expert (num_experts=" + str(e) +
                          ")");
    }
    double sum = 0;
    for (std::size_t i = 0; i < t.moe_load_shares.size(); ++i) {
      const double s = t.moe_load_shares[i];
      if (s < 0) {
        check.fail(key, "[" + std::to_string(i) + "]=" + format_number(s) +
                            " is negative: a share of the routed tokens is >= 0");
      }
      sum += s;
    }
    if (!(sum > 0)) check.fail(key, " shares sum to 0: some expert must receive tokens");
    return;
  }
  const double k = t.moe_load_skew;
  if (k < 1) {
    check.fail(key, "=" + format_number(k) +
                        " is below 1: the most loaded EP rank receives at least the mean");
  } else if (k > 1 && ep <= 1) {
    check.fail(key, "=" + format_number(k) +
                        " needs expert_model_parallel_size > 1 (a skew between EP ranks)");
  } else if (ep > 0 && k > static_cast<double>(ep)) {
    check.fail(key, "=" + format_number(k) + " exceeds expert_model_parallel_size=" + str(ep) +
                        ": one EP rank cannot receive more than every routed token");
  }
}

/// The flex dispatcher's flags, with or without experts: backends, SM counts.
void check_flex_flags(const Workload& w, Checker& check) {
  const TrainingConfig& t = w.training;
  const bool flex = t.moe_token_dispatcher_type == MoeDispatcher::kFlex;
  if (t.moe_enable_deepep && !flex) {
    check.fail("training.moe_enable_deepep",
               "=true: DeepEP backend is only supported with flex token dispatcher");
  }
  if (t.moe_enable_deepep && t.moe_flex_dispatcher_backend == MoeFlexBackend::kHybridEp) {
    check.fail("training.moe_enable_deepep",
               "=true with moe_flex_dispatcher_backend \"hybridep\": Only one backend is "
               "supported for flex token dispatcher");
  }
  if (t.moe_flex_dispatcher_backend == MoeFlexBackend::kNcclEp && !flex) {
    check.fail("training.moe_flex_dispatcher_backend",
               "=\"ncclep\" requires moe_token_dispatcher_type \"flex\"");
  }
  for (const auto& [key, sms] :
       {std::pair<std::string_view, std::int64_t>{"training.moe_flex_dispatcher_num_sms",
                                                  t.moe_flex_dispatcher_num_sms},
        std::pair<std::string_view, std::int64_t>{"training.moe_deepep_num_sms",
                                                  t.moe_deepep_num_sms}}) {
    if (sms <= 0) continue;
    // Buffer.set_num_sms: "The SM count must be even" (a channel is a pair of SMs).
    if (sms % 2 != 0)
      check.fail(std::string(key), "=" + str(sms) + " must be even (The SM count must be even)");
    if (w.system.sm_count > 0 && sms >= w.system.sm_count) {
      check.fail(std::string(key),
                 "=" + str(sms) + " must be below system.sm_count=" + str(w.system.sm_count));
    }
  }
  if (t.moe_flex_dispatcher_num_sms > 0 && t.moe_deepep_num_sms > 0 &&
      t.moe_flex_dispatcher_num_sms != t.moe_deepep_num_sms) {
    check.fail("training.moe_deepep_num_sms", "=" + str(t.moe_deepep_num_sms) +
                                                  " is deprecated and ignored beside "
                                                  "moe_flex_dispatcher_num_sms=" +
                                                  str(t.moe_flex_dispatcher_num_sms) +
                                                  ": give one of them");
  }
}

/// The flex dispatcher of a model with experts: the backends stepsim prices, and the groups,
/// dtypes and routing DeepEP's kernels take.
void check_deepep(const Workload& w, Checker& check) {
  const TrainingConfig& t = w.training;
  const std::int64_t etp = t.expert_tensor_parallel();
  const std::int64_t group = etp * t.expert_model_parallel_size;
  // The flex backends stepsim cannot price, and why.
  struct Unpriced {
    MoeFlexBackend backend;
    std::string_view why;
  };
  for (const Unpriced& u :
       {Unpriced{MoeFlexBackend::kHybridEp,
                 "HybridEP's kernels have no published bandwidth per link to price them by"},
        Unpriced{MoeFlexBackend::kNcclEp,
                 "NCCL's expert-parallel kernels have no published bandwidth"}}) {
    if (t.moe_flex_dispatcher_backend != u.backend) continue;
    check.fail("training.moe_flex_dispatcher_backend",
               "=\"" + std::string(to_string(u.backend)) + "\"" + std::string(kNotModelled) + " (" +
                   std::string(u.why) + "; give \"" +
                   std::string(to_string(MoeFlexBackend::kDeepEp)) + "\")");
    return;
  }
  if (group <= 1) {
    check.fail("training.moe_token_dispatcher_type",
               "=\"flex\" with expert_tensor_parallel_size * expert_model_parallel_size = " +
                   str(group) + ": DeepEP dispatcher requires TPxEP > 1");
    return;
  }
  if (t.moe_pad_expert_input_to_capacity) {
    check.fail("training.moe_pad_expert_input_to_capacity",
               "=true: Flex token dispatcher with deepep backend does not support "
               "moe_pad_expert_input_to_capacity");
  }
  // DeepEP's combine kernels are bf16 only (intranode SWITCH_TYPES, internode's
  // EP_HOST_ASSERT(type == CUDA_R_16BF)).
  if (t.params_dtype != DType::kBf16) {
    check.fail("training.moe_token_dispatcher_type",
               "=\"flex\" needs bf16: DeepEP's combine kernels take bf16 tokens only");
  }
  // DeepEP's normal kernels: one node of 2, 4 or 8 GPUs over NVLink (SWITCH_RANKS), or 8
  // GPUs (NUM_MAX_NVL_PEERS) on each of 2, 3, 4, 6, 8, 12, 16, 18 or 20 nodes
  // (SWITCH_RDMA_RANKS). The expert TP x EP group is consecutive global ranks (the expert
  // rank generator's order tp-ep-dp-pp), so its GPUs fill whole nodes.
  const std::int64_t gpn = w.system.gpus_per_node;
  const bool inter = group > 8;
  // gpus_per_node 0: the system did not load (its own error says why).
  if (gpn > 0 && !deepep_group_supported(group, etp, gpn)) {
    check.fail("training.moe_token_dispatcher_type",
               "=\"flex\" over expert_tensor_parallel_size * expert_model_parallel_size = " +
                   str(etp) + " * " + str(t.expert_model_parallel_size) +
                   " GPUs with system.gpus_per_node=" + str(gpn) +
                   ": DeepEP's kernels take 2, 4 or 8 GPUs of one node, or 8 GPUs on each of "
                   "2, 3, 4, 6, 8, 12, 16, 18 or 20 nodes (an expert TP group inside a node)");
  }
  // internode dispatch: EP_DEVICE_ASSERT(num_topk <= 32), num_topk = etp * moe_router_topk.
  if (inter && etp * w.model.moe_router_topk > 32) {
    check.fail("model.moe_router_topk",
               "=" + str(w.model.moe_router_topk) +
                   " with expert_tensor_parallel_size=" + str(etp) +
                   " and the flex dispatcher across nodes: DeepEP's internode "
                   "dispatch takes at most 32 destinations per token (etp * topk)");
  }
  if (t.moe_shared_expert_overlap && w.model.moe_shared_expert_intermediate_size > 0 &&
      w.system.sm_count <= 0) {
    check.fail("system.sm_count",
               " must be given with moe_shared_expert_overlap and the flex dispatcher (the "
               "shared experts run on the SMs DeepEP leaves)");
  }
}

/// The flex token dispatcher and its DeepEP backend. Megatron-Core's rules
/// (transformer_config.py __post_init__; token_dispatcher.py MoEFlexTokenDispatcher), DeepEP's
/// (deep_ep/buffers/legacy.py, csrc/kernels/legacy/: the group sizes its kernels are built
/// for, bf16 combine, the even SM count), and what stepsim does not model yet.
void check_flex(const Workload& w, Checker& check) {
  check_flex_flags(w, check);
  if (w.training.moe_token_dispatcher_type != MoeDispatcher::kFlex || !w.model.moe()) return;
  check_deepep(w, check);
}

/// The experts' grid and sizes: EP, expert TP, top-k, the layer pattern, biases, shared
/// experts, sequence parallelism, the world over expert TP x EP x PP.
void check_expert_grid(const Workload& w, Checker& check) {
  const ModelConfig& m = w.model;
  const TrainingConfig& t = w.training;
  const std::int64_t e = m.num_experts;
  const std::int64_t ep = t.expert_model_parallel_size;
  const std::int64_t etp = t.expert_tensor_parallel();
  const std::int64_t tp = t.tensor_model_parallel_size;
  // arguments.py: "Number of experts should be a multiple of expert model parallel_size."
  if (ep > 0 && e % ep != 0) {
    check.fail("training.expert_model_parallel_size",
               "=" + str(ep) + " does not divide num_experts=" + str(e) +
                   " (Number of experts should be a multiple of expert model parallel_size)");
  }
  if (m.moe_router_topk > e) {
    check.fail("model.moe_router_topk", "=" + str(m.moe_router_topk) +
                                            " exceeds num_experts=" + str(e) +
                                            " (the router's top-k picks among the experts)");
  }
  if (m.num_layers > 0) {
    const auto pattern = parse_moe_layer_freq(m.moe_layer_freq, m.num_layers);
    if (!pattern) {
      for (const Error& err : pattern.errors()) check.fail(err.key, err.message);
    }
  }
  const std::int64_t moe_f = m.moe_ffn();
  if (etp > 0 && moe_f > 0 && moe_f % etp != 0) {
    check.fail("training.expert_tensor_parallel_size",
               "=" + str(etp) + " does not divide moe_ffn_hidden_size=" + str(moe_f));
  }
  // transformer_config.py: "Bias in Moe is only supported when ETP==1".
  if (m.add_bias_linear && etp > 1) {
    check.fail("training.expert_tensor_parallel_size",
               "=" + str(etp) +
                   " with add_bias_linear=true: Bias in Moe is only supported when ETP==1 "
                   "(give disable_bias_linear, i.e. add_bias_linear=false)");
  }
  const std::int64_t shared = m.moe_shared_expert_intermediate_size;
  if (shared > 0) {
    // shared_experts.py: "bias is not supported in the shared experts".
    if (m.add_bias_linear) {
      check.fail("model.moe_shared_expert_intermediate_size",
                 "=" + str(shared) +
                     " with add_bias_linear=true: bias is not supported in the shared experts, "
                     "please set --disable-bias-linear instead");
    }
    if (tp > 0 && shared % tp != 0) {
      check.fail("model.moe_shared_expert_intermediate_size",
                 "=" + str(shared) + " is not divisible by tensor_model_parallel_size=" +
                     str(tp));
    }
  }
  // moe_layer.py: "During training, performance may degrade if MoE and tensor parallelism are
  // enabled without also enabling sequence parallelism." (a ValueError).
  if (tp > 1 && !t.sequence_parallel) {
    check.fail("training.sequence_parallel",
               "=false with tensor_model_parallel_size=" + str(tp) +
                   " and num_experts: Megatron-Core's MoE layer needs sequence parallelism with "
                   "tensor parallelism");
  }
  // parallel_state.py: world_size divisible by the expert tensor x model x pipeline size.
  const std::int64_t pp = t.pipeline_model_parallel_size;
  std::int64_t expert_model = 0;
  if (t.world_size > 0 && ep > 0 && etp > 0 && pp > 0 &&
      (__builtin_mul_overflow(ep, etp, &expert_model) ||
       __builtin_mul_overflow(expert_model, pp, &expert_model) ||
       t.world_size % expert_model != 0)) {
    check.fail("training.world_size",
               "=" + str(t.world_size) +
                   " is not divisible by expert_tensor_parallel_size*expert_model_parallel_size*"
                   "pipeline_model_parallel_size=" +
                   str(etp) + "*" + str(ep) + "*" + str(pp));
  }
}

/// Capacity factor, padding and load balancing (transformer_config.py), and the shared
/// experts' overlap.
void check_capacity(const Workload& w, Checker& check) {
  const TrainingConfig& t = w.training;
  const std::int64_t shared = w.model.moe_shared_expert_intermediate_size;
  // transformer_config.py: capacity factor and load balancing.
  const bool capacity = t.moe_expert_capacity_factor > 0;
  const MoeLoadBalancing lb = t.moe_router_load_balancing_type;
  if (capacity && (lb == MoeLoadBalancing::kSinkhorn || lb == MoeLoadBalancing::kQuantileBalancing)) {
    check.fail("training.moe_expert_capacity_factor",
               " only works with aux_loss, seq_aux_loss, global_aux_loss or none load balancing");
  }
  if (t.moe_pad_expert_input_to_capacity && !capacity) {
    check.fail("training.moe_pad_expert_input_to_capacity",
               "=true: moe_expert_capacity_factor must be set to use "
               "moe_pad_expert_input_to_capacity");
  }
  // transformer_config.py __post_init__: "moe_shared_expert_overlap only works with alltoall
  // or flex token dispatcher." (checked only with shared experts, as Megatron does).
  if (t.moe_shared_expert_overlap && shared > 0 &&
      t.moe_token_dispatcher_type == MoeDispatcher::kAllGather) {
    check.fail("training.moe_shared_expert_overlap",
               "=true with moe_token_dispatcher_type \"allgather\": "
               "moe_shared_expert_overlap only works with alltoall or flex token dispatcher");
  }
}

/// The MoE settings stepsim does not model yet.
void check_moe_unmodelled(const Workload& w, Checker& check) {
  const TrainingConfig& t = w.training;
  const std::int64_t shared = w.model.moe_shared_expert_intermediate_size;
  const bool capacity = t.moe_expert_capacity_factor > 0;
  const MoeLoadBalancing lb = t.moe_router_load_balancing_type;
  if (capacity && t.moe_token_dispatcher_type == MoeDispatcher::kAllGather) {
    check.fail("training.moe_expert_capacity_factor",
               std::string(" with moe_token_dispatcher_type \"allgather\"") +
                   std::string(kNotModelled) + " (give \"alltoall\")");
  }
  if (lb == MoeLoadBalancing::kSinkhorn || lb == MoeLoadBalancing::kQuantileBalancing) {
    check.fail("training.moe_router_load_balancing_type",
               std::string(lb == MoeLoadBalancing::kSinkhorn ? "=\"sinkhorn\""
                                                             : "=\"quantile_balancing\"") +
                   std::string(kNotModelled));
  }
  if (t.moe_aux_loss_coeff > 0 && lb == MoeLoadBalancing::kGlobalAuxLoss) {
    check.fail("training.moe_aux_loss_coeff",
               std::string(" with moe_router_load_balancing_type \"global_aux_loss\"") +
                   std::string(kNotModelled));
  }
  if (t.moe_aux_loss_coeff > 0 && t.context_parallel_size > 1 &&
      (lb == MoeLoadBalancing::kAuxLoss || lb == MoeLoadBalancing::kSeqAuxLoss)) {
    check.fail("training.moe_aux_loss_coeff",
               std::string(" with context_parallel_size > 1 (the tokens-per-expert all-reduce "
                           "over the TP x CP group)") +
                   std::string(kNotModelled));
  }
  if (t.moe_router_dtype == MoeRouterDtype::kFp64) {
    check.fail("training.moe_router_dtype", std::string("=\"fp64\"") + std::string(kNotModelled));
  }
  if (t.tp_comm_overlap && shared > 0) {
    check.fail("training.tp_comm_overlap",
               std::string("=true with moe_shared_expert_intermediate_size (the shared experts' "
                           "userbuffer overlap)") +
                   std::string(kNotModelled));
  }
  if (t.fp8_enabled()) check_moe_fp8(w, check);
}


/// overlap_moe_expert_parallel_comm and delay_wgrad_compute: TransformerConfig.__post_init__
/// (transformer_config.py) in its order, then what stepsim does not model yet.
void check_ep_overlap(const Workload& w, Checker& check) {
  const TrainingConfig& t = w.training;
  const std::string key = "training.overlap_moe_expert_parallel_comm";
  if (t.delay_wgrad_compute && !t.overlap_moe_expert_parallel_comm) {
    check.fail("training.delay_wgrad_compute",
               "=true: overlap_moe_expert_parallel_comm must be enabled when enabling "
               "delay_wgrad_compute");
  }
  if (!t.overlap_moe_expert_parallel_comm) return;
  const auto fail = [&](const std::string& m) { check.fail(key, "=true: " + m); };
  if (t.pipeline_model_parallel_size > 1 && !t.interleaved()) {
    fail("If enabling EP A2A overlap, virtual_pipeline_model_parallel_size must be specified "
         "when pipeline_model_parallel_size > 1");
  }
  if (t.expert_model_parallel_size <= 1) {
    fail("overlap_moe_expert_parallel_comm is only supported with expert model parallelism");
  }
  if (t.moe_token_dispatcher_type == MoeDispatcher::kAllGather) {
    fail("overlap_moe_expert_parallel_comm is supported with alltoall/flex token dispatcher");
  }
  if (t.recompute_granularity == RecomputeGranularity::kFull) {
    fail("disable full recomputation when enabling overlap_moe_expert_parallel_comm");
  } else if (t.recompute_method != RecomputeMethod::kNone) {
    fail("disable recomputation method when enabling overlap_moe_expert_parallel_comm");
  }
  if (t.params_dtype != DType::kBf16 && t.params_dtype != DType::kFp16) {
    fail("overlap_moe_expert_parallel_comm is only supported with bf16 or fp16 model");
  }
  if (t.moe_shared_expert_overlap) {
    fail("disable moe_shared_expert_overlap when enabling overlap_moe_expert_parallel_comm");
  }
  if (w.model.mtp_num_layers > 1) {
    fail("MTP supports at most one layer when enabling overlap_moe_expert_parallel_comm.");
  }
  if (t.cuda_graph_impl == CudaGraphImpl::kTransformerEngine &&
      (t.cuda_graph_modules.empty() || t.cuda_graph_modules.find("moe") != std::string::npos ||
       t.cuda_graph_modules.find("mlp") != std::string::npos)) {
    fail("CUDA graph scope on moe and mlp is not supported with "
         "overlap_moe_expert_parallel_comm");
  }
  // Megatron runs these; stepsim does not model them yet.
  const auto not_yet = [&](const std::string& what) {
    fail("with " + what + " is not modelled yet");
  };
  if (t.pipeline_model_parallel_size > 1) {
    not_yet("pipeline_model_parallel_size > 1 (combined_1f1b_schedule_for_interleaved_pipelining)");
  }
  if (t.moe_token_dispatcher_type == MoeDispatcher::kFlex) {
    not_yet("moe_token_dispatcher_type \"flex\" (the flex dispatcher's submodule split)");
  }
  if (w.model.mtp_num_layers > 0) not_yet("mtp_num_layers (the MTP layer's pairing)");
  if (t.cuda_graph_impl != CudaGraphImpl::kNone) {
    not_yet("cuda_graph_impl (graph replays inside the combined steps)");
  }
  if (t.defer_embedding_wgrad_compute) not_yet("defer_embedding_wgrad_compute");
}
}  // namespace

void check_moe(const Workload& w, Checker& check) {
  const ModelConfig& m = w.model;
  check_flex(w, check);
  check_ep_overlap(w, check);
  if (!m.moe()) {
    check_without_experts(w, check);
    return;
  }
  check_load(w, check);
  check_router(m, check);
  check_expert_grid(w, check);
  check_capacity(w, check);
  check_moe_unmodelled(w, check);
}

}  // namespace stepsim::detail
