// Megatron's --pipeline-model-parallel-layout text (pipeline_parallel_layer_layout.py
// PipelineParallelLayerLayout.parse_str_to_list), read into its stages.

#include "stepsim/config/pipeline_layout.hpp"

#include <algorithm>
#include <cctype>

namespace stepsim {

namespace {

constexpr std::string_view kLayoutKey = "training.pipeline_model_parallel_layout";

bool is_digit(char c) { return c >= '0' && c <= '9'; }

/// Reads the digits at text[i...] (at least one); false when the count alone exceeds the
/// bound on the unrolled layout.
bool read_count(std::string_view text, std::size_t& i, std::size_t& count) {
  count = 0;
  while (i < text.size() && is_digit(text[i])) {
    count = count * 10 + static_cast<std::size_t>(text[i] - '0');
    if (count > kMaxLayoutLength) return false;
    ++i;
  }
  return true;
}

/// A character as a message shows it.
std::string shown(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (std::isprint(u) != 0) return std::string("'") + c + "'";
  constexpr char kHex[] = "0123456789abcdef";
  return std::string("byte 0x") + kHex[u >> 4] + kHex[u & 15];
}

Error too_long() {
  return Error{"", std::string(kLayoutKey),
               " unrolls to more than " + std::to_string(kMaxLayoutLength) +
                   " layer characters (a repetition count is too large)"};
}

/// One pass of re.sub(pattern, lambda x: x.group(1) * int(x.group(2)), text) for Megatron's
/// two patterns: r'\(([^)]+)\)\*(\d+)' (group = the parenthesised text) and r'(.)\*(\d+)'.
Result<std::string> unroll(std::string_view text, bool parenthesised) {
  std::string out;
  std::size_t i = 0;
  std::size_t next_close = 0;  // the first ')' after the last '(' looked at (npos: none)
  while (i < text.size()) {
    std::size_t group_begin = i;
    std::size_t group_end = i;  // one past the group
    std::size_t star = std::string_view::npos;
    if (parenthesised && text[i] == '(') {
      // [^)]+ cannot cross a ')', so the only candidate ends at the first ')' after i. The
      // search resumes where the last one ended, so a run of '(' costs linear time.
      if (next_close != std::string_view::npos && next_close <= i) {
        next_close = text.find(')', i + 1);
      }
      const std::size_t close = next_close;
      if (close != std::string_view::npos && close > i + 1) {
        group_begin = i + 1;
        group_end = close;
        star = close + 1;
      }
    } else if (!parenthesised && text[i] != '\n') {
      group_end = i + 1;
      star = i + 1;
    }
    if (star != std::string_view::npos && star + 1 < text.size() && text[star] == '*' &&
        is_digit(text[star + 1])) {
      std::size_t next = star + 1;
      std::size_t count = 0;
      if (!read_count(text, next, count)) return too_long();
      const std::string_view group = text.substr(group_begin, group_end - group_begin);
      if (group.size() * count > kMaxLayoutLength - std::min(out.size(), kMaxLayoutLength)) {
        return too_long();
      }
      for (std::size_t k = 0; k < count; ++k) out += group;
      i = next;
      continue;
    }
    out += text[i];
    ++i;
  }
  if (out.size() > kMaxLayoutLength) return too_long();
  return out;
}

}  // namespace

Result<std::vector<std::string>> parse_pipeline_layout(std::string_view layout) {
  std::string text;
  text.reserve(layout.size());
  for (const char c : layout) {
    if (c != ',') text += c;  // "purely cosmetic commas"
  }
  auto grouped = unroll(text, true);
  if (!grouped) return grouped.errors();
  auto flat = unroll(*grouped, false);
  if (!flat) return flat.errors();
  std::vector<std::string> stages(1);
  for (const char c : *flat) {
    if (c == '|') {
      stages.emplace_back();
      continue;
    }
    if (c != 'E' && c != 'L' && c != 't' && c != 'm') {
      return Error{"", std::string(kLayoutKey),
                   " has " + shown(c) + " in stage " + std::to_string(stages.size() - 1) +
                       ", which is not a layer character (E embedding, t transformer layer, L "
                       "loss, m multi-token prediction; stages are separated by '|', "
                       "repetitions written x*n or (...)*n, commas are ignored)"};
    }
    stages.back() += c;
  }
  return stages;
}

}  // namespace stepsim
