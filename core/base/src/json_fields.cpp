#include "stepsim/base/json_fields.hpp"

#include <cmath>
#include <cstdio>
#include <limits>
#include <vector>

#include "stepsim/base/json_input.hpp"

namespace stepsim::detail {

using nlohmann::json;

std::optional<json> parse_json(std::string_view text, const std::string& file, Errors& errors) {
  auto parsed = parse_json_text(text, file);
  if (!parsed) {
    errors.insert(errors.end(), parsed.errors().begin(), parsed.errors().end());
    return std::nullopt;
  }
  return std::move(parsed).value();
}

std::string format_number(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.6g", value);
  return buffer;
}

std::string describe(const json& value) {
  if (value.is_object()) return "an object";
  if (value.is_array()) return "an array";
  if (value.is_null()) return "null";
  std::string text = value.dump();
  constexpr std::size_t kMax = 40;
  if (text.size() > kMax) text = text.substr(0, kMax) + "...";
  return text;
}

ObjectReader::ObjectReader(const json& object, std::string file, std::string prefix, Errors& errors)
    : object_(object), file_(std::move(file)), prefix_(std::move(prefix)), errors_(errors) {}

std::string ObjectReader::path(std::string_view key) const {
  if (prefix_.empty()) return std::string(key);
  return prefix_ + "." + std::string(key);
}

void ObjectReader::error(std::string_view key, std::string message) {
  errors_.push_back({file_, path(key), std::move(message)});
}

const json* ObjectReader::find(std::string_view key, bool required) {
  known_.insert(std::string(key));
  const auto it = object_.find(std::string(key));
  if (it == object_.end() || it->is_null()) {
    if (required) error(key, " must be given");
    return nullptr;
  }
  return &*it;
}

const json* ObjectReader::raw(std::string_view key) { return find(key, false); }

std::optional<std::int64_t> ObjectReader::positive_int(std::string_view key, bool required,
                                                       bool zero_allowed) {
  const json* v = find(key, required);
  if (v == nullptr) return std::nullopt;
  if (v->is_number_unsigned()) {
    const auto u = v->get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      error(key, std::string("=") + describe(*v) + " does not fit in a 64-bit integer");
      return std::nullopt;
    }
  }
  if (!v->is_number_integer()) {
    error(key, std::string("=") + describe(*v) + " must be an integer");
    return std::nullopt;
  }
  const auto n = v->get<std::int64_t>();
  if (n < 0 || (n == 0 && !zero_allowed)) {
    error(key, std::string("=") + std::to_string(n) +
                   (zero_allowed ? " must be 0 or positive" : " must be positive"));
    return std::nullopt;
  }
  return n;
}

std::optional<bool> ObjectReader::boolean(std::string_view key) {
  const json* v = find(key, false);
  if (v == nullptr) return std::nullopt;
  if (!v->is_boolean()) {
    error(key, std::string("=") + describe(*v) + " must be true or false");
    return std::nullopt;
  }
  return v->get<bool>();
}

std::optional<std::string> ObjectReader::string(std::string_view key, bool required) {
  const json* v = find(key, required);
  if (v == nullptr) return std::nullopt;
  if (!v->is_string()) {
    error(key, std::string("=") + describe(*v) + " must be a string");
    return std::nullopt;
  }
  std::string s = v->get<std::string>();
  if (required && s.empty()) {
    error(key, " must not be empty");
    return std::nullopt;
  }
  return s;
}

std::optional<std::string> ObjectReader::choice(std::string_view key,
                                                std::initializer_list<std::string_view> choices) {
  const json* v = find(key, false);
  if (v == nullptr) return std::nullopt;
  std::string listed;
  for (const std::string_view c : choices) {
    if (!listed.empty()) listed += ", ";
    listed += "\"";
    listed += c;
    listed += "\"";
  }
  if (v->is_string()) {
    const std::string s = v->get<std::string>();
    for (const std::string_view c : choices) {
      if (s == c) return s;
    }
  }
  error(key, std::string("=") + describe(*v) + " must be one of " + listed + " or null");
  return std::nullopt;
}

std::optional<double> ObjectReader::number(std::string_view key, bool required, double min,
                                           double max) {
  const json* v = find(key, required);
  if (v == nullptr) return std::nullopt;
  if (!v->is_number()) {
    error(key, std::string("=") + describe(*v) + " must be a number");
    return std::nullopt;
  }
  const double d = v->get<double>();
  if (!std::isfinite(d) || d < min || d > max) {
    error(key, std::string("=") + describe(*v) + " must be between " + format_number(min) +
                   " and " + format_number(max));
    return std::nullopt;
  }
  return d;
}

std::optional<double> ObjectReader::positive_number(std::string_view key) {
  auto v = number(key, true, 0, 1e30);
  if (v && *v <= 0) {
    error(key, "=0 must be positive");
    return std::nullopt;
  }
  return v;
}

std::optional<double> ObjectReader::fraction(std::string_view key) {
  auto v = number(key, true, 0, 1);
  if (v && *v <= 0) {
    error(key, "=0 must be a fraction in (0, 1]");
    return std::nullopt;
  }
  return v;
}

const json* ObjectReader::object(std::string_view key, bool required) {
  const json* v = find(key, required);
  if (v == nullptr) return nullptr;
  if (!v->is_object()) {
    error(key, std::string("=") + describe(*v) + " must be an object");
    return nullptr;
  }
  return v;
}

bool has_dotted_key(const json& object, std::string_view key) {
  const json* at = &object;
  while (true) {
    const auto dot = key.find('.');
    if (!at->is_object()) return false;
    const auto it = at->find(std::string(key.substr(0, dot)));
    if (it == at->end() || it->is_null()) return false;
    if (dot == std::string_view::npos) return true;
    at = &*it;
    key.remove_prefix(dot + 1);
  }
}

void ObjectReader::reject_unknown_keys() {
  for (const auto& [key, value] : object_.items()) {
    if (known_.find(key) == known_.end()) error(key, " is not a known key");
  }
}

}  // namespace stepsim::detail
