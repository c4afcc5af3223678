// NCCL_ALGO / NCCL_PROTO as src/graph/tuning.cc parseList reads them (nccl_env.hpp).

#include "stepsim/config/nccl_env.hpp"

#include <algorithm>
#include <span>
#include <utility>
#include <vector>

#include "stepsim/base/nearest_name.hpp"

namespace stepsim {
namespace {

/// The tokens strtok_r finds in `s` at delimiter `delim` (empty ones skipped), with where
/// each starts.
std::vector<std::pair<std::size_t, std::string_view>> tokens(std::string_view s, char delim) {
  std::vector<std::pair<std::size_t, std::string_view>> out;
  std::size_t at = 0;
  while (at < s.size()) {
    const std::size_t end = std::min(s.find(delim, at), s.size());
    if (end > at) out.emplace_back(at, s.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

std::string lowered(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = lower(c);
  return out;
}

/// The index of `name` in `names` compared as strcasecmp does, or -1.
int index_of(std::string_view name, std::span<const std::string_view> names) {
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (lowered(name) == lowered(names[i])) return static_cast<int>(i);
  }
  return -1;
}

std::string listed(std::span<const std::string_view> names) {
  std::string out;
  for (const std::string_view n : names) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

/// ": \"x\" is not an NCCL <what> (the names); did you mean \"y\"?"
std::string unknown(std::string_view token, std::string_view what,
                    std::span<const std::string_view> names) {
  std::vector<std::string> low;
  for (const std::string_view n : names) low.push_back(lowered(n));
  const std::vector<std::string_view> views(low.begin(), low.end());
  std::string out = ": \"" + std::string(token) + "\" is not an NCCL " + std::string(what) + " (" +
                    listed(names) + ")";
  if (const auto near = nearest_name_index(lowered(token), views)) {
    out += "; did you mean \"" + std::string(names[*near]) + "\"?";
  }
  return out;
}

}  // namespace

std::string apply_nccl_enable_list(std::string_view value, bool algorithms, NcclEnabled& enabled) {
  const std::span<const std::string_view> names =
      algorithms ? std::span<const std::string_view>(kNcclAlgoNames)
                 : std::span<const std::string_view>(kNcclProtoNames);
  auto& list = algorithms ? enabled.algos : enabled.protos;
  const auto all = static_cast<std::uint8_t>((1u << names.size()) - 1);
  for (const auto& [at, entry] : tokens(value, ';')) {
    // "prefix:list", or a list alone; strtok_r at ':' takes the first two tokens.
    const auto parts = tokens(entry, ':');
    if (parts.empty()) {
      return ": \"" + std::string(entry) + "\" holds no list (NCCL reads no function and no names)";
    }
    std::string_view prefix;
    std::string_view elems = parts.front().second;
    if (parts.size() >= 2) {
      prefix = parts[0].second;
      elems = parts[1].second;
    } else if (at != 0) {
      return ": \"" + std::string(entry) +
             "\" has no function: every entry but the first must start with one (" +
             listed(kNcclFuncNames) + ") and a colon, e.g. \"Ring;AllReduce:Tree,Ring\"";
    }
    const bool unset = elems.starts_with('^');
    if (unset) elems.remove_prefix(1);
    const int func = prefix.empty() ? -1 : index_of(prefix, kNcclFuncNames);
    if (!prefix.empty() && func < 0) return unknown(prefix, "function", kNcclFuncNames);
    for (int f = 0; f < static_cast<int>(kNcclFuncNames.size()); ++f) {
      if (func >= 0 && f != func) continue;
      auto bits = static_cast<std::uint8_t>(unset ? all : 0);
      for (const auto& [_, elem] : tokens(elems, ',')) {
        const int e = index_of(elem, names);
        if (e < 0) return unknown(elem, algorithms ? "algorithm" : "protocol", names);
        bits = unset ? static_cast<std::uint8_t>(bits & ~(1u << e))
                     : static_cast<std::uint8_t>(bits | (1u << e));
      }
      list[static_cast<std::size_t>(f)] = bits;
    }
  }
  return "";
}

NcclEnabled nccl_enabled(std::string_view nccl_algo, std::string_view nccl_proto) {
  NcclEnabled out;
  for (const auto& [value, algorithms] :
       {std::pair{nccl_algo, true}, std::pair{nccl_proto, false}}) {
    NcclEnabled next = out;
    if (apply_nccl_enable_list(value, algorithms, next).empty()) out = next;
  }
  return out;
}

}  // namespace stepsim
