// Megatron-LM flags that change the work without changing the model's shape: dropout values
// (PyTorch's dropout returns its input at p = 0), --grad-reduce-in-bf16 (bf16 gradient
// buffers and reduction), --cross-entropy-loss-fusion (one all-reduce for the predicted
// logits and the exp sums) and --cross-entropy-fusion-impl te (Transformer Engine's Triton
// cross entropy). Each against a closed form written out here.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model_workloads.hpp"
#include "stepsim/plan/decompose.hpp"
#include "stepsim/memory/memory_model.hpp"
#include "stepsim/check/check.hpp"

namespace stepsim {
namespace {

using testing::gpt3_175b;
using testing::make_workload;

const Op* find_op(const std::vector<Op>& ops, const std::string& name, std::int32_t layer) {
  for (const Op& op : ops) {
    if (op.name == name && op.layer == layer) return &op;
  }
  return nullptr;
}

std::int64_t memory_bytes(const std::vector<Op>& ops, const std::string& name,
                          std::int32_t layer) {
  const Op* op = find_op(ops, name, layer);
  EXPECT_NE(op, nullptr) << name;
  return op == nullptr ? -1 : std::get<MemoryBoundOp>(op->shape).bytes;
}

// GPT-3 175B on TP 8, PP 2, DP 4: stage 0 holds the embedding, stage 1 the loss.
Workload base() { return make_workload(gpt3_175b(), 8, 2, 4, 1, 4); }

TEST(MegatronFlags, ZeroDropoutRemovesTheDropoutKernelsAndMasks) {
  const Workload with = base();
  Workload without = base();
  without.model.attention_dropout = 0.0;
  without.model.hidden_dropout = 0.0;
  const WorkloadPlan a = decompose(with);
  const WorkloadPlan b = decompose(without);
  const ChunkPlan& first_a = a.stages[0].chunks[0];
  const ChunkPlan& first_b = b.stages[0].chunks[0];
  // tokens = s * b = 2048, h = 12288, no SP: tokens per rank = 2048, bf16 (2 bytes).
  const std::int64_t th = 2048LL * 12288;
  EXPECT_EQ(memory_bytes(first_a.forward, "embedding_dropout", -1), th * (2 * 2 + 1));
  EXPECT_EQ(find_op(first_b.forward, "embedding_dropout", -1), nullptr);
  EXPECT_EQ(find_op(first_b.backward, "embedding_dropout_bwd", -1), nullptr);
  // Scores per TP rank: 96/8 heads x 2048 x 2048.
  const std::int64_t scores = 12LL * 2048 * 2048;
  EXPECT_EQ(memory_bytes(first_a.forward, "attn_dropout", 0), scores * (2 * 2 + 1));
  EXPECT_EQ(find_op(first_b.forward, "attn_dropout", 0), nullptr);
  EXPECT_EQ(find_op(first_b.backward, "attn_dropout_bwd", 0), nullptr);
  // Bias-dropout-add: x, residual in, output out, plus the 1-byte mask; at p = 0 no mask,
  // and its backward is the bias gradient's read of dy (GPT-3 has biases).
  EXPECT_EQ(memory_bytes(first_a.forward, "mlp_bda", 0), th * (3 * 2 + 1));
  EXPECT_EQ(memory_bytes(first_b.forward, "mlp_bda", 0), th * 3 * 2);
  EXPECT_EQ(memory_bytes(first_a.backward, "mlp_bda_bwd", 0), th * (2 * 2 + 1));
  EXPECT_EQ(memory_bytes(first_b.backward, "mlp_bda_bwd", 0), th * 2);
  // Stored per layer: two 1-byte hidden masks and the attention mask and dropout output
  // (scores x (2 + 1)) are gone; the embedding's mask too on the first chunk.
  const std::int64_t layers = first_a.num_layers;
  EXPECT_EQ(first_a.stored_activation_bytes - first_b.stored_activation_bytes,
            layers * (2 * th + scores * 3) + th);
  // Without biases the backward has no kernel at all.
  Workload no_bias = without;
  no_bias.model.add_bias_linear = false;
  const WorkloadPlan c = decompose(no_bias);
  EXPECT_EQ(find_op(c.stages[0].chunks[0].backward, "mlp_bda_bwd", 0), nullptr);
}

TEST(MegatronFlags, DropoutOutsideZeroToOneIsRefusedByName) {
  Workload w = base();
  w.model.hidden_dropout = 1.0;
  const auto errors = validate_workload(w, "s.json");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].key, "model.hidden_dropout");
}

