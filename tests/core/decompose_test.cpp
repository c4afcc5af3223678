#include "stepsim/plan/decompose.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "model_workloads.hpp"
#include "stepsim/memory/memory_model.hpp"

namespace stepsim {
namespace {

using testing::gpt3_175b;
using testing::llama2_70b;
using testing::make_workload;

const Op* find_op(const std::vector<Op>& ops, const std::string& name, std::int32_t layer,
                  std::size_t nth = 0) {
  for (const Op& op : ops) {
    if (op.name == name && op.layer == layer && nth-- == 0) return &op;
  }
  return nullptr;
}

std::int32_t index_of(const std::vector<Op>& ops, const std::string& name, std::int32_t layer,
                      Phase phase) {
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].name == name && ops[i].layer == layer && ops[i].phase == phase) {
      return static_cast<std::int32_t>(i);
    }
  }
  return -1;
}

std::vector<CollectiveOp> collectives(const std::vector<Op>& ops, std::int32_t layer,
                                      CollectiveKind kind) {
  std::vector<CollectiveOp> out;
  for (const Op& op : ops) {
    const auto* c = std::get_if<CollectiveOp>(&op.shape);
    if (c != nullptr && op.layer == layer && c->kind == kind) out.push_back(*c);
  }
  return out;
}

TEST(LayersOf, InterleavedRoundRobinAsMegatron) {
  // Reference §5: p=4, v=2, 16 layers: rank 0 holds layers 1-2 and 9-10 (1-based).
  ModelConfig m = gpt3_175b();
  m.num_layers = 16;
  const Workload w = make_workload(m, 1, 4, 1, 1, 8, 2);
  EXPECT_EQ(layers_of(w.training, w.model, 0, 0), (LayerRange{0, 2}));
  EXPECT_EQ(layers_of(w.training, w.model, 0, 1), (LayerRange{8, 2}));
  EXPECT_EQ(layers_of(w.training, w.model, 1, 0), (LayerRange{2, 2}));
  EXPECT_EQ(layers_of(w.training, w.model, 3, 1), (LayerRange{14, 2}));
}

TEST(Decompose, QkvGemmShapeWithGqa) {
  const Workload w = make_workload(llama2_70b(), 8, 1, 1, 2, 4);
  const WorkloadPlan plan = decompose(w);
  const Op* qkv = find_op(plan.stages[0].chunks[0].forward, "qkv_gemm", 0);
  ASSERT_NE(qkv, nullptr);
  // m = s*b, n = (a + 2g) * d / t = (64 + 16) * 128 / 8, k = h.
  EXPECT_EQ(std::get<GemmOp>(qkv->shape), (GemmOp{4096 * 2, 1280, 8192, 1, DType::kBf16, GemmLayout::kTN}));
  const Op* fc1 = find_op(plan.stages[0].chunks[0].forward, "fc1_gemm", 0);
  ASSERT_NE(fc1, nullptr);
  EXPECT_EQ(std::get<GemmOp>(fc1->shape).n, 2 * 28672 / 8);  // SwiGLU: gate and up
  const Op* qk = find_op(plan.stages[0].chunks[0].forward, "attn_qk", 0);
  ASSERT_NE(qk, nullptr);
  EXPECT_EQ(std::get<GemmOp>(qk->shape), (GemmOp{4096, 4096, 128, 2 * 64 / 8, DType::kBf16}));
}

TEST(Decompose, BackwardGemmsAreDgradAndWgrad) {
  const Workload w = make_workload(gpt3_175b(), 8, 1, 1, 1, 1);
  const WorkloadPlan plan = decompose(w);
  const std::vector<Op>& bwd = plan.stages[0].chunks[0].backward;
  const Op* dgrad = find_op(bwd, "fc2_dgrad", 5);
  const Op* wgrad = find_op(bwd, "fc2_wgrad", 5);
  ASSERT_NE(dgrad, nullptr);
  ASSERT_NE(wgrad, nullptr);
  EXPECT_EQ(dgrad->phase, Phase::kBackwardInput);
  EXPECT_EQ(wgrad->phase, Phase::kBackwardWeight);
  EXPECT_EQ(std::get<GemmOp>(dgrad->shape), (GemmOp{2048, 49152 / 8, 12288, 1, DType::kBf16, GemmLayout::kNN}));
  EXPECT_EQ(std::get<GemmOp>(wgrad->shape), (GemmOp{12288, 49152 / 8, 2048, 1, DType::kBf16, GemmLayout::kNT}));
}

