// The device-to-host synchronisation of Megatron-Core's alltoall token dispatcher
// (token_dispatcher.py: the token counts copied to the host after the router, the host
// blocking on that copy at its cuda_sync_point): the op at that point carries
// Op::host_waits_for, and with the host modelled (a profile's host costs) it starts no
// earlier than the router's end plus the host's wake and one launch.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "stepsim/graph/chunk_template.hpp"
#include "hand_cost.hpp"
#include "stepsim/plan/decompose.hpp"
#include "stepsim/check/load.hpp"

namespace stepsim::sim {
namespace {

/// Four MoE layers of 8 experts (top-2) on one stage; `training` keys added.
Workload moe(const std::string& training) {
  const std::string text =
      R"({"name": "moe", "model": {"num_layers": 4, "hidden_size": 1024,
      "num_attention_heads": 16, "seq_length": 2048, "vocab_size": 32000, "swiglu": true,
      "add_bias_linear": false, "normalization": "RMSNorm", "position_embedding_type": "rope",
      "attention_backend": "auto", "num_experts": 8, "moe_router_topk": 2,
      "moe_ffn_hidden_size": 1024}, "training": {)" +
      training + R"(, "moe_grouped_gemm": true, "micro_batch_size": 1, "global_batch_size": 8,
      "bf16": true}, "system": "systems/dgx-h100-80gb.json"})";
  LoadOptions o;
  o.scenarios_dir = STEPSIM_SCENARIOS_DIR;
  auto w = load_scenario_text(text, "moe.json", ".", o);
  EXPECT_TRUE(w.ok()) << (w.ok() ? "" : format_errors(w.errors()));
  return w.ok() ? std::move(w).value() : Workload{};
}

/// The ops of the first chunk's forward that the host issues after a synchronisation, as
/// "op <- the op it waits for".
std::vector<std::string> synced(const Workload& w) {
  const WorkloadPlan plan = decompose(w);
  const std::vector<Op>& ops = plan.stages.at(0).chunks.at(0).forward;
  std::vector<std::string> out;
  for (const Op& op : ops) {
    if (op.host_waits_for < 0) continue;
    out.push_back(op.name + " <- " + ops.at(static_cast<std::size_t>(op.host_waits_for)).name);
  }
  return out;
}

TEST(MoeHostSync, TheDispatcherSynchronisesWhereMegatronDoes) {
  const std::string alltoall = R"("moe_token_dispatcher_type": "alltoall")";
  // EP > 1: before the EP all-to-all, for its split sizes; one per MoE layer, after the router's
  // top-k (the counts' copy follows it).
  EXPECT_EQ(synced(moe(R"("world_size": 2, "expert_model_parallel_size": 2, )" + alltoall)),
            std::vector<std::string>(4, "moe_dispatch_all_to_all <- router_topk"));
  // One GPU, 8 local experts: before permutation 2 (the chunks sorted by expert).
  EXPECT_EQ(synced(moe(R"("world_size": 1, )" + alltoall)),
            std::vector<std::string>(4, "moe_sort_chunks <- router_topk"));
  // A capacity factor without padding: the output size is dynamic, before permutation 1.
  EXPECT_EQ(synced(moe(R"("world_size": 2, "expert_model_parallel_size": 2, )" + alltoall +
                       R"(, "moe_expert_capacity_factor": 1.0)")),
            std::vector<std::string>(4, "moe_permute <- router_topk"));
  // Padded to capacity: every size is static, no synchronisation; nor in the all-gather
  // dispatcher's op list, nor in backward.
  EXPECT_TRUE(synced(moe(R"("world_size": 2, "expert_model_parallel_size": 2, )" + alltoall +
                         R"(, "moe_expert_capacity_factor": 1.0,
                         "moe_pad_expert_input_to_capacity": true)"))
                  .empty());
  EXPECT_TRUE(synced(moe(R"("world_size": 1, "moe_token_dispatcher_type": "allgather")")).empty());
  const WorkloadPlan plan = decompose(moe(R"("world_size": 1, )" + alltoall));
  for (const Op& op : plan.stages.at(0).chunks.at(0).backward) {
    EXPECT_LT(op.host_waits_for, 0) << op.name;
  }
}

/// Three ops by hand (hand_cost.hpp: a GEMM costs its k in seconds, a memory-bound op 1 ns per
/// byte): a 2 s GEMM, a 1 s kernel, and a 0.5 s kernel the host issues after waiting for the
/// GEMM's end.
std::vector<Op> three_ops() {
  std::vector<Op> ops(3);
  ops[0].name = "router";
  ops[0].shape = GemmOp{.m = 1, .n = 1, .k = 2, .batch = 1, .dtype = DType::kBf16};
  ops[1].name = "permute";
  ops[1].shape = MemoryBoundOp{.bytes = 1'000'000'000};
  ops[2].name = "sorted";
  ops[2].shape = MemoryBoundOp{.bytes = 500'000'000};
  ops[2].host_waits_for = 0;
  return ops;
}

HandCost with_host(double sync_s, double issue_s) {
  HostCosts host;
  host.sync_s = sync_s;
  host.forward_op_issue_s = issue_s;
  host.backward_op_issue_s = issue_s;
  return HandCost({.host = host});
}

TEST(MoeHostSync, TheOpWaitsForTheHostsWakeAndLaunch) {
  const std::vector<Op> ops = three_ops();
  // The kernel before it hides a short wake: 2 + 0.7 + 0.2 < 3.
  EXPECT_DOUBLE_EQ(time_ops(ops, with_host(0.7, 0.2), false).duration_s, 3.5);
  // A longer one shows: the op starts at 2 + 1.5 + 0.2 = 3.7.
  const ChunkTemplate slow = time_ops(ops, with_host(1.5, 0.2), false);
  EXPECT_DOUBLE_EQ(slow.ops[2].start_s, 3.7);
  EXPECT_DOUBLE_EQ(slow.duration_s, 4.2);
  // No host modelled (a profile without host costs), or the validator's serialised executor
  // (one thread, no separate host): nothing waits.
  EXPECT_DOUBLE_EQ(time_ops(ops, HandCost(), false).duration_s, 3.5);
  EXPECT_DOUBLE_EQ(time_ops(ops, with_host(1.5, 0.2), true).duration_s, 3.5);
  // Timed with rates (an NCCL collective beside the GEMM, interference 2x both ways): the
  // wait holds there too. The 1 s collective on its own stream halves the GEMM's speed for
  // its first second (0.5 s of GEMM done, then 1.5 s alone): the GEMM ends at 2.5, the op at
  // 2.5 + 1.7 = 4.2 at the earliest, after the 1 s kernel (3.5).
  std::vector<Op> beside = ops;
  Op collective;
  collective.name = "tp_all_gather";
  collective.stream = Stream::kTensorComm;
  collective.shape = CollectiveOp{.kind = CollectiveKind::kAllGather,
                                  .group = CommGroup::kTensor,
                                  .bytes = 500'000'000,
                                  .group_size = 2};
  beside.insert(beside.begin() + 1, collective);
  beside[3].host_waits_for = 0;
  Interference k;
  k.compute_slowdown = 2;
  k.collective_slowdown = 2;
  const ChunkTemplate rated = time_ops(beside, with_host(1.5, 0.2), false, k);
  EXPECT_DOUBLE_EQ(rated.ops[0].end_s, 2.5);
  EXPECT_DOUBLE_EQ(rated.ops[3].start_s, 4.2);
  EXPECT_DOUBLE_EQ(rated.duration_s, 4.7);
}

}  // namespace
}  // namespace stepsim::sim
