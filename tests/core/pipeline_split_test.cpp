// Megatron's layer split, case by case from Megatron-LM's own unit tests
// (github.com/NVIDIA/Megatron-LM, tests/unit_tests/transformer/test_transformer_block.py and
// test_transformer_layer.py): the same configurations, the layer counts its
// get_num_layers_to_build returns, the offsets its get_transformer_layer_offset returns, and
// an error (naming the scenario key) where its test expects an AssertionError/ValueError.

#include "stepsim/layout/pipeline_split.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <optional>

#include "stepsim/check/check.hpp"

namespace stepsim {
namespace {

struct Case {
  const char* source;  // the Megatron-LM test the case comes from
  std::int64_t layers;
  std::int64_t p;
  std::int64_t v;  // 0: Megatron's None
  bool embedding = false;
  bool loss = false;
  std::int64_t first = 0;  // 0: None
  std::int64_t last = 0;
  const char* layout = "";
  const char* error_key = nullptr;         // the key the error names; nullptr: valid
  std::vector<std::int32_t> counts = {};   // per (stage, chunk), stage-major; empty: not checked
  std::vector<std::int32_t> offsets = {};  // first layer per (stage, chunk); empty: not checked
};

Workload workload_of(const Case& c) {
  Workload w;
  w.name = "split";
  w.model.num_layers = c.layers;
  w.model.hidden_size = 128;
  w.model.num_attention_heads = 16;
  w.model.seq_length = 64;
  w.model.vocab_size = 128;
  w.training.world_size = c.p;
  w.training.pipeline_model_parallel_size = c.p;
  w.training.virtual_pipeline_model_parallel_size = c.v > 0 ? c.v : 1;
  // Megatron's default for interleaved runs; lets p = 2 interleave as its tests do.
  w.training.overlap_p2p_comm =
      c.v > 1 || std::string_view(c.layout).find('|') != std::string_view::npos;
  w.training.micro_batch_size = 1;
  w.training.global_batch_size = 4 * c.p;
  w.training.params_dtype = DType::kBf16;
  w.training.account_for_embedding_in_pipeline_split = c.embedding;
  w.training.account_for_loss_in_pipeline_split = c.loss;
  w.training.decoder_first_pipeline_num_layers = c.first;
  w.training.decoder_last_pipeline_num_layers = c.last;
  w.training.pipeline_model_parallel_layout = c.layout;
  return w;
}

constexpr const char* kBlock =
    "test_transformer_block.py::TestPipelineParallelTransformerBlock::test_layer_builder";
constexpr const char* kLayoutBlock =
    "test_transformer_block.py::TestPipelineParallelLayoutTransformerBlock::test_layer_builder";
constexpr const char* kOffsets =
    "test_transformer_layer.py::TestParallelTransformerLayer::test_get_layer_offset_parametrized";
constexpr const char* kLayerNumber =
    "test_transformer_block.py::TestPipelineParallelLayoutTransformerBlock::"
    "test_layout_layer_number";

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      // test_layer_builder's table, in its order.
      {kBlock, 60, 5, 0, false, false, 0, 4, "", nullptr, {14, 14, 14, 14, 4}},
      {kBlock, 60, 8, 0, false, false, 6, 6, "", nullptr, {6, 8, 8, 8, 8, 8, 8, 6}},
      {kBlock, 64, 4, 0, false, false, 0, 0, "", nullptr, {16, 16, 16, 16}, {0, 16, 32, 48}},
      {kBlock, 64, 4, 8, false, false, 0, 0, "", nullptr, std::vector<std::int32_t>(32, 2)},
      {kBlock, 60, 6, 0, false, false, 5, 0, "", nullptr, {5, 11, 11, 11, 11, 11}},
      {kBlock, 101, 8, 0, false, false, 13, 13, "", "training.decoder_first_pipeline_num_layers"},
      {kBlock, 63, 4, 0, true, false, 0, 0, "", nullptr, {15, 16, 16, 16}, {0, 15, 31, 47}},
      {kBlock, 63, 4, 0, false, true, 0, 0, "", nullptr, {16, 16, 16, 15}, {0, 16, 32, 48}},
      {kBlock, 62, 4, 0, true, true, 0, 0, "", nullptr, {15, 16, 16, 15}},
      {kBlock,
       62,
       4,
       2,
       true,
       true,
       0,
       0,
       "",
       nullptr,
       // (stage, chunk): 64 counted layers, 8 per chunk; offsets chunk * 32 + stage * 8 - 1.
       {7, 8, 8, 8, 8, 8, 8, 7},
       {0, 31, 7, 39, 15, 47, 23, 55}},
      {kBlock, 65, 4, 0, false, false, 0, 0, "", "training.pipeline_model_parallel_size"},
      {kBlock, 65, 4, 0, true, true, 0, 0, "", "training.pipeline_model_parallel_size"},
      {kBlock, 61, 4, 0, false, false, 12, 0, "", "training.decoder_first_pipeline_num_layers"},
      {kBlock, 2, 4, 0, false, false, 0, 0, "", "training.pipeline_model_parallel_size"},
      {kBlock, 60, 6, 0, true, false, 5, 5, "", "training.account_for_embedding_in_pipeline_split"},
      {kBlock, 50, 2, 7, false, false, 0, 0, "", "training.virtual_pipeline_model_parallel_size"},
      {kBlock, 4, 4, 4, false, false, 0, 0, "", "training.virtual_pipeline_model_parallel_size"},
      // test_get_layer_offset_parametrized's four configurations (30 = 8+6+6+10, ...).
      {kOffsets,
       30,
       4,
       2,
       false,
       false,
       8,
       10,
       "",
       nullptr,
       {4, 4, 3, 3, 3, 3, 5, 5},
       {0, 15, 4, 19, 7, 22, 10, 25}},
      {kOffsets,
       26,
       4,
       2,
       false,
       false,
       8,
       0,
       "",
       nullptr,
       {4, 4, 3, 3, 3, 3, 3, 3},
       {0, 13, 4, 17, 7, 20, 10, 23}},
      {kOffsets,
       26,
       4,
       2,
       false,
       false,
       0,
       8,
       "",
       nullptr,
       {3, 3, 3, 3, 3, 3, 4, 4},
       {0, 13, 3, 16, 6, 19, 9, 22}},
      {kOffsets,
       24,
       4,
       2,
       false,
       false,
       0,
       0,
       "",
       nullptr,
       {3, 3, 3, 3, 3, 3, 3, 3},
       {0, 12, 3, 15, 6, 18, 9, 21}},
      // The layout test's table, its lists written as the equivalent strings (its nested-list
      // cases have no string form).
      {kLayoutBlock, 7, 2, 0, false, false, 0, 0, "t*6|tL",
       "training.pipeline_model_parallel_layout"},
      {kLayoutBlock, 7, 2, 0, false, false, 0, 0, "Et*6|t",
       "training.pipeline_model_parallel_layout"},
      {kLayoutBlock, 7, 2, 0, false, false, 0, 0, "E|x*7L",
       "training.pipeline_model_parallel_layout"},
      {kLayoutBlock, 7, 2, 0, false, false, 0, 0, "E|t*7|L",
       "training.pipeline_model_parallel_layout"},
      {kLayoutBlock,
       7,
       2,
       0,
       false,
       false,
       0,
       0,
       "Et|t*4|t|tL",
       nullptr,
       {1, 1, 4, 1},
       {0, 5, 1, 6}},
      {kLayoutBlock, 7, 2, 0, false, false, 0, 0, "E|t*7||L", nullptr, {0, 0, 7, 0}, {0, 7, 0, 7}},
      {kLayoutBlock, 7, 2, 0, false, false, 0, 0, "E|t*6|t|L", nullptr, {0, 1, 6, 0}, {0, 6, 0, 7}},
      // Layer numbers (1-based there) [[[], []], [[1], [5]], [[2, 3], [6]], [[4], [7, 8]]].
      {kLayerNumber,
       8,
       4,
       0,
       false,
       false,
       0,
       0,
       "E|t|t*2|t||(t|)*2,t*2,L",
       nullptr,
       {0, 0, 1, 1, 2, 1, 1, 2},
       {0, 4, 0, 4, 1, 5, 3, 6}},
      // Megatron's arguments.py and TransformerConfig checks around the split.
      {"transformer_config.py: layout with other pipeline layout arguments", 8, 2, 0, false, false,
       4, 0, "Et*4|t*4L", "training.pipeline_model_parallel_layout"},
      {"transformer_config.py: multi-token prediction layers need mtp_num_layers", 8, 2, 0, false,
       false, 0, 0, "Et*4|t*4mL", "training.pipeline_model_parallel_layout"},
      {"stepsim: one stage is both first and last", 8, 1, 0, false, false, 8, 0, "",
       "training.decoder_first_pipeline_num_layers"},
      {"transformer_config.py: first + last beyond num_layers", 8, 3, 0, false, false, 6, 6, "",
       "training.decoder_first_pipeline_num_layers"},
      {"transformer_config.py: first not divisible by the virtual stages", 30, 4, 2, false, false,
       7, 9, "", "training.decoder_first_pipeline_num_layers"},
      {"transformer_config.py: middle stage layers not divisible by the virtual stages", 28, 4, 2,
       false, false, 8, 10, "", "training.decoder_first_pipeline_num_layers"},
      {"transformer_config.py: p = 2, first + last must be every layer", 8, 2, 0, false, false, 3,
       4, "", "training.decoder_first_pipeline_num_layers"},
      {"transformer_config.py: p = 2, first + last",
       8,
       2,
       0,
       false,
       false,
       3,
       5,
       "",
       nullptr,
       {3, 5},
       {0, 3}},
  };
  return all;
}

