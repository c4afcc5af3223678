#include "stepsim/check/load.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "stepsim/cost/make_cost_model.hpp"

namespace stepsim {
namespace {

namespace fs = std::filesystem;

const std::string kScenarios = STEPSIM_SCENARIOS_DIR;
const std::string kInvalid = std::string(STEPSIM_SOURCE_DIR) + "/tests/invalid";

LoadOptions options() { return LoadOptions{kScenarios}; }

using Members = std::map<std::string, std::string>;  // key -> JSON value text

std::string object_text(const Members& members) {
  std::string text;
  for (const auto& [key, value] : members) {
    text += (text.empty() ? "\"" : ", \"") + key + "\": " + value;
  }
  return "{" + text + "}";
}

// A minimal scenario: only the keys that must be given, with `model` and `training` members
// added or overridden (values are JSON text) and `top_extra` appended at the top level.
std::string tiny(const Members& model = {}, const Members& training = {},
                 const std::string& top_extra = "") {
  Members m = {{"num_layers", "8"},
               {"hidden_size", "512"},
               {"num_attention_heads", "8"},
               {"seq_length", "256"},
               {"vocab_size", "1000"}};
  Members t = {{"world_size", "8"},
               {"tensor_model_parallel_size", "2"},
               {"pipeline_model_parallel_size", "2"},
               {"micro_batch_size", "1"},
               {"global_batch_size", "8"},
               {"bf16", "true"}};
  for (const auto& [key, value] : model) m[key] = value;
  for (const auto& [key, value] : training) t[key] = value;
  std::string text = "{\"name\": \"tiny\", \"model\": " + object_text(m) +
                     ", \"training\": " + object_text(t) +
                     ", \"system\": \"systems/dgx-a100-80gb.json\"";
  if (!top_extra.empty()) text += ", " + top_extra;
  return text + "}";
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// tiny() with its system path replaced by an inline system object.
std::string with_inline_system(const std::string& system_json) {
  std::string text = tiny();
  const std::string path = "\"systems/dgx-a100-80gb.json\"";
  return text.replace(text.find(path), path.size(), system_json);
}

Result<Workload> load_text(const std::string& text) {
  return load_scenario_text(text, "test.json", kScenarios, options());
}

Workload load_ok(const std::string& text) {
  auto w = load_text(text);
  EXPECT_TRUE(w.ok()) << (w.ok() ? "" : format_errors(w.errors()));
  return w.ok() ? w.value() : Workload{};
}

bool names(const Errors& errors, const std::string& key, const std::string& phrase = "") {
  return std::any_of(errors.begin(), errors.end(), [&](const Error& e) {
    return e.key == key && e.to_string().find(phrase) != std::string::npos;
  });
}

std::vector<std::string> json_files(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() == ".json") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(LoadScenario, EveryShippedScenarioLoads) {
  const auto files = json_files(kScenarios);
  ASSERT_GE(files.size(), 8u);
  for (const std::string& file : files) {
    auto w = load_scenario_file(file, options());
    EXPECT_TRUE(w.ok()) << file << "\n" << (w.ok() ? "" : format_errors(w.errors()));
    if (!w.ok()) continue;
    EXPECT_EQ(w->source_file, file);
    EXPECT_GT(w->training.data_parallel_size, 0) << file;
    EXPECT_GT(w->training.num_microbatches, 0) << file;
    EXPECT_FALSE(w->system.name.empty()) << file;
  }
}

TEST(LoadScenario, DefaultScenarioIsGpt3On64A100) {
  auto w = load_scenario_file(kScenarios + "/gpt3-175b-a100-64.json", options());
  ASSERT_TRUE(w.ok()) << format_errors(w.errors());
  const ModelConfig& m = w->model;
  const TrainingConfig& t = w->training;
  EXPECT_EQ(m.num_layers, 96);
  EXPECT_EQ(m.hidden_size, 12288);
  EXPECT_EQ(m.num_attention_heads, 96);
  EXPECT_EQ(m.num_query_groups, 96);
  EXPECT_EQ(m.kv_channels, 128);
  EXPECT_EQ(m.ffn_hidden_size, 4 * 12288);
  EXPECT_EQ(m.padded_vocab_size, 51200);  // 50257 padded to a multiple of 128 * t = 1024
  EXPECT_EQ(t.world_size, 64);
  EXPECT_EQ(t.tensor_model_parallel_size, 8);
  EXPECT_EQ(t.pipeline_model_parallel_size, 8);
  EXPECT_EQ(t.virtual_pipeline_model_parallel_size, 3);
  EXPECT_EQ(t.num_layers_per_virtual_pipeline_stage, 4);
  EXPECT_EQ(t.data_parallel_size, 1);
  EXPECT_EQ(t.num_microbatches, 64);
  EXPECT_EQ(t.microbatch_group_size_per_vp_stage, 8);
  EXPECT_TRUE(t.sequence_parallel);
  EXPECT_EQ(t.recompute_granularity, RecomputeGranularity::kSelective);
  EXPECT_EQ(t.params_dtype, DType::kBf16);
  EXPECT_EQ(w->system.name, "dgx-a100-80gb");
  EXPECT_DOUBLE_EQ(w->system.peak_flops_bf16, 312e12);
  // The A100 public reference profile, resolved under scenarios/.
  EXPECT_EQ(w->cost_model.kind, CostModelSpec::Kind::kProfile);
  EXPECT_EQ(w->cost_model.profile_path, kScenarios + "/profiles/a100-sxm4-80gb-public.json");
}

TEST(LoadScenario, OmittedKeysTakeMegatronDefaults) {
  const Workload w = load_ok(tiny({}, {{"bf16", "false"}}));
  EXPECT_TRUE(w.model.add_bias_linear);
  EXPECT_FALSE(w.model.swiglu);
  EXPECT_FALSE(w.model.untie_embeddings_and_output_weights);
  EXPECT_EQ(w.model.make_vocab_size_divisible_by, 128);
  EXPECT_EQ(w.model.padded_vocab_size, 1024);  // 1000 rounded up to 128 * t = 256
  EXPECT_EQ(w.model.position_embedding_type, PositionEmbedding::kLearnedAbsolute);
  EXPECT_EQ(w.model.normalization, Normalization::kLayerNorm);
  EXPECT_EQ(w.training.params_dtype, DType::kFp32);
  EXPECT_EQ(w.training.recompute_granularity, RecomputeGranularity::kNone);
  EXPECT_FALSE(w.training.overlap_p2p_comm);  // forced off without interleaving
  EXPECT_FALSE(w.training.use_distributed_optimizer);

  // Megatron's overlap_p2p_comm is on by default with interleaving, which makes p = 2 legal.
  const Workload interleaved = load_ok(tiny({}, {{"num_layers_per_virtual_pipeline_stage", "2"}}));
  EXPECT_EQ(interleaved.training.virtual_pipeline_model_parallel_size, 2);
  EXPECT_TRUE(interleaved.training.overlap_p2p_comm);

  // --recompute-activations is --recompute-granularity selective.
  const Workload selective = load_ok(tiny({}, {{"recompute_activations", "true"}}));
  EXPECT_EQ(selective.training.recompute_granularity, RecomputeGranularity::kSelective);

  const Workload swiglu = load_ok(tiny({{"swiglu", "true"}, {"num_query_groups", "2"}}));
  EXPECT_EQ(swiglu.model.ffn_hidden_size, 1344);  // int((4 * 512 * 2 / 3) / 64) * 64
  EXPECT_EQ(swiglu.model.num_query_groups, 2);
  EXPECT_EQ(swiglu.model.kv_channels, 64);
}

TEST(LoadScenario, ContractExampleFromArchitectureLoads) {
  // The scenario example of docs/scenario.md, verbatim.
  const Workload w = load_ok(R"({
  "name": "gpt3-175b",
  "model": {
    "num_layers": 96, "hidden_size": 12288, "num_attention_heads": 96,
    "num_query_groups": 96, "ffn_hidden_size": 49152, "seq_length": 2048,
    "padded_vocab_size": 51200, "swiglu": false,
    "untie_embeddings_and_output_weights": false, "use_flash_attn": false
  },
  "training": {
    "world_size": 64,
    "tensor_model_parallel_size": 8, "pipeline_model_parallel_size": 8,
    "num_layers_per_virtual_pipeline_stage": 4,
    "sequence_parallel": true, "micro_batch_size": 1, "global_batch_size": 64,
    "recompute_granularity": "selective", "recompute_method": null,
    "recompute_num_layers": null, "distribute_saved_activations": false,
    "use_distributed_optimizer": false, "overlap_grad_reduce": false,
    "overlap_p2p_comm": false, "microbatch_group_size_per_vp_stage": null,
    "bf16": true
  },
  "system": "systems/dgx-a100-80gb.json",
  "cost_model": "roofline"
})");
  EXPECT_EQ(w.training.virtual_pipeline_model_parallel_size, 3);
  EXPECT_EQ(w.training.num_microbatches, 64);
  EXPECT_EQ(w.model.padded_vocab_size, 51200);
}

TEST(LoadErrors, HugeVocabularyIsAnErrorNotOverflow) {
  auto w = load_text(tiny({{"vocab_size", "9223372036854775807"}}));
  ASSERT_FALSE(w.ok());
  // Refused where it enters (issue 41: a 32-bit int), before any product could overflow.
  EXPECT_TRUE(names(w.errors(), "model.vocab_size", "exceeds stepsim's limit of 2147483647"));
}

TEST(LoadScenario, PublishedLayoutsOfLargeRuns) {
  auto gpt1t = load_scenario_file(kScenarios + "/gpt-1t-a100-3072.json", options());
  ASSERT_TRUE(gpt1t.ok());
  EXPECT_EQ(gpt1t->training.data_parallel_size, 6);
  EXPECT_EQ(gpt1t->training.num_microbatches, 512);
  auto codegeex = load_scenario_file(kScenarios + "/codegeex-13b-ascend910-1536.json", options());
  ASSERT_TRUE(codegeex.ok());
  EXPECT_EQ(codegeex->training.data_parallel_size, 192);
  EXPECT_EQ(codegeex->model.padded_vocab_size, 52224);
  EXPECT_EQ(codegeex->training.params_dtype, DType::kFp16);
}

TEST(LoadSystem, EveryShippedSystemLoadsWithCitations) {
  const auto files = json_files(kScenarios + "/systems");
  ASSERT_GE(files.size(), 4u);
  for (const std::string& file : files) {
    auto s = load_system_file(file);
    ASSERT_TRUE(s.ok()) << file << "\n" << format_errors(s.errors());
    EXPECT_GT(s->memory_bytes, 0);
    EXPECT_GT(s->intra_node.bandwidth_bytes_per_s, s->inter_node.bandwidth_bytes_per_s) << file;
    EXPECT_GT(s->efficiency.gemm_max, 0.5) << file;
    EXPECT_LE(s->efficiency.link_max, 1.0) << file;
  }
  auto h100 = load_system_file(kScenarios + "/systems/dgx-h100-80gb.json");
  ASSERT_TRUE(h100.ok());
  EXPECT_DOUBLE_EQ(h100->peak_flops_bf16, 989.4e12);
  EXPECT_DOUBLE_EQ(h100->intra_node.bandwidth_bytes_per_s, 450e9);
  // The H800 is the H100 SXM5 with its NVLink cut to 400 GB/s both ways together: every
  // other figure is the H100's.
  auto h800 = load_system_file(kScenarios + "/systems/h800-80gb-deepseek.json");
  ASSERT_TRUE(h800.ok()) << format_errors(h800.errors());
  EXPECT_DOUBLE_EQ(h800->intra_node.bandwidth_bytes_per_s, 200e9);
  SystemConfig same = *h800;
  same.name = h100->name;
  same.gpu_name = h100->gpu_name;
  same.intra_node.bandwidth_bytes_per_s = h100->intra_node.bandwidth_bytes_per_s;
  EXPECT_EQ(same, *h100);
}

TEST(LoadSystem, MissingCitationIsAnError) {
  std::string system = read_file(kScenarios + "/systems/dgx-a100-80gb.json");
  const std::string cited = "\"efficiency.link_max\"";
  system.replace(system.find(cited), cited.size(), "\"efficiency.link_maxx\"");
  auto w = load_text(with_inline_system(system));
  ASSERT_FALSE(w.ok());
  EXPECT_TRUE(names(w.errors(), "system.sources.efficiency.link_max", "must cite"));
  EXPECT_TRUE(names(w.errors(), "system.sources.efficiency.link_maxx", "not a known key"));
  EXPECT_EQ(w.errors().size(), 2u) << format_errors(w.errors());
}

TEST(LoadErrors, MalformedJsonGivesLineAndColumn) {
  auto w = load_text("{\n  \"name\": \"x\",\n  \"model\": {\"num_layers\": 8,,\n}");
  ASSERT_FALSE(w.ok());
  ASSERT_EQ(w.errors().size(), 1u);
  EXPECT_EQ(w.errors()[0].file, "test.json");
  EXPECT_NE(w.errors()[0].message.find("line 3, column 29"), std::string::npos)
      << w.errors()[0].message;
}

TEST(LoadErrors, MissingFileNamesThePath) {
  auto w = load_scenario_file("/nonexistent/dir/scenario.json", options());
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.errors()[0].file, "/nonexistent/dir/scenario.json");
  EXPECT_NE(w.errors()[0].to_string().find("/nonexistent/dir/scenario.json: cannot open"),
            std::string::npos);
}

TEST(LoadErrors, WrongTypesAreErrors) {
  auto w = load_text(tiny({{"kv_channels", "64.0"}, {"swiglu", "\"yes\""}},
                          {{"micro_batch_size", "0"}, {"sequence_parallel", "1"}}));
  ASSERT_FALSE(w.ok());
  EXPECT_TRUE(names(w.errors(), "model.kv_channels", "must be an integer"));
  EXPECT_TRUE(names(w.errors(), "model.swiglu", "must be true or false"));
  EXPECT_TRUE(names(w.errors(), "training.micro_batch_size", "must be positive"));
  EXPECT_TRUE(names(w.errors(), "training.sequence_parallel", "must be true or false"));
  EXPECT_EQ(w.errors().size(), 4u) << format_errors(w.errors());
}

TEST(LoadErrors, OneFileWithThreeProblemsReportsAllThree) {
  auto w = load_text(tiny(
      {{"num_heads", "8"}},
      {{"tensor_model_parallel_size", "3"}, {"world_size", "12"}, {"global_batch_size", "3"}}));
  ASSERT_FALSE(w.ok());
  EXPECT_TRUE(names(w.errors(), "model.num_heads", "is not a known key"));
  EXPECT_TRUE(names(w.errors(), "training.tensor_model_parallel_size",
                    "=3 does not divide num_attention_heads=8"));
  EXPECT_TRUE(names(w.errors(), "training.global_batch_size",
                    "is not divisible by micro_batch_size*data_parallel_size=1*2"));
}

TEST(LoadErrors, MessageFormatMatchesTheContract) {
  auto w = load_text(tiny(
      {}, {{"tensor_model_parallel_size", "3"}, {"world_size", "12"}, {"global_batch_size", "2"}}));
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.errors()[0].to_string(),
            "test.json: training.tensor_model_parallel_size=3 does not divide "
            "num_attention_heads=8");
}

