// support::keep_freed_heap: the heap policy the ridgeline program and the
// benchmark program set (src/cli/main.cpp, bench/main.cpp).
#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "ridgeline/support/heap.hpp"

using namespace ridgeline;

#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__)
TEST_CASE("heap: a freed block stays in the heap for the next allocation, not handed back to the system") {
  REQUIRE(support::keep_freed_heap());
  // 4 MiB: above glibc's default mmap threshold (128 KiB) and trim threshold
  // (128 KiB), so with the defaults it would be mapped on its own and
  // unmapped by free (or, from the heap, trimmed away by free).
  constexpr std::size_t kBlock = 4u << 20;
  void* p = std::malloc(kBlock);
  REQUIRE(p);
  std::memset(p, 1, kBlock);  // touched: these pages are the process's now
  const struct mallinfo2 held = mallinfo2();
  CHECK(held.hblkhd < kBlock);  // not a block of its own (mmapped blocks are counted in hblkhd)
  std::free(p);
  const struct mallinfo2 after = mallinfo2();
  // Still in the heap, free for the next allocation: the arena's free bytes grew by the whole block.
  CHECK(after.fordblks >= held.fordblks + kBlock);
  CHECK(after.arena >= held.arena);
}
#endif
