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

}  // namespace stepsim::detail
