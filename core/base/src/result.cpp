#include "stepsim/base/result.hpp"

namespace stepsim {

std::string Error::to_string() const {
  std::string out;
  if (!file.empty()) out += file + ": ";
  out += key;
  out += message;
  if (kind == ErrorKind::kInternal) {
    out += " (internal error: this is a bug in stepsim, please report it)";
  }
  return out;
}

int exit_status(const Errors& errors) {
  for (const Error& e : errors) {
    if (e.kind != ErrorKind::kInput) return 1;
  }
  return 2;
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
