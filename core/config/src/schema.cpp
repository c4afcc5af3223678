// The scenario schema (see schema.hpp): its sections (schema/rows.hpp) joined in table order,
// the lookup of a key, and the "did you mean" of an unknown one.

#include "stepsim/config/schema.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <initializer_list>
#include <vector>

#include "schema/rows.hpp"
#include "stepsim/base/nearest_name.hpp"

namespace stepsim {
namespace {

std::string_view leaf(std::string_view dotted) {
  const auto dot = dotted.rfind('.');
  return dot == std::string_view::npos ? dotted : dotted.substr(dot + 1);
}

}  // namespace

std::int64_t int_key_max(const KeyInfo& k) { return k.int_max > 0 ? k.int_max : kMaxInt32Key; }

std::string_view int_key_max_why(const KeyInfo& k) {
  return k.int_max_why.empty() ? kMaxInt32Why : k.int_max_why;
}

std::string int_key_bound_problem(const KeyInfo& k, std::int64_t value) {
  if (value <= int_key_max(k)) return "";
  return "=" + std::to_string(value) + " exceeds stepsim's limit of " +
         std::to_string(int_key_max(k)) + " (" + std::string(int_key_max_why(k)) + ")";
}

std::span<const KeyInfo> scenario_schema() {
  static const std::vector<KeyInfo> rows = [] {
    std::vector<KeyInfo> all;
    for (const std::span<const KeyInfo> part :
         {schema_rows::top_keys(), schema_rows::system_keys(), schema_rows::model_keys(),
          schema_rows::training_keys(), schema_rows::training_comm_keys(),
          schema_rows::training_moe_keys(), schema_rows::training_step_keys()}) {
      all.insert(all.end(), part.begin(), part.end());
    }
    return all;
  }();
  return rows;
}

const KeyInfo* find_schema_key(std::string_view dotted_key) {
  for (const KeyInfo& k : scenario_schema()) {
    if (k.key == dotted_key) return &k;
  }
  return nullptr;
}

std::string check_text(const KeyInfo& k) {
  if (k.unit.empty()) return std::string(k.check);
  // Powers of ten as the reference writes them: 1e9, not printf's 1e+09.
  const auto number = [](double v) {
    std::array<char, 32> buf{};
    std::snprintf(buf.data(), buf.size(), "%g", v);
    std::string s = buf.data();
    const auto e = s.find("e+");
    if (e != std::string::npos) {
      const auto digits = s.find_first_not_of('0', e + 2);
      s = s.substr(0, e + 1) + s.substr(digits);
    }
    return s;
  };
  std::string out = k.zero_allowed && k.min > 0 ? "0 or " : "";
  out += std::string(k.unit) + " in [" + number(k.min) + ", " + number(k.max) + "]";
  if (!k.check.empty()) out += "; " + std::string(k.check);
  return out;
}

std::string unknown_key_message(std::string_view section, std::string_view key) {
  if (const UnmodelledArgument* a = find_unmodelled_argument(key)) {
    if (!a->changes_job) {
      return std::string(" is a Megatron-LM argument (") + std::string(a->flag) +
             ") that does not change a step's time or memory: leave it out";
    }
    return std::string(" is a Megatron-LM argument (") + std::string(a->flag) +
           ") that stepsim does not model yet";
  }
  // The nearest key of the model and training sections; a key of the other section with the
  // same name counts as distance 0 ("seq_length" under "training").
  std::vector<const KeyInfo*> keys;
  std::vector<std::string_view> leaves;
  for (const KeyInfo& k : scenario_schema()) {
    if (!k.key.starts_with("model.") && !k.key.starts_with("training.")) continue;
    keys.push_back(&k);
    leaves.push_back(leaf(k.key));
  }
  if (const auto i = nearest_name_index(key, leaves)) {
    const KeyInfo& best = *keys[*i];
    if (!(leaves[*i] == key && best.key.substr(0, best.key.find('.')) == section)) {
      return " is not a known key; did you mean \"" + std::string(best.key) + "\"?";
    }
  }
  return " is not a known key";
}

}  // namespace stepsim
