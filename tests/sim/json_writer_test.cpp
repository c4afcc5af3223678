#include "stepsim/report/json_writer.hpp"

#include <gtest/gtest.h>

#include <sstream>

namespace stepsim::sim {
namespace {

TEST(JsonWriter, CompactNestedDocument) {
  std::ostringstream out;
  JsonWriter j(out, 0);
  j.begin_object();
  j.field("a", std::int64_t{1});
  j.key("b").begin_array().value(0.1).value(true).null().end_array();
  j.field("s", std::string_view("q\"\n"));
  j.key("e").begin_object().end_object();
  j.end_object();
  EXPECT_EQ(out.str(), R"({"a":1,"b":[0.1,true,null],"s":"q\"\n","e":{}})");
}

TEST(JsonWriter, NumbersRoundTripAndNonFiniteIsNull) {
  std::ostringstream out;
  JsonWriter::write_number(out, 1.0 / 3.0);
  EXPECT_EQ(std::stod(out.str()), 1.0 / 3.0);
  std::ostringstream inf;
  JsonWriter::write_number(inf, 1.0 / 0.0);
  EXPECT_EQ(inf.str(), "null");
}

TEST(JsonWriter, PrettyPrintIndents) {
  std::ostringstream out;
  JsonWriter j(out, 2);
  j.begin_object().field("x", std::int64_t{2}).end_object();
  EXPECT_EQ(out.str(), "{\n  \"x\": 2\n}\n");
}

}  // namespace
}  // namespace stepsim::sim