std::string describe(const Case& c) {
  return std::string(c.source) + ": layers=" + std::to_string(c.layers) +
         " p=" + std::to_string(c.p) + " v=" + std::to_string(c.v) +
         " first=" + std::to_string(c.first) + " last=" + std::to_string(c.last) +
         " embedding=" + std::to_string(c.embedding) + " loss=" + std::to_string(c.loss) +
         " layout=\"" + c.layout + "\"";
}

TEST(PipelineSplit, MegatronCases) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(describe(c));
    Workload w = workload_of(c);
    const Errors errors = finalize_workload(w, "split.json");
    if (c.error_key != nullptr) {
      EXPECT_TRUE(std::any_of(errors.begin(), errors.end(), [&](const Error& e) {
        return e.key == c.error_key;
      })) << format_errors(errors);
      continue;
    }
    ASSERT_TRUE(errors.empty()) << format_errors(errors);
    const PipelineSplit split = pipeline_split(w.training, w.model);
    std::int64_t total = 0;
    std::vector<std::int32_t> counts;
    std::vector<std::int32_t> offsets;
    for (const ChunkLayers& chunk : split.chunks) {
      total += chunk.count;
      counts.push_back(chunk.count);
      offsets.push_back(chunk.first);
    }
    EXPECT_EQ(total, c.layers);  // Megatron's tests: total build layers == num_layers
    if (!c.counts.empty()) {
      EXPECT_EQ(counts, c.counts);
    }
    if (!c.offsets.empty()) {
      EXPECT_EQ(offsets, c.offsets);
    }
    // The embedding and the loss sit where Megatron's pre_process / post_process put them.
    EXPECT_TRUE(split.at(0, 0).embedding);
    EXPECT_TRUE(split.at(split.p - 1, split.v - 1).loss);
    EXPECT_EQ(std::count_if(split.chunks.begin(), split.chunks.end(),
                            [](const ChunkLayers& k) { return k.embedding; }),
              1);
    EXPECT_EQ(std::count_if(split.chunks.begin(), split.chunks.end(),
                            [](const ChunkLayers& k) { return k.loss; }),
              1);
    for (std::int32_t r = 0; r < split.p; ++r) {
      for (std::int32_t k = 0; k < split.v; ++k) {
        EXPECT_EQ(chunk_layers(w.training, w.model, r, k), split.at(r, k));
      }
    }
  }
}

