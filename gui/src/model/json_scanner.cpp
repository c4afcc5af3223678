#include "json_scanner.hpp"

#include <charconv>
#include <cstdint>
#include <cstring>

namespace stepsim::gui::detail {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Clinger's fast path: a decimal without exponent whose digits form an integer m < 2^53 with
// k <= 22 fraction digits is exactly m / 10^k, and one IEEE division of two exact values is
// correctly rounded, so this equals what std::from_chars returns, only much faster.
bool fast_decimal(std::string_view s, double& out) {
  static constexpr double kPow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                      1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                      1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  std::size_t i = 0;
  const bool negative = !s.empty() && s[0] == '-';
  if (negative) ++i;
  std::uint64_t mantissa = 0;
  std::size_t digits = 0;
  std::size_t fraction = 0;
  bool in_fraction = false;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '.') {
      in_fraction = true;
      continue;
    }
    if (!is_digit(c)) return false;  // an exponent: leave it to from_chars
    mantissa = mantissa * 10 + static_cast<std::uint64_t>(c - '0');
    if (mantissa != 0) ++digits;
    if (in_fraction) ++fraction;
    if (digits > 15 || fraction > 22) return false;
  }
  const double value = static_cast<double>(mantissa) / kPow10[fraction];
  out = negative ? -value : value;
  return true;
}

void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

}  // namespace

void JsonScanner::skip_ws() {
  while (pos_ < text_.size()) {
    const char c = text_[pos_];
    if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return;
    ++pos_;
  }
}

JsonScanner::Token JsonScanner::peek() {
  skip_ws();
  if (pos_ >= text_.size()) return Token::kEnd;
  const char c = text_[pos_];
  if (c == '{') return Token::kObject;
  if (c == '[') return Token::kArray;
  if (c == '"') return Token::kString;
  if (c == '-' || is_digit(c)) return Token::kNumber;
  if (c == 't' || c == 'f') return Token::kBool;
  if (c == 'n') return Token::kNull;
  return Token::kInvalid;
}

bool JsonScanner::consume(char c) {
  skip_ws();
  if (pos_ < text_.size() && text_[pos_] == c) {
    ++pos_;
    return true;
  }
  return false;
}

bool JsonScanner::at_end() {
  skip_ws();
  return pos_ >= text_.size();
}

bool JsonScanner::fail(std::string_view what) {
  if (error_.empty()) {
    error_ = what.empty() ? std::string("syntax error") : std::string(what);
    error_pos_ = pos_;
  }
  return false;
}

