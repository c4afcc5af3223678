#include "stepsim/base/json_input.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
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

// errno as the user reads it: "No such file or directory" -> "no such file or directory".
std::string errno_text(int err) {
  std::string text = std::strerror(err);
  if (!text.empty()) text[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(text[0])));
  return text;
}

// What a path that is not a regular file is, and why stepsim does not read it.
std::string not_regular(mode_t mode) {
  std::string what = "is not a regular file";
  if (S_ISDIR(mode)) return "is a directory, not a file";
  if (S_ISFIFO(mode)) what = "is a FIFO (named pipe)";
  if (S_ISCHR(mode)) what = "is a character device (such as /dev/zero)";
  if (S_ISBLK(mode)) what = "is a block device";
  if (S_ISSOCK(mode)) what = "is a socket";
  return what + ", not a regular file: stepsim reads its inputs only from regular files";
}

// Why open() or stat() of `path` failed with `err`, in words that say what the path is.
std::string open_problem(const std::string& path, int err) {
  switch (err) {
    case ENOENT: {
      struct stat link {};
      if (::lstat(path.c_str(), &link) == 0 && S_ISLNK(link.st_mode)) {
        return "cannot open: a symbolic link to a file that does not exist";
      }
      return "cannot open: no such file";
    }
    case ELOOP:
      return "cannot open: too many levels of symbolic links (a symbolic link loop)";
    case EACCES:
      return "cannot open: permission denied";
    case ENOTDIR:
      return "cannot open: a part of the path is not a directory";
    case ENAMETOOLONG:
      return "cannot open: the path is too long";
    case ENXIO: {  // a socket, or a device without its driver
      struct stat info {};
      if (::stat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode)) return not_regular(info.st_mode);
      return "cannot open: " + errno_text(err);
    }
    default:
      return "cannot open: " + errno_text(err);
  }
}

// Closes a file descriptor when it goes out of scope.
struct FileDescriptor {
  explicit FileDescriptor(int descriptor) : fd(descriptor) {}
  int fd;
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor() { ::close(fd); }
};

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

std::string input_file_problem(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return open_problem(path, errno);
  if (!S_ISREG(info.st_mode)) return not_regular(info.st_mode);
  if (::access(path.c_str(), R_OK) != 0) return open_problem(path, errno);
  return "";
}

Result<std::string> read_input_file(const std::string& path, std::size_t max_bytes) {
  // O_NONBLOCK: opening a FIFO without a writer returns at once instead of waiting for one;
  // fstat on what was opened (not a stat before the open) leaves no window for a swap.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return Error{path, "", open_problem(path, errno)};
  const FileDescriptor file{fd};
  struct stat info {};
  if (::fstat(fd, &info) != 0) return Error{path, "", "cannot read: " + errno_text(errno)};
  if (!S_ISREG(info.st_mode)) return Error{path, "", not_regular(info.st_mode)};
  // Read at most one byte past the limit: the size fstat gave may change while reading.
  std::string text;
  constexpr std::size_t kChunk = std::size_t{1} << 16;
  while (true) {
    const std::size_t old = text.size();
    const std::size_t want = std::min(kChunk, max_bytes + 1 - old);
    text.resize(old + want);
    const ssize_t got = ::read(fd, text.data() + old, want);
    if (got < 0 && errno == EINTR) {
      text.resize(old);
      continue;
    }
    if (got < 0) return Error{path, "", "cannot read: " + errno_text(errno)};
    text.resize(old + static_cast<std::size_t>(got));
    if (text.size() > max_bytes) {
      return Error{path, "",
                   "is larger than " + std::to_string(max_bytes) +
                       " bytes, the most stepsim reads from such a file"};
    }
    if (got == 0) break;
  }
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
