// The host's issue of an action under per-layer CUDA graphs (see cuda_graph_issue.hpp).

#include "cuda_graph_issue.hpp"

#include <sstream>

#include "stepsim/layout/moe_layout.hpp"

namespace stepsim::sim {

namespace {

/// The CudaGraphModule an op of a layer belongs to: "attn", or the MLP block's "mlp" (dense
/// layer) or "moe" (MoE layer).
const char* module_of(bool in_attention, bool moe_layer) {
  if (in_attention) return "attn";
  return moe_layer ? "moe" : "mlp";
}

bool captures(const std::vector<std::string>& modules, const char* module) {
  if (modules.empty()) return true;  // the whole layer
  for (const std::string& m : modules) {
    if (m == module) return true;
  }
  return false;
}

}  // namespace

GraphIssue graph_issue_of(const std::vector<Op>& ops, const Workload& w, bool backward) {
  std::vector<std::string> modules;
  std::istringstream in(w.training.cuda_graph_modules);
  for (std::string m; in >> m;) modules.push_back(m);
  const std::vector<bool> moe_layer = moe_layer_pattern(w.model);
  const auto is_moe = [&](std::int32_t l) {
    return l >= 0 && static_cast<std::size_t>(l) < moe_layer.size() &&
           moe_layer[static_cast<std::size_t>(l)];
  };
  GraphIssue out;
  std::int32_t layer = -1;
  bool in_attention = false;
  const char* run = nullptr;  // the module of the graph being replayed, null: eager
  std::int32_t run_layer = -1;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    if (op.layer != layer) {
      layer = op.layer;
      in_attention = !backward;  // forward: attention first; backward: the MLP block first
    }
    if (backward && op.name == "attn_bda_bwd") in_attention = true;
    const char* module = module_of(in_attention, is_moe(layer));
    if (!backward && op.name == "attn_bda") in_attention = false;  // after it: the MLP block
    const bool captured = layer >= 0 && captures(modules, module);
    if (!captured) {
      ++out.eager_kernels;
      run = nullptr;
      continue;
    }
    const bool same = run != nullptr && run_layer == layer && (modules.empty() || run == module);
    if (!same) {
      ++out.graph_launches;
      if (i == 0) out.first_is_graph = true;
    }
    run = module;
    run_layer = layer;
  }
  return out;
}

}  // namespace stepsim::sim
