// A scenario from a Megatron-LM launch line: the flags stepsim models map one to one onto
// scenario keys (the flags' `dest`), as the schema table (schema.cpp) lists them; the others
// are listed back as ignored. The launcher's
// --nnodes x --nproc_per_node gives the world size when the line has one; the assignments
// before it ("NVTE_FWD_LAYERNORM_SM_MARGIN=16 torchrun ...") are the job's environment.

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <iterator>
#include <nlohmann/json.hpp>
#include <vector>

#include "import_environment.hpp"
#include "stepsim/core/import.hpp"
#include "stepsim/core/schema.hpp"

namespace stepsim {
namespace {

using json = nlohmann::ordered_json;

constexpr const char* kLabel = "--megatron-args";

// One Megatron-LM flag of a schema row: "--num-layers" takes a value, "--swiglu=true" or
// "--use-rotary-position-embeddings=rope" sets `constant` without one.
struct FlagSpec {
  std::string_view flag;
  const KeyInfo* row = nullptr;
  std::string_view constant;  // empty: the flag takes a value
};

// Every flag of the schema's model and training rows.
const std::vector<FlagSpec>& flag_table() {
  static const std::vector<FlagSpec> table = [] {
    std::vector<FlagSpec> out;
    for (const KeyInfo& k : scenario_schema()) {
      if (!k.key.starts_with("model.") && !k.key.starts_with("training.")) continue;
      std::string_view rest = k.flags;
      while (!rest.empty()) {
        const auto space = rest.find(' ');
        const std::string_view word = rest.substr(0, space);
        const auto eq = word.find('=');
        out.push_back(FlagSpec{
            .flag = word.substr(0, eq),
            .row = &k,
            .constant = eq == std::string_view::npos ? std::string_view() : word.substr(eq + 1)});
        rest = space == std::string_view::npos ? std::string_view() : rest.substr(space + 1);
      }
    }
    return out;
  }();
  return table;
}

/// The byte offset of the first byte of `text` that is not valid UTF-8 (as a scenario file
/// must be: the imported flags become its strings), or npos.
std::size_t invalid_utf8_at(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    std::size_t n = 0;
    std::uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      n = 1;
      cp = c & 0x1Fu;
    } else if ((c & 0xF0) == 0xE0) {
      n = 2;
      cp = c & 0x0Fu;
    } else if ((c & 0xF8) == 0xF0) {
      n = 3;
      cp = c & 0x07u;
    } else {
      return i;
    }
    if (i + n >= text.size()) return i;  // cut short
    for (std::size_t k = 1; k <= n; ++k) {
      const auto d = static_cast<unsigned char>(text[i + k]);
      if ((d & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (d & 0x3Fu);
    }
    // Overlong forms, surrogates and code points beyond U+10FFFF are not UTF-8.
    constexpr std::uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return i;
    i += n + 1;
  }
  return std::string_view::npos;
}

/// Shell-like split: quotes, backslash escapes, backslash-newline continuations. A quote left
/// open is an error: the shell would not run the line, and taking the rest of the line as one
/// word would silently drop every later flag.
Result<std::vector<std::string>> split_words(std::string_view line) {
  std::vector<std::string> out;
  std::string word;
  bool in_word = false;
  char quote = 0;
  std::size_t quote_at = 0;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quote != 0) {
      if (c == quote) {
        quote = 0;
      } else if (c == '\\' && quote == '"' && i + 1 < line.size()) {
        word += line[++i];
      } else {
        word += c;
      }
    } else if (c == '\'' || c == '"') {
      quote = c;
      quote_at = i;
      in_word = true;
    } else if (c == '\\' && i + 1 < line.size()) {
      if (line[i + 1] != '\n') {
        word += line[i + 1];
        in_word = true;
      }
      ++i;
    } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      if (in_word) out.push_back(std::move(word));
      word.clear();
      in_word = false;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (quote != 0) {
    std::string context(line.substr(quote_at, 40));
    return Error{kLabel, "",
                 std::string("has an unterminated ") + (quote == '"' ? "double" : "single") +
                     " quote at character " + std::to_string(quote_at + 1) + " (" + context +
                     "...): close it, or every later flag would be lost"};
  }
  if (in_word) out.push_back(std::move(word));
  return out;
}

bool parse_int(const std::string& s, std::int64_t& out) {
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

}  // namespace

Result<ImportedScenario> scenario_from_megatron_args(std::string_view launch_line,
                                                     const MegatronImportOptions& options) {
  if (const std::size_t bad = invalid_utf8_at(launch_line); bad != std::string_view::npos) {
    return Error{kLabel, "",
                 "is not valid UTF-8 text (byte " + std::to_string(bad + 1) + ")"};
  }
  auto split = split_words(launch_line);
  if (!split) return split.errors();
  std::vector<std::string> words = std::move(split).value();
  // Flags given as --flag=value become two words.
  std::vector<std::string> args;
  for (std::string& w : words) {
    const std::size_t eq = w.find('=');
    if (w.starts_with("--") && eq != std::string::npos) {
      args.push_back(w.substr(0, eq));
      args.push_back(w.substr(eq + 1));
    } else {
      args.push_back(std::move(w));
    }
  }
  // The launcher's part ends at the training script.
  const auto script = std::find_if(args.begin(), args.end(),
                                   [](const std::string& a) { return a.ends_with(".py"); });
  const std::size_t first_flag =
      script == args.end() ? 0 : static_cast<std::size_t>(script - args.begin()) + 1;

  Errors errors;
  ImportedScenario out;
  json model = json::object();
  json training = json::object();
  std::int64_t nnodes = 0, nproc = 0;
  std::int64_t query_groups = 0;
  bool gqa = false;
  std::string tokenizer;
  bool vocab_file = false;
  bool attention_given = false;
  // Job-changing flags stepsim does not model: (flag or script, message).
  std::vector<std::pair<std::string, std::string>> unmodelled;
  if (script != args.end()) {
    const std::string name = script->substr(script->find_last_of('/') + 1);
    if (name != "pretrain_gpt.py") {
      unmodelled.emplace_back(name,
                              " trains a model stepsim does not model yet (it models the GPT "
                              "decoders of pretrain_gpt.py)");
    }
  }
  const auto value_of = [&](std::size_t& i) -> const std::string* {
    if (i + 1 >= args.size() || args[i + 1].starts_with("--")) {
      errors.push_back(Error{kLabel, args[i], " needs a value"});
      return nullptr;
    }
    return &args[++i];
  };
  const auto int_of = [&](std::size_t& i, std::int64_t& v) {
    const std::string flag = args[i];
    const std::string* s = value_of(i);
    if (s == nullptr) return false;
    if (!parse_int(*s, v)) {
      errors.push_back(Error{kLabel, flag, std::string("=") + *s + " must be an integer"});
      return false;
    }
    return true;
  };

  // The environment the line sets for the job: the assignments before the launcher (and, on
  // a line of flags only, before the first flag).
  const std::vector<detail::Assignment> environment =
      detail::environment_of(args, first_flag > 0 ? first_flag : args.size(), first_flag == 0);
  for (std::size_t i = 0; i < first_flag; ++i) {
    const std::string& a = args[i];
    std::int64_t v = 0;
    if (a == "--nnodes" || a == "--nproc_per_node" || a == "--nproc-per-node") {
      if (int_of(i, v)) (a == "--nnodes" ? nnodes : nproc) = v;
    }
  }
  for (std::size_t i = first_flag; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (!a.starts_with("--")) continue;  // a value of an ignored flag, or a stray word
    const std::string flag = a;
    if (flag == "--group-query-attention") {
      gqa = true;
      continue;
    }
    if (flag == "--num-query-groups") {
      int_of(i, query_groups);
      continue;
    }
    if (flag == "--tokenizer-type") {
      if (const std::string* s = value_of(i)) tokenizer = *s;
      continue;
    }
    if (flag == "--vocab-file") {
      vocab_file = true;
      value_of(i);
      continue;
    }
    if (flag == "--cp-comm-type") {
      // nargs='+': one type for every layer, or one per layer.
      std::vector<std::string> types;
      while (i + 1 < args.size() && !args[i + 1].starts_with("--")) types.push_back(args[++i]);
      if (types.empty()) {
        errors.push_back(Error{kLabel, flag, " needs a value"});
      } else if (std::any_of(types.begin(), types.end(),
                             [&](const std::string& t) { return t != types.front(); })) {
        unmodelled.emplace_back(flag + " (one type per layer)",
                                " changes the job and stepsim does not model per-layer context-"
                                "parallel communication types yet");
      } else {
        training["cp_comm_type"] = types.front();
      }
      continue;
    }
    if (flag == "--hierarchical-context-parallel-sizes") {
      // nargs='+', type=int: the levels, innermost first.
      json sizes = json::array();
      while (i + 1 < args.size() && !args[i + 1].starts_with("--")) {
        std::int64_t v = 0;
        const std::string& word = args[++i];
        if (!parse_int(word, v)) {
          errors.push_back(Error{kLabel, flag, std::string("=") + word + " must be an integer"});
        }
        sizes.push_back(v);
      }
      if (sizes.empty()) {
        errors.push_back(Error{kLabel, flag, " needs a value"});
      } else {
        training["hierarchical_context_parallel_sizes"] = sizes;
      }
      continue;
    }
    const auto& flags = flag_table();
    const auto spec =
        std::find_if(flags.begin(), flags.end(), [&](const FlagSpec& f) { return f.flag == flag; });
    if (spec == flags.end()) {
      std::string value;
      if (i + 1 < args.size() && !args[i + 1].starts_with("--")) value = args[++i];
      switch (classify_unmodelled_flag(flag, value)) {
        case FlagClass::kHarmless:
          out.ignored_flags.push_back(flag);
          break;
        case FlagClass::kUnmodelled:
          unmodelled.emplace_back(flag + (value.empty() ? "" : " " + value),
                                  " changes the job and stepsim does not model it yet");
          break;
        case FlagClass::kUnknown:
          unmodelled.emplace_back(flag + (value.empty() ? "" : " " + value),
                                  " is not a Megatron-LM flag stepsim knows, so it may change "
                                  "the job");
          break;
      }
      continue;
    }
    if (flag == "--attention-backend" || flag == "--use-flash-attn") attention_given = true;
    const std::string_view dotted = spec->row->key;
    const auto dot = dotted.find('.');
    json& section = dotted.substr(0, dot) == "model" ? model : training;
    const std::string key(dotted.substr(dot + 1));
    if (!spec->constant.empty()) {
      if (spec->row->kind == KnobKind::kBool) {
        section[key] = spec->constant == "true";
      } else {
        section[key] = std::string(spec->constant);
      }
      continue;
    }
    std::int64_t v = 0;
    if (spec->row->kind == KnobKind::kInt) {
      if (int_of(i, v)) section[key] = v;
    } else if (spec->row->kind == KnobKind::kReal) {
      const std::string real_flag = args[i];
      if (const std::string* s = value_of(i)) {
        char* end = nullptr;
        const double d = std::strtod(s->c_str(), &end);
        if (s->empty() || end != s->c_str() + s->size()) {
          errors.push_back(Error{kLabel, real_flag, std::string("=") + *s + " must be a number"});
        } else {
          section[key] = d;
        }
      }
    } else if (const std::string* s = value_of(i)) {
      section[key] = *s;
    }
  }
  if (!attention_given) {
    model["attention_backend"] = "auto";
    out.notes.push_back(
        "attention_backend=auto: Megatron-Core's default (Transformer Engine runs flash or cuDNN "
        "fused attention; priced as one fused attention kernel)");
  }
  const std::string backend =
      model.contains("attention_backend") && model["attention_backend"].is_string()
          ? model["attention_backend"].get<std::string>()
          : std::string("auto");
  detail::ImportedEnvironment env = detail::import_environment(environment, backend, kLabel);
  for (const auto& [key, value] : env.training) training[key] = value;
  out.ignored_flags.insert(out.ignored_flags.end(), env.ignored.begin(), env.ignored.end());
  unmodelled.insert(unmodelled.end(), env.unmodelled.begin(), env.unmodelled.end());
  errors.insert(errors.end(), env.errors.begin(), env.errors.end());
  for (const auto& [flag, why] : unmodelled) {
    if (options.allow_unmodelled) {
      out.unmodelled.push_back(flag);
    } else {
      errors.push_back(Error{kLabel, flag,
                             why + ": predicting without it would be another job "
                                   "(--allow-unmodelled predicts anyway and says so)"});
    }
  }
  if (gqa) {
    if (query_groups > 0) {
      model["num_query_groups"] = query_groups;
    } else {
      errors.push_back(
          Error{kLabel, "--num-query-groups", " is needed with --group-query-attention"});
    }
  } else if (query_groups > 0) {
    out.notes.push_back(
        "--num-query-groups is ignored without --group-query-attention "
        "(as Megatron-LM does)");
  }
  if (!model.contains("vocab_size")) {
    if (tokenizer == "GPT2BPETokenizer" || (tokenizer.empty() && vocab_file)) {
      model["vocab_size"] = 50257;
      out.notes.push_back("vocab_size=50257 assumed: GPT-2's BPE vocabulary (--vocab-file)");
    } else {
      errors.push_back(Error{kLabel, "--vocab-size",
                             " is needed: stepsim cannot read the tokenizer" +
                                 (tokenizer.empty() ? std::string() : " " + tokenizer)});
    }
  }
  std::int64_t world = options.world_size;
  // torchrun (torch.distributed.run) and torch.distributed.launch default --nnodes to 1.
  if (world == 0 && nproc > 0) world = (nnodes > 0 ? nnodes : 1) * nproc;
  if (world <= 0) {
    errors.push_back(Error{kLabel, "--world-size",
                           " is needed: the line has no launcher (torchrun --nnodes N "
                           "--nproc_per_node G) to count its GPUs; give stepsim's own "
                           "--world-size N beside the quoted line"});
  }
  if (options.system.empty()) {
    errors.push_back(Error{kLabel, "--system",
                           " is needed: give stepsim's own --system FILE beside the quoted "
                           "line (e.g. systems/dgx-a100-80gb.json)"});
  }
  if (!errors.empty()) return errors;
  training["world_size"] = world;
  json doc = json::object();
  doc["name"] = options.name;
  doc["model"] = std::move(model);
  doc["training"] = std::move(training);
  doc["system"] = options.system;
  doc["cost_model"] = "roofline";
  if (!out.unmodelled.empty()) doc["unmodelled"] = out.unmodelled;
  out.scenario_json = doc.dump(2) + "\n";
  return out;
}

std::string megatron_args_of(const Workload& w) {
  const ModelConfig& m = w.model;
  const TrainingConfig& t = w.training;
  std::string out;
  const auto flag = [&](std::string_view name) {
    if (!out.empty()) out += ' ';
    out += name;
  };
  const auto num = [&](std::string_view name, std::int64_t v) {
    flag(name);
    out += ' ' + std::to_string(v);
  };
  // Transformer Engine's settings from the environment, as assignments before the flags.
  for (const KeyInfo& k : scenario_schema()) {
    if (k.env.empty() || k.get == nullptr) continue;
    const std::string v = std::to_string(k.get(w).integer);
    if (v != k.default_text) flag(std::string(k.env) + "=" + v);
  }
  num("--num-layers", m.num_layers);
  num("--hidden-size", m.hidden_size);
  num("--num-attention-heads", m.num_attention_heads);
  if (m.num_query_groups != m.num_attention_heads) {
    flag("--group-query-attention");
    num("--num-query-groups", m.num_query_groups);
  }
  if (m.num_attention_heads > 0 && m.kv_channels != m.hidden_size / m.num_attention_heads) {
    num("--kv-channels", m.kv_channels);
  }
  num("--ffn-hidden-size", m.ffn_hidden_size);
  num("--seq-length", m.seq_length);
  num("--max-position-embeddings", m.max_position_embeddings);
  if (m.vocab_size > 0) {
    num("--vocab-size", m.vocab_size);
    num("--make-vocab-size-divisible-by", m.make_vocab_size_divisible_by);
  } else {
    // Only the padded size is known: pad by 1 so Megatron keeps it (a multiple of t).
    num("--vocab-size", m.padded_vocab_size);
    num("--make-vocab-size-divisible-by", 1);
  }
  // The shortest form that reads back as the same double.
  const auto decimal = [&](std::string_view name, double v) {
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    flag(name);
    out += ' ';
    out.append(buf, static_cast<std::size_t>(r.ptr - buf));
  };
  if (m.swiglu) flag("--swiglu");
  if (m.squared_relu) flag("--squared-relu");
  if (m.quick_geglu) flag("--quick-geglu");
  if (m.glu_linear_offset != 0.0) decimal("--glu-linear-offset", m.glu_linear_offset);
  if (m.activation_func_clamp_value > 0.0) {
    decimal("--activation-func-clamp-value", m.activation_func_clamp_value);
  }
  if (m.untie_embeddings_and_output_weights) flag("--untie-embeddings-and-output-weights");
  if (m.use_flash_attn) flag("--use-flash-attn");
  // Explicit: without it the importer takes Megatron-Core's default, auto.
  if (!(m.use_flash_attn && m.attention_backend == AttentionBackend::kUnfused)) {
    constexpr std::string_view kBackends[] = {"auto", "flash", "fused", "unfused", "local"};
    flag("--attention-backend");
    out += ' ';
    out += kBackends[static_cast<std::size_t>(m.attention_backend)];
  }
  if (m.softmax_type != SoftmaxType::kVanilla) {
    flag("--softmax-type");
    out += m.softmax_type == SoftmaxType::kLearnable ? " learnable" : " off-by-one";
  }
  if (!m.add_bias_linear) flag("--disable-bias-linear");
  flag("--normalization");
  out += m.normalization == Normalization::kRmsNorm ? " RMSNorm" : " LayerNorm";
  flag("--position-embedding-type");
  out += m.position_embedding_type == PositionEmbedding::kRope   ? " rope"
         : m.position_embedding_type == PositionEmbedding::kNone ? " none"
                                                                 : " learned_absolute";
  // Megatron's defaults are 0.1; the shortest form that reads back as the same double.
  for (const auto& [name, p] : {std::pair<std::string_view, double>{"--attention-dropout",
                                                                    m.attention_dropout},
                                {"--hidden-dropout", m.hidden_dropout}}) {
    if (p == 0.1) continue;
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, p);
    flag(name);
    out += ' ';
    out.append(buf, static_cast<std::size_t>(r.ptr - buf));
  }
  if (m.rotary_percent != 1.0) {
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, m.rotary_percent);
    flag("--rotary-percent");
    out += ' ';
    out.append(buf, static_cast<std::size_t>(r.ptr - buf));
  }
  if (m.window_size.size() == 2) {
    // arguments.py tuple_type reads "left,right".
    flag("--window-size");
    out += ' ' + std::to_string(m.window_size[0]) + ',' + std::to_string(m.window_size[1]);
    // A list pattern's characters need quoting from the shell, never '.
    if (!m.window_attn_skip_freq.empty()) {
      flag("--window-attn-skip-freq");
      out += " '" + m.window_attn_skip_freq + "'";
    }
  }
  if (!m.masked_softmax_fusion) flag("--no-masked-softmax-fusion");
  if (m.cross_entropy_loss_fusion) {
    flag("--cross-entropy-loss-fusion");
    flag("--cross-entropy-fusion-impl");
    out += m.cross_entropy_fusion_impl == CrossEntropyFusionImpl::kTe ? " te" : " native";
  }
  num("--micro-batch-size", t.micro_batch_size);
  num("--global-batch-size", t.global_batch_size);
  num("--tensor-model-parallel-size", t.tensor_model_parallel_size);
  if (t.context_parallel_size > 1) {
    num("--context-parallel-size", t.context_parallel_size);
    constexpr std::string_view kCpComm[] = {"p2p", "a2a", "allgather", "a2a+p2p"};
    flag("--cp-comm-type");
    out += ' ';
    out += kCpComm[static_cast<std::size_t>(t.cp_comm_type)];
    if (!t.hierarchical_context_parallel_sizes.empty()) {
      flag("--hierarchical-context-parallel-sizes");
      for (const std::int64_t n : t.hierarchical_context_parallel_sizes) {
        out += ' ';
        out += std::to_string(n);
      }
    }
  }
  num("--pipeline-model-parallel-size", t.pipeline_model_parallel_size);
  const bool first_last =
      t.decoder_first_pipeline_num_layers > 0 || t.decoder_last_pipeline_num_layers > 0;
  if (t.decoder_first_pipeline_num_layers > 0) {
    num("--decoder-first-pipeline-num-layers", t.decoder_first_pipeline_num_layers);
  }
  if (t.decoder_last_pipeline_num_layers > 0) {
    num("--decoder-last-pipeline-num-layers", t.decoder_last_pipeline_num_layers);
  }
  if (t.account_for_embedding_in_pipeline_split) flag("--account-for-embedding-in-pipeline-split");
  if (t.account_for_loss_in_pipeline_split) flag("--account-for-loss-in-pipeline-split");
  if (!t.pipeline_model_parallel_layout.empty()) {
    // Its characters (E t L m | * ( ) digits, commas) need quoting from the shell, never '.
    flag("--pipeline-model-parallel-layout");
    out += " '" + t.pipeline_model_parallel_layout + "'";
  }
  // A layout's stages set the virtual stages; Megatron refuses
  // --num-layers-per-virtual-pipeline-stage with uneven first/last stages.
  if (t.virtual_pipeline_model_parallel_size > 1 && t.pipeline_model_parallel_layout.empty()) {
    if (first_last) {
      num("--num-virtual-stages-per-pipeline-rank", t.virtual_pipeline_model_parallel_size);
    } else {
      num("--num-layers-per-virtual-pipeline-stage", t.num_layers_per_virtual_pipeline_stage);
    }
  }
  if (t.virtual_pipeline_model_parallel_size > 1) {
    if (t.microbatch_group_size_per_vp_stage != t.pipeline_model_parallel_size) {
      num("--microbatch-group-size-per-virtual-pipeline-stage",
          t.microbatch_group_size_per_vp_stage);
    }
    if (!t.overlap_p2p_comm) flag("--no-overlap-p2p-communication");
  }
  if (t.sequence_parallel) flag("--sequence-parallel");
  if (t.recompute_granularity != RecomputeGranularity::kNone) {
    flag("--recompute-granularity");
    out += t.recompute_granularity == RecomputeGranularity::kFull ? " full" : " selective";
  }
  if (t.recompute_granularity == RecomputeGranularity::kFull) {
    flag("--recompute-method");
    out += t.recompute_method == RecomputeMethod::kBlock ? " block" : " uniform";
    num("--recompute-num-layers", t.recompute_num_layers);
  }
  if (t.distribute_saved_activations) flag("--distribute-saved-activations");
  if (t.use_distributed_optimizer) flag("--use-distributed-optimizer");
  if (t.overlap_grad_reduce) flag("--overlap-grad-reduce");
  if (t.overlap_param_gather) flag("--overlap-param-gather");
  if (t.ddp_bucket_size > 0) num("--ddp-bucket-size", t.ddp_bucket_size);
  if (t.ddp_num_buckets > 0) num("--ddp-num-buckets", t.ddp_num_buckets);
  if (!t.align_param_gather) flag("--no-align-param-gather");
  if (t.params_dtype == DType::kBf16) flag("--bf16");
  if (t.params_dtype == DType::kFp16) flag("--fp16");
  if (t.grad_reduce_in_bf16) flag("--grad-reduce-in-bf16");
  if (t.clip_grad != 1.0) {  // Megatron's default is 1.0
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, t.clip_grad);  // shortest round trip
    flag("--clip-grad");
    out += ' ';
    out += std::string_view(buf, static_cast<std::size_t>(r.ptr - buf));
  }
  if (t.fp8_enabled()) {
    flag("--fp8-format");
    out += t.fp8 == Fp8Format::kE4m3 ? " e4m3" : " hybrid";
    constexpr std::string_view kRecipes[] = {"delayed", "tensorwise", "blockwise", "mxfp8",
                                             "custom"};
    flag("--fp8-recipe");
    out += ' ';
    out += kRecipes[static_cast<std::size_t>(t.fp8_recipe)];
  }
  if (t.fp8_param_gather) flag("--fp8-param-gather");
  if (t.fp8_amax_history_len != 1) num("--fp8-amax-history-len", t.fp8_amax_history_len);
  if (t.tp_only_amax_red) flag("--tp-only-amax-red");
  if (t.tp_comm_overlap) flag("--tp-comm-overlap");
  if (!t.tp_comm_overlap_ag) flag("--disable-tp-comm-overlap-ag");
  if (!t.tp_comm_overlap_rs) flag("--disable-tp-comm-overlap-rs");
  if (t.tp_comm_overlap_rs_dgrad) flag("--tp-comm-overlap-rs-dgrad");
  if (!t.tp_comm_overlap_cfg.empty()) {
    flag("--tp-comm-overlap-cfg");
    out += " '" + t.tp_comm_overlap_cfg + "'";
  }
  if (!t.tp_comm_bulk_dgrad) flag("--disable-tp-comm-bulk-dgrad");
  if (!t.tp_comm_bulk_wgrad) flag("--disable-tp-comm-bulk-wgrad");
  if (t.defer_embedding_wgrad_compute) flag("--defer-embedding-wgrad-compute");
  if (t.wgrad_deferral_limit != 0) num("--wgrad-deferral-limit", t.wgrad_deferral_limit);
  if (m.moe()) {
    const auto word = [&](std::string_view name, std::string_view value) {
      flag(name);
      out += ' ';
      out += value;
    };
    const auto real = [&](std::string_view name, double v) {
      char buf[32];
      const auto r = std::to_chars(buf, buf + sizeof buf, v);  // shortest round-trip form
      word(name, std::string_view(buf, static_cast<std::size_t>(r.ptr - buf)));
    };
    num("--num-experts", m.num_experts);
    num("--moe-router-topk", m.moe_router_topk);
    if (m.moe_ffn_hidden_size > 0) num("--moe-ffn-hidden-size", m.moe_ffn_hidden_size);
    if (m.moe_shared_expert_intermediate_size > 0) {
      num("--moe-shared-expert-intermediate-size", m.moe_shared_expert_intermediate_size);
    }
    // A list pattern's characters need quoting from the shell, never '.
    if (m.moe_layer_freq != "1") word("--moe-layer-freq", "'" + m.moe_layer_freq + "'");
    if (t.expert_model_parallel_size > 1) {
      num("--expert-model-parallel-size", t.expert_model_parallel_size);
    }
    if (t.expert_tensor_parallel_size > 0) {
      num("--expert-tensor-parallel-size", t.expert_tensor_parallel_size);
    }
    constexpr std::string_view kDispatchers[] = {"allgather", "alltoall", "flex"};
    word("--moe-token-dispatcher-type",
         kDispatchers[static_cast<std::size_t>(t.moe_token_dispatcher_type)]);
    if (t.moe_token_dispatcher_type == MoeDispatcher::kFlex) {
      constexpr std::string_view kBackends[] = {"deepep", "hybridep", "ncclep"};
      word("--moe-flex-dispatcher-backend",
           kBackends[static_cast<std::size_t>(t.moe_flex_dispatcher_backend)]);
      if (t.moe_flex_dispatcher_num_sms > 0 || t.moe_deepep_num_sms > 0) {
        num("--moe-flex-dispatcher-num-sms", t.deepep_num_sms());
      }
    }
    if (t.moe_grouped_gemm) flag("--moe-grouped-gemm");
    if (t.moe_shared_expert_overlap) flag("--moe-shared-expert-overlap");
    constexpr std::string_view kBalancing[] = {"aux_loss", "seq_aux_loss", "global_aux_loss",
                                               "sinkhorn", "quantile_balancing", "none"};
    if (t.moe_router_load_balancing_type != MoeLoadBalancing::kAuxLoss) {
      word("--moe-router-load-balancing-type",
           kBalancing[static_cast<std::size_t>(t.moe_router_load_balancing_type)]);
    }
    if (t.moe_expert_capacity_factor > 0) {
      real("--moe-expert-capacity-factor", t.moe_expert_capacity_factor);
    }
    if (t.moe_pad_expert_input_to_capacity) flag("--moe-pad-expert-input-to-capacity");
    if (t.moe_aux_loss_coeff > 0) real("--moe-aux-loss-coeff", t.moe_aux_loss_coeff);
    if (t.moe_router_dtype == MoeRouterDtype::kFp32) word("--moe-router-dtype", "fp32");
    constexpr std::string_view kScores[] = {"softmax", "sigmoid", "sqrtsoftplus"};
    if (m.moe_router_score_function != MoeRouterScore::kSoftmax) {
      word("--moe-router-score-function",
           kScores[static_cast<std::size_t>(m.moe_router_score_function)]);
    }
    if (m.moe_router_enable_expert_bias) flag("--moe-router-enable-expert-bias");
    if (m.moe_router_num_groups > 0) num("--moe-router-num-groups", m.moe_router_num_groups);
    if (m.moe_router_group_topk > 0) num("--moe-router-group-topk", m.moe_router_group_topk);
  }
  if (m.multi_latent_attention) {
    flag("--multi-latent-attention");
    if (m.q_lora_rank > 0) num("--q-lora-rank", m.q_lora_rank);
    num("--kv-lora-rank", m.kv_lora_rank);
    num("--qk-head-dim", m.qk_head_dim);
    num("--qk-pos-emb-head-dim", m.qk_pos_emb_head_dim);
    num("--v-head-dim", m.v_head_dim);
    if (m.qk_layernorm) flag("--qk-layernorm");
  }
  return out;
}

}  // namespace stepsim
