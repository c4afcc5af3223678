// Runs the real `stepsim schedule` on every case of tests/golden/schedule_cases.txt and
// compares stdout+stderr and the exit status with the golden file
// (tests/golden/regenerate.sh writes them).

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace {

const std::string kGoldenDir = std::string(STEPSIM_SOURCE_DIR) + "/tests/golden/";

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// stdout and stderr of `stepsim schedule <args>`, then "exit <status>", as regenerate.sh.
std::string run_schedule(const std::string& args) {
  const std::string cmd = std::string("{ status=0; '") + STEPSIM_BIN + "' schedule " + args +
                          " 2>&1 || status=$?; echo \"exit $status\"; }";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return "popen failed";
  std::string out;
  std::array<char, 4096> buf{};
  std::size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) out.append(buf.data(), n);
  pclose(pipe);
  return out;
}

std::vector<std::pair<std::string, std::string>> cases() {
  std::vector<std::pair<std::string, std::string>> all;
  std::istringstream lines(read_file(kGoldenDir + "schedule_cases.txt"));
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    const std::size_t space = line.find(' ');
    all.emplace_back(line.substr(0, space),
                     space == std::string::npos ? "" : line.substr(space + 1));
  }
  return all;
}

TEST(ScheduleGolden, CliOutputMatchesGoldenFiles) {
  const auto all = cases();
  ASSERT_GE(all.size(), 10U) << "missing " << kGoldenDir << "schedule_cases.txt";
  for (const auto& [file, args] : all) {
    const std::string expected = read_file(kGoldenDir + file);
    ASSERT_FALSE(expected.empty()) << "missing golden file " << file;
    EXPECT_EQ(run_schedule(args), expected)
        << file << " (stepsim schedule " << args << "); regenerate with tests/golden/regenerate.sh "
        << "if the change is intended";
  }
}

TEST(ScheduleGolden, ErrorCasesExitWithStatus2) {
  for (const auto& [file, args] : cases()) {
    if (file.rfind("schedule_error_", 0) != 0) continue;
    const std::string out = run_schedule(args);
    EXPECT_NE(out.find("exit 2\n"), std::string::npos) << file;
  }
}

}  // namespace
