#pragma once
// Runs the real `stepsim` binary (STEPSIM_BIN) for tests that check program output.

#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace stepsim::testing {

struct CliRun {
  std::string out;  ///< stdout (and stderr when merged)
  int status = -1;  ///< exit status
};

/// Runs `stepsim <args>` through the shell. With `merge_stderr`, stderr joins stdout;
/// otherwise stderr is discarded unless redirected in `args`.
inline CliRun run_stepsim(const std::string& args, bool merge_stderr = true) {
  const std::string cmd = std::string("{ status=0; '") + STEPSIM_BIN + "' " + args +
                          (merge_stderr ? " 2>&1" : "") +
                          " || status=$?; echo \"exit $status\"; }";
  CliRun run;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return run;
  std::array<char, 4096> buf{};
  std::size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) run.out.append(buf.data(), n);
  pclose(pipe);
  const std::size_t tail = run.out.rfind("exit ");
  if (tail != std::string::npos) {
    run.status = std::stoi(run.out.substr(tail + 5));
    run.out.resize(tail);
  }
  return run;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace stepsim::testing