// test_transformer_block.py::TestPipelineParallelLayoutTransformerBlock::
// test_parsing_layout_from_str: the strings and the lists they must parse to.
TEST(PipelineLayout, ParsesAsMegatron) {
  const auto stages = [](std::string_view text) {
    const auto parsed = parse_pipeline_layout(text);
    EXPECT_TRUE(parsed.ok()) << (parsed.ok() ? "" : format_errors(parsed.errors()));
    return parsed.ok() ? parsed.value() : std::vector<std::string>{};
  };
  EXPECT_EQ(stages("Et|t*4|t|tL"), (std::vector<std::string>{"Et", "tttt", "t", "tL"}));
  EXPECT_EQ(stages("E|t*6|t|L"), (std::vector<std::string>{"E", "tttttt", "t", "L"}));
  EXPECT_EQ(stages("E|t|t*2|t||(t|)*2,t*2,L"),
            (std::vector<std::string>{"E", "t", "tt", "t", "", "t", "t", "ttL"}));
  std::vector<std::string> mtp = {"Ettt"};
  mtp.insert(mtp.end(), 29, "tt");
  mtp.emplace_back("m");
  mtp.emplace_back("L");
  EXPECT_EQ(stages("Et*3|(tt|)*29,m|L"), mtp);
  std::vector<std::string> mtp16 = {"Ett"};
  mtp16.insert(mtp16.end(), 29, "tt");
  mtp16.emplace_back("t");
  mtp16.emplace_back("mL");
  EXPECT_EQ(stages("Et*2|(tt|)*29,t|mL"), mtp16);
  // The docstring's pp = 4 example: one pass per pattern, so "(t|)*4" unrolls once.
  EXPECT_EQ(stages("E|(tt|)*2,(t|)*4,mL"),
            (std::vector<std::string>{"E", "tt", "tt", "t", "t", "t", "t", "mL"}));
  // re.sub's semantics: a nested group's inner '(' belongs to the outer match, which then
  // leaves a ')' that is no layer.
  EXPECT_FALSE(parse_pipeline_layout("((t)*2)*2").ok());
  EXPECT_EQ(stages("t*0E"), (std::vector<std::string>{"E"}));
}

