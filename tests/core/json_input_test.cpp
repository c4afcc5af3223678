// The one JSON reading path (json_input.hpp) and the error kinds (result.hpp).
#include "stepsim/base/json_input.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "stepsim/base/assert.hpp"
#include "stepsim/base/result.hpp"

namespace stepsim {
namespace {

Error only_error(std::string_view text) {
  auto r = parse_json_text(text, "f.json");
  EXPECT_FALSE(r.ok()) << text.substr(0, 80);
  if (r.ok()) return {};
  EXPECT_EQ(r.errors().size(), 1u);
  EXPECT_EQ(r.errors()[0].file, "f.json");
  return r.errors()[0];
}

TEST(JsonInput, ReadsAValidDocument) {
  auto r = parse_json_text(R"({"a": [1, 2.5, "x", null, true], "b": {"c": -3}})", "f.json");
  ASSERT_TRUE(r.ok()) << format_errors(r.errors());
  EXPECT_EQ((*r)["a"][1].get<double>(), 2.5);
  EXPECT_EQ((*r)["b"]["c"].get<int>(), -3);
}

TEST(JsonInput, ANumberBeyondADoubleNamesItsKey) {
  Error e = only_error(R"({"model": {"hidden_size": 1e400}})");
  EXPECT_EQ(e.key, "model.hidden_size");
  EXPECT_EQ(e.message, "=1e400 overflows a double (numbers must be finite)");
  const std::string digits(400, '9');
  e = only_error(R"({"a": [1, {"b": )" + digits + "}]}");
  EXPECT_EQ(e.key, "a[1].b");
  EXPECT_NE(e.message.find("overflows a double"), std::string::npos);
  e = only_error("[0, -1e999]");
  EXPECT_EQ(e.key, "[1]");
}

TEST(JsonInput, DeepNestingIsRefusedWithoutRecursion) {
  const std::string deep = std::string(1000000, '[') + std::string(1000000, ']');
  Error e = only_error(R"({"x": )" + deep + "}");
  EXPECT_EQ(e.key.substr(0, 7), "x[0][0]");
  EXPECT_NE(e.message.find("deeper than 64 levels"), std::string::npos);
  // 64 levels are fine.
  EXPECT_TRUE(parse_json_text(std::string(64, '[') + std::string(64, ']'), "f.json").ok());
  EXPECT_FALSE(parse_json_text(std::string(65, '[') + std::string(65, ']'), "f.json").ok());
}

TEST(JsonInput, ADuplicateKeyIsRefused) {
  Error e = only_error(R"({"top": 3, "s": {"k": 1, "k": 2}})");
  EXPECT_EQ(e.key, "s.k");
  EXPECT_EQ(e.message, " is given twice in one object");
}

TEST(JsonInput, NulBytesAndTrailingContentAreRefused) {
  using namespace std::string_literals;
  Error e = only_error("{\"a\": 1}\n\0{\"b\": 2}"s);
  EXPECT_EQ(e.message, "line 2, column 1: a NUL byte (JSON text holds none)");
  e = only_error("{\"a\": 1}\n{\"b\": 2}");
  EXPECT_NE(e.message.find("line 2, column 1: malformed JSON"), std::string::npos);
  e = only_error("{\"a\": [1, 2,]}");
  EXPECT_EQ(e.key, "a[2]");
  EXPECT_NE(e.message.find(": line 1, column 13: malformed JSON"), std::string::npos);
}

TEST(JsonInput, FilesOverTheLimitAreNotRead) {
  const auto path = (std::filesystem::temp_directory_path() / "stepsim_big.json").string();
  {
    std::ofstream out(path);
    out << "[" << std::string(100, ' ') << "]";
  }
  auto small = read_json_file(path, 1000);
  EXPECT_TRUE(small.ok());
  auto big = read_json_file(path, 50);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.errors()[0].file, path);
  EXPECT_NE(big.errors()[0].message.find("larger than 50 bytes"), std::string::npos);
  auto missing = read_json_file(path + ".missing");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.errors()[0].message.find("cannot open"), std::string::npos);
  auto dir = read_input_file(std::filesystem::temp_directory_path().string());
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.errors()[0].message.find("is a directory"), std::string::npos);
}

TEST(ErrorKinds, MapToExitStatusInOnePlace) {
  EXPECT_EQ(exit_status({Error{"f", "k", " bad"}}), 2);
  EXPECT_EQ(exit_status({Error{"f", "k", " bad"}, Error{"f", "", "cannot be written", ErrorKind::kRuntime}}), 1);
  EXPECT_EQ(exit_status({Error{"", "prediction.step_time_s", "=inf", ErrorKind::kInternal}}), 1);
  EXPECT_NE(Error({"", "k", "=inf", ErrorKind::kInternal}).to_string().find("this is a bug"),
            std::string::npos);
}

TEST(ErrorKinds, StatusHoldsNothingOrErrors) {
  Status ok = ok_status();
  EXPECT_TRUE(ok.ok());
  Status bad = Error{"f", "k", " bad"};
  EXPECT_FALSE(bad.ok());
}

TEST(ErrorKinds, ABrokenInvariantThrowsInsteadOfAborting) {
  const auto broken = [] { STEPSIM_ASSERT(1 + 1 == 3); };
  EXPECT_THROW(broken(), InternalError);
}

}  // namespace
}  // namespace stepsim

namespace stepsim {
namespace {

// Issue 41: an empty key ended the key path, naming "model" for model."".x.
TEST(JsonInput, AnEmptyKeyIsPartOfThePath) {
  Error e = only_error(R"({"model": {"": {"x": 1, "x": 2}}})");
  EXPECT_EQ(e.key, "model.\"\".x");
  EXPECT_EQ(e.message, " is given twice in one object");
  e = only_error(R"({"": {"": 1e400}})");
  EXPECT_EQ(e.key, "\"\".\"\"");
}

// Issue 41: special files said "no such file", and a FIFO without a writer blocked forever.
TEST(JsonInput, SpecialFilesSayWhatTheyAreAndNeverBlock) {
  namespace fs = std::filesystem;
  const std::string dir = ::testing::TempDir() + "/stepsim_special_files";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string fifo = dir + "/scenario.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string loop = dir + "/loop.json";
  fs::create_symlink(loop, loop);
  const std::string dangling = dir + "/dangling.json";
  fs::create_symlink(dir + "/nowhere.json", dangling);
  const std::pair<std::string, std::string> cases[] = {
      {fifo, "is a FIFO (named pipe), not a regular file"},
      {"/dev/zero", "is a character device (such as /dev/zero), not a regular file"},
      {dir, "is a directory, not a file"},
      {loop, "too many levels of symbolic links"},
      {dangling, "a symbolic link to a file that does not exist"},
      {dir + "/missing.json", "cannot open: no such file"},
  };
  for (const auto& [path, phrase] : cases) {
    auto r = read_input_file(path);  // returns at once: the FIFO has no writer
    ASSERT_FALSE(r.ok()) << path;
    EXPECT_EQ(r.errors()[0].file, path);
    EXPECT_NE(r.errors()[0].message.find(phrase), std::string::npos) << r.errors()[0].message;
    EXPECT_NE(input_file_problem(path).find(phrase), std::string::npos) << path;
  }
  std::ofstream(dir + "/ok.json") << "{}";
  EXPECT_EQ(input_file_problem(dir + "/ok.json"), "");
  EXPECT_TRUE(read_json_file(dir + "/ok.json").ok());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace stepsim