// Every linear's GEMM carries the layout Transformer Engine runs it in (forward TN, dgrad NN,
// wgrad NT; FP8 TN throughout); attention's batched products carry none.
TEST(Decompose, LinearGemmsCarryTransformerEnginesLayouts) {
  for (const bool fp8 : {false, true}) {
    Workload w = make_workload(llama2_70b(), 8, 1, 1, 1, 1);
    if (fp8) w.training.fp8 = Fp8Format::kHybrid;
    const WorkloadPlan plan = decompose(w);  // alive while `c` is read
    const ChunkPlan& c = plan.stages[0].chunks[0];
    const auto layout = [](const Op* op) { return std::get<GemmOp>(op->shape).layout; };
    const GemmLayout dgrad = fp8 ? GemmLayout::kTN : GemmLayout::kNN;
    const GemmLayout wgrad = fp8 ? GemmLayout::kTN : GemmLayout::kNT;
    for (const char* name : {"qkv", "proj", "fc1", "fc2"}) {
      const std::string n(name);
      const Op* f = find_op(c.forward, n + "_gemm", 0);
      const Op* d = find_op(c.backward, n + "_dgrad", 0);
      const Op* g = find_op(c.backward, n + "_wgrad", 0);
      ASSERT_TRUE(f != nullptr && d != nullptr && g != nullptr) << name;
      EXPECT_EQ(layout(f), GemmLayout::kTN) << name;
      EXPECT_EQ(layout(d), dgrad) << name;
      EXPECT_EQ(layout(g), wgrad) << name;
      EXPECT_EQ(std::get<GemmOp>(f->shape).dtype, fp8 ? DType::kFp8 : DType::kBf16) << name;
    }
    const Op* qk = find_op(c.forward, "attn_qk", 0);
    if (qk != nullptr) {
      EXPECT_EQ(layout(qk), GemmLayout::kUnspecified);
    }
  }
}

TEST(Decompose, TwoAllReducesPerLayerEachWayWithoutSp) {
  const Workload w = make_workload(gpt3_175b(), 8, 1, 1, 2, 1);
  const WorkloadPlan plan = decompose(w);
  const ChunkPlan& c = plan.stages[0].chunks[0];
  const std::int64_t bytes = 2048 * 2 * 12288 * 2;
  for (const auto* list : {&c.forward, &c.backward}) {
    const auto ar = collectives(*list, 7, CollectiveKind::kAllReduce);
    ASSERT_EQ(ar.size(), 2U);
    for (const CollectiveOp& op : ar) {
      EXPECT_EQ(op.bytes, bytes);
      EXPECT_EQ(op.group, CommGroup::kTensor);
      EXPECT_EQ(op.group_size, 8);
      EXPECT_EQ(op.nodes_spanned, 1);
    }
    EXPECT_TRUE(collectives(*list, 7, CollectiveKind::kAllGather).empty());
  }
}

TEST(Decompose, SequenceParallelPairsAllGatherWithReduceScatter) {
  Workload w = make_workload(gpt3_175b(), 8, 1, 1, 1, 1);
  w.training.sequence_parallel = true;
  const WorkloadPlan plan = decompose(w);
  const ChunkPlan& c = plan.stages[0].chunks[0];
  EXPECT_TRUE(collectives(c.forward, 3, CollectiveKind::kAllReduce).empty());
  EXPECT_EQ(collectives(c.forward, 3, CollectiveKind::kAllGather).size(), 2U);
  EXPECT_EQ(collectives(c.forward, 3, CollectiveKind::kReduceScatter).size(), 2U);
  // Backward: gradient all-gathers before FC2 and the projection, re-gathers of the inputs
  // of FC1 and QKV for their weight gradients, reduce-scatters of their input gradients.
  EXPECT_EQ(collectives(c.backward, 3, CollectiveKind::kAllGather).size(), 4U);
  EXPECT_EQ(collectives(c.backward, 3, CollectiveKind::kReduceScatter).size(), 2U);
  const Op* ln1 = find_op(c.forward, "ln1", 3);
  ASSERT_NE(ln1, nullptr);
  // The norm runs on s/t tokens: 2048/8 * 12288 elements read and written, plus stats.
  EXPECT_EQ(std::get<MemoryBoundOp>(ln1->shape).bytes, 256 * 12288 * 4 + 256 * 8);
  EXPECT_EQ(c.p2p_bytes, 256 * 12288 * 2);
}

