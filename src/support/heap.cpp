#include "ridgeline/support/heap.hpp"

#include <cstdlib>  // first: it defines __GLIBC__ where the C library is glibc

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace ridgeline::support {

bool keep_freed_heap() {
#if defined(__GLIBC__) && defined(M_TRIM_THRESHOLD) && defined(M_MMAP_THRESHOLD)
  // Setting either threshold ends glibc's own adjustment of the mmap
  // threshold (which rises to the largest mapped block freed so far), so
  // both are set: blocks up to 32 MiB (glibc's ceiling for that
  // adjustment) come from the heap and are reused, not mapped afresh.
  return mallopt(M_MMAP_THRESHOLD, 32 << 20) == 1 && mallopt(M_TRIM_THRESHOLD, 64 << 20) == 1;
#else
  return false;
#endif
}

}  // namespace ridgeline::support
