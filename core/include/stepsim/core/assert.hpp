#pragma once
// STEPSIM_ASSERT: broken invariants (bugs) abort with file:line. Bad input never reaches
// an assert: it is reported as an Error by the loader (see result.hpp).

#include <cstdio>
#include <cstdlib>

#define STEPSIM_ASSERT(cond)                                                          \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      std::fprintf(stderr, "%s:%d: internal error: assertion '%s' failed\n", __FILE__, \
                   __LINE__, #cond);                                                  \
      std::abort();                                                                   \
    }                                                                                 \
  } while (false)
