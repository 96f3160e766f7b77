// A counting replacement of the global operator new and delete, for checking
// that an evaluation path makes no heap allocation. It counts calls to
// operator new (every form: plain, array, nothrow, aligned) made while
// counting is on, from any thread; delete is not counted. Off, it costs one
// relaxed atomic load per allocation.
//
// Replacement functions may be defined once per program and may not be
// inline ([replacement.functions]): exactly one translation unit of an
// executable defines RIDGELINE_DEFINE_COUNTING_NEW before including this
// header (bench/main.cpp, tests/unit/allocation_test.cpp); the others include
// it plainly for Scope.
//
// Memory comes from malloc / posix_memalign and goes back through free.
// Under AddressSanitizer the replacement is left out (kCounting is false and
// nothing is counted): it would work, since ASan intercepts malloc and free
// underneath, but it would take away ASan's own operator new and with it the
// new/delete mismatch checks for every test in the binary.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define RIDGELINE_COUNTING_NEW 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RIDGELINE_COUNTING_NEW 0
#endif
#endif
#ifndef RIDGELINE_COUNTING_NEW
#define RIDGELINE_COUNTING_NEW 1
#endif

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

#ifdef RIDGELINE_ALLOC_TRACE
#include <execinfo.h>
#include <unistd.h>
#endif

namespace ridgeline::alloc_count {

/// False where the replacement is left out (ASan builds): counts read 0.
constexpr bool kCounting = RIDGELINE_COUNTING_NEW;
/// An AddressSanitizer build (scripts/sanitize.sh: -O1, every memory access
/// checked): what it times is the instrumentation as much as the machine.
constexpr bool kAddressSanitizer = !kCounting;

inline std::atomic<bool> g_on{false};
inline std::atomic<std::uint64_t> g_count{0};

/// Counts operator new calls, on any thread, while alive; `count()` reads the
/// calls so far. Scopes do not nest: the first to end stops the counting.
class Scope {
 public:
  Scope() : start_(g_count.load(std::memory_order_relaxed)) { g_on.store(true, std::memory_order_relaxed); }
  ~Scope() { g_on.store(false, std::memory_order_relaxed); }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;
  std::uint64_t count() const { return g_count.load(std::memory_order_relaxed) - start_; }

 private:
  std::uint64_t start_;
};

namespace detail {

constexpr std::size_t kDefaultAlign = alignof(std::max_align_t);

#ifdef RIDGELINE_ALLOC_TRACE
// Build with -DRIDGELINE_ALLOC_TRACE to print a backtrace of each counted
// allocation to stderr (link with -rdynamic for function names).
inline thread_local bool t_in_trace = false;
inline void trace() {
  if (t_in_trace) return;  // backtrace() may allocate on its first call
  t_in_trace = true;
  void* frames[32];
  const int n = ::backtrace(frames, 32);
  (void)!::write(2, "-- counted allocation:\n", 23);
  ::backtrace_symbols_fd(frames, n, 2);
  t_in_trace = false;
}
#else
inline void trace() {}
#endif

inline void note() {
  if (g_on.load(std::memory_order_relaxed)) {
    g_count.fetch_add(1, std::memory_order_relaxed);
    trace();
  }
}

inline void* try_alloc(std::size_t n, std::size_t align) noexcept {
  if (n == 0) n = 1;  // new(0) returns a distinct non-null pointer
  if (align <= kDefaultAlign) return std::malloc(n);
  void* p = nullptr;
  return ::posix_memalign(&p, align, n) == 0 ? p : nullptr;
}

// The throwing forms: retry through the new-handler, as the standard's do.
inline void* alloc(std::size_t n, std::size_t align = kDefaultAlign) {
  note();
  for (;;) {
    if (void* p = try_alloc(n, align)) return p;
    std::new_handler h = std::get_new_handler();
    if (!h) throw std::bad_alloc();
    h();
  }
}

inline void* alloc_nothrow(std::size_t n, std::size_t align = kDefaultAlign) noexcept {
  try {
    return alloc(n, align);
  } catch (...) {
    return nullptr;
  }
}

}  // namespace detail
}  // namespace ridgeline::alloc_count

#if RIDGELINE_COUNTING_NEW && defined(RIDGELINE_DEFINE_COUNTING_NEW)
namespace counting_new = ridgeline::alloc_count::detail;

[[gnu::noinline]] void* operator new(std::size_t n) { return counting_new::alloc(n); }
[[gnu::noinline]] void* operator new[](std::size_t n) { return counting_new::alloc(n); }
[[gnu::noinline]] void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return counting_new::alloc_nothrow(n); }
[[gnu::noinline]] void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return counting_new::alloc_nothrow(n); }
[[gnu::noinline]] void* operator new(std::size_t n, std::align_val_t a) { return counting_new::alloc(n, static_cast<std::size_t>(a)); }
[[gnu::noinline]] void* operator new[](std::size_t n, std::align_val_t a) { return counting_new::alloc(n, static_cast<std::size_t>(a)); }
[[gnu::noinline]] void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return counting_new::alloc_nothrow(n, static_cast<std::size_t>(a));
}
[[gnu::noinline]] void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return counting_new::alloc_nothrow(n, static_cast<std::size_t>(a));
}

[[gnu::noinline]] void operator delete(void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete[](void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, std::size_t) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
#endif  // RIDGELINE_COUNTING_NEW && RIDGELINE_DEFINE_COUNTING_NEW
