// The optimizer (Muon) and CUDA graphs: Megatron-LM's rules (megatron/training/arguments.py
// validate_args, megatron/core/transformer/transformer_config.py __post_init__,
// megatron/core/optimizer/__init__.py _get_megatron_emerging_optimizer) and what stepsim does
// not model yet.

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "stepsim/layout/moe_layout.hpp"
#include "check_internal.hpp"

namespace stepsim::detail {

namespace {

void check_muon(const Workload& w, Checker& check) {
  const TrainingConfig& t = w.training;
  if (t.optimizer != OptimizerKind::kMuon) return;
  const std::string key = "training.optimizer";
  if (t.params_dtype == DType::kFp16) {
    check.fail(key, "=\"muon\" needs bf16 or fp32: emerging optimizer with fp16 is not supported "
                    "(megatron/core/optimizer/__init__.py)");
  }
  if (t.use_distributed_optimizer) {
    // validate_args turns use_distributed_optimizer into use_layer_wise_distributed_optimizer
    // for emerging optimizers (dist_muon): whole matrices dealt out over the DP ranks.
    check.fail(key, "=\"muon\" with use_distributed_optimizer runs Megatron's "
                    "LayerWiseDistributedOptimizer, which stepsim does not model yet");
  }
  if (t.optimizer_impl != OptimizerImpl::kMegatron) {
    check.fail(key, "=\"muon\" is Megatron-Core's emerging optimizer, not "
                    "optimizer_impl=\"apex_distributed_fused_adam\"");
  }
  if (t.muon_num_ns_steps < 1) {
    check.fail("training.muon_num_ns_steps",
               "=" + str(t.muon_num_ns_steps) + " must be >= 1 (num_ns_steps must be at least 1)");
  }
}

std::vector<std::string> modules_of(const TrainingConfig& t) {
  std::vector<std::string> out;
  std::istringstream in(t.cuda_graph_modules);
  for (std::string m; in >> m;) out.push_back(m);
  return out;
}

/// TransformerConfig.__post_init__'s per-layer scope rules (local and transformer_engine).
void check_graph_modules(const Workload& w, const std::vector<std::string>& modules,
                         Checker& check) {
  const ModelConfig& m = w.model;
  const TrainingConfig& t = w.training;
  const std::string key = "training.cuda_graph_modules";
  const auto has = [&](const char* name) {
    return std::find(modules.begin(), modules.end(), name) != modules.end();
  };
  if (has("moe") && has("moe_router")) {
    check.fail(key, " must not contain both moe and moe_router");
  }
  // The local implementation captures moe_preprocess with moe_router and adds it itself.
  if (has("moe_preprocess") && !has("moe_router") && t.cuda_graph_impl != CudaGraphImpl::kLocal) {
    check.fail(key, ": moe_preprocess cuda graph is only supported with moe_router cuda graph");
  }
  if (!m.moe() || m.num_experts <= 1) {
    if (has("moe") || has("moe_router")) {
      check.fail(key, ": moe cuda graph is only supported for MoE");
    }
  } else {
    const std::vector<bool> pattern = moe_layer_pattern(m);
    if (has("mlp") && std::all_of(pattern.begin(), pattern.end(), [](bool b) { return b; })) {
      check.fail(key, ": mlp cuda graph is only supported for dense layers, but not found in "
                      "the model");
    }
    if (has("moe") && (t.moe_expert_capacity_factor <= 0 || !t.moe_pad_expert_input_to_capacity)) {
      check.fail(key, ": moe cuda graph is only supported with drop-padding MoE "
                      "(moe_expert_capacity_factor and moe_pad_expert_input_to_capacity)");
    }
  }
  if (has("moe_router") || has("moe_preprocess")) {
    check.fail(key, ": capturing the MoE layer up to its router (moe_router, moe_preprocess) is "
                    "not modelled yet (attn, mlp, moe or the whole layer are)");
  }
  if (modules.empty() && m.moe() && !t.moe_pad_expert_input_to_capacity) {
    check.fail(key, "=[] (the whole layer) on MoE layers whose dispatcher copies token counts "
                    "to the host (no moe_pad_expert_input_to_capacity) is not modelled yet");
  }
  if (has("mamba") && !w.model.hybrid()) {
    check.fail(key, ": \"mamba\" captures a Mamba layer, which this model does not have");
  }
}

void check_cuda_graphs(const Workload& w, Checker& check) {
  const TrainingConfig& t = w.training;
  const std::vector<std::string> modules = modules_of(t);
  if (t.cuda_graph_impl == CudaGraphImpl::kNone) return;
  const std::string key = "training.cuda_graph_impl";
  const std::string impl = "=\"" + std::string(to_string(t.cuda_graph_impl)) + "\"";
  if (t.cuda_graph_impl == CudaGraphImpl::kFullIteration && !modules.empty()) {
    check.fail("training.cuda_graph_modules",
               " must be empty when cuda_graph_impl=\"full_iteration\"");
  }
  if (t.cuda_graph_warmup_steps < 0) {
    check.fail("training.cuda_graph_warmup_steps",
               "=" + str(t.cuda_graph_warmup_steps) + " must be >= 0");
  }
  if (t.recompute_granularity == RecomputeGranularity::kFull &&
      t.cuda_graph_impl != CudaGraphImpl::kFullIteration) {
    check.fail(key, impl + ": full recompute is only supported with full iteration CUDA graph");
  }
  if (t.cuda_graph_impl != CudaGraphImpl::kFullIteration) check_graph_modules(w, modules, check);
}

/// Muon's matrices and the CUDA graphs' captured kernels are counted over GPT layers; the
/// layers hybrid patterns, MTP and FSDP add are not in those counts yet.
void check_step_beside_new_layers(const Workload& w, Checker& check) {
  const TrainingConfig& t = w.training;
  const ModelConfig& m = w.model;
  std::vector<std::string> beside;
  if (m.hybrid()) beside.emplace_back("hybrid_layer_pattern");
  if (m.mtp_num_layers > 0) beside.emplace_back("mtp_num_layers");
  if (t.use_megatron_fsdp) beside.emplace_back("use_megatron_fsdp");
  if (t.use_torch_fsdp2) beside.emplace_back("use_torch_fsdp2");
  for (const std::string& with : beside) {
    if (t.optimizer == OptimizerKind::kMuon) {
      check.fail("training.optimizer", "=\"muon\" with " + with + " is not modelled yet");
    }
    if (t.cuda_graph_impl != CudaGraphImpl::kNone) {
      check.fail("training.cuda_graph_impl", "=\"" + std::string(to_string(t.cuda_graph_impl)) +
                                                 "\" with " + with + " is not modelled yet");
    }
  }
}

}  // namespace

void check_step(const Workload& w, Checker& check) {
  check_muon(w, check);
  check_cuda_graphs(w, check);
  check_step_beside_new_layers(w, check);
}

}  // namespace stepsim::detail
