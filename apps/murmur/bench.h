// Shared pieces of `murmur bench`: the floors benchmarks are compared with,
// measured in the same run, and the benchmark entry points.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

namespace murmur::cli {

double SecondsSince(std::chrono::steady_clock::time_point since);

// GFLOP/s of C = A B (m x k times k x n, row-major float) on `threads`
// threads, each multiplying its own matrices; about `seconds` of wall time.
double GemmRate(std::int64_t m, std::int64_t k, std::int64_t n, int threads, double seconds);

// GFLOP/s of `run`, which does `flops` floating-point operations a call,
// called repeatedly on this thread for about `seconds` after a warm-up call.
double ProductRate(double flops, double seconds, const std::function<void()>& run);

// GB/s of reading a buffer far larger than the caches (a float sum) on
// `threads` threads, and of y += a x over such buffers (bytes read + written).
double MemoryReadRate(int threads, double seconds);
double AxpyRate(int threads, double seconds);

int BenchSim(int argc, char** argv);
int BenchTransport(int argc, char** argv);
int BenchTorchScript(int argc, char** argv);

}  // namespace murmur::cli
