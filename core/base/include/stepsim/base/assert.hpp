#pragma once
// STEPSIM_ASSERT: a broken invariant (a bug) throws InternalError with file:line;
// STEPSIM_UNREACHABLE("why"): the same for a branch that cannot run. Bad input
// never reaches an assert: it is reported as an Error by the loader (see result.hpp). Libraries
// never abort: the executable's last-resort handler (main_guard.hpp) reports the bug, exit 1.

#include <stdexcept>
#include <string>

namespace stepsim {

/// Thrown by STEPSIM_ASSERT only; caught by guarded_main.
class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

namespace detail {
[[noreturn]] inline void assertion_failed(const char* file, int line, const char* cond) {
  throw InternalError(std::string(file) + ":" + std::to_string(line) + ": assertion '" + cond +
                      "' failed");
}
[[noreturn]] inline void unreachable(const char* file, int line, const char* why) {
  throw InternalError(std::string(file) + ":" + std::to_string(line) + ": unreachable: " + why);
}
}  // namespace detail

}  // namespace stepsim

#define STEPSIM_ASSERT(cond)                                                     \
  do {                                                                           \
    if (!(cond)) ::stepsim::detail::assertion_failed(__FILE__, __LINE__, #cond); \
  } while (false)

/// A branch that cannot run (a bug if it does): throws InternalError naming `why`. Unlike the
/// STEPSIM_ASSERT(!"why") idiom, it converts no string literal to bool (clang's
/// -Wstring-conversion) and tells the compiler the branch does not return.
#define STEPSIM_UNREACHABLE(why) ::stepsim::detail::unreachable(__FILE__, __LINE__, why)
