#pragma once
// Typed reading of one JSON object's keys, collecting every problem instead of stopping at the
// first. Private to stepsim_core: only the loaders include it (only the loader touches JSON).

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "stepsim/base/result.hpp"

namespace stepsim::detail {

/// Parses `text` with parse_json_text (json_input.hpp: overflowing numbers, deep nesting,
/// duplicate keys, NUL bytes and trailing content are errors); on failure appends the error
/// for `file` to `errors` and returns nullopt.
std::optional<nlohmann::json> parse_json(std::string_view text, const std::string& file,
                                         Errors& errors);

/// Reads the keys of one JSON object. Every accessor marks its key as known; a `null` value
/// counts as absent (Megatron's `None`). Wrong types, non-positive sizes and missing required
/// keys are appended to `errors`, naming `file` and the dotted key path.
class ObjectReader {
 public:
  /// `object` must outlive the reader. `prefix` is the dotted path of the object ("" at top).
  ObjectReader(const nlohmann::json& object, std::string file, std::string prefix, Errors& errors);

  /// A positive integer (JSON integer, not a float; fits in int64); with `zero_allowed` 0 too.
  std::optional<std::int64_t> positive_int(std::string_view key, bool required,
                                           bool zero_allowed = false);
  /// A true/false value.
  std::optional<bool> boolean(std::string_view key);
  /// A string; non-empty when `required`.
  std::optional<std::string> string(std::string_view key, bool required);
  /// A string that must be one of `choices` (listed in the error).
  std::optional<std::string> choice(std::string_view key,
                                    std::initializer_list<std::string_view> choices);
  /// A finite number in [min, max] (integers accepted).
  std::optional<double> number(std::string_view key, bool required, double min, double max);
  /// A required positive finite number (integers accepted), at most 1e30.
  std::optional<double> positive_number(std::string_view key);
  /// A required fraction in (0, 1].
  std::optional<double> fraction(std::string_view key);
  /// A nested object; reports a wrong type. nullptr when absent or not an object.
  const nlohmann::json* object(std::string_view key, bool required);
  /// The raw value, for keys that take several shapes. nullptr when absent or null.
  const nlohmann::json* raw(std::string_view key);

  /// Reports every key of the object that no accessor asked for.
  void reject_unknown_keys();

  /// "prefix.key" (or "key" at the top level).
  std::string path(std::string_view key) const;
  /// Appends an error for `key`; `message` follows the key (e.g. "=6 does not divide ...").
  void error(std::string_view key, std::string message);
  const std::string& file() const { return file_; }

 private:
  const nlohmann::json* find(std::string_view key, bool required);

  const nlohmann::json& object_;
  std::string file_;
  std::string prefix_;
  Errors& errors_;
  std::set<std::string, std::less<>> known_;
};

/// Whether `object` gives a non-null value at the dotted path `key` ("a.b": object a, key b;
/// any depth). A key that itself holds a dot cannot be named. System and scenario `sources`
/// check their cited keys through it.
bool has_dotted_key(const nlohmann::json& object, std::string_view key);

/// A short description of a JSON value for messages: `6`, `"abc"`, `2.5`, `true`, `an object`.
std::string describe(const nlohmann::json& value);

/// `value` with up to 6 significant digits ("0.5", "3.12e+14").
std::string format_number(double value);

}  // namespace stepsim::detail
