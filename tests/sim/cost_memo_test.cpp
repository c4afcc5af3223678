// CostMemo: the sweep workers' per-thread memo of a cost model's answers.

#include "stepsim/graph/cost_memo.hpp"

#include <gtest/gtest.h>

#include <map>

namespace stepsim {
namespace {

// Answers depend on every field of an op, and each distinct query is counted.
class CountingModel final : public CostModel {
 public:
  double gemm_s(const GemmOp& op) const override {
    return count("gemm") + 1e-9 * static_cast<double>(op.m + 3 * op.n + 7 * op.k + 11 * op.batch) +
           (op.dtype == DType::kFp32 ? 0.5 : 0.0);
  }
  double attention_s(const AttentionOp& op) const override {
    return count("attention") + (op.backward ? 2.0 : 1.0) + (op.causal ? 0.25 : 0.0) +
           1e-6 * static_cast<double>(op.batch + op.heads + op.kv_heads + op.seq + op.head_dim);
  }
  double memory_bound_s(const MemoryBoundOp& op) const override {
    return count("memory") + 1e-12 * static_cast<double>(op.bytes);
  }
  double collective_s(const CollectiveOp& op) const override {
    return count("collective") + static_cast<double>(op.kind) +
           10.0 * static_cast<double>(op.group) + 1e-12 * static_cast<double>(op.bytes) +
           1e-3 * static_cast<double>(op.group_size) + 1e-4 * static_cast<double>(op.nodes_spanned);
  }
  double p2p_s(const P2POp& op) const override {
    return count("p2p") + 1e-12 * static_cast<double>(op.bytes) + (op.inter_node ? 1.0 : 0.0);
  }
  std::string describe() const override { return "counting"; }
  std::vector<std::string> warnings() const override { return {"w"}; }

  mutable std::map<std::string, int> calls;

 private:
  double count(const std::string& kind) const {
    ++calls[kind];
    return 0.0;
  }
};

TEST(CostMemo, AnswersAsTheModelAndAsksItOncePerShape) {
  const CountingModel model;
  const sim::CostMemo memo(model);
  const std::vector<OpShape> shapes = {
      GemmOp{128, 256, 512, 1, DType::kBf16},
      GemmOp{128, 256, 512, 1, DType::kFp32},
      GemmOp{256, 128, 512, 1, DType::kBf16},
      GemmOp{128, 256, 512, 2, DType::kBf16},
      AttentionOp{1, 8, 8, 2048, 128, true, false, DType::kBf16},
      AttentionOp{1, 8, 8, 2048, 128, true, true, DType::kBf16},
      AttentionOp{1, 8, 8, 2048, 128, false, false, DType::kBf16},
      AttentionOp{1, 8, 2, 2048, 128, true, false, DType::kBf16},
      MemoryBoundOp{1 << 20},
      MemoryBoundOp{1 << 21},
      CollectiveOp{CollectiveKind::kAllReduce, CommGroup::kTensor, 1 << 20, 8, 1},
      CollectiveOp{CollectiveKind::kAllGather, CommGroup::kTensor, 1 << 20, 8, 1},
      CollectiveOp{CollectiveKind::kAllReduce, CommGroup::kData, 1 << 20, 8, 1},
      CollectiveOp{CollectiveKind::kAllReduce, CommGroup::kTensor, 1 << 20, 8, 2},
      CollectiveOp{CollectiveKind::kAllReduce, CommGroup::kTensor, 1 << 20, 4, 1},
      P2POp{1 << 20, false},
      P2POp{1 << 20, true},
  };
  for (int round = 0; round < 3; ++round) {
    for (const OpShape& s : shapes) {
      EXPECT_EQ(memo.shape_s(s), model.shape_s(s)) << "shape " << s.index() << " round " << round;
    }
  }
  // Three rounds: the memo asked once per distinct shape, the direct calls three times.
  EXPECT_EQ(model.calls["gemm"], 4 * (1 + 3));
  EXPECT_EQ(model.calls["attention"], 4 * (1 + 3));
  EXPECT_EQ(model.calls["memory"], 2 * (1 + 3));
  EXPECT_EQ(model.calls["collective"], 5 * (1 + 3));
  EXPECT_EQ(model.calls["p2p"], 2 * (1 + 3));
  EXPECT_EQ(memo.size(), shapes.size());
  EXPECT_EQ(memo.describe(), "counting");
  EXPECT_EQ(memo.warnings(), std::vector<std::string>{"w"});
}

// Fields the first key left out: a GEMM's cuBLAS layout (a measured profile prices NN, NT
// and TN apart) and an FP8 GEMM's scaling (block-scaled kernels apart), a context-parallel
// attention step's keys (seq_kv) and MLA's value width, and whether a collective or transfer is
// NCCL's. Shapes differing only there are distinct.
class FieldModel final : public CostModel {
 public:
  double gemm_s(const GemmOp& op) const override {
    return 1.0 + static_cast<double>(op.layout) + 10.0 * static_cast<double>(op.scaling) +
           (op.fast_accum ? 100.0 : 0.0);
  }
  double attention_s(const AttentionOp& op) const override {
    return 1.0 + 1e-3 * static_cast<double>(op.kv_seq()) + static_cast<double>(op.v_dim());
  }
  double memory_bound_s(const MemoryBoundOp&) const override { return 1.0; }
  double collective_s(const CollectiveOp& op) const override { return op.nccl ? 1.0 : 2.0; }
  double p2p_s(const P2POp& op) const override { return op.nccl ? 1.0 : 2.0; }
  std::string describe() const override { return "fields"; }
};

TEST(CostMemo, KeysEveryFieldThatChangesThePrice) {
  const FieldModel model;
  const sim::CostMemo memo(model);
  AttentionOp ring{1, 8, 8, 2048, 128, true, false, DType::kBf16};
  AttentionOp half = ring;
  half.seq_kv = 1024;
  AttentionOp narrow = ring;
  narrow.v_head_dim = 64;
  CollectiveOp nccl{CollectiveKind::kAllGather, CommGroup::kTensor, 1 << 20, 8, 1};
  CollectiveOp userbuffers = nccl;
  userbuffers.nccl = false;
  P2POp copy{1 << 20, false};
  copy.nccl = false;
  const std::vector<OpShape> shapes = {
      GemmOp{128, 256, 512, 1, DType::kBf16, GemmLayout::kTN},
      GemmOp{128, 256, 512, 1, DType::kBf16, GemmLayout::kNN},
      GemmOp{128, 256, 512, 1, DType::kBf16, GemmLayout::kNT},
      GemmOp{128, 256, 512, 1, DType::kFp8, GemmLayout::kTN},
      GemmOp{128, 256, 512, 1, DType::kFp8, GemmLayout::kTN, GemmScaling::kBlock128x128},
      GemmOp{128, 256, 512, 1, DType::kFp8, GemmLayout::kTN, GemmScaling::kBlock1x128},
      GemmOp{128, 256, 512, 1, DType::kFp8, GemmLayout::kTN, GemmScaling::kTensor, true},
      ring,
      half,
      narrow,
      nccl,
      userbuffers,
      P2POp{1 << 20, false},
      copy,
  };
  for (int round = 0; round < 2; ++round) {
    for (const OpShape& s : shapes) EXPECT_EQ(memo.shape_s(s), model.shape_s(s)) << s.index();
  }
  EXPECT_EQ(memo.size(), shapes.size());
}

}  // namespace
}  // namespace stepsim
