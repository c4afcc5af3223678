// A scenario from a Megatron-LM launch line: the flags stepsim models map one to one onto
// scenario keys (the flags' `dest`), as the schema table (config/src/schema/) lists them; the
// others are listed back as ignored. The launcher's
// --nnodes x --nproc_per_node gives the world size when the line has one; the assignments
// before it ("NVTE_FWD_LAYERNORM_SM_MARGIN=16 torchrun ...") are the job's environment.

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdlib>
#include <iterator>
#include <nlohmann/json.hpp>
#include <vector>

#include "import_environment.hpp"
#include "launch_line_words.hpp"
#include "stepsim/base/nearest_name.hpp"
#include "stepsim/config/enum_names.hpp"
#include "stepsim/config/schema.hpp"
#include "stepsim/import/import.hpp"

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

// A word that begins a new flag: "--x", or a flag mangled on its way to the line ("—bf16",
// "-bf16"), which must not be taken for the previous flag's value.
bool is_flag_word(const std::string& word) {
  return word.starts_with("--") || detail::looks_like_mangled_flag(word);
}

// The flags the importer reads though no schema row names them.
constexpr std::array<std::string_view, 8> kSpecialFlags = {
    "--group-query-attention", "--num-query-groups", "--tokenizer-type",
    "--vocab-file",            "--cp-comm-type",     "--hierarchical-context-parallel-sizes",
    "--cuda-graph-modules",    "--cuda-graph-scope"};

// Whether "--x" is a Megatron-LM flag stepsim knows (a schema row's, a listed not-modelled
// one's, or one of the harmless families).
bool is_known_flag(std::string_view flag) {
  const auto& flags = flag_table();
  return std::any_of(flags.begin(), flags.end(), [&](const FlagSpec& f) { return f.flag == flag; }) ||
         classify_unmodelled_flag(flag, "") != FlagClass::kUnknown ||
         std::find(kSpecialFlags.begin(), kSpecialFlags.end(), flag) != kSpecialFlags.end();
}

// "; did you mean --x?" for a flag stepsim does not know, naming the nearest one it does
// (a schema row's, a not-modelled one's or a special one), or "" when none is close.
std::string nearest_flag_hint(std::string_view flag) {
  std::vector<std::string_view> names;
  for (const FlagSpec& f : flag_table()) names.push_back(f.flag);
  for (const UnmodelledArgument& a : unmodelled_arguments()) {
    if (!a.flag.empty()) names.push_back(a.flag);
  }
  names.insert(names.end(), kSpecialFlags.begin(), kSpecialFlags.end());
  const auto near = nearest_name(flag, names);
  return near ? "; did you mean " + std::string(*near) + "?" : "";
}

