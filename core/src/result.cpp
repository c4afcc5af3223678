#include "stepsim/core/result.hpp"

namespace stepsim {

std::string Error::to_string() const {
  std::string out;
  if (!file.empty()) out += file + ": ";
  out += key;
  out += message;
  return out;
}

std::string format_errors(const Errors& errors) {
  std::string out;
  for (const Error& e : errors) {
    out += e.to_string();
    out += '\n';
  }
  return out;
}

}  // namespace stepsim
