// stepsim-tracegen: writes a synthetic trace (see synthetic_trace.hpp) for trying the viewer
// and measuring it.
//   stepsim-tracegen OUT.json [--slices N] [--ranks P] [--microbatches M] [--layers L]
//                    [--recompute] [--measured]
// --slices picks the layer count that reaches N slices (64 micro-batches unless given).
#include <charconv>
#include <cstdio>
#include <fstream>
#include <string>

#include "synthetic_trace.hpp"
#include "stepsim/base/main_guard.hpp"

namespace {

bool parse_count(const char* text, long long lowest, long long& out) {
  const std::string s = text;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size() && out >= lowest;
}

}  // namespace

namespace {

int run_main(int argc, char** argv) {
  const char* usage =
      "usage: stepsim-tracegen OUT.json [--slices N] [--ranks P] [--microbatches M] "
      "[--layers L] [--recompute] [--measured]\n";
  if (argc < 2 || argv[1][0] == '-') {
    std::fputs(usage, stderr);
    return 2;
  }
  long long slices = 0;
  long long ranks = 8;
  long long microbatches = -1;
  long long layers = -1;
  bool recompute = false;
  bool measured = false;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    long long* target = nullptr;
    if (arg == "--measured") {
      measured = true;
    } else if (arg == "--recompute") {
      recompute = true;
    } else if (arg == "--slices") {
      target = &slices;
    } else if (arg == "--ranks") {
      target = &ranks;
    } else if (arg == "--microbatches") {
      target = &microbatches;
    } else if (arg == "--layers") {
      target = &layers;
    } else {
      std::fprintf(stderr, "stepsim-tracegen: unknown argument '%s'\n%s", argv[i], usage);
      return 2;
    }
    if (target == nullptr) continue;
    if (i + 1 >= argc || !parse_count(argv[i + 1], 1, *target) || *target > 1000000000) {
      std::fprintf(stderr, "stepsim-tracegen: %s needs a whole number >= 1\n", arg.c_str());
      return 2;
    }
    ++i;
  }
  stepsim::gui::synth::SyntheticTraceSpec spec;
  if (slices > 0)
    spec = stepsim::gui::synth::spec_with_slices(static_cast<std::size_t>(slices),
                                                 static_cast<std::int32_t>(ranks));
  spec.ranks = static_cast<std::int32_t>(ranks);
  if (microbatches > 0) spec.microbatches = static_cast<std::int32_t>(microbatches);
  if (layers > 0) spec.layers = static_cast<std::int32_t>(layers);
  spec.recompute = recompute;
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

}  // namespace

int main(int argc, char** argv) {
  return stepsim::guarded_main("stepsim-tracegen", [&] { return run_main(argc, argv); });
}
