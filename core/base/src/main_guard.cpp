#include "stepsim/base/main_guard.hpp"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>
#include <string>
#include <typeinfo>

namespace stepsim {

namespace {

const char* g_program = "stepsim";

void report_bug(const char* what) {
  std::fprintf(stderr,
               "%s: internal error: %s\nThis is a bug in stepsim, please report it with the "
               "command line and input files.\n",
               g_program, what);
  std::fflush(stderr);
}

std::string describe_current_exception() {
  try {
    throw;
  } catch (const std::bad_alloc&) {
    return "out of memory (std::bad_alloc)";
  } catch (const std::exception& e) {
    return std::string(e.what()) + " (" + typeid(e).name() + ")";
  } catch (...) {
    return "an exception of unknown type";
  }
}

[[noreturn]] void on_terminate() {
  if (std::current_exception()) {
    report_bug(("uncaught exception: " + describe_current_exception()).c_str());
  } else {
    report_bug("std::terminate was called");
  }
  std::_Exit(1);
}

}  // namespace

int guarded_main(const char* program, const std::function<int()>& body) {
  g_program = program;
  std::set_terminate(on_terminate);
  try {
    return body();
  } catch (...) {
    report_bug(describe_current_exception().c_str());
    return 1;
  }
}

}  // namespace stepsim