bool parse_int(const std::string& s, std::int64_t& out) {
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

/// A launch line split into words, a flag's `--flag=value` as two words.
Result<std::vector<std::string>> launch_words(std::string_view launch_line) {
  if (const std::size_t bad = invalid_utf8_at(launch_line); bad != std::string_view::npos) {
    return Error{kLabel, "",
                 "is not valid UTF-8 text (byte " + std::to_string(bad + 1) + ")"};
  }
  auto split = split_words(launch_line);
  if (!split) return split.errors();
  std::vector<std::string> args;
  for (std::string& w : split.value()) {
    const std::size_t eq = w.find('=');
    if (w.starts_with("--") && eq != std::string::npos) {
      args.push_back(w.substr(0, eq));
      args.push_back(w.substr(eq + 1));
    } else {
      args.push_back(std::move(w));
    }
  }
  return args;
}

/// Reads one launch line's words into a scenario's model and training sections, in the steps
/// of scenario_from_megatron_args. Problems collect in `errors` in the order they are met.
class LineReader {
 public:
  explicit LineReader(std::vector<std::string> args) : args_(std::move(args)) {
    // The launcher's part ends at the training script.
    const auto script = std::find_if(args_.begin(), args_.end(),
                                     [](const std::string& a) { return a.ends_with(".py"); });
    first_flag_ = script == args_.end() ? 0 : static_cast<std::size_t>(script - args_.begin()) + 1;
    if (script != args_.end()) {
      const std::string name = script->substr(script->find_last_of('/') + 1);
      // pretrain_mamba.py runs pretrain_hybrid.py (Megatron-LM keeps it as a wrapper).
      hybrid_script_ = name == "pretrain_hybrid.py" || name == "pretrain_mamba.py";
      script_ = name;
      if (name != "pretrain_gpt.py" && !hybrid_script_) {
        unmodelled_.emplace_back(name,
                                 " trains a model stepsim does not model yet (it models the GPT "
                                 "decoders of pretrain_gpt.py)");
      }
    }
  }

  /// The environment the line sets for the job: the assignments before the launcher (and, on
  /// a line of flags only, before the first flag).
  std::vector<detail::Assignment> environment() const {
    return detail::environment_of(args_, first_flag_ > 0 ? first_flag_ : args_.size(),
                                  first_flag_ == 0);
  }

  /// torchrun's --nnodes and --nproc_per_node, before the script.
  void read_launcher() {
    for (std::size_t i = 0; i < first_flag_; ++i) {
      const std::string& a = args_[i];
      std::int64_t v = 0;
      if (a == "--nnodes" || a == "--nproc_per_node" || a == "--nproc-per-node") {
        if (int_of(i, v)) (a == "--nnodes" ? nnodes_ : nproc_) = v;
      }
    }
  }

  /// Megatron's flags after the script (or after the environment on a line of flags only).
  void read_flags(std::size_t environment_words) {
    // After a flag outside the schema the following words may all be its values (nargs='+'
    // or '*', as --data-path 0.3 a 0.7 b); after a schema flag no word is left over.
    bool open_flag = false;
    const std::size_t first_word = first_flag_ > 0 ? first_flag_ : environment_words;
    for (std::size_t i = first_word; i < args_.size(); ++i) {
      const std::string& a = args_[i];
      if (detail::ends_command(a)) break;  // "| tee log": the next command's words
      if (const int n = detail::redirection_words(a); n > 0) {
        i += static_cast<std::size_t>(n - 1);  // "> log", "2>&1": the shell's, not Megatron's
        continue;
      }
      if (!a.starts_with("--")) {
        if (auto problem = detail::stray_word_problem(a, open_flag, is_known_flag)) {
          errors_.push_back(Error{kLabel, a, *problem});
        }
        continue;
      }
      open_flag = false;
      if (read_special_flag(i)) continue;
      const auto& flags = flag_table();
      const auto spec = std::find_if(flags.begin(), flags.end(),
                                     [&](const FlagSpec& f) { return f.flag == args_[i]; });
      if (spec == flags.end()) {
        read_other_flag(i);
        open_flag = true;
        continue;
      }
      read_schema_flag(*spec, i);
    }
  }

  /// Megatron-Core's default attention backend, and the environment's settings.
  void read_environment(const std::vector<detail::Assignment>& environment) {
    if (!attention_given_) {
      model_["attention_backend"] = std::string(to_string(AttentionBackend::kAuto));
      out_.notes.push_back(
          "attention_backend=auto: Megatron-Core's default (Transformer Engine runs flash or "
          "cuDNN fused attention; priced as one fused attention kernel)");
    }
    const std::string backend =
        model_.contains("attention_backend") && model_["attention_backend"].is_string()
            ? model_["attention_backend"].get<std::string>()
            : std::string(to_string(AttentionBackend::kAuto));
    detail::ImportedEnvironment env = detail::import_environment(environment, backend, kLabel);
    for (const auto& [key, value] : env.training) training_[key] = value;
    for (const auto& [key, value] : env.training_text) training_[key] = value;
    out_.ignored_flags.insert(out_.ignored_flags.end(), env.ignored.begin(), env.ignored.end());
    unmodelled_.insert(unmodelled_.end(), env.unmodelled.begin(), env.unmodelled.end());
    errors_.insert(errors_.end(), env.errors.begin(), env.errors.end());
  }

  /// What the job has that stepsim does not model: errors, or listed with allow_unmodelled.
  void settle_unmodelled(bool allow_unmodelled) {
    for (const auto& [flag, why] : unmodelled_) {
      if (allow_unmodelled) {
        out_.unmodelled.push_back(flag);
      } else {
        errors_.push_back(Error{kLabel, flag,
                                why + ": predicting without it would be another job "
                                      "(--allow-unmodelled predicts anyway and says so)"});
      }
    }
  }

  /// A hybrid model: pretrain_hybrid.py with a pattern, whose letters set num_layers
  /// (arguments.py: the pattern overrides --num-layers).
  void settle_hybrid() {
    const bool pattern = model_.contains("hybrid_layer_pattern") ||
                         model_.contains("hybrid_override_pattern");
    if (hybrid_script_ && !pattern) {
      unmodelled_.emplace_back(script_ + " without --hybrid-layer-pattern",
                               " builds Megatron's pattern from the deprecated hybrid ratios, "
                               "which stepsim does not model");
    } else if (pattern && !script_.empty() && !hybrid_script_) {
      unmodelled_.emplace_back(script_ + " with --hybrid-layer-pattern",
                               " does not build a hybrid model (pretrain_hybrid.py does)");
    }
    if (!pattern) return;
    const json& text = model_.contains("hybrid_layer_pattern") ? model_["hybrid_layer_pattern"]
                                                               : model_["hybrid_override_pattern"];
    if (!text.is_string()) return;
    const std::string main = text.get<std::string>().substr(0, text.get<std::string>().find('/'));
    const auto layers = static_cast<std::int64_t>(main.size()) -
                        static_cast<std::int64_t>(std::count(main.begin(), main.end(), '|'));
    if (model_.contains("num_layers") && model_["num_layers"] != layers) {
      out_.notes.push_back("--num-layers is ignored: --hybrid-layer-pattern has " +
                           std::to_string(layers) + " layers (as Megatron-LM does)");
    }
    model_["num_layers"] = layers;
  }

  /// The flags whose meaning depends on others: query groups, the vocabulary.
  void settle_model() {
    settle_hybrid();
    if (gqa_) {
      if (query_groups_ > 0) {
        model_["num_query_groups"] = query_groups_;
      } else {
        errors_.push_back(
            Error{kLabel, "--num-query-groups", " is needed with --group-query-attention"});
      }
    } else if (query_groups_ > 0) {
      out_.notes.push_back(
          "--num-query-groups is ignored without --group-query-attention "
          "(as Megatron-LM does)");
    }
    if (model_.contains("vocab_size") || model_.contains("padded_vocab_size")) return;
    if (tokenizer_ == "GPT2BPETokenizer" || (tokenizer_.empty() && vocab_file_)) {
      model_["vocab_size"] = 50257;
      out_.notes.push_back("vocab_size=50257 assumed: GPT-2's BPE vocabulary (--vocab-file)");
    } else {
      errors_.push_back(Error{kLabel, "--vocab-size",
                              " is needed: stepsim cannot read the tokenizer" +
                                  (tokenizer_.empty() ? std::string() : " " + tokenizer_)});
    }
  }

  /// The scenario, or every problem found.
  Result<ImportedScenario> finish(const MegatronImportOptions& options) {
    std::int64_t world = options.world_size;
    // torchrun (torch.distributed.run) and torch.distributed.launch default --nnodes to 1.
    if (world == 0 && nproc_ > 0) world = (nnodes_ > 0 ? nnodes_ : 1) * nproc_;
    if (world <= 0) {
      errors_.push_back(Error{kLabel, "--world-size",
                              " is needed: the line has no launcher (torchrun --nnodes N "
                              "--nproc_per_node G) to count its GPUs; give stepsim's own "
                              "--world-size N beside the quoted line"});
    }
    if (options.system.empty()) {
      errors_.push_back(Error{kLabel, "--system",
                              " is needed: give stepsim's own --system FILE beside the quoted "
                              "line (e.g. systems/dgx-a100-80gb.json)"});
    }
    if (!errors_.empty()) return errors_;
    training_["world_size"] = world;
    json doc = json::object();
    doc["name"] = options.name;
    doc["model"] = std::move(model_);
    doc["training"] = std::move(training_);
    doc["system"] = options.system;
    // No cost_model: as any scenario without one, the shipped public profile of the system's
    // GPU when one ships, else its roofline (the loader's default, which the reports name).
    if (!out_.unmodelled.empty()) doc["unmodelled"] = out_.unmodelled;
    out_.scenario_json = doc.dump(2) + "\n";
    return out_;
  }

 private:
  const std::string* value_of(std::size_t& i) {
    if (i + 1 >= args_.size() || is_flag_word(args_[i + 1])) {
      errors_.push_back(Error{kLabel, args_[i], " needs a value"});
      return nullptr;
    }
    return &args_[++i];
  }

  bool int_of(std::size_t& i, std::int64_t& v) {
    const std::string flag = args_[i];
    const std::string* s = value_of(i);
    if (s == nullptr) return false;
    if (!parse_int(*s, v)) {
      errors_.push_back(Error{kLabel, flag, std::string("=") + *s + " must be an integer"});
      return false;
    }
    return true;
  }

  /// The words after args_[i] up to the next flag (a flag of nargs='+').
  std::vector<std::string> values_after(std::size_t& i) {
    std::vector<std::string> values;
    while (i + 1 < args_.size() && !is_flag_word(args_[i + 1])) values.push_back(args_[++i]);
    return values;
  }

  /// The flags outside the schema rows that stepsim reads itself; false for any other.
  bool read_special_flag(std::size_t& i) {
    const std::string flag = args_[i];
    if (flag == "--group-query-attention") {
      gqa_ = true;
    } else if (flag == "--num-query-groups") {
      int_of(i, query_groups_);
    } else if (flag == "--tokenizer-type") {
      if (const std::string* s = value_of(i)) tokenizer_ = *s;
    } else if (flag == "--vocab-file") {
      vocab_file_ = true;
      value_of(i);
    } else if (flag == "--cp-comm-type") {
      read_cp_comm_types(flag, values_after(i));
    } else if (flag == "--hierarchical-context-parallel-sizes") {
      read_hierarchical_cp_sizes(flag, values_after(i));
    } else if (flag == "--cuda-graph-modules" || flag == "--cuda-graph-scope") {
      // nargs='+'; --cuda-graph-scope is its deprecated spelling (arguments.py migrates it).
      json modules = json::array();
      for (std::string& m : values_after(i)) modules.push_back(std::move(m));
      training_["cuda_graph_modules"] = modules;
    } else {
      return false;
    }
    return true;
  }

  // nargs='+': one type for every layer, or one per layer.
  void read_cp_comm_types(const std::string& flag, const std::vector<std::string>& types) {
    if (types.empty()) {
      errors_.push_back(Error{kLabel, flag, " needs a value"});
    } else if (std::any_of(types.begin(), types.end(),
                           [&](const std::string& t) { return t != types.front(); })) {
      unmodelled_.emplace_back(flag + " (one type per layer)",
                               " changes the job and stepsim does not model per-layer context-"
                               "parallel communication types yet");
    } else {
      training_["cp_comm_type"] = types.front();
    }
  }

  // nargs='+', type=int: the levels, innermost first.
  void read_hierarchical_cp_sizes(const std::string& flag, const std::vector<std::string>& words) {
    json sizes = json::array();
    for (const std::string& word : words) {
      std::int64_t v = 0;
      if (!parse_int(word, v)) {
        errors_.push_back(Error{kLabel, flag, std::string("=") + word + " must be an integer"});
      }
      sizes.push_back(v);
    }
    if (sizes.empty()) {
      errors_.push_back(Error{kLabel, flag, " needs a value"});
    } else {
      training_["hierarchical_context_parallel_sizes"] = sizes;
    }
  }

  /// The word after args_[i] when it is a value (not a flag, the command's end or a
  /// redirection); i moves onto it.
  std::string next_value(std::size_t& i) {
    if (i + 1 < args_.size() && !is_flag_word(args_[i + 1]) &&
        !detail::ends_command(args_[i + 1]) && detail::redirection_words(args_[i + 1]) == 0) {
      return args_[++i];
    }
    return {};
  }

  /// --spec MODULE NAME: the hybrid stack's own spec is what pretrain_hybrid.py builds from
  /// the pattern (settle_hybrid checks that one is given); any other spec changes the job.
  void read_spec(std::size_t& i) {
    const std::string module = next_value(i);
    const std::string name = next_value(i);
    const bool hybrid_spec =
        (module == "megatron.core.models.hybrid.hybrid_layer_specs" ||
         module == "megatron.core.models.mamba.mamba_layer_specs") &&
        (name == "hybrid_stack_spec" || name == "mamba_stack_spec");
    const std::string word = "--spec " + module + (name.empty() ? "" : " " + name);
    if (hybrid_spec) {
      out_.ignored_flags.push_back(word);
    } else {
      unmodelled_.emplace_back(word, " changes the job and stepsim does not model it yet");
    }
  }

  /// A flag outside the schema: harmless (noted), not modelled, or unknown.
  void read_other_flag(std::size_t& i) {
    const std::string flag = args_[i];
    if (flag == "--spec") {
      read_spec(i);
      return;
    }
    const std::string value = next_value(i);
    switch (classify_unmodelled_flag(flag, value)) {
      case FlagClass::kHarmless:
        out_.ignored_flags.push_back(flag);
        break;
      case FlagClass::kUnmodelled: {
        const UnmodelledArgument* a = find_unmodelled_argument(flag);
        unmodelled_.emplace_back(flag + (value.empty() ? "" : " " + value),
                                 a != nullptr && !a->why.empty()
                                     ? " changes the job: " + std::string(a->why)
                                     : std::string(" changes the job and stepsim does not "
                                                   "model it yet"));
        break;
      }
      case FlagClass::kUnknown:
        unmodelled_.emplace_back(flag + (value.empty() ? "" : " " + value),
                                 " is not a Megatron-LM flag stepsim knows, so it may change "
                                 "the job" + nearest_flag_hint(flag));
        break;
    }
  }

  /// A schema row's flag: its value (or the constant the flag stands for) under the row's key.
  void read_schema_flag(const FlagSpec& spec, std::size_t& i) {
    const std::string& flag = args_[i];
    if (flag == "--attention-backend" || flag == "--use-flash-attn") attention_given_ = true;
    const std::string_view dotted = spec.row->key;
    const auto dot = dotted.find('.');
    json& section = dotted.substr(0, dot) == "model" ? model_ : training_;
    const std::string key(dotted.substr(dot + 1));
    if (!spec.constant.empty()) {
      if (spec.row->kind == KnobKind::kBool) {
        section[key] = spec.constant == "true";
      } else {
        section[key] = std::string(spec.constant);
      }
      return;
    }
    std::int64_t v = 0;
    if (spec.row->kind == KnobKind::kInt) {
      if (int_of(i, v)) section[key] = v;
    } else if (spec.row->kind == KnobKind::kReal) {
      const std::string real_flag = args_[i];
      if (const std::string* s = value_of(i)) {
        char* end = nullptr;
        const double d = std::strtod(s->c_str(), &end);
        if (s->empty() || end != s->c_str() + s->size()) {
          errors_.push_back(Error{kLabel, real_flag, std::string("=") + *s + " must be a number"});
        } else {
          section[key] = d;
        }
      }
    } else if (const std::string* s = value_of(i)) {
      section[key] = *s;
    }
  }

  std::vector<std::string> args_;
  std::string script_;          // the training script's file name ("" on a line of flags)
  bool hybrid_script_ = false;  // pretrain_hybrid.py or pretrain_mamba.py
  std::size_t first_flag_ = 0;
  Errors errors_;
  ImportedScenario out_;
  json model_ = json::object();
  json training_ = json::object();
  std::int64_t nnodes_ = 0, nproc_ = 0;
  std::int64_t query_groups_ = 0;
  bool gqa_ = false;
  std::string tokenizer_;
  bool vocab_file_ = false;
  bool attention_given_ = false;
  // Job-changing flags stepsim does not model: (flag or script, message).
  std::vector<std::pair<std::string, std::string>> unmodelled_;
};

}  // namespace

Result<ImportedScenario> scenario_from_megatron_args(std::string_view launch_line,
                                                     const MegatronImportOptions& options) {
  auto words = launch_words(launch_line);
  if (!words) return words.errors();
  LineReader line(std::move(words).value());
  const std::vector<detail::Assignment> environment = line.environment();
  line.read_launcher();
  line.read_flags(environment.size());
  line.read_environment(environment);
  line.settle_unmodelled(options.allow_unmodelled);
  line.settle_model();
  return line.finish(options);
}

}  // namespace stepsim
