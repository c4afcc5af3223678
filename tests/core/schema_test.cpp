// The schema table: its rows are consistent, it drives the loader's unknown-key messages and
// the sweep's knob table, and docs/scenario-keys.md is what it generates.

#include "stepsim/config/schema.hpp"
#include "stepsim/cost/input_bounds_doc.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "stepsim/check/load.hpp"
#include "stepsim/sweep/sweep_spec.hpp"

namespace stepsim {
namespace {

const std::string kKeyReference = std::string(STEPSIM_SOURCE_DIR) + "/docs/scenario-keys.md";

// Regenerate with build/bin/stepsim_scenario_keys > docs/scenario-keys.md.
TEST(Schema, KeyReferenceIsCurrent) {
  std::ifstream in(kKeyReference);
  std::ostringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), scenario_keys_markdown())
      << kKeyReference << " is stale: run build/bin/stepsim_scenario_keys > docs/scenario-keys.md";
}

// Issue 41: every numeric key's range, generated like the key reference.
TEST(Schema, InputBoundsAreCurrent) {
  const std::string path = std::string(STEPSIM_SOURCE_DIR) + "/docs/input-bounds.md";
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), input_bounds_markdown())
      << path << " is stale: run build/bin/stepsim_scenario_keys --bounds > docs/input-bounds.md";
}

TEST(Schema, EveryIntegerKeyHasABoundAndAReason) {
  for (const KeyInfo& k : scenario_schema()) {
    if (k.kind != KnobKind::kInt) continue;
    EXPECT_GT(int_key_max(k), 0) << k.key;
    EXPECT_FALSE(int_key_max_why(k).empty()) << k.key;
  }
  const KeyInfo* nics = find_schema_key("system.nics_per_node");
  ASSERT_NE(nics, nullptr);
  EXPECT_EQ(int_key_bound_problem(*nics, 8), "");
  EXPECT_NE(int_key_bound_problem(*nics, std::int64_t{1} << 33).find("exceeds stepsim's limit of 256"),
            std::string::npos);
  const KeyInfo* layers = find_schema_key("model.hidden_size");
  ASSERT_NE(layers, nullptr);
  EXPECT_NE(int_key_bound_problem(*layers, std::int64_t{1} << 31).find("int32"), std::string::npos);
}

TEST(Schema, RowsAreConsistent) {
  std::set<std::string_view> keys;
  std::set<std::string_view> flags;
  for (const KeyInfo& k : scenario_schema()) {
    EXPECT_TRUE(keys.insert(k.key).second) << k.key << " is declared twice";
    EXPECT_FALSE(k.doc.empty()) << k.key;
    EXPECT_EQ(k.autoable, k.sweep == Sweep::kAuto) << k.key;
    EXPECT_EQ(k.set == nullptr, k.get == nullptr) << k.key;
    if (k.sweep != Sweep::kNo) {
      EXPECT_NE(k.set, nullptr) << k.key;
    }
    if (k.kind == KnobKind::kChoice) {
      EXPECT_FALSE(k.choices.empty()) << k.key;
    }
    // A key of the schema is never also listed as not modelled.
    const auto dot = k.key.rfind('.');
    const std::string_view leaf = dot == std::string_view::npos ? k.key : k.key.substr(dot + 1);
    EXPECT_EQ(find_unmodelled_argument(leaf), nullptr) << k.key;
    std::string_view rest = k.flags;
    while (!rest.empty()) {
      const auto space = rest.find(' ');
      const std::string_view word = rest.substr(0, space);
      EXPECT_TRUE(word.starts_with("--")) << k.key;
      EXPECT_TRUE(flags.insert(word.substr(0, word.find('='))).second) << word;
      EXPECT_EQ(find_unmodelled_argument(word.substr(0, word.find('='))), nullptr) << word;
      rest = space == std::string_view::npos ? std::string_view() : rest.substr(space + 1);
    }
  }
}

TEST(Schema, KnobTableIsTheSweepableRowsInOrder) {
  std::size_t i = 0;
  for (const KeyInfo& k : scenario_schema()) {
    if (k.sweep == Sweep::kNo) continue;
    ASSERT_LT(i, knob_table().size());
    EXPECT_EQ(knob_table()[i].key, k.key);
    EXPECT_EQ(find_knob(k.key), static_cast<KnobId>(i));
    ++i;
  }
  EXPECT_EQ(i, knob_table().size());
  // The enumeration order the sweep planner relies on: the system first, then the model,
  // then the run's size, then t before p before v before the micro-batch.
  EXPECT_EQ(knob_table()[0].key, "system");
  EXPECT_LT(find_knob("model.num_layers"), find_knob("training.world_size"));
  EXPECT_LT(find_knob("training.tensor_model_parallel_size"),
            find_knob("training.pipeline_model_parallel_size"));
  EXPECT_LT(find_knob("training.pipeline_model_parallel_size"),
            find_knob("training.virtual_pipeline_model_parallel_size"));
  EXPECT_LT(find_knob("training.virtual_pipeline_model_parallel_size"),
            find_knob("training.micro_batch_size"));
}

TEST(Schema, UnknownKeyMessages) {
  EXPECT_EQ(unknown_key_message("training", "moe_z_loss_coeff"),
            " is a Megatron-LM argument (--moe-z-loss-coeff) that stepsim does not model yet");
  EXPECT_EQ(unknown_key_message("training", "tensor_model_paralel_size"),
            " is not a known key; did you mean \"training.tensor_model_parallel_size\"?");
  // A key of the other section.
  EXPECT_EQ(unknown_key_message("training", "seq_length"),
            " is not a known key; did you mean \"model.seq_length\"?");
  EXPECT_EQ(unknown_key_message("model", "colour"), " is not a known key");
}

// The loader reports unknown keys with the schema's messages.
TEST(Schema, UnknownKeysInAScenario) {
  LoadOptions o;
  o.scenarios_dir = STEPSIM_SCENARIOS_DIR;
  const std::string text = R"({"name": "x", "model": {"num_layers": 8, "hidden_size": 512,
    "num_attention_heads": 8, "seq_length": 256, "vocab_size": 1000, "colr": 1,
    "moe_z_loss_coeff": 0.001}, "training": {"world_size": 8, "micro_batch_size": 1,
    "global_batch_size": 8, "tensor_model_paralel_size": 2},
    "system": "systems/dgx-a100-80gb.json"})";
  auto w = load_scenario_text(text, "s.json", ".", o);
  ASSERT_FALSE(w.ok());
  const std::string errors = format_errors(w.errors());
  EXPECT_NE(errors.find("model.colr is not a known key"), std::string::npos) << errors;
  EXPECT_NE(errors.find("model.moe_z_loss_coeff is a Megatron-LM argument (--moe-z-loss-coeff) "
                        "that stepsim does not model yet"),
            std::string::npos)
      << errors;
  EXPECT_NE(errors.find("training.tensor_model_paralel_size is not a known key; did you mean "
                        "\"training.tensor_model_parallel_size\"?"),
            std::string::npos)
      << errors;
}

}  // namespace
}  // namespace stepsim