TEST(PipelineLayout, RejectsHostileText) {
  for (const std::string_view text :
       {std::string_view("t*99999999999999999999999"), std::string_view("(tttttttt)*999999"),
        std::string_view("E t|L"), std::string_view("E\tt|L"), std::string_view("E|t*\n2|L")}) {
    SCOPED_TRACE(text);
    const auto parsed = parse_pipeline_layout(text);
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.errors().front().key, "training.pipeline_model_parallel_layout");
  }
}

// A run of '(' without ')' (a quadratic search once) and a text beyond the bound.
TEST(PipelineLayout, LongHostileTextIsRejected) {
  const std::string open(200000, '(');
  const auto parsed = parse_pipeline_layout(open);
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.errors().front().key, "training.pipeline_model_parallel_layout");
  Case c{"long layout", 8, 2, 0};
  Workload w = workload_of(c);
  w.training.pipeline_model_parallel_layout = "Et*4|" + std::string(kMaxLayoutText, ',') + "t*4L";
  const Errors errors = finalize_workload(w, "long.json");
  EXPECT_TRUE(std::any_of(errors.begin(), errors.end(), [](const Error& e) {
    return e.key == "training.pipeline_model_parallel_layout" &&
           e.message.find("is longer than") != std::string::npos;
  })) << format_errors(errors);
}

TEST(PipelineSplit, EvenSplitIsTheOldBlockOrder) {
  // Without uneven settings the split is Megatron's (c*p + r)-th block of L/(p*v) layers.
  const Case c{"even", 96, 8, 3};
  Workload w = workload_of(c);
  ASSERT_TRUE(finalize_workload(w, "even.json").empty());
  EXPECT_FALSE(uneven_pipeline(w.training));
  const PipelineSplit split = pipeline_split(w.training, w.model);
  for (std::int32_t r = 0; r < 8; ++r) {
    for (std::int32_t k = 0; k < 3; ++k) {
      EXPECT_EQ(split.at(r, k).first, (k * 8 + r) * 4);
      EXPECT_EQ(split.at(r, k).count, 4);
    }
  }
  EXPECT_EQ(stage_layers_text(split), "12,12,12,12,12,12,12,12");
}

}  // namespace
}  // namespace stepsim