TEST(MegatronFlags, GradReduceInBf16HalvesTheReductionAndTheGradientBuffers) {
  const Workload fp32 = base();
  Workload bf16 = base();
  bf16.training.grad_reduce_in_bf16 = true;
  bf16.training.use_distributed_optimizer = true;
  Workload fp32_dist = fp32;
  fp32_dist.training.use_distributed_optimizer = true;
  const WorkloadPlan a = decompose(fp32_dist);
  const WorkloadPlan b = decompose(bf16);
  const ChunkPlan& ca = a.stages[1].chunks[0];
  const ChunkPlan& cb = b.stages[1].chunks[0];
  ASSERT_EQ(ca.grad_sync.size(), 1u);
  ASSERT_EQ(cb.grad_sync.size(), 1u);
  const std::int64_t params = ca.parameters;
  EXPECT_EQ(std::get<CollectiveOp>(ca.grad_sync[0].shape).bytes, params * 4);
  EXPECT_EQ(std::get<CollectiveOp>(cb.grad_sync[0].shape).bytes, params * 2);
  // Static memory: 2-byte gradients; the optimizer's fp32 copy of its shard (params / dp)
  // is allocated at the step, when no activations are held.
  const std::int64_t stage_params = b.stages[1].parameters;
  const StaticMemory sa = static_memory(fp32_dist.training, stage_params);
  const StaticMemory sb = static_memory(bf16.training, stage_params);
  EXPECT_EQ(sa.gradients_bytes, stage_params * 4);
  EXPECT_EQ(sb.gradients_bytes, stage_params * 2);
  EXPECT_EQ(sa.optimizer_step_bytes, 0);
  EXPECT_EQ(sb.optimizer_step_bytes, (stage_params + 3) / 4 * 4);
  // The optimizer step reads the bf16 shard and writes its fp32 copy: 6 bytes each, in a
  // kernel of its own that fp32 gradient buffers do not need.
  EXPECT_EQ(find_op(a.stages[1].step_ops, "optimizer_grad_copy", -1), nullptr);
  const Op* copy = find_op(b.stages[1].step_ops, "optimizer_grad_copy", -1);
  ASSERT_NE(copy, nullptr);
  const std::int64_t shard = (stage_params + 3) / 4;
  EXPECT_EQ(std::get<MemoryBoundOp>(copy->shape).bytes, shard * 6);
  EXPECT_EQ(copy->held_bytes, shard * 4);
  // Megatron reads the flag only with bf16 parameters.
  Workload fp16 = bf16;
  fp16.training.params_dtype = DType::kFp16;
  EXPECT_EQ(fp16.training.grad_bytes(), 4);
}

TEST(MegatronFlags, FusedCrossEntropyAllReducesOnceForPredictedLogitsAndExpSums) {
  Workload fused = base();
  fused.model.cross_entropy_loss_fusion = true;
  const auto tp_all_reduces = [](const ChunkPlan& c) {
    std::vector<std::int64_t> bytes;
    for (const Op& op : c.forward) {
      const auto* coll = std::get_if<CollectiveOp>(&op.shape);
      if (op.layer == -1 && coll != nullptr && coll->kind == CollectiveKind::kAllReduce) {
        bytes.push_back(coll->bytes);
      }
    }
    return bytes;
  };
  const WorkloadPlan a = decompose(base());
  const WorkloadPlan b = decompose(fused);
  // tokens = 2048, fp32: the max, then the predicted logits and the exp sums.
  EXPECT_EQ(tp_all_reduces(a.stages[1].chunks[0]),
            (std::vector<std::int64_t>{2048 * 4, 2048 * 4, 2048 * 4}));
  EXPECT_EQ(tp_all_reduces(b.stages[1].chunks[0]),
            (std::vector<std::int64_t>{2048 * 4, 2 * 2048 * 4}));
}

