#include "stepsim/report/json_writer.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "stepsim/base/assert.hpp"

namespace stepsim::sim {

void JsonWriter::write_string(std::ostream& out, std::string_view s) {
  out << '"';
  for (const char c : s) {
    switch (c) {
      case '"': out << "\\\""; break;
      case '\\': out << "\\\\"; break;
      case '\n': out << "\\n"; break;
      case '\t': out << "\\t"; break;
      case '\r': out << "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          out << buf;
        } else {
          out << c;
        }
    }
  }
  out << '"';
}

void JsonWriter::write_number(std::ostream& out, double d) {
  if (!std::isfinite(d)) {
    out << "null";  // JSON has no inf/nan
    return;
  }
  char buf[32];
  const auto res = std::to_chars(buf, buf + sizeof buf, d);
  out.write(buf, res.ptr - buf);
}

void JsonWriter::newline() {
  if (indent_ <= 0) return;
  out_ << '\n';
  for (std::size_t i = 0; i < has_items_.size() * static_cast<std::size_t>(indent_); ++i) out_ << ' ';
}

void JsonWriter::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (has_items_.empty()) return;
  if (has_items_.back()) out_ << ',';
  has_items_.back() = true;
  newline();
}

JsonWriter& JsonWriter::begin_object() {
  before_value();
  out_ << '{';
  has_items_.push_back(false);
  return *this;
}

JsonWriter& JsonWriter::end_object() {
  STEPSIM_ASSERT(!has_items_.empty());
  const bool had = has_items_.back();
  has_items_.pop_back();
  if (had) newline();
  out_ << '}';
  if (has_items_.empty() && indent_ > 0) out_ << '\n';
  return *this;
}

JsonWriter& JsonWriter::begin_array() {
  before_value();
  out_ << '[';
  has_items_.push_back(false);
  return *this;
}

JsonWriter& JsonWriter::end_array() {
  STEPSIM_ASSERT(!has_items_.empty());
  const bool had = has_items_.back();
  has_items_.pop_back();
  if (had) newline();
  out_ << ']';
  return *this;
}

JsonWriter& JsonWriter::key(std::string_view k) {
  before_value();
  write_string(out_, k);
  out_ << (indent_ > 0 ? ": " : ":");
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::value(std::string_view s) {
  before_value();
  write_string(out_, s);
  return *this;
}

JsonWriter& JsonWriter::value(double d) {
  before_value();
  write_number(out_, d);
  return *this;
}

JsonWriter& JsonWriter::value(std::int64_t i) {
  before_value();
  out_ << i;
  return *this;
}

JsonWriter& JsonWriter::value(bool b) {
  before_value();
  out_ << (b ? "true" : "false");
  return *this;
}

JsonWriter& JsonWriter::null() {
  before_value();
  out_ << "null";
  return *this;
}

}  // namespace stepsim::sim