TEST(LoadPaths, SystemResolvesNextToTheScenarioFirst) {
  const fs::path dir = fs::temp_directory_path() / "stepsim_load_test_paths";
  fs::create_directories(dir / "systems");
  fs::copy_file(kScenarios + "/systems/dgx-h100-80gb.json", dir / "systems/dgx-a100-80gb.json",
                fs::copy_options::overwrite_existing);
  std::ofstream(dir / "profile.json") << "{}";
  std::ofstream(dir / "s.json") << tiny({}, {}, R"("cost_model": {"profile": "profile.json"})");
  auto w = load_scenario_file((dir / "s.json").string(), options());
  ASSERT_TRUE(w.ok()) << format_errors(w.errors());
  EXPECT_EQ(w->system.name, "dgx-h100-80gb");  // the local file shadows scenarios/systems
  EXPECT_EQ(w->cost_model.kind, CostModelSpec::Kind::kProfile);
  EXPECT_EQ(w->cost_model.profile_path, (dir / "profile.json").string());
  fs::remove_all(dir);

  // Without a local copy the scenarios folder is used.
  auto fallback = load_scenario_text(tiny(), "t.json", "/nonexistent", options());
  ASSERT_TRUE(fallback.ok());
  EXPECT_EQ(fallback->system.name, "dgx-a100-80gb");
  EXPECT_EQ(resolve_path("systems/none.json", "/nonexistent", options()), "");
}

