#include "stepsim/calibration/text_file.hpp"

#include <fstream>

namespace stepsim::calib {

Status write_text_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) return Error{path, "", "cannot be written", ErrorKind::kRuntime};
  return ok_status();
}

}  // namespace stepsim::calib
