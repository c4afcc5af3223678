#pragma once
// The last-resort handler of every stepsim executable. Bad input never reaches it (loaders
// return errors, exit 2): whatever does is a bug, reported as one with exit 1, never an abort.

#include <functional>

namespace stepsim {

/// Runs `body` (the whole of a main) and returns its exit status. An exception escaping it,
/// or std::terminate from any thread (an exception leaving a thread, a noexcept violation),
/// prints "<program>: internal error: ... this is a bug in stepsim, please report it" and
/// ends the process with status 1.
int guarded_main(const char* program, const std::function<int()>& body);

}  // namespace stepsim