TEST(LoadPaths, InlineSystemObject) {
  const Workload w = load_ok(with_inline_system(read_file(kScenarios + "/systems/dgx-h200.json")));
  EXPECT_EQ(w.system.name, "dgx-h200");
  EXPECT_EQ(w.system.memory_bytes, std::int64_t{141} << 30);
}

TEST(InvalidCorpus, EveryFileNamesItsKey) {
  std::ifstream manifest(kInvalid + "/EXPECTED.tsv");
  ASSERT_TRUE(manifest.good());
  std::string line;
  int rows = 0;
  while (std::getline(manifest, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto tab1 = line.find('\t');
    const auto tab2 = line.find('\t', tab1 + 1);
    ASSERT_NE(tab2, std::string::npos) << line;
    const std::string file = line.substr(0, tab1);
    const std::string key = line.substr(tab1 + 1, tab2 - tab1 - 1);
    const std::string phrase = line.substr(tab2 + 1);
    // As `stepsim check`: the scenario, then the cost model it names (its profile).
    auto w = load_scenario_file(kInvalid + "/" + file, options());
    Errors errors = w.ok() ? Errors{} : w.errors();
    if (w.ok()) {
      auto cost = make_cost_model(*w);
      ASSERT_FALSE(cost.ok()) << file << " loaded but should not";
      errors = cost.errors();
    }
    const bool is_key = key.find(' ') == std::string::npos;
    const bool found = std::any_of(errors.begin(), errors.end(), [&](const Error& e) {
      const std::string text = e.to_string();
      return (is_key ? e.key == key : text.find(key) != std::string::npos) &&
             text.find(phrase) != std::string::npos;
    });
    EXPECT_TRUE(found) << file << ": expected " << key << " / " << phrase << ", got\n"
                       << format_errors(errors);
    ++rows;
  }
  EXPECT_GE(rows, 60);
}

// Provenance as data (issue 36, STYLE.md rule 21): `sources` cites each value under the dotted
// key it justifies, and every cited key must be one the file gives.
TEST(Provenance, SourcesCiteKeysTheFileGives) {
  const Workload w = load_ok(tiny({}, {},
                                  "\"description\": \"A tiny GPT.\", \"sources\": {"
                                  "\"name\": \"the whole job\", \"model\": \"a paper\", "
                                  "\"model.num_layers\": \"its table\", "
                                  "\"training.tensor_model_parallel_size\": \"fits memory\", "
                                  "\"system\": \"the cluster\"}"));
  EXPECT_EQ(w.name, "tiny");
}

TEST(Provenance, CitingAKeyTheFileLacksIsAnError) {
  auto w = load_text(tiny({}, {},
                          "\"sources\": {\"model.num_layer\": \"typo\", "
                          "\"training.fp8\": \"not given\", \"cost_model\": \"absent\", "
                          "\"model.num_layers.x\": \"below a number\", "
                          "\"sources\": \"itself\"}"));
  ASSERT_FALSE(w.ok());
  for (const std::string key :
       {"model.num_layer", "training.fp8", "cost_model", "model.num_layers.x", "sources"}) {
    EXPECT_TRUE(names(w.errors(), "sources." + key, "names no key of this scenario"))
        << key << "\n"
        << format_errors(w.errors());
  }
  EXPECT_EQ(w.errors().size(), 5u) << format_errors(w.errors());
}

TEST(Provenance, CitationsAreNonEmptyStringsInAnObject) {
  auto w = load_text(tiny({}, {}, "\"sources\": {\"model\": \"\", \"name\": 3}"));
  ASSERT_FALSE(w.ok());
  EXPECT_TRUE(names(w.errors(), "sources.model", "must be a non-empty citation string"));
  EXPECT_TRUE(names(w.errors(), "sources.name", "must be a non-empty citation string"));
  auto not_object = load_text(tiny({}, {}, "\"sources\": \"Narayanan et al. 2021\""));
  ASSERT_FALSE(not_object.ok());
  EXPECT_TRUE(names(not_object.errors(), "sources")) << format_errors(not_object.errors());
}

TEST(Provenance, DescriptionIsOneLine) {
  auto w = load_text(tiny({}, {}, "\"description\": \"A tiny GPT.\\nFrom a paper.\""));
  ASSERT_FALSE(w.ok());
  EXPECT_TRUE(names(w.errors(), "description", "must be one line")) << format_errors(w.errors());
  load_ok(tiny({}, {}, "\"description\": \"A tiny GPT on 8 GPUs.\""));
}

// Every shipped scenario (the main folder, published/, validation/ and validation/gpu/) says
// in one short line what the job is and cites its settings under `sources`.
TEST(Provenance, EveryShippedScenarioHasSourcesAndAShortDescription) {
  constexpr std::size_t kDescriptionLimit = 160;
  int checked = 0;
  for (const std::string dir : {"", "/published", "/validation", "/validation/gpu"}) {
    for (const std::string& file : json_files(kScenarios + dir)) {
      const auto json = nlohmann::json::parse(read_file(file));
      if (!json.contains("model")) continue;  // published/runs.json
      ++checked;
      const auto description = json.value("description", std::string());
      EXPECT_FALSE(description.empty()) << file;
      EXPECT_LE(description.size(), kDescriptionLimit) << file;
      EXPECT_EQ(description.find('\n'), std::string::npos) << file;
      ASSERT_TRUE(json.contains("sources") && json["sources"].is_object()) << file;
      EXPECT_FALSE(json["sources"].empty()) << file;
      auto w = load_scenario_file(file, options());
      EXPECT_TRUE(w.ok()) << (w.ok() ? "" : format_errors(w.errors()));
    }
  }
  EXPECT_GE(checked, 60);
}

}  // namespace
}  // namespace stepsim

