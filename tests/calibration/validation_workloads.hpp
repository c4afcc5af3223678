#pragma once
// Small, valid workloads for the validator's tests (built by hand, as the loader would), and
// a cost model whose every op takes a fixed time, so that a serialised prediction orders the
// work of a rank strictly.

#include <string>

#include "stepsim/cost/cost_model.hpp"
#include "stepsim/config/scenario.hpp"

namespace stepsim::calib::testing {

struct Shape {
  std::int64_t t = 1, p = 1, dp = 1, v = 1, m = 4;
  bool sequence_parallel = false;
  bool distributed_optimizer = false;
  std::int64_t experts = 0;  ///< > 0: every layer's MLP is that many top-2 experts
  std::int64_t ep = 1;       ///< expert_model_parallel_size (alltoall dispatcher)
  std::int64_t cp = 1;       ///< context_parallel_size (fused attention)
  CpCommType cp_comm = CpCommType::kP2p;
  /// cp_comm a2a+p2p: the a2a level's size (hierarchical_context_parallel_sizes [cp_a2a,
  /// cp / cp_a2a]).
  std::int64_t cp_a2a = 1;
};

inline Workload tiny_workload(const Shape& s) {
  Workload w;
  w.name = "tiny";
  ModelConfig& m = w.model;
  m.num_layers = 4;
  m.hidden_size = 64;
  m.num_attention_heads = 4;
  m.num_query_groups = 4;
  m.kv_channels = 16;
  m.ffn_hidden_size = 256;
  m.seq_length = 32;
  m.max_position_embeddings = 32;
  m.vocab_size = 256;
  m.padded_vocab_size = 256;
  TrainingConfig& t = w.training;
  t.tensor_model_parallel_size = s.t;
  t.pipeline_model_parallel_size = s.p;
  t.data_parallel_size = s.dp;
  t.world_size = s.t * s.cp * s.p * s.dp;
  t.context_parallel_size = s.cp;
  t.cp_comm_type = s.cp_comm;
  if (s.cp_comm == CpCommType::kA2aP2p) {
    t.hierarchical_context_parallel_sizes = {s.cp_a2a, s.cp / s.cp_a2a};
  }
  if (s.cp > 1) m.attention_backend = AttentionBackend::kFused;  // CP needs TE's attention
  t.virtual_pipeline_model_parallel_size = s.v;
  t.num_layers_per_virtual_pipeline_stage = s.v > 1 ? m.num_layers / (s.p * s.v) : 0;
  t.microbatch_group_size_per_vp_stage = s.v > 1 ? s.p : 0;
  t.overlap_p2p_comm = s.v > 1;  // Megatron: interleaving with p = 2 needs overlap_p2p_comm
  t.sequence_parallel = s.sequence_parallel;
  t.use_distributed_optimizer = s.distributed_optimizer;
  t.micro_batch_size = 1;
  t.num_microbatches = s.m;
  t.global_batch_size = s.m * s.dp;
  t.params_dtype = DType::kFp32;
  if (s.experts > 0) {
    m.num_experts = s.experts;
    m.moe_router_topk = 2;
    m.moe_ffn_hidden_size = 128;
    t.expert_model_parallel_size = s.ep;
    t.expert_tensor_parallel_size = s.t;
    t.moe_token_dispatcher_type = MoeDispatcher::kAllToAll;
    t.moe_grouped_gemm = true;
    t.expert_data_parallel_size = t.world_size / (s.p * s.ep * s.t);
  }
  SystemConfig& sys = w.system;
  sys.name = "test";
  sys.gpu_name = "test";
  sys.peak_flops_fp32 = sys.peak_flops_fp16 = sys.peak_flops_bf16 = 1e12;
  sys.memory_bytes = std::int64_t{1} << 34;
  sys.hbm_bandwidth_bytes_per_s = 1e11;
  sys.gpus_per_node = 8;
  sys.nics_per_node = 1;
  sys.intra_node = LinkSpec{1e10, 1e-6};
  sys.inter_node = LinkSpec{1e9, 1e-5};
  return w;
}

/// Every op, collective and transfer takes `seconds`.
class FixedCost final : public CostModel {
 public:
  explicit FixedCost(double seconds) : s_(seconds) {}
  double gemm_s(const GemmOp&) const override { return s_; }
  double attention_s(const AttentionOp&) const override { return s_; }
  double memory_bound_s(const MemoryBoundOp&) const override { return s_; }
  double collective_s(const CollectiveOp&) const override { return s_; }
  double p2p_s(const P2POp&) const override { return s_; }
  std::string describe() const override { return "fixed"; }

 private:
  double s_;
};

}  // namespace stepsim::calib::testing
