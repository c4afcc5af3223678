#pragma once
// JsonScanner: a pull tokenizer over a JSON text held in memory. The trace reader walks
// `traceEvents` with it event by event, without building a document: nlohmann's DOM costs
// several hundred bytes per event, too slow and too big for millions of slices.

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace stepsim::gui::detail {

class JsonScanner {
 public:
  enum class Token { kObject, kArray, kString, kNumber, kBool, kNull, kEnd, kInvalid };

  explicit JsonScanner(std::string_view text) : text_(text) {}

  /// Skips whitespace and says what comes next, consuming nothing.
  Token peek();
  /// Skips whitespace and consumes `c` when it is next.
  bool consume(char c);
  /// Reads a string. `out` views the text, or an internal buffer when the string has
  /// escapes; it stays valid until the next read_string.
  bool read_string(std::string_view& out);
  /// Reads a number.
  bool read_number(double& out);
  /// Skips one whole value of any type, checking its syntax.
  bool skip_value();
  /// Reads `"key" :` of an object member.
  bool read_key(std::string_view& key);

  /// Byte offset of the next unread character.
  std::size_t offset() const { return pos_; }
  /// The text from `begin` to the current offset.
  std::string_view since(std::size_t begin) const { return text_.substr(begin, pos_ - begin); }
  /// True once everything but whitespace was read.
  bool at_end();

  /// Records a syntax error at the current offset (the first one wins) and returns false.
  bool fail(std::string_view what);
  /// "line L column C: what" of the first error; empty when none.
  std::string error() const;

 private:
  void skip_ws();
  bool read_literal(std::string_view word);
  bool decode_escapes(std::size_t begin, std::size_t end);

  std::string_view text_;
  std::size_t pos_ = 0;
  std::string scratch_;
  std::string error_;
  std::size_t error_pos_ = 0;
  std::vector<char> stack_;
};

}  // namespace stepsim::gui::detail
