#pragma once
// Megatron's per-layer list patterns (arguments.py _eval_pattern, which evaluates a Python list
// expression such as "([1]*3+[0]*1)*3"): a small recursive-descent reader of the same grammar
// (lists of integers, '+' concatenation, '*' repetition on either side, parentheses). Used by
// --moe-layer-freq (moe.cpp) and --window-attn-skip-freq (window_attention.cpp).
// Internal to stepsim_core.

#include <cctype>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace stepsim::detail {

constexpr std::int64_t kMaxPatternLength = std::int64_t{1} << 20;

/// The integer form of a pattern flag ("every N-th layer"): N when `text` is only digits and
/// N > 0, else nothing (also when its digits run past kMaxPatternLength).
inline std::optional<std::int64_t> pattern_frequency(std::string_view text) {
  std::int64_t n = 0;
  if (text.empty()) return std::nullopt;
  for (const char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c)) || n > kMaxPatternLength) return std::nullopt;
    n = n * 10 + (c - '0');
  }
  if (n <= 0) return std::nullopt;
  return n;
}

class PatternReader {
 public:
  explicit PatternReader(std::string_view text) : text_(text) {}

  std::optional<std::vector<std::int64_t>> parse() {
    auto v = sum();
    skip_space();
    if (!v || pos_ != text_.size()) return std::nullopt;
    return v;
  }

 private:
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool take(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  std::optional<std::int64_t> integer() {
    skip_space();
    const std::size_t start = pos_;
    std::int64_t v = 0;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      v = v * 10 + (text_[pos_] - '0');
      if (v > kMaxPatternLength) return std::nullopt;
      ++pos_;
    }
    if (pos_ == start) return std::nullopt;
    return v;
  }
  // sum := product ('+' product)*
  std::optional<std::vector<std::int64_t>> sum() {
    auto out = product();
    while (out && take('+')) {
      auto next = product();
      if (!next) return std::nullopt;
      out->insert(out->end(), next->begin(), next->end());
      if (static_cast<std::int64_t>(out->size()) > kMaxPatternLength) return std::nullopt;
    }
    return out;
  }
  // product := (integer '*')* atom ('*' integer)*
  std::optional<std::vector<std::int64_t>> product() {
    std::int64_t times = 1;
    skip_space();
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      auto n = integer();
      if (!n || !take('*')) return std::nullopt;
      times *= *n;
      if (times > kMaxPatternLength) return std::nullopt;
      skip_space();
    }
    auto base = atom();
    while (base && take('*')) {
      auto n = integer();
      if (!n) return std::nullopt;
      times *= *n;
      if (times > kMaxPatternLength) return std::nullopt;
    }
    if (!base) return std::nullopt;
    if (static_cast<std::int64_t>(base->size()) * times > kMaxPatternLength) return std::nullopt;
    std::vector<std::int64_t> out;
    out.reserve(base->size() * static_cast<std::size_t>(times));
    for (std::int64_t i = 0; i < times; ++i) out.insert(out.end(), base->begin(), base->end());
    return out;
  }
  // atom := '[' integer (',' integer)* ']' | '(' sum ')'
  std::optional<std::vector<std::int64_t>> atom() {
    if (take('(')) {
      auto inner = sum();
      if (!inner || !take(')')) return std::nullopt;
      return inner;
    }
    if (!take('[')) return std::nullopt;
    std::vector<std::int64_t> out;
    if (take(']')) return out;
    do {
      auto n = integer();
      if (!n) return std::nullopt;
      out.push_back(*n);
    } while (take(','));
    if (!take(']')) return std::nullopt;
    return out;
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

}  // namespace stepsim::detail
