#include "stepsim/core/json_input.hpp"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <system_error>
#include <utility>
#include <vector>

namespace stepsim {

namespace {

using nlohmann::json;

// 1-based line and column of the byte at `offset` (0-based).
std::pair<std::size_t, std::size_t> line_column(std::string_view text, std::size_t offset) {
  std::size_t line = 1;
  std::size_t column = 1;
  const std::size_t end = std::min(offset, text.size());
  for (std::size_t i = 0; i < end; ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return {line, column};
}

std::string at_line(std::string_view text, std::size_t offset) {
  const auto [line, column] = line_column(text, offset);
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

// nlohmann's message minus its "[json.exception.parse_error.101] parse error at ...: " prefix.
std::string parse_reason(const std::string& what) {
  std::string reason = what;
  if (const auto bracket = reason.find("] "); bracket != std::string::npos) {
    reason = reason.substr(bracket + 2);
  }
  if (reason.rfind("parse error", 0) == 0) {
    if (const auto colon = reason.find(": "); colon != std::string::npos) {
      reason = reason.substr(colon + 2);
    }
  }
  return reason;
}

// The last token nlohmann read, cut for a message (a 400-digit number stays readable).
std::string short_token(const std::string& token) {
  constexpr std::size_t kMax = 40;
  std::string t = token;
  if (t.size() >= 2 && t.front() == '\'' && t.back() == '\'') t = t.substr(1, t.size() - 2);
  if (t.size() > kMax) t = t.substr(0, kMax) + "...";
  return t;
}

// Builds the document through nlohmann's SAX interface, so that every rule is checked while
// reading with the key path at hand and nothing is thrown: nlohmann's own DOM parser throws
// out_of_range on an overflowing number and keeps the last of two duplicate keys.
class StrictBuilder {
 public:
  using number_integer_t = json::number_integer_t;
  using number_unsigned_t = json::number_unsigned_t;
  using number_float_t = json::number_float_t;
  using string_t = json::string_t;
  using binary_t = json::binary_t;

  StrictBuilder(std::string_view text, const std::string& file, const JsonLimits& limits)
      : text_(text), file_(file), limits_(limits) {}

  bool null() { return put(json(nullptr)) != nullptr; }
  bool boolean(bool v) { return put(json(v)) != nullptr; }
  bool number_integer(number_integer_t v) { return put(json(v)) != nullptr; }
  bool number_unsigned(number_unsigned_t v) { return put(json(v)) != nullptr; }
  bool number_float(number_float_t v, const string_t& raw) {
    if (!std::isfinite(v)) return fail(path(), "=" + short_token(raw) + " overflows a double");
    return put(json(v)) != nullptr;
  }
  bool string(string_t& v) { return put(json(std::move(v))) != nullptr; }
  bool binary(binary_t& /*v*/) { return fail(path(), " holds binary data, which JSON has not"); }

  bool start_object(std::size_t /*elements*/) { return open(json::object()); }
  bool key(string_t& k) {
    Level& top = levels_.back();
    top.key = k;
    top.has_key = true;
    if (!top.keys.insert(k).second) return fail(path(), " is given twice in one object");
    return true;
  }
  bool end_object() { return close(); }
  bool start_array(std::size_t /*elements*/) { return open(json::array()); }
  bool end_array() { return close(); }

  bool parse_error(std::size_t position, const std::string& last_token,
                   const nlohmann::detail::exception& ex) {
    if (ex.id == 406) {  // out_of_range: a number beyond a double (1e400, 400 digits)
      return fail(path(), "=" + short_token(last_token) +
                              " overflows a double (numbers must be finite)");
    }
    // nlohmann counts the byte it stopped at; report that byte.
    const std::string where = at_line(text_, position == 0 ? 0 : position - 1);
    return fail(path(), where + ": malformed JSON: " + parse_reason(ex.what()));
  }

  bool failed() const { return failed_; }
  const Error& error() const { return error_; }
  json take() { return std::move(root_); }

 private:
  struct Level {
    json* value;
    std::set<std::string, std::less<>> keys;
    std::string key;
    bool has_key = false;   // `key` holds a key read (which may be "", a key JSON allows)
    std::size_t count = 0;  // array elements placed so far
  };

  // Dotted path of the value being read: `model.hidden_size`, `sizes[3]`.
  std::string path() const {
    std::string p;
    for (std::size_t i = 0; i < levels_.size(); ++i) {
      const Level& l = levels_[i];
      if (l.value->is_object()) {
        if (!l.has_key) break;
        if (!p.empty()) p += '.';
        p += l.key.empty() ? std::string("\"\"") : l.key;
      } else {
        // An array below the innermost level holds the element being read as its last.
        const bool inner = i + 1 == levels_.size();
        const std::size_t index = inner ? l.count : l.count - 1;
        p += "[" + std::to_string(index) + "]";
      }
    }
    return p;
  }

  json* put(json v) {
    if (levels_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    Level& top = levels_.back();
    if (top.value->is_array()) {
      top.value->push_back(std::move(v));
      ++top.count;
      return &top.value->back();
    }
    json& slot = (*top.value)[top.key];
    slot = std::move(v);
    return &slot;
  }

  bool open(json empty) {
    if (static_cast<int>(levels_.size()) >= limits_.max_depth) {
      return fail(path(), " nests objects and arrays deeper than " +
                              std::to_string(limits_.max_depth) + " levels");
    }
    json* v = put(std::move(empty));
    levels_.push_back({v, {}, {}, false, 0});
    return true;
  }

  bool close() {
    levels_.pop_back();
    return true;
  }

  bool fail(std::string key, std::string message) {
    if (!failed_) {
      failed_ = true;
      // "key: line 3, column 5: ..." reads better than "keyline 3...": separate a message that
      // does not start with '=' or ' ' from a non-empty key.
      if (!key.empty() && !message.empty() && message[0] != '=' && message[0] != ' ') {
        message = ": " + message;
      }
      error_ = Error{file_, std::move(key), std::move(message)};
    }
    return false;
  }

  std::string_view text_;
  const std::string& file_;
  JsonLimits limits_;
  json root_;
  std::vector<Level> levels_;
  bool failed_ = false;
  Error error_;
};

}  // namespace

Result<std::string> read_input_file(const std::string& path, std::size_t max_bytes) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return Error{path, "", "is a directory, not a file"};
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{path, "", "cannot open the file (missing or unreadable)"};
  // Read at most one byte past the limit: a pipe or /dev/zero has no size to ask for.
  std::string text;
  constexpr std::size_t kChunk = std::size_t{1} << 16;
  while (in) {
    const std::size_t old = text.size();
    const std::size_t want = std::min(kChunk, max_bytes + 1 - old);
    text.resize(old + want);
    in.read(text.data() + old, static_cast<std::streamsize>(want));
    text.resize(old + static_cast<std::size_t>(in.gcount()));
    if (text.size() > max_bytes) {
      return Error{path, "",
                   "is larger than " + std::to_string(max_bytes) +
                       " bytes, the most stepsim reads from such a file"};
    }
  }
  if (in.bad()) return Error{path, "", "cannot read the file"};
  return text;
}

Result<json> parse_json_text(std::string_view text, const std::string& file,
                             const JsonLimits& limits) {
  // nlohmann stops at a NUL when it reads a C string; refuse one outright whatever the caller.
  if (const auto nul = text.find('\0'); nul != std::string_view::npos) {
    return Error{file, "", at_line(text, nul) + ": a NUL byte (JSON text holds none)"};
  }
  StrictBuilder builder(text, file, limits);
  const bool ok = json::sax_parse(text.begin(), text.end(), &builder, json::input_format_t::json,
                                  /*strict=*/true, /*ignore_comments=*/false);
  if (!ok || builder.failed()) {
    if (builder.failed()) return builder.error();
    return Error{file, "", "malformed JSON"};
  }
  return builder.take();
}

Result<json> read_json_file(const std::string& path, std::size_t max_bytes,
                            const JsonLimits& limits) {
  auto text = read_input_file(path, max_bytes);
  if (!text) return text.errors();
  return parse_json_text(*text, path, limits);
}

}  // namespace stepsim