TEST(Decompose, ForwardAllReduceWaitsForGemmAndNextOpWaitsForIt) {
  const Workload w = make_workload(gpt3_175b(), 8, 1, 1, 1, 1);
  const WorkloadPlan plan = decompose(w);
  const std::vector<Op>& fwd = plan.stages[0].chunks[0].forward;
  const std::int32_t proj = index_of(fwd, "proj_gemm", 2, Phase::kForward);
  ASSERT_GE(proj, 0);
  const Op& ar = fwd[static_cast<std::size_t>(proj + 1)];
  EXPECT_EQ(ar.name, "tp_all_reduce");
  EXPECT_EQ(ar.stream, Stream::kTensorComm);
  EXPECT_EQ(ar.deps, std::vector<std::int32_t>{proj});
  const Op& bda = fwd[static_cast<std::size_t>(proj + 2)];
  EXPECT_EQ(bda.name, "attn_bda");
  EXPECT_EQ(bda.deps, std::vector<std::int32_t>{proj + 1});
}

TEST(Decompose, InputGradAllReduceOverlapsWeightGradGemm) {
  const Workload w = make_workload(gpt3_175b(), 8, 1, 1, 1, 1);
  const WorkloadPlan plan = decompose(w);
  const std::vector<Op>& bwd = plan.stages[0].chunks[0].backward;
  const std::int32_t dgrad = index_of(bwd, "fc1_dgrad", 4, Phase::kBackwardInput);
  ASSERT_GE(dgrad, 0);
  const auto at = [&](std::int32_t i) -> const Op& { return bwd[static_cast<std::size_t>(i)]; };
  EXPECT_EQ(at(dgrad + 1).name, "tp_all_reduce");
  EXPECT_EQ(at(dgrad + 1).deps, std::vector<std::int32_t>{dgrad});
  EXPECT_EQ(at(dgrad + 2).name, "fc1_wgrad");
  EXPECT_EQ(at(dgrad + 2).stream, Stream::kCompute);
  EXPECT_TRUE(at(dgrad + 2).deps.empty());  // runs while the all-reduce is in flight
  EXPECT_EQ(at(dgrad + 3).name, "ln2_bwd");
  EXPECT_EQ(at(dgrad + 3).deps, std::vector<std::int32_t>{dgrad + 1});
}

TEST(Decompose, SequenceParallelWgradWaitsForReGatheredInput) {
  Workload w = make_workload(gpt3_175b(), 8, 1, 1, 1, 1);
  w.training.sequence_parallel = true;
  const WorkloadPlan plan = decompose(w);
  const std::vector<Op>& bwd = plan.stages[0].chunks[0].backward;
  const std::int32_t wgrad = index_of(bwd, "qkv_wgrad", 0, Phase::kBackwardWeight);
  ASSERT_GE(wgrad, 0);
  const Op& op = bwd[static_cast<std::size_t>(wgrad)];
  ASSERT_EQ(op.deps.size(), 1U);
  const Op& gather = bwd[static_cast<std::size_t>(op.deps[0])];
  EXPECT_EQ(gather.name, "tp_all_gather");
  EXPECT_EQ(bwd[static_cast<std::size_t>(wgrad - 1)].name, "tp_reduce_scatter");
}

