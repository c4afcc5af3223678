#include "stepsim/gui/colors.hpp"

#include <algorithm>
#include <array>

namespace stepsim::gui {

namespace {

// Indexed by Kind.
constexpr std::array<Rgb, kKindCount> kPalette = {{
    {0x3b, 0x6f, 0xd4},  // forward: blue
    {0x2e, 0x9e, 0x4f},  // backward input-grad: green
    {0x13, 0x6f, 0x63},  // backward weight-grad: dark teal
    {0xf0, 0xa2, 0x02},  // recompute: amber
    {0x8e, 0x4a, 0xc9},  // TP comm: purple
    {0xd6, 0x2d, 0x3b},  // P2P: red
    {0x8c, 0x5a, 0x2b},  // DP comm: brown
    {0x4a, 0x4a, 0x4a},  // optimizer: dark grey
    {0x2a, 0x7f, 0xba},  // GPU kernel: blue
    {0x9c, 0x4f, 0xd0},  // NCCL kernel: purple
    {0xe0, 0x8a, 0x1e},  // memcpy / memset: orange
    {0x7f, 0x8c, 0x8d},  // CUDA runtime: slate
    {0x3a, 0xa3, 0x5b},  // CPU op: green
    {0xc9, 0xb5, 0x2c},  // Python: olive yellow
    {0xd4, 0x60, 0x7a},  // annotation: rose
    {0x9e, 0x9e, 0x9e},  // other: grey
    {0xf6, 0xc9, 0xc9},  // bubble: pale red
    {0xc2, 0x3b, 0x8f},  // CP comm: magenta
    {0xd9, 0xd2, 0xe9},  // waiting for a peer: pale lavender
}};

std::uint8_t mix(std::uint8_t from, double amount) {
  const double v = from + (255.0 - from) * amount;
  return static_cast<std::uint8_t>(std::clamp(v + 0.5, 0.0, 255.0));
}

}  // namespace

Rgb kind_color(Kind kind) { return kPalette[static_cast<std::size_t>(kind)]; }

Rgb faded(Rgb c, double amount) {
  amount = std::clamp(amount, 0.0, 1.0);
  return Rgb{mix(c.r, amount), mix(c.g, amount), mix(c.b, amount)};
}

Rgb text_color_on(Rgb background) {
  // Relative luminance (Rec. 709 weights) against a mid threshold.
  const double y = 0.2126 * background.r + 0.7152 * background.g + 0.0722 * background.b;
  return y > 150 ? Rgb{0, 0, 0} : Rgb{255, 255, 255};
}

}  // namespace stepsim::gui
