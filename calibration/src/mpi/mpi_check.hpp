#pragma once
// Internal: turning an MPI return code into an Error.

#include <mpi.h>

#include <string>

#include "stepsim/base/result.hpp"

namespace stepsim::calib {

/// "MPI: <what> failed: <MPI's error string>".
inline Error mpi_error(const std::string& what, int code) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(code, text, &len);
  return Error{"", "",
               "MPI: " + what + " failed: " + std::string(text, static_cast<std::size_t>(len)),
               ErrorKind::kRuntime};
}

}  // namespace stepsim::calib