TEST(Decompose, DepsPointBackwardAcrossStreams) {
  for (const bool sp : {false, true}) {
    for (const auto gran : {RecomputeGranularity::kNone, RecomputeGranularity::kSelective,
                            RecomputeGranularity::kFull}) {
      Workload w = make_workload(llama2_70b(), 4, 4, 2, 1, 8, 2);
      w.model.num_layers = 16;
      w.training.sequence_parallel = sp;
      w.training.recompute_granularity = gran;
      if (gran == RecomputeGranularity::kFull) {
        w.training.recompute_method = RecomputeMethod::kUniform;
        w.training.recompute_num_layers = 1;
      }
      for (const StagePlan& s : decompose(w).stages) {
        for (const ChunkPlan& c : s.chunks) {
          for (const auto* list : {&c.forward, &c.backward}) {
            for (std::size_t i = 0; i < list->size(); ++i) {
              for (const std::int32_t d : (*list)[i].deps) {
                EXPECT_GE(d, 0);
                EXPECT_LT(static_cast<std::size_t>(d), i);
                EXPECT_NE((*list)[static_cast<std::size_t>(d)].stream, (*list)[i].stream);
              }
            }
          }
        }
      }
    }
  }
}

TEST(Decompose, SelectiveRecomputeRedoesCoreAttentionBeforeItsBackward) {
  Workload w = make_workload(gpt3_175b(), 8, 1, 1, 1, 1);
  w.training.recompute_granularity = RecomputeGranularity::kSelective;
  const WorkloadPlan plan = decompose(w);
  const std::vector<Op>& bwd = plan.stages[0].chunks[0].backward;
  const std::int32_t proj_wgrad = index_of(bwd, "proj_wgrad", 9, Phase::kBackwardWeight);
  const std::int32_t qk = index_of(bwd, "attn_qk", 9, Phase::kRecompute);
  const std::int32_t av = index_of(bwd, "attn_av", 9, Phase::kRecompute);
  const std::int32_t av_bwd = index_of(bwd, "attn_av_dgrad_p", 9, Phase::kBackwardInput);
  EXPECT_LT(proj_wgrad, qk);
  EXPECT_LT(qk, av);
  EXPECT_LT(av, av_bwd);
  std::int64_t recomputed = 0;
  for (const Op& op : bwd) recomputed += op.phase == Phase::kRecompute && op.layer == 9;
  EXPECT_EQ(recomputed, 5);  // QK^T, softmax, dropout, AV, head merge: no QKV, no MLP
}

TEST(Decompose, FullUniformRecomputeRerunsEachGroupBeforeItsBackward) {
  Workload w = make_workload(gpt3_175b(), 8, 1, 1, 1, 1);
  w.model.num_layers = 6;
  w.training.recompute_granularity = RecomputeGranularity::kFull;
  w.training.recompute_method = RecomputeMethod::kUniform;
  w.training.recompute_num_layers = 4;  // groups {0..3} and {4, 5}
  w.training.distribute_saved_activations = true;
  const WorkloadPlan plan = decompose(w);
  const ChunkPlan& c = plan.stages[0].chunks[0];
  // The group {4, 5}: gather its distributed input, re-run layers 4 and 5, then backward 5, 4.
  const std::int32_t gather = index_of(c.backward, "tp_all_gather", 4, Phase::kRecompute);
  const std::int32_t ln1_4 = index_of(c.backward, "ln1", 4, Phase::kRecompute);
  const std::int32_t ln1_5 = index_of(c.backward, "ln1", 5, Phase::kRecompute);
  const std::int32_t bwd_5 = index_of(c.backward, "mlp_bda_bwd", 5, Phase::kBackwardInput);
  const std::int32_t bwd_4 = index_of(c.backward, "ln1_bwd", 4, Phase::kBackwardInput);
  const std::int32_t ln1_0 = index_of(c.backward, "ln1", 0, Phase::kRecompute);
  EXPECT_GE(gather, 0);
  EXPECT_LT(gather, ln1_4);
  EXPECT_EQ(c.backward[static_cast<std::size_t>(ln1_4)].deps, std::vector<std::int32_t>{gather});
  EXPECT_LT(ln1_4, ln1_5);
  EXPECT_LT(ln1_5, bwd_5);
  EXPECT_LT(bwd_5, bwd_4);
  EXPECT_LT(bwd_4, ln1_0);
  // A recomputed layer is its forward again, collectives included.
  std::vector<OpShape> forward4;
  std::vector<OpShape> recompute4;
  for (const Op& op : c.forward) if (op.layer == 4) forward4.push_back(op.shape);
  for (const Op& op : c.backward) {
    if (op.layer == 4 && op.phase == Phase::kRecompute && op.name != "tp_all_gather") {
      recompute4.push_back(op.shape);
    }
  }
  EXPECT_EQ(forward4, recompute4);
}

