#pragma once
// Synthetic steps whose times tests compute by hand (with hand_cost.hpp's HandCost): p stages
// of v chunks, three 1 s GEMMs over 40M-parameter weights forward and three backward, a
// gradient all-reduce over DP 2 per chunk, optionally the distributed optimizer.

#include <cstdint>

#include "stepsim/plan/decompose.hpp"
#include "stepsim/simulate/simulate.hpp"

namespace stepsim::sim {

constexpr std::int64_t kModule = 40'000'000;  // parameters per weight: Megatron's bucket size

/// A 1 s GEMM over a 40M-parameter weight.
inline Op gemm(const char* name, Phase phase) {
  Op op;
  op.name = name;
  op.phase = phase;
  op.shape = GemmOp{.m = 1, .n = kModule, .k = 1};
  return op;
}

inline Op collective(const char* name, CollectiveKind kind, std::int64_t bytes) {
  Op op;
  op.name = name;
  op.phase = Phase::kStep;
  op.stream = Stream::kDataComm;
  op.shape = CollectiveOp{kind, CommGroup::kData, bytes, 2, 1};
  return op;
}

/// p stages, v chunks, m micro-batches, dp 2, no biases. Every chunk has three modules of
/// 40M parameters (QKV, FC1, FC2): forward 3 s (one 1 s GEMM each), backward 3 s (their
/// weight gradients, FC2's first), a gradient reduction over DP of `grad_bytes` per
/// parameter (4: 0.48 s per chunk at 1 ns per byte). With `param_bytes` > 0, the
/// distributed optimizer: a 0.5 s optimizer step and a parameter all-gather of
/// `param_bytes` per parameter.
struct Step {
  Workload w;
  WorkloadPlan plan;
};

struct StepOptions {
  bool overlap_grad_reduce = false;
  std::int64_t grad_bytes = 4;
  std::int64_t param_bytes = 0;  ///< > 0: distributed optimizer
  bool overlap_param_gather = false;
  std::int64_t ddp_bucket_size = 0;  ///< Megatron's --ddp-bucket-size; 0: not given
  std::int64_t ddp_num_buckets = 0;  ///< --ddp-num-buckets; 0: not given
  bool align_param_gather = true;    ///< false: --no-align-param-gather
};

inline Step make_step(std::int32_t p, std::int32_t v, std::int32_t m, const StepOptions& o) {
  Step s;
  Workload& w = s.w;
  w.name = "ddp";
  w.model.num_layers = p * v;
  w.model.seq_length = 1;
  w.model.hidden_size = 8;
  w.model.add_bias_linear = false;
  TrainingConfig& t = w.training;
  t.world_size = 2 * p;
  t.pipeline_model_parallel_size = p;
  t.virtual_pipeline_model_parallel_size = v;
  t.data_parallel_size = 2;
  t.micro_batch_size = 1;
  t.global_batch_size = 2 * m;
  t.num_microbatches = m;
  t.microbatch_group_size_per_vp_stage = v > 1 ? p : 0;
  t.overlap_p2p_comm = v > 1;
  t.overlap_grad_reduce = o.overlap_grad_reduce;
  t.use_distributed_optimizer = o.param_bytes > 0;
  t.overlap_param_gather = o.overlap_param_gather;
  t.ddp_bucket_size = o.ddp_bucket_size;
  t.ddp_num_buckets = o.ddp_num_buckets;
  t.align_param_gather = o.align_param_gather;
  w.system.gpus_per_node = 8;
  w.system.memory_bytes = 1LL << 40;
  w.system.peak_flops_fp32 = 1;
  for (std::int32_t r = 0; r < p; ++r) {
    StagePlan stage;
    stage.stage = r;
    for (std::int32_t c = 0; c < v; ++c) {
      ChunkPlan chunk;
      chunk.stage = r;
      chunk.chunk = c;
      chunk.forward = {gemm("qkv_gemm", Phase::kForward), gemm("fc1_gemm", Phase::kForward),
                       gemm("fc2_gemm", Phase::kForward)};
      chunk.backward = {gemm("fc2_wgrad", Phase::kBackwardWeight),
                        gemm("fc1_wgrad", Phase::kBackwardWeight),
                        gemm("qkv_wgrad", Phase::kBackwardWeight)};
      chunk.parameters = 3 * kModule;
      chunk.p2p_bytes = 1;
      chunk.grad_sync.push_back(collective("dp_grad_all_reduce", CollectiveKind::kAllReduce,
                                           chunk.parameters * o.grad_bytes));
      stage.parameters += chunk.parameters;
      stage.chunks.push_back(chunk);
    }
    if (o.param_bytes > 0) {
      Op step;
      step.name = "optimizer_step";
      step.phase = Phase::kStep;
      step.shape = MemoryBoundOp{500'000'000};  // 0.5 s
      stage.step_ops.push_back(step);
      Op& gather = stage.step_ops.emplace_back(collective(
          "dp_param_all_gather", CollectiveKind::kAllGather, stage.parameters * o.param_bytes));
      gather.deps.push_back(0);
    }
    s.plan.stages.push_back(stage);
  }
  return s;
}

}  // namespace stepsim::sim
