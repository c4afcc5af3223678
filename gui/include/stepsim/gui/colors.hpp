#pragma once
// The viewer's palette: one colour per slice kind, as plain RGB so the model layer and its
// tests need no Qt. Chosen to tell compute (blues/greens), recompute (amber), communication
// (purple/red/brown) and idle time (pale red) apart, also for common colour-vision deficits.

#include <cstdint>

#include "stepsim/gui/trace_model.hpp"

namespace stepsim::gui {

struct Rgb {
  std::uint8_t r = 0;
  std::uint8_t g = 0;
  std::uint8_t b = 0;
  bool operator==(const Rgb&) const = default;
};

/// Fill colour of a slice kind (kBubble: the idle-time fill).
Rgb kind_color(Kind kind);

/// `c` blended towards white by `amount` in [0, 1] (used to dim unselected slices).
Rgb faded(Rgb c, double amount);

/// Black or white, whichever reads better on `background`.
Rgb text_color_on(Rgb background);

}  // namespace stepsim::gui
