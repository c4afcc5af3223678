// training.fwd_layernorm_sm_margin / bwd_layernorm_sm_margin: Transformer Engine's
// NVTE_FWD_LAYERNORM_SM_MARGIN / NVTE_BWD_LAYERNORM_SM_MARGIN. Its norm kernels launch on
// sm_count - margin SMs (transformer_engine/common/normalization/common.cpp); stepsim prices
// them at their full-GPU time over that share, and only them: autograd's residual add, which
// the norm backward op carries, keeps the whole GPU.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "shipped_scenario.hpp"
#include "stepsim/cost/cost_model.hpp"
#include "stepsim/plan/decompose.hpp"
#include "stepsim/config/parse.hpp"
#include "stepsim/cost/make_cost_model.hpp"

namespace stepsim {
namespace {

/// Llama 3.1 8B on 8 H100 (132 SMs), with `training` keys added.
Result<Workload> llama(const std::string& training) {
  return testing::shipped_with("llama3-8b-h100-8.json", training);
}

const Op& op_named(const std::vector<Op>& ops, std::string_view name, std::int32_t layer) {
  for (const Op& op : ops) {
    if (op.name == name && op.layer == layer) return op;
  }
  ADD_FAILURE() << "no op " << name;
  static const Op none;
  return none;
}

double seconds(const Workload& w, const Op& op) {
  auto model = make_cost_model(w);
  EXPECT_TRUE(model.ok());
  return model.ok() ? (*model)->op_s(op) : 0.0;
}

TEST(NormSmMargin, NormKernelsRunOnTheSmsTheMarginLeaves) {
  const auto plain = llama("");
  const auto margin = llama(R"("fwd_layernorm_sm_margin": 16, "bwd_layernorm_sm_margin": 33)");
  ASSERT_TRUE(plain.ok()) << format_errors(plain.errors());
  ASSERT_TRUE(margin.ok()) << format_errors(margin.errors());
  const ChunkPlan a = decompose(*plain).stages[0].chunks[0];
  const ChunkPlan b = decompose(*margin).stages[0].chunks[0];
  ASSERT_EQ(a.forward.size(), b.forward.size());
  ASSERT_EQ(a.backward.size(), b.backward.size());
  // Forward norms: the whole op on 116 of 132 SMs, the same bytes.
  for (const std::string name : {"ln1", "ln2"}) {
    const Op& x = op_named(a.forward, name, 1);
    const Op& y = op_named(b.forward, name, 1);
    EXPECT_EQ(x.shape, y.shape) << name;
    EXPECT_DOUBLE_EQ(x.sm_share, 1.0);
    EXPECT_DOUBLE_EQ(y.sm_share, 116.0 / 132) << name;
    EXPECT_NEAR(seconds(*margin, y), seconds(*plain, x) * 132 / 116, 1e-15) << name;
  }
  const Op& final_norm = op_named(b.forward, "final_norm", -1);
  EXPECT_DOUBLE_EQ(final_norm.sm_share, 116.0 / 132);
  // Backward: 99 of 132 SMs for the norm's bytes only. Llama's RMSNorm in bf16 over the
  // rank's sequence shard, s * b / t = 8192 / 2 tokens, h 4096: the backward reads x and dy
  // and writes dx (3 tensors) plus the fp32 rstd per token; autograd's residual add reads two
  // tensors and writes one.
  const double tokens = 4096, h = 4096;
  const double norm = tokens * h * 3 * 2 + tokens * 4;
  const double add = tokens * h * 3 * 2;
  const Op& ln1_bwd = op_named(b.backward, "ln1_bwd", 1);
  EXPECT_EQ(std::get<MemoryBoundOp>(ln1_bwd.shape).bytes, static_cast<std::int64_t>(norm + add));
  EXPECT_DOUBLE_EQ(ln1_bwd.sm_share, (norm + add) / (norm * 132 / 99 + add));
  EXPECT_DOUBLE_EQ(op_named(b.backward, "final_norm_bwd", -1).sm_share, 99.0 / 132);
  // Everything else is untouched.
  for (std::size_t i = 0; i < a.backward.size(); ++i) {
    if (a.backward[i].name.find("norm") != std::string::npos ||
        a.backward[i].name.starts_with("ln")) {
      continue;
    }
    EXPECT_EQ(a.backward[i], b.backward[i]) << a.backward[i].name;
  }
}

TEST(NormSmMargin, TheMarginMustLeaveAnSm) {
  const auto w = llama(R"("bwd_layernorm_sm_margin": 132)");
  ASSERT_FALSE(w.ok());
  const std::string all = format_errors(w.errors());
  EXPECT_NE(all.find("training.bwd_layernorm_sm_margin=132 (NVTE_BWD_LAYERNORM_SM_MARGIN) must "
                     "be below system.sm_count=132"),
            std::string::npos)
      << all;
  const auto negative = llama(R"("fwd_layernorm_sm_margin": -1)");
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(format_errors(negative.errors()).find("training.fwd_layernorm_sm_margin"),
            std::string::npos);
}

}  // namespace
}  // namespace stepsim
