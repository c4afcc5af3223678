// A scenario from a Megatron-LM launch line: the flags stepsim models map one to one onto
// scenario keys (the flags' `dest`), as the schema table (config/src/schema/) lists them; the
// others are listed back as ignored. The launcher's
// --nnodes x --nproc_per_node gives the world size when the line has one; the assignments
// before it ("NVTE_FWD_LAYERNORM_SM_MARGIN=16 torchrun ...") are the job's environment.

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <iterator>
#include <nlohmann/json.hpp>
#include <vector>

#include "import_environment.hpp"
#include "stepsim/import/import.hpp"
#include "stepsim/config/enum_names.hpp"
#include "stepsim/config/schema.hpp"

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
    model["attention_backend"] = std::string(to_string(AttentionBackend::kAuto));
    out.notes.push_back(
        "attention_backend=auto: Megatron-Core's default (Transformer Engine runs flash or cuDNN "
        "fused attention; priced as one fused attention kernel)");
  }
  const std::string backend =
      model.contains("attention_backend") && model["attention_backend"].is_string()
          ? model["attention_backend"].get<std::string>()
          : std::string(to_string(AttentionBackend::kAuto));
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

}  // namespace stepsim
