// The scenario schema's rows for training: the optimizer (Adam or Muon) and CUDA graphs (see
// schema.hpp; rows.hpp has the macros). Megatron-LM's flags and defaults:
// megatron/training/arguments.py, megatron/core/optimizer/optimizer_config.py (muon_*),
// megatron/core/transformer/transformer_config.py (cuda_graph_*).

#include "rows.hpp"

namespace stepsim::schema_rows {
namespace {

const std::array kRows = {
    KeyInfo{STEPSIM_ENUM("training.optimizer", training.optimizer, OptimizerKind),
            .choices = kOptimizerKindNames, .sweep = Sweep::kListed,
            .flags = "--optimizer", .default_text = "\"adam\"",
            .check = "\"muon\" needs bf16 (emerging optimizer with fp16 is not supported); not "
                     "with use_distributed_optimizer (Megatron then runs Muon in its "
                     "LayerWiseDistributedOptimizer: not modelled yet) or optimizer_impl "
                     "\"apex_distributed_fused_adam\"",
            .doc = "Adam everywhere, or Muon for the 2-D weights (Newton-Schulz orthogonalized "
                   "momentum) with Adam for embeddings, output layer, norms and biases"},
    KeyInfo{STEPSIM_INT("training.muon_num_ns_steps", training.muon_num_ns_steps),
            .sweep = Sweep::kListed, .flags = "--muon-num-ns-steps", .default_text = "5",
            .check = ">= 1 (num_ns_steps must be at least 1); read only with optimizer \"muon\"",
            .doc = "Newton-Schulz iterations per matrix and step (three GEMMs each)"},
    KeyInfo{STEPSIM_ENUM("training.muon_tp_mode", training.muon_tp_mode, MuonTpMode),
            .choices = kMuonTpModeNames, .sweep = Sweep::kListed, .flags = "--muon-tp-mode",
            .default_text = "\"duplicated\"",
            .check = "\"blockwise\", \"duplicated\" or \"distributed\"; read only with optimizer "
                     "\"muon\"",
            .doc = "a tensor-parallel weight's Newton-Schulz: each shard alone (blockwise), the "
                   "whole matrix all-gathered on every TP rank (duplicated), or the shards' "
                   "Gram matrices all-reduced every iteration (distributed)"},
    KeyInfo{STEPSIM_BOOL("training.muon_split_qkv", training.muon_split_qkv),
            .flags = "--muon-no-split-qkv=false", .default_text = "true",
            .check = "read only with optimizer \"muon\"",
            .doc = "the fused QKV weight orthogonalized as its q, k and v parts (three "
                   "matrices) rather than one"},
    KeyInfo{STEPSIM_BOOL("training.muon_nesterov", training.muon_nesterov),
            .flags = "--muon-nesterov=true", .default_text = "false",
            .check = "read only with optimizer \"muon\"",
            .doc = "Nesterov momentum: one more elementwise kernel per matrix"},
    KeyInfo{STEPSIM_ENUM("training.cuda_graph_impl", training.cuda_graph_impl, CudaGraphImpl),
            .choices = kCudaGraphImplNames, .sweep = Sweep::kListed,
            .flags = "--cuda-graph-impl --enable-cuda-graph=local "
                     "--external-cuda-graph=transformer_engine",
            .default_text = "\"none\"",
            .check = "cuda_graph_modules empty with \"full_iteration\"; full recompute only "
                     "with \"full_iteration\"; not with cpu_offloading",
            .doc = "CUDA graphs: per-layer graphs (Megatron-Core's own, or Transformer "
                   "Engine's make_graphed_callables) or the whole forward-backward in one; a "
                   "captured region is replayed with one launch instead of its kernels' host "
                   "issue"},
    KeyInfo{.key = "training.cuda_graph_modules",
            .kind = KnobKind::kString,
            .flags = "--cuda-graph-modules --cuda-graph-scope",
            .default_text = "[] (the whole layer)",
            .check = "a list of \"attn\", \"mlp\", \"moe\", \"moe_router\", \"moe_preprocess\", "
                     "\"mamba\"; \"moe\" and \"moe_router\" only for MoE models and not together; "
                     "\"moe\" only with moe_pad_expert_input_to_capacity; \"moe_preprocess\" "
                     "needs \"moe_router\"; \"mlp\" needs a dense layer; empty with "
                     "\"full_iteration\"",
            .doc = "what a per-layer graph captures (TransformerLayer._forward_attention, "
                   "_forward_mlp, the MoE layer up to its router); empty: the whole layer"},
    KeyInfo{STEPSIM_INT("training.cuda_graph_warmup_steps", training.cuda_graph_warmup_steps),
            .flags = "--cuda-graph-warmup-steps", .default_text = "3",
            .check = ">= 0; read only with cuda_graph_impl other than \"none\"",
            .doc = "eager steps before capture: a steady-state step (what stepsim predicts) "
                   "replays the graphs; these steps are not priced",
            .zero_allowed = true},
};

}  // namespace

std::span<const KeyInfo> training_step_keys() { return kRows; }

}  // namespace stepsim::schema_rows
