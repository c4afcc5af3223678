#pragma once
// How stepsim's executables ask glibc to keep the memory they free (a no-op elsewhere).

namespace stepsim {

/// Keeps freed heap memory in the process instead of handing it back to the kernel. A sweep
/// or a benchmark simulates step after step whose buffers reach tens of MiB; by default glibc
/// serves such blocks with fresh mmaps and trims freed heap tops, and it deletes a thread
/// arena's 64 MiB heap as soon as it empties (heap_trim ignores M_TRIM_THRESHOLD there; it
/// keeps M_TOP_PAD bytes), so each simulation mapped and page-faulted its memory again. With
/// M_MMAP_THRESHOLD and M_TRIM_THRESHOLD raised alone, `stepsim sweep
/// scenarios/sweeps/turing-530b-2520.json --jobs 2` made 183 munmap and 842 mprotect calls (strace
/// -f -c), 97,000-129,000 page faults and 3.06-3.28 s; with M_TOP_PAD too, 4 and 20 calls,
/// 79,000-80,000 faults (its one-time growth) and 2.91-3.01 s. Call it first thing in main; it sets
/// the allocator of the whole process.
void keep_freed_memory();

}  // namespace stepsim