TEST(Decompose, FullBlockRecomputeOnlyFirstLayersOfEachChunk) {
  Workload w = make_workload(gpt3_175b(), 8, 2, 1, 1, 4, 2);
  w.model.num_layers = 16;
  w.training.recompute_granularity = RecomputeGranularity::kFull;
  w.training.recompute_method = RecomputeMethod::kBlock;
  w.training.recompute_num_layers = 2;
  const WorkloadPlan plan = decompose(w);
  const ChunkPlan& c = plan.stages[1].chunks[1];  // layers 12..15
  ASSERT_EQ(c.first_layer, 12);
  for (std::int32_t l = 12; l < 16; ++l) {
    const bool recomputed = index_of(c.backward, "qkv_gemm", l, Phase::kRecompute) >= 0;
    EXPECT_EQ(recomputed, l < 14) << l;
  }
}

TEST(Decompose, FlashAttentionIsOneFusedOp) {
  Workload w = make_workload(llama2_70b(), 8, 1, 1, 1, 1);
  w.model.use_flash_attn = true;
  const WorkloadPlan plan = decompose(w);
  const ChunkPlan& c = plan.stages[0].chunks[0];
  const Op* fa = find_op(c.forward, "attn_flash", 0);
  ASSERT_NE(fa, nullptr);
  EXPECT_EQ(std::get<AttentionOp>(fa->shape),
            (AttentionOp{1, 8, 1, 4096, 128, true, false, DType::kBf16}));
  const Op* fb = find_op(c.backward, "attn_flash_bwd", 0);
  ASSERT_NE(fb, nullptr);
  EXPECT_TRUE(std::get<AttentionOp>(fb->shape).backward);
  EXPECT_EQ(find_op(c.forward, "attn_softmax", 0), nullptr);
}

TEST(Decompose, EmbeddingAndLossOnFirstAndLastVirtualStage) {
  ModelConfig m = gpt3_175b();
  m.num_layers = 16;
  const Workload w = make_workload(m, 8, 4, 1, 1, 8, 2);
  const WorkloadPlan plan = decompose(w);
  for (const StagePlan& s : plan.stages) {
    for (const ChunkPlan& c : s.chunks) {
      const bool first = s.stage == 0 && c.chunk == 0;
      const bool last = s.stage == 3 && c.chunk == 1;
      EXPECT_EQ(c.has_embedding, first);
      EXPECT_EQ(c.has_loss, last);
      EXPECT_EQ(find_op(c.forward, "embedding_lookup", -1) != nullptr, first);
      EXPECT_EQ(find_op(c.forward, "logits_gemm", -1) != nullptr, last);
      EXPECT_EQ(c.num_layers, 2);
    }
  }
  const ChunkPlan& last = plan.stages[3].chunks[1];
  const Op* logits = find_op(last.forward, "logits_gemm", -1);
  ASSERT_NE(logits, nullptr);
  EXPECT_EQ(std::get<GemmOp>(logits->shape), (GemmOp{2048, 51200 / 8, 12288, 1, DType::kBf16, GemmLayout::kTN}));
  EXPECT_EQ(logits->workspace_bytes, std::int64_t{2048} * 51200 / 8 * 4);
  // Vocab-parallel cross-entropy: three all-reduces of s*b fp32 values.
  const auto ar = collectives(last.forward, -1, CollectiveKind::kAllReduce);
  ASSERT_EQ(ar.size(), 3U);
  for (const CollectiveOp& op : ar) EXPECT_EQ(op.bytes, 2048 * 4);
  // The word embedding's vocab-parallel partial sums are all-reduced.
  const auto emb = collectives(plan.stages[0].chunks[0].forward, -1, CollectiveKind::kAllReduce);
  ASSERT_EQ(emb.size(), 1U);
  EXPECT_EQ(emb[0].bytes, 2048 * 12288 * 2);
}

