// Timing on the host: the thread's CPU clock, a sink that keeps a result
// alive, and the median of a sample. Units: seconds.
#pragma once

#include <vector>

namespace ridgeline::host_bench {

/// This thread's CPU time: time the OS gives to other processes (a shared,
/// busy machine) is not counted; on an idle machine it equals wall time.
double thread_seconds();

/// Makes the compiler assume `p`'s memory is read: keeps a result alive.
inline void keep(const void* p) { asm volatile("" : : "r"(p) : "memory"); }

/// The middle value (the mean of the two middle ones for an even count); v non-empty.
double median_of(std::vector<double> v);

}  // namespace ridgeline::host_bench
