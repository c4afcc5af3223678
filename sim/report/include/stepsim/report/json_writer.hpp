#pragma once
// JsonWriter: a small streaming JSON writer for reports and traces. Numbers are written in
// their shortest round-trip form (std::to_chars), so output is byte-identical across runs.

#include <cstdint>
#include <ostream>
#include <string_view>
#include <vector>

namespace stepsim::sim {

class JsonWriter {
 public:
  /// `indent` > 0 pretty-prints with that many spaces per level; 0 writes compactly.
  explicit JsonWriter(std::ostream& out, int indent = 2) : out_(out), indent_(indent) {}

  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(std::string_view k);

  JsonWriter& value(std::string_view s);
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(double d);
  JsonWriter& value(std::int64_t i);
  JsonWriter& value(std::int32_t i) { return value(static_cast<std::int64_t>(i)); }
  JsonWriter& value(bool b);
  JsonWriter& null();

  /// key + value in one call.
  template <typename T>
  JsonWriter& field(std::string_view k, const T& v) {
    key(k);
    return value(v);
  }

  /// Writes `s` as a JSON string literal (quoted, escaped).
  static void write_string(std::ostream& out, std::string_view s);
  static void write_number(std::ostream& out, double d);

 private:
  void before_value();
  void newline();

  std::ostream& out_;
  int indent_;
  std::vector<bool> has_items_;  // per open container
  bool after_key_ = false;
};

}  // namespace stepsim::sim
