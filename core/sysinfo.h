// Facts about the running process, for benchmarks and run summaries.
//
// Thread-safety: thread-safe.
#pragma once

#include <cstdint>

namespace murmur {

// Peak resident set size of this process in bytes (Linux VmHWM), 0 if unknown.
std::uint64_t PeakRssBytes();
// Current resident set size in bytes (Linux VmRSS), 0 if unknown.
std::uint64_t CurrentRssBytes();

// Gives the memory the allocator holds free back to the system (glibc's
// malloc_trim; nothing elsewhere). For after a burst of short-lived
// allocations, such as many connections that closed: freed chunks in the
// middle of the heap otherwise stay resident. Costs a walk of the heap.
void ReturnFreeMemory();

}  // namespace murmur