namespace stepsim {
namespace {

// Issue 41: a system path to a special file said "no such file" (and a FIFO would have
// blocked the reader); the error names the scenario's key and says what the path is.
TEST(LoadScenario, ASpecialFileAsSystemNamesTheKeyAndWhatItIs) {
  const std::string dir = ::testing::TempDir() + "/stepsim_special_system";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string fifo = dir + "/system.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string text = R"({"name": "x", "model": {"num_layers": 2, "hidden_size": 64,
    "num_attention_heads": 8, "seq_length": 64, "vocab_size": 1000}, "training": {
    "world_size": 1, "micro_batch_size": 1, "global_batch_size": 1}, "system": ")";
  for (const auto& [path, phrase] :
       {std::pair<std::string, std::string>{fifo, "is a FIFO (named pipe)"},
        {"/dev/zero", "is a character device"},
        {dir, "is a directory"}}) {
    auto w = load_scenario_text(text + path + "\"}", "s.json", dir, options());
    ASSERT_FALSE(w.ok()) << path;
    const Error& e = w.errors().front();
    EXPECT_EQ(e.file, "s.json");
    EXPECT_EQ(e.key, "system");
    EXPECT_NE(e.message.find(phrase), std::string::npos) << e.message;
  }
  fs::remove_all(dir);
}

// Issue 41: nics_per_node was cast to int after its check: 2^35 + 8 NICs predicted 8.
TEST(LoadSystem, IntegersBeyondWhatTheModelHoldsAreRefused) {
  auto nics = load_system_file(kInvalid + "/systems/nics-2e33.json");
  ASSERT_FALSE(nics.ok());
  EXPECT_EQ(nics.errors().front().key, "nics_per_node");
  EXPECT_NE(nics.errors().front().message.find("=8589934592 exceeds stepsim's limit of 256"),
            std::string::npos)
      << nics.errors().front().message;
}

}  // namespace
}  // namespace stepsim
