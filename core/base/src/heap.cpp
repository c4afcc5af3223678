#include "stepsim/base/heap.hpp"

#include <cstdlib>  // defines __GLIBC__ (features.h) before it is tested below
#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace stepsim {

void keep_freed_memory() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, 1 << 30);  // large blocks from the heap, not from fresh mmaps
  mallopt(M_TRIM_THRESHOLD, 1 << 30);  // no trimming of a heap top below 1 GiB
  mallopt(M_TOP_PAD, 64 << 20);        // thread arenas keep their emptied 64 MiB heaps
#endif
}

}  // namespace stepsim
