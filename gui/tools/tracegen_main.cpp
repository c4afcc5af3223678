// stepsim-tracegen: writes a synthetic trace (see synthetic_trace.hpp) for trying the viewer
// and measuring it. Usage: stepsim-tracegen OUT.json [SLICES] [--measured]
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "synthetic_trace.hpp"

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0) {
    std::fprintf(stderr, "usage: stepsim-tracegen OUT.json [SLICES] [--measured]\n");
    return 2;
  }
  std::size_t slices = 20000;
  bool measured = false;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--measured") {
      measured = true;
      continue;
    }
    const auto r = std::from_chars(arg.data(), arg.data() + arg.size(), slices);
    if (r.ec != std::errc() || r.ptr != arg.data() + arg.size()) {
      std::fprintf(stderr, "stepsim-tracegen: SLICES must be a whole number, got '%s'\n", argv[i]);
      return 2;
    }
  }
  auto spec = stepsim::gui::synth::spec_with_slices(slices);
  if (measured) {
    spec.label = "measured";
    spec.jitter = 0.15;
    spec.seed = 7;
  }
  std::ofstream out(argv[1], std::ios::binary);
  if (!out) {
    std::fprintf(stderr, "%s: cannot open for writing\n", argv[1]);
    return 1;
  }
  const auto info = stepsim::gui::synth::write_synthetic_trace(spec, out);
  out.close();
  if (!out) {
    std::fprintf(stderr, "%s: write failed\n", argv[1]);
    return 1;
  }
  std::printf("%s: %zu slices, %zu memory counters, step %.3f ms\n", argv[1], info.slices,
              info.counters, info.step_us * 1e-3);
  return 0;
}
