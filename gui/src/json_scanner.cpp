#include "json_scanner.hpp"

#include <charconv>
#include <cstring>
#include <cstdint>

namespace stepsim::gui::detail {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
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
  bool escaped = false;
  // memchr finds the closing quote fast; a backslash before it means escapes to decode
  // (and possibly an escaped quote, after which the search goes on).
  while (true) {
    const void* hit = std::memchr(text_.data() + pos_, '"', text_.size() - pos_);
    if (hit == nullptr) {
      pos_ = text_.size();
      return fail("unterminated string");
    }
    const auto quote = static_cast<std::size_t>(static_cast<const char*>(hit) - text_.data());
    if (std::memchr(text_.data() + pos_, '\\', quote - pos_) == nullptr) {
      pos_ = quote;
      break;
    }
    escaped = true;
    // Walk the escapes up to this quote: an odd run of backslashes escapes it.
    std::size_t i = pos_;
    bool quote_escaped = false;
    while (i < quote) {
      if (text_[i] == '\\') {
        if (i + 1 == quote) quote_escaped = true;
        i += 2;
      } else {
        ++i;
      }
    }
    if (!quote_escaped && i == quote) {
      pos_ = quote;
      break;
    }
    pos_ = quote + 1;
  }
  const std::size_t end = pos_++;
  if (!escaped) {
    out = text_.substr(begin, end - begin);
    return true;
  }
  if (!decode_escapes(begin, end)) return false;
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
      case '"': scratch_ += '"'; break;
      case '\\': scratch_ += '\\'; break;
      case '/': scratch_ += '/'; break;
      case 'b': scratch_ += '\b'; break;
      case 'f': scratch_ += '\f'; break;
      case 'n': scratch_ += '\n'; break;
      case 'r': scratch_ += '\r'; break;
      case 't': scratch_ += '\t'; break;
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
  const auto result = std::from_chars(text_.data() + begin, text_.data() + i, out);
  if (result.ec != std::errc()) return fail("number out of range");
  pos_ = i;
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
