// The process's heap policy, set by the programs (the ridgeline CLI and the
// benchmark program, which measures the library as the CLI runs it), never
// by the library itself: it is the whole process's.
#pragma once

namespace ridgeline::support {

/// Keeps memory that is freed in the process's heaps rather than handing it
/// back to the operating system at once. glibc's malloc gives back the top of
/// a heap once 128 KiB of it is free; a later allocation there touches fresh
/// pages again, each a page fault (about 10 us on the development VM; 1-2 us
/// on bare metal). Between two searches in one process that was the 80 KiB
/// of step times every search returns, gathered in 0.17-0.30 ms instead of
/// 0.01 ms, and the worker threads' scratch. A threshold of 64 MiB keeps what
/// a search frees (a wide search's largest lists are a few MiB) and bounds
/// what an idle process holds. Returns false where the C library has no such
/// setting (not glibc), where it does nothing.
bool keep_freed_heap();

}  // namespace ridgeline::support
