#pragma once
// What the host issues for one action's ops under CUDA graphs (training.cuda_graph_impl
// "local" or "transformer_engine"): the captured parts of each transformer layer replay as
// one graph launch, the rest is issued kernel by kernel. Private to stepsim_graph.

#include <cstdint>
#include <string>
#include <vector>

#include "stepsim/config/scenario.hpp"
#include "stepsim/ops/ops.hpp"

namespace stepsim::sim {

/// An action's host work: eager kernels and graph replays, and whether its first issue (what
/// its first kernel waits for) is a replay.
struct GraphIssue {
  std::size_t eager_kernels = 0;
  std::size_t graph_launches = 0;
  bool first_is_graph = false;
};

/// The captured regions of `ops` (one action's, forward or backward) under per-layer graphs
/// with `modules` (training.cuda_graph_modules; empty: the whole layer). A transformer
/// layer's forward runs TransformerLayer._forward_attention (its ops up to "attn_bda") then
/// _forward_mlp; its backward the reverse (from "attn_bda_bwd" on: the attention's). A run of
/// consecutive captured ops of one layer and module is one graph: TE's make_graphed_callables
/// and Megatron-Core's CudaGraphManager replay a captured callable with one graph launch.
GraphIssue graph_issue_of(const std::vector<Op>& ops, const Workload& w, bool backward);

}  // namespace stepsim::sim
