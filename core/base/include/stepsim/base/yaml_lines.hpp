#pragma once
// The line-level pieces of the small strict YAML readers of Megatron's side files
// (--tp-comm-overlap-cfg: ub_cfg.cpp; --nccl-communicator-config-path: nccl_cfg.cpp): both are
// mappings of names to flat mappings of scalars, as yaml.safe_load reads them. Internal to
// stepsim_core.

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "stepsim/base/result.hpp"

namespace stepsim::detail {

inline std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

/// The line without its comment: '#' at the start or after a blank, outside quotes.
inline std::string_view strip_comment(std::string_view s) {
  char quote = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (quote != 0) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '#' && (i == 0 || s[i - 1] == ' ' || s[i - 1] == '\t')) {
      return s.substr(0, i);
    }
  }
  return s;
}

/// The position of the mapping's ':' (followed by a blank or the end), outside quotes.
inline std::optional<std::size_t> colon_of(std::string_view s) {
  char quote = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (quote != 0) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == ':' && (i + 1 == s.size() || s[i + 1] == ' ')) {
      return i;
    }
  }
  return std::nullopt;
}

inline std::optional<std::string> unquote(std::string_view s) {
  if (s.size() >= 2 && (s.front() == '"' || s.front() == '\'') && s.back() == s.front()) {
    return std::string(s.substr(1, s.size() - 2));
  }
  if (!s.empty() && (s.front() == '"' || s.front() == '\'')) return std::nullopt;
  return std::string(s);
}

inline std::optional<std::int64_t> as_int(std::string_view v) {
  std::int64_t out = 0;
  if (!v.empty() && v.front() == '+') v.remove_prefix(1);
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || end != v.data() + v.size()) return std::nullopt;
  return out;
}

/// A YAML boolean, or 0 / 1: the files NVIDIA ships write both ("aggregate: 1",
/// "set_sm_margin: 0"), yaml.safe_load reads the integers and initialize_ub uses them as truth
/// values.
inline std::optional<bool> as_bool(std::string_view v) {
  if (v == "true" || v == "True" || v == "TRUE") return true;
  if (v == "false" || v == "False" || v == "FALSE") return false;
  if (const auto i = as_int(v); i && (*i == 0 || *i == 1)) return *i == 1;
  return std::nullopt;
}

/// One line of a mapping of names to flat mappings of scalars, as both readers take it: blank
/// (nothing or a comment), or its indentation, key and value; `error` says what is wrong
/// with it instead (a tab in the indentation, YAML beyond that subset, no "key: value", a key
/// that is not a plain or quoted name). A "---" first line is blank where `document_start` is
/// allowed. `names` is what the top-level keys are, for the message ("GEMM names").
struct MappingLine {
  bool blank = false;
  std::string error;
  std::size_t indent = 0;
  std::string key;
  std::string_view value;
};

inline MappingLine read_mapping_line(std::string_view raw, std::string_view names,
                                     bool document_start) {
  MappingLine out;
  const std::string_view text = strip_comment(raw);
  if (trim(text).empty()) {
    out.blank = true;
    return out;
  }
  while (out.indent < text.size() && text[out.indent] == ' ') ++out.indent;
  if (out.indent < text.size() && text[out.indent] == '\t') {
    out.error = "a tab in the indentation (YAML indents with spaces)";
    return out;
  }
  const std::string_view content = trim(text.substr(out.indent));
  if (content == "---" && out.indent == 0 && document_start) {
    out.blank = true;
    return out;
  }
  if (content.front() == '-' || content.front() == '[' || content.front() == '{' ||
      content.front() == '&' || content.front() == '*' || content.front() == '!') {
    out.error = "only mappings of " + std::string(names) +
                " to flat mappings of scalars are read (no lists, flow collections, anchors "
                "or tags)";
    return out;
  }
  const auto colon = colon_of(content);
  if (!colon) {
    out.error = "expected \"key: value\"";
    return out;
  }
  const auto key = unquote(trim(content.substr(0, *colon)));
  if (!key || key->empty()) {
    out.error = "a key must be a plain or quoted name";
    return out;
  }
  out.key = *key;
  out.value = trim(content.substr(*colon + 1));
  return out;
}

/// A reader of such a file: read() hands each line to top() (a top-level key and its value)
/// or nested() (a key under it), and reports the lines' syntax errors; fail() words every
/// error as "FILE: KEY what (line N)", or "FILE: line N: what" for the file's syntax.
class MappingReader {
 public:
  MappingReader(const std::string& file, Errors& errors, std::string_view names)
      : file_(file), errors_(errors), names_(names) {}
  virtual ~MappingReader() = default;
  MappingReader(const MappingReader&) = delete;
  MappingReader& operator=(const MappingReader&) = delete;

  void read(std::string_view text) {
    std::size_t number = 0;
    while (!text.empty()) {
      const std::size_t end = text.find('\n');
      line(++number, text.substr(0, end));
      if (end == std::string_view::npos) break;
      text.remove_prefix(end + 1);
    }
  }

 protected:
  /// Whether a "---" line may still start the document (nothing read yet).
  virtual bool at_start() const = 0;
  virtual void top(const std::string& key, std::string_view value) = 0;
  virtual void nested(std::size_t indent, const std::string& key, std::string_view value) = 0;

  void fail(const std::string& key, const std::string& what) {
    const std::string line = std::to_string(line_);
    if (key.empty()) {
      errors_.push_back(Error{.file = file_, .key = "", .message = "line " + line + ": " + what});
      return;
    }
    errors_.push_back(Error{.file = file_, .key = key, .message = what + " (line " + line + ")"});
  }

  const std::string& file_;
  Errors& errors_;
  std::size_t line_ = 0;  ///< the line being read (fail() names it)

 private:
  void line(std::size_t number, std::string_view raw) {
    line_ = number;
    const MappingLine l = read_mapping_line(raw, names_, at_start());
    if (l.blank) return;
    if (!l.error.empty()) {
      fail("", l.error);
    } else if (l.indent == 0) {
      top(l.key, l.value);
    } else {
      nested(l.indent, l.key, l.value);
    }
  }

  std::string_view names_;
};

}  // namespace stepsim::detail