TEST(MegatronFlags, UnmodelledFusionVariantsAreRefusedByName) {
  Workload local = base();
  local.model.attention_backend = AttentionBackend::kLocal;
  local.model.masked_softmax_fusion = false;
  auto errors = validate_workload(local, "s.json");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].key, "model.masked_softmax_fusion");
  // Transformer Engine's backends do not read Megatron's flag.
  local.model.attention_backend = AttentionBackend::kUnfused;
  EXPECT_TRUE(validate_workload(local, "s.json").empty());
}

}  // namespace
}  // namespace stepsim

namespace stepsim {
namespace {

// Transformer Engine's parallel cross entropy (cross_entropy_fusion_impl "te"): GPT-3 175B on
// TP 8, the last stage's chunk: 2048 tokens, 51200 / 8 = 6400 logits each, bf16.
TEST(TeCrossEntropy, KernelsBytesAndOneAllGatherOfPerTokenTriples) {
  Workload te = base();
  te.model.cross_entropy_loss_fusion = true;
  te.model.cross_entropy_fusion_impl = CrossEntropyFusionImpl::kTe;
  EXPECT_TRUE(validate_workload(te, "s.json").empty());
  const WorkloadPlan plan = decompose(te);
  const ChunkPlan& c = plan.stages[1].chunks[0];
  constexpr std::int64_t kTokens = 2048;
  constexpr std::int64_t kLogits = kTokens * 6400;
  // Zero fills: fp32 loss, this rank's fp32 triple, the 8 gathered triples.
  EXPECT_EQ(memory_bytes(c.forward, "ce_te_zero_fill", -1), kTokens * (4 + 12 + 12 * 8));
  // Online softmax: the bf16 logits once, the int64 target, the triple written.
  EXPECT_EQ(memory_bytes(c.forward, "ce_te_online_softmax", -1), kLogits * 2 + kTokens * 20);
  // Loss and gradient: the logits again, the fp32 gradient written, the gathered triples,
  // target and loss.
  EXPECT_EQ(memory_bytes(c.forward, "ce_te_loss_grad", -1),
            kLogits * (2 + 4) + kTokens * (12 * 8 + 8 + 4));
  // One TP collective: the all-gather of 12 bytes per token per rank; no all-reduce.
  std::vector<CollectiveOp> tp;
  for (const Op& op : c.forward) {
    const auto* coll = std::get_if<CollectiveOp>(&op.shape);
    if (op.layer == -1 && coll != nullptr && coll->group == CommGroup::kTensor) tp.push_back(*coll);
  }
  ASSERT_EQ(tp.size(), 1u);
  EXPECT_EQ(tp[0].kind, CollectiveKind::kAllGather);
  EXPECT_EQ(tp[0].bytes, kTokens * 12 * 8);
  EXPECT_EQ(find_op(c.forward, "cross_entropy", -1), nullptr);
  EXPECT_EQ(find_op(c.forward, "ce_softmax", -1), nullptr);
  // Backward: the in-place scale of the fp32 gradient, then autograd's cast to bf16.
  EXPECT_EQ(memory_bytes(c.backward, "ce_te_grad_scale", -1), kLogits * 8 + kTokens * 4);
  EXPECT_EQ(memory_bytes(c.backward, "ce_te_grad_cast", -1), kLogits * (4 + 2));
  EXPECT_EQ(find_op(c.backward, "cross_entropy_bwd", -1), nullptr);
  // The fp32 gradient it keeps is the size of the native one's fp32 softmax.
  Workload native = te;
  native.model.cross_entropy_fusion_impl = CrossEntropyFusionImpl::kNative;
  EXPECT_EQ(analytic_memory(te), analytic_memory(native));
}

TEST(TeCrossEntropy, WithoutTensorParallelismNoGather) {
  Workload te = make_workload(gpt3_175b(), 1, 96, 1, 1, 96);
  te.model.cross_entropy_loss_fusion = true;
  te.model.cross_entropy_fusion_impl = CrossEntropyFusionImpl::kTe;
  const WorkloadPlan plan = decompose(te);
  const ChunkPlan& c = plan.stages.back().chunks[0];
  EXPECT_EQ(memory_bytes(c.forward, "ce_te_zero_fill", -1), 2048 * 16);
  EXPECT_EQ(memory_bytes(c.forward, "ce_te_loss_grad", -1), 2048 * 51200 * 6 + 2048 * 24);
  for (const Op& op : c.forward) EXPECT_FALSE(std::holds_alternative<CollectiveOp>(op.shape));
}

}  // namespace
}  // namespace stepsim
