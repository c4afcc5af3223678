// Sliding-window attention (Megatron's --window-size, --window-attn-skip-freq): which layers use
// the window, the causal band's score count, the attention op's FLOPs against closed forms, and
// Megatron's logged FLOPs, which ignore the window.

#include "stepsim/layout/window_attention.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model_workloads.hpp"
#include "stepsim/plan/decompose.hpp"
#include "stepsim/ops/flops.hpp"
#include "stepsim/plan/plan_flops.hpp"
#include "stepsim/check/check.hpp"

namespace stepsim {
namespace {

using testing::make_workload;

/// GPT-OSS-like attention (openai/gpt-oss-120b's config.json: 64 query heads, 8 key/value heads,
/// head dim 64, sliding_window 128 on every other layer, which Megatron-Bridge's GPT-OSS bridge
/// passes as --window-size 127,0 --window-attn-skip-freq 2), dense and shallow for the test.
ModelConfig swa_model() {
  ModelConfig m;
  m.num_layers = 4;
  m.hidden_size = 2880;
  m.num_attention_heads = 64;
  m.num_query_groups = 8;
  m.kv_channels = 64;
  m.ffn_hidden_size = 2880;
  m.seq_length = 4096;
  m.max_position_embeddings = 4096;
  m.vocab_size = 201088;
  m.padded_vocab_size = 201088;
  m.swiglu = true;
  m.position_embedding_type = PositionEmbedding::kRope;
  m.normalization = Normalization::kRmsNorm;
  m.attention_backend = AttentionBackend::kAuto;
  m.attention_dropout = 0.0;
  m.hidden_dropout = 0.0;
  m.window_size = {127, 0};
  m.window_attn_skip_freq = "2";
  return m;
}

const Op* find_op(const std::vector<Op>& ops, const std::string& name, std::int32_t layer) {
  for (const Op& op : ops) {
    if (op.name == name && op.layer == layer) return &op;
  }
  return nullptr;
}

TEST(WindowAttention, SkipFreqIsMegatronsLayerNumberRule) {
  // is_layer_window_attention: layer_number % N != 0, layer numbers from 1.
  auto two = parse_window_attn_skip_freq("2", 6);
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(two.value(), (std::vector<bool>{true, false, true, false, true, false}));
  auto three = parse_window_attn_skip_freq("3", 6);
  ASSERT_TRUE(three.ok());
  EXPECT_EQ(three.value(), (std::vector<bool>{true, true, false, true, true, false}));
  auto pattern = parse_window_attn_skip_freq("[1,1,0]*2", 6);
  ASSERT_TRUE(pattern.ok());
  EXPECT_EQ(pattern.value(), three.value());
  for (const char* bad : {"0", "x", "[1,2]*3", "[1,0]*2", "[1,0"}) {
    auto r = parse_window_attn_skip_freq(bad, 6);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.errors()[0].key, "model.window_attn_skip_freq") << bad;
  }
}

TEST(WindowAttention, BandScoresAreTheSumOfRowLengths) {
  for (const std::int64_t s : {1, 7, 128, 1000}) {
    for (const std::int64_t w : {1, 2, 127, 128, 129, 5000}) {
      double sum = 0;
      for (std::int64_t i = 0; i < s; ++i) sum += static_cast<double>(std::min(i + 1, w));
      EXPECT_DOUBLE_EQ(causal_band_scores(s, w), sum) << s << " " << w;
    }
  }
}

TEST(WindowAttention, WindowKeysAndLayers) {
  ModelConfig m = swa_model();
  EXPECT_EQ(window_keys(m), 128);
  EXPECT_EQ(window_layer_pattern(m), (std::vector<bool>{true, false, true, false}));
  m.window_attn_skip_freq.clear();  // None: every layer
  EXPECT_EQ(window_layer_pattern(m), (std::vector<bool>(4, true)));
  m.window_size = {-1, 0};  // full attention
  EXPECT_EQ(window_keys(m), 0);
  EXPECT_EQ(window_layer_pattern(m), (std::vector<bool>(4, false)));
  m.window_size = {4095, 0};  // the window holds the whole sequence: the causal triangle
  EXPECT_EQ(window_keys(m), 0);
}

TEST(WindowAttention, FlashKernelFlopsAreTheBand) {
  const Workload w = make_workload(swa_model(), 1, 1, 1, 1, 1);
  ASSERT_TRUE(validate_workload(w, "test").empty());
  const WorkloadPlan plan = decompose(w);
  const ChunkPlan& c = plan.stages[0].chunks[0];
  // Per head: QK^T and PV over the band, 2 * scores * (d + d); 64 heads, one sequence.
  const double s = 4096, win = 128, d = 64, heads = 64;
  const double band = win * s - win * (win - 1) / 2;
  const double rectangle = s * s;
  for (const std::int32_t layer : {0, 1, 2, 3}) {
    const Op* fwd = find_op(c.forward, "attn_flash", layer);
    const Op* bwd = find_op(c.backward, "attn_flash_bwd", layer);
    ASSERT_NE(fwd, nullptr);
    ASSERT_NE(bwd, nullptr);
    const auto& f = std::get<AttentionOp>(fwd->shape);
    const auto& b = std::get<AttentionOp>(bwd->shape);
    const bool windowed = layer % 2 == 0;  // layer numbers 1 and 3
    EXPECT_EQ(f.window, windowed ? 128 : 0) << layer;
    EXPECT_EQ(b.window, f.window) << layer;
    const double scores = windowed ? band : rectangle;
    EXPECT_DOUBLE_EQ(f.flops(), 2 * scores * 2 * d * heads) << layer;
    EXPECT_DOUBLE_EQ(b.flops(), 2 * f.flops()) << layer;
    // What the step's FLOP count adds: the rectangle, window or not (Megatron's count).
    EXPECT_DOUBLE_EQ(fwd->flops(), 2 * rectangle * 2 * d * heads) << layer;
    EXPECT_DOUBLE_EQ(bwd->flops(), 2 * fwd->flops()) << layer;
  }
}

TEST(WindowAttention, MegatronsLoggedFlopsIgnoreTheWindow) {
  ModelConfig full = swa_model();
  full.window_size.clear();
  full.window_attn_skip_freq.clear();
  const Workload windowed = make_workload(swa_model(), 1, 1, 1, 1, 1);
  const Workload plain = make_workload(full, 1, 1, 1, 1, 1);
  EXPECT_DOUBLE_EQ(megatron_logged_flops_per_step(windowed), megatron_logged_flops_per_step(plain));
  EXPECT_DOUBLE_EQ(count_flops(windowed).model_flops_per_step,
                   count_flops(plain).model_flops_per_step);
  EXPECT_DOUBLE_EQ(count_flops(windowed).hardware_flops_per_step,
                   count_flops(plain).hardware_flops_per_step);
}

}  // namespace
}  // namespace stepsim
