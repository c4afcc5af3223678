#pragma once
// Writing a whole output file (profile, report, record), shared by the calibration and the
// validator libraries.

#include <string>

#include "stepsim/base/result.hpp"

namespace stepsim::calib {

/// Replaces `path` with `text`. Error (runtime, naming the file) when it cannot be written.
Status write_text_file(const std::string& path, const std::string& text);

}  // namespace stepsim::calib