std::string JsonScanner::error() const {
  if (error_.empty()) return {};
  std::size_t line = 1;
  std::size_t column = 1;
  for (std::size_t i = 0; i < error_pos_ && i < text_.size(); ++i) {
    if (text_[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return "line " + std::to_string(line) + " column " + std::to_string(column) + ": " + error_;
}

bool JsonScanner::read_string(std::string_view& out) {
  skip_ws();
  if (pos_ >= text_.size() || text_[pos_] != '"') return fail("expected a string");
  const std::size_t begin = ++pos_;
  const char* data = text_.data();
  const std::size_t size = text_.size();
  // A plain byte loop: trace strings are short, where it beats memchr's call overhead.
  std::size_t i = begin;
  while (i < size && data[i] != '"' && data[i] != '\\' &&
         static_cast<unsigned char>(data[i]) >= 0x20) {
    ++i;
  }
  if (i < size && static_cast<unsigned char>(data[i]) < 0x20) {
    pos_ = i;
    return fail("a control character (below U+0020) in a string must be escaped");
  }
  if (i < size && data[i] == '"') {
    out = text_.substr(begin, i - begin);
    pos_ = i + 1;
    return true;
  }
  while (i < size && data[i] != '"') {
    if (static_cast<unsigned char>(data[i]) < 0x20) {
      pos_ = i;
      return fail("a control character (below U+0020) in a string must be escaped");
    }
    i += data[i] == '\\' ? 2 : 1;
  }
  if (i >= size) {
    pos_ = size;
    return fail("unterminated string");
  }
  pos_ = i + 1;
  if (!decode_escapes(begin, i)) return false;
  out = scratch_;
  return true;
}

bool JsonScanner::decode_escapes(std::size_t begin, std::size_t end) {
  scratch_.clear();
  for (std::size_t i = begin; i < end; ++i) {
    if (text_[i] != '\\') {
      scratch_ += text_[i];
      continue;
    }
    const char e = text_[++i];
    switch (e) {
      case '"':
        scratch_ += '"';
        break;
      case '\\':
        scratch_ += '\\';
        break;
      case '/':
        scratch_ += '/';
        break;
      case 'b':
        scratch_ += '\b';
        break;
      case 'f':
        scratch_ += '\f';
        break;
      case 'n':
        scratch_ += '\n';
        break;
      case 'r':
        scratch_ += '\r';
        break;
      case 't':
        scratch_ += '\t';
        break;
      case 'u': {
        auto read_hex4 = [&](std::size_t at, std::uint32_t& cp) {
          if (at + 4 > end) return false;
          cp = 0;
          for (std::size_t k = at; k < at + 4; ++k) {
            const int h = hex_value(text_[k]);
            if (h < 0) return false;
            cp = cp * 16 + static_cast<std::uint32_t>(h);
          }
          return true;
        };
        std::uint32_t cp = 0;
        if (!read_hex4(i + 1, cp)) {
          pos_ = i;
          return fail("bad \\u escape in a string");
        }
        i += 4;
        std::uint32_t low = 0;
        if (cp >= 0xD800 && cp < 0xDC00 && i + 2 < end && text_[i + 1] == '\\' &&
            text_[i + 2] == 'u' && read_hex4(i + 3, low) && low >= 0xDC00 && low < 0xE000) {
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          i += 6;
        }
        append_utf8(scratch_, cp);
        break;
      }
      default:
        pos_ = i;
        return fail("bad escape in a string");
    }
  }
  return true;
}

bool JsonScanner::read_number(double& out) {
  skip_ws();
  const std::size_t begin = pos_;
  std::size_t i = pos_;
  if (i < text_.size() && text_[i] == '-') ++i;
  const std::size_t digits = i;
  while (i < text_.size() && is_digit(text_[i])) ++i;
  if (i == digits) return fail("expected a number");
  if (i < text_.size() && text_[i] == '.') {
    const std::size_t frac = ++i;
    while (i < text_.size() && is_digit(text_[i])) ++i;
    if (i == frac) return fail("expected digits after '.'");
  }
  if (i < text_.size() && (text_[i] == 'e' || text_[i] == 'E')) {
    ++i;
    if (i < text_.size() && (text_[i] == '+' || text_[i] == '-')) ++i;
    const std::size_t exp = i;
    while (i < text_.size() && is_digit(text_[i])) ++i;
    if (i == exp) return fail("expected digits in an exponent");
  }
  pos_ = i;
  if (fast_decimal(text_.substr(begin, i - begin), out)) return true;
  const auto result = std::from_chars(text_.data() + begin, text_.data() + i, out);
  if (result.ec != std::errc()) return fail("number out of range");
  return true;
}

bool JsonScanner::read_literal(std::string_view word) {
  if (text_.substr(pos_, word.size()) != word) return fail("expected a value");
  pos_ += word.size();
  return true;
}

bool JsonScanner::read_key(std::string_view& key) {
  if (!read_string(key)) return fail("expected a member name in quotes");
  if (!consume(':')) return fail("expected ':' after a member name");
  return true;
}

bool JsonScanner::skip_value() {
  // Iterative, with an explicit stack of open containers, so deep nesting cannot overflow.
  stack_.clear();
  while (true) {
    // A value.
    std::string_view ignored;
    double number = 0;
    switch (peek()) {
      case Token::kObject:
        ++pos_;
        if (consume('}')) break;
        stack_.push_back('}');
        if (!read_key(ignored)) return false;
        continue;
      case Token::kArray:
        ++pos_;
        if (consume(']')) break;
        stack_.push_back(']');
        continue;
      case Token::kString:
        if (!read_string(ignored)) return false;
        break;
      case Token::kNumber:
        if (!read_number(number)) return false;
        break;
      case Token::kBool:
        if (!read_literal(text_[pos_] == 't' ? "true" : "false")) return false;
        break;
      case Token::kNull:
        if (!read_literal("null")) return false;
        break;
      case Token::kEnd:
        return fail("unexpected end of file");
      case Token::kInvalid:
        return fail("expected a value");
    }
    // After a value: close containers until a ',' asks for the next one.
    while (true) {
      if (stack_.empty()) return true;
      if (consume(',')) {
        if (stack_.back() == '}' && !read_key(ignored)) return false;
        break;
      }
      if (!consume(stack_.back())) {
        return fail(stack_.back() == '}' ? "expected ',' or '}'" : "expected ',' or ']'");
      }
      stack_.pop_back();
    }
  }
}

}  // namespace stepsim::gui::detail
