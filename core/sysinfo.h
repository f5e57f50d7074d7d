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

}  // namespace murmur