TEST(Decompose, GradSyncOverDataParallelGroup) {
  Workload w = make_workload(gpt3_175b(), 8, 8, 4, 1, 8);
  const WorkloadPlan plan = decompose(w);
  const ChunkPlan& c = plan.stages[3].chunks[0];
  ASSERT_EQ(c.grad_sync.size(), 1U);
  const auto& ar = std::get<CollectiveOp>(c.grad_sync[0].shape);
  EXPECT_EQ(ar.kind, CollectiveKind::kAllReduce);
  EXPECT_EQ(ar.group, CommGroup::kData);
  EXPECT_EQ(ar.bytes, c.parameters * 4);
  EXPECT_EQ(ar.group_size, 4);
  EXPECT_EQ(ar.nodes_spanned, 4);  // t = 8 fills a node: every DP peer is on its own node
  EXPECT_EQ(c.grad_sync[0].stream, Stream::kDataComm);

  w = make_workload(gpt3_175b(), 2, 8, 4, 1, 8);
  w.training.use_distributed_optimizer = true;
  const WorkloadPlan plan2 = decompose(w);
  const ChunkPlan& d = plan2.stages[0].chunks[0];
  const auto& rs = std::get<CollectiveOp>(d.grad_sync[0].shape);
  EXPECT_EQ(rs.kind, CollectiveKind::kReduceScatter);
  EXPECT_EQ(rs.nodes_spanned, 1);  // 4 DP peers 2 ranks apart share a node of 8
}

TEST(Decompose, StepOpsTiedEmbeddingOptimizerAndParamGather) {
  Workload w = make_workload(gpt3_175b(), 8, 4, 2, 1, 8);
  w.model.num_layers = 16;
  w.training.use_distributed_optimizer = true;
  const WorkloadPlan plan = decompose(w);
  for (const StagePlan& s : plan.stages) {
    const bool edge = s.stage == 0 || s.stage == 3;
    const Op* emb = find_op(s.step_ops, "embedding_grad_all_reduce", -1);
    ASSERT_EQ(emb != nullptr, edge);
    if (emb != nullptr) {
      EXPECT_EQ(std::get<CollectiveOp>(emb->shape),
                (CollectiveOp{CollectiveKind::kAllReduce, CommGroup::kEmbedding,
                              51200 / 8 * 12288 * 4, 2, 2}));
    }
    // The optimizer's kernels over the shard (optimizer_ops_test.cpp has their launches):
    // grad norm 4, clip 8, Adam 28, fp32 -> bf16 parameter copy 6 bytes per parameter; then
    // the whole fp32 gradient buffer zeroed for the next step (zero_grad_buffer).
    std::int64_t optimizer_bytes = 0;
    for (const Op& op : s.step_ops) {
      if (op.stream == Stream::kCompute) optimizer_bytes += std::get<MemoryBoundOp>(op.shape).bytes;
    }
    EXPECT_EQ(optimizer_bytes, (s.parameters + 1) / 2 * 46 + s.parameters * 4);
    const Op* gather = find_op(s.step_ops, "dp_param_all_gather", -1);
    ASSERT_NE(gather, nullptr);
    EXPECT_EQ(std::get<CollectiveOp>(gather->shape).bytes, s.parameters * 2);
    EXPECT_EQ(s.static_bytes, static_memory(w.training, s.parameters).total());
  }
  // Untied embeddings: nothing to all-reduce between first and last stage.
  w.model.untie_embeddings_and_output_weights = true;
  EXPECT_EQ(find_op(decompose(w).stages[0].step_ops, "embedding_grad_all_reduce", -1), nullptr);
}

TEST(Decompose, ChunkMemoryMatchesMemoryModel) {
  Workload w = make_workload(gpt3_175b(), 8, 4, 1, 1, 8, 2);
  w.model.num_layers = 16;
  w.training.sequence_parallel = true;
  w.training.recompute_granularity = RecomputeGranularity::kSelective;
  const WorkloadPlan plan = decompose(w);
  for (const StagePlan& s : plan.stages) {
    for (const ChunkPlan& c : s.chunks) {
      const ChunkActivations a = chunk_activations(w, s.stage, c.chunk);
      EXPECT_EQ(c.stored_activation_bytes, a.stored_bytes);
      EXPECT_EQ(c.recompute_activation_bytes, a.recompute_bytes);
      EXPECT_GT(a.recompute_bytes, 0);
    }
  }
  EXPECT_EQ(plan, decompose(w));  // deterministic
}

}  // namespace
}  // namespace stepsim
